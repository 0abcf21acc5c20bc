"""The interventions page's controls as API bodies (pure: strings in, ``InterventionCreate`` /
``ResidualPatchingCreate`` dicts out, each problem named for the user), the knockout's edge list
(``"5>1, 6>2"``: query 5 no longer reads key 1) and the later layer the maps show."""

from __future__ import annotations

import re

from attnscope.frontend.intervention_figures import parse_heads

KINDS = ("ablate", "knockout", "patch_heads", "patch_residual")
KIND_LABELS = {
    "ablate": "ablate heads",
    "knockout": "knock out query → key edges",
    "patch_heads": "patch heads from the corrupted text",
    "patch_residual": "patch the residual stream from the corrupted text",
}
METRICS = ("prob", "logit_diff", "flip", "cosine", "loss", "answer_logit_diff")
EDGE = re.compile(r"^\s*(\d+)\s*(?:>|->|→)\s*(\d+)\s*$")


def parse_ints(text: str | None, what: str) -> tuple[list[int], list[str]]:
    """``"1, 3"`` -> ``([1, 3], problems)``: whole numbers >= 0, in order, without repeats."""
    out, problems = [], []
    for part in (text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            problems.append(f"{part!r} is not a {what} (a whole number from 0)")
        elif int(part) not in out:
            out.append(int(part))
    return out, problems


def parse_edges(text: str | None) -> tuple[list[list[int]], list[str]]:
    """``"5>1, 6->2"`` -> ``([[5, 1], [6, 2]], problems)``: ``[query, key]`` pairs, without repeats."""
    edges, problems = [], []
    for part in (text or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        m = EDGE.match(part)
        if m is None:
            problems.append(f"{part.strip()!r} is not an edge like 5>1 (query 5 -> key 1)")
            continue
        pair = [int(m[1]), int(m[2])]
        if pair not in edges:
            edges.append(pair)
    return edges, problems


def format_edges(edges: list[list[int]]) -> str:
    return ", ".join(f"{q}>{k}" for q, k in edges)


def toggle_edge(text: str | None, query: int, key: int) -> str:
    """The edge list with ``query>key`` added, or taken out when it was there (bad parts dropped)."""
    edges, _ = parse_edges(text)
    pair = [int(query), int(key)]
    edges = [e for e in edges if e != pair] if pair in edges else [*edges, pair]
    return format_edges(edges)


def metric_fields(metric: str | None, answer_a: str | None, answer_b: str | None, corrupted: str | None, direction):
    """``(fields, problems)``: the metric, answers, corrupted text and direction of a request body
    (``metric`` None: the task's default). Answers keep their leading space (``' Paris'``)."""
    fields: dict = {}
    problems = []
    if metric:
        fields["metric"] = metric
    if metric == "answer_logit_diff":
        if not answer_a or not answer_b:
            problems.append("answer_logit_diff needs two answer tokens: the correct one and the wrong one")
        else:
            fields["answers"] = [answer_a, answer_b]
    if corrupted and corrupted.strip():
        fields["corrupted"] = corrupted
        fields["direction"] = direction or "noising"
    return fields, problems


def intervention_item(
    kind: str, heads: str | None, method: str | None, edges: str | None, layers: str | None, rlayer, rpos: str | None
) -> tuple[dict | None, list[str]]:
    """``(item, problems)``: one item of ``InterventionCreate.interventions`` from the page's fields."""
    if kind in ("ablate", "patch_heads"):
        pairs, problems = parse_heads(heads)
        if not pairs and not problems:
            problems = ["No heads yet: type some (L0H1, L3H2) or click cells of the effect grid."]
        if problems:
            return None, problems
        if kind == "ablate":
            return {"kind": "ablate", "heads": pairs, "method": method or "zero"}, []
        return {"kind": "patch_heads", "heads": pairs}, []
    if kind == "knockout":
        pairs, problems = parse_edges(edges)
        lays, more = parse_ints(layers, "layer")
        problems += more
        if not pairs and not problems:
            problems.append("No edges yet: type some (5>1) or click cells of the map before the intervention.")
        if not lays and not problems:
            problems.append("Name the layer(s) whose edges are cut, e.g. 1 or 1, 2.")
        return (None, problems) if problems else ({"kind": "knockout", "layers": lays, "edges": pairs}, [])
    if kind == "patch_residual":
        positions, problems = parse_ints(rpos, "position")
        if rlayer is None:
            problems.append("Name the layer after which the residual stream is patched.")
        if not positions and not problems:
            problems.append("Name the positions to patch, e.g. 2 or 2, 3.")
        return (
            (None, problems)
            if problems
            else ({"kind": "patch_residual", "layer": int(rlayer), "positions": positions}, [])
        )
    return None, [f"unknown intervention kind {kind!r}: use one of {', '.join(KINDS)}"]


def touched_layer(item: dict) -> int:
    """The first layer an intervention item changes (its effect shows from there on)."""
    if item["kind"] in ("ablate", "patch_heads"):
        return min(layer for layer, _ in item["heads"])
    if item["kind"] == "knockout":
        return min(item["layers"])
    return item["layer"]


def view_layer(current: int | None, touched: int, n_layers: int) -> int:
    """The layer whose maps show the effect: the chosen one when it is at or after the touched layer
    (earlier layers cannot change), else the next layer after it (the last one if none follows)."""
    if current is not None and touched <= current < n_layers:
        return int(current)
    return min(touched + 1, n_layers - 1)


__all__ = [
    "KINDS",
    "KIND_LABELS",
    "METRICS",
    "format_edges",
    "intervention_item",
    "metric_fields",
    "parse_edges",
    "parse_ints",
    "toggle_edge",
    "touched_layer",
    "view_layer",
]
