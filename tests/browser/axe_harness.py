"""axe-core in the browser tests: ``make axe`` installs the npm package into ``.cache/axe``;
``axe_violations(page)`` runs it on the page as it is and returns what it found (rule, impact,
elements)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = Path(os.environ.get("ATTNSCOPE_AXE", ROOT / ".cache/axe/node_modules/axe-core/axe.min.js"))

# Violations that come from Dash's own components, not from this project's markup: (rule id, a CSS
# selector fragment of the element) -> the upstream issue. Anything else fails the test.
DASH_OWN = {
    ("aria-hidden-focus", ".dash-dropdown"): "plotly/dash#3740 (dropdown menu: focusable content under aria-hidden)",
    ("aria-hidden-focus", "Select"): "plotly/dash#3673 (dropdown: aria-hidden wrapper holds a focusable input)",
    # Dash 4's Checklist/RadioItems (OptionsList, plotly/dash#3453): role=option elements wrap native inputs
    ("nested-interactive", "data-option-index"): "plotly/dash#3453 (OptionsList: role=option around a native input)",
}


def install_axe(page) -> None:
    """Inject axe-core into every document ``page`` opens (an init script: a CSP cannot block it)."""
    if not AXE_JS.exists():
        raise FileNotFoundError(f"{AXE_JS} is missing: run `make axe` (npm package axe-core into .cache/axe)")
    page.add_init_script(path=str(AXE_JS))


def axe_violations(page, impacts=("critical", "serious")) -> list[dict]:
    """axe-core's violations of ``impacts`` on the page now: ``{id, impact, help, targets}``."""
    found = page.evaluate(
        """async () => {
            const r = await axe.run(document, {resultTypes: ['violations']});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                targets: v.nodes.map(n => n.target.join(' ')), html: v.nodes.map(n => n.html.slice(0, 160))}));
        }"""
    )
    return [v for v in found if v["impact"] in impacts]


def split_dash_own(violations: list[dict]) -> tuple[list[dict], list[str]]:
    """``(ours, dash_own)``: the violations caused by this project's markup, and a line per node
    that is Dash's own (with its upstream issue)."""
    ours, theirs = [], []
    for v in violations:
        keep = []
        for target, html in zip(v["targets"], v["html"], strict=True):
            issue = next(
                (i for (rule, frag), i in DASH_OWN.items() if rule == v["id"] and (frag in target or frag in html)),
                None,
            )
            if issue:
                theirs.append(f"{v['id']} {target}: {issue}")
            else:
                keep.append(target)
        if keep:
            ours.append({**v, "targets": keep})
    return ours, theirs
