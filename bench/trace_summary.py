"""What a page's long main-thread tasks spent their time on, from a Chromium trace (Playwright's
``browser.start_tracing``, ``devtools.timeline`` categories): for each task of the renderer's main
thread over ``min_ms``, its duration and the events inside it by total self time (a JavaScript call
named by its function and script, Layout, Paint, style recalculation ...)."""

from __future__ import annotations

import json
from collections import defaultdict


def _main_thread(events: list[dict]) -> tuple[int, int] | None:
    for e in events:
        if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain":
            return e["pid"], e["tid"]
    return None


def _label(e: dict) -> str:
    data = e.get("args", {}).get("data", {}) or {}
    if e["name"] in ("FunctionCall", "EvaluateScript", "v8.callFunction"):
        url = str(data.get("url", "")).rsplit("/", 1)[-1].split("?")[0]
        return f"{e['name']} {data.get('functionName', '') or '?'} ({url}:{data.get('lineNumber', '')})"
    if e["name"] == "EventDispatch":
        return f"EventDispatch {data.get('type', '')}"
    return e["name"]


def summarise(path: str, min_ms: float = 50.0, top: int = 12) -> list[str]:
    """Lines describing the long tasks of the trace at ``path``."""
    with open(path) as f:
        raw = json.load(f)
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    main = _main_thread(events)
    if main is None:
        return ["no renderer main thread in the trace"]
    spans = sorted(
        (e for e in events if (e.get("pid"), e.get("tid")) == main and e.get("ph") == "X" and "dur" in e),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    roots, end = [], -1.0  # the outermost events: a task each (the trace's own task events need "toplevel")
    for e in spans:
        if e["ts"] >= end:
            roots.append(e)
            end = e["ts"] + e["dur"]
    tasks = [e for e in roots if e["dur"] >= min_ms * 1e3]
    lines = []
    for task in sorted(tasks, key=lambda e: -e["dur"])[:5]:
        start, end = task["ts"], task["ts"] + task["dur"]
        inner = [e for e in spans if start <= e["ts"] and e["ts"] + e["dur"] <= end and e is not task]
        self_time: dict[str, float] = defaultdict(float)
        stack: list[dict] = []
        for e in inner:  # self time: an event's duration less its children's
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                self_time[_label(stack[-1])] -= e["dur"]
            self_time[_label(e)] += e["dur"]
            stack.append(e)
        lines.append(f"task {task['dur'] / 1e3:.0f} ms at {(start - spans[0]['ts']) / 1e6:.1f} s:")
        for name, us in sorted(self_time.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"    {us / 1e3:8.1f} ms  {name}")
    return lines
