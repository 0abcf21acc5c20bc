"""The faithfulness tables of the docs, from saved ``attnscope faithfulness`` results (one or more windows of
one data set):

    python -m attnscope.experiments.faithfulness_tables results/faithfulness-movies.json \\
        results/faithfulness-movies-20-39.json

prints the explainer x metric table as Markdown and, when the files keep their per-example values
(``per_example``, written since the tables gained intervals), the means with their 95 % bootstrap intervals
over the pooled examples and each explainer minus random on the same examples with its verdict
(``better``/``worse`` only when the paired interval excludes 0, else ``no difference``). Windows are pooled
exactly: every column is the mean over all examples (the n-weighted mean of the windows' means), and IOU F1
is the F1 of the pooled IOU precision and recall, as each window computes it from its own means. The windows
must share model, data set, convention, counting rule and k (checked).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

COLUMNS = (
    ("comprehensiveness", "comprehensiveness ↑"),
    ("sufficiency", "sufficiency ↓"),
    ("aopc_comprehensiveness", "AOPC comp. ↑"),
    ("aopc_sufficiency", "AOPC suff. ↓"),
    ("comprehensiveness_kl", "comp. KL ↑"),
    ("token_f1", "token F1 ↑"),
    ("iou_f1", "IOU F1 ↑"),
    ("auprc", "AUPRC ↑"),
    ("seconds_per_example", "explainer s / example"),
)
SAME = ("model", "dataset", "convention", "count", "k", "removal")


def pooled(results: list[dict]) -> tuple[dict, list[dict]]:
    """(what the windows share plus n, accuracy and truncation pooled; one row per explainer, pooled)."""
    first = results[0]
    for other in results[1:]:
        diff = [key for key in SAME if other.get(key) != first.get(key)]
        if diff:
            raise ValueError(f"the windows differ in {', '.join(diff)}: pool only runs of one configuration")
    n_total = sum(r["n"] for r in results)
    head = {key: first.get(key) for key in SAME}
    head["n"] = n_total
    head["accuracy"] = sum(r["accuracy"] * r["n"] for r in results) / n_total
    truncation = [r.get("truncation") or {} for r in results]
    head["truncation"] = {
        key: sum(t.get(key, 0) for t in truncation)
        for key in ("examples_truncated", "tokens_cut", "human_tokens", "human_tokens_lost")
    }
    rows = []
    for explainer in [row["explainer"] for row in first["rows"]]:
        parts = [(r["n"], next(row for row in r["rows"] if row["explainer"] == explainer)) for r in results]
        n = sum(w for w, _ in parts)
        row = {"explainer": explainer, "n": n}
        for key in {k for _, p in parts for k in p} - {"explainer", "n"}:
            values = [(w, p[key]) for w, p in parts if isinstance(p.get(key), int | float)]
            if values and len(values) == len(parts):
                row[key] = sum(w * v for w, v in values) / n
        if "iou_precision" in row and "iou_recall" in row:
            p, r = row["iou_precision"], row["iou_recall"]
            row["iou_f1"] = 2 * p * r / (p + r) if p + r > 0 else 0.0
        rows.append(row)
    return head, rows


def markdown(head: dict, rows: list[dict]) -> str:
    cols = [(key, title) for key, title in COLUMNS if any(key in row for row in rows)]
    lines = [
        "| explainer | " + " | ".join(title for _, title in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for row in rows:
        name = "random (baseline)" if row["explainer"] == "random" else row["explainer"]
        cells = []
        for key, _ in cols:
            value = row.get(key)
            cells.append("–" if value is None else f"{value:.1f}" if key == "seconds_per_example" else f"{value:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    t = head["truncation"]
    lines += [
        "",
        f"{head['model']} on {head['dataset']}: n = {head['n']}, convention {head['convention']}, counting rule "
        f"{head['count']}, k = {head['k']}, removal {head['removal']}; classifier accuracy {head['accuracy']:.3f}; "
        f"{t['examples_truncated']} examples truncated, {t['tokens_cut']} tokens cut, "
        f"{t['human_tokens_lost']} of {t['human_tokens']} human-rationale tokens lost.",
    ]
    return "\n".join(lines)


INTERVAL_COLUMNS = (
    ("comprehensiveness", "comprehensiveness ↑"),
    ("sufficiency", "sufficiency ↓"),
    ("aopc_comprehensiveness", "AOPC comp. ↑"),
    ("aopc_sufficiency", "AOPC suff. ↓"),
)


def pooled_examples(results: list[dict]) -> dict | None:
    """The windows' per-example values joined in window order (None unless every window kept them)."""
    if not all(r.get("per_example") for r in results):
        return None
    values: dict = {}
    for r in results:
        for e, by_metric in r["per_example"]["values"].items():
            for m, vs in by_metric.items():
                values.setdefault(e, {}).setdefault(m, []).extend(vs)
    return values


def verdict(iv: dict | None, better: str) -> str:
    """How an explainer compares with random on one metric: only a paired interval that excludes 0 is a
    difference (``better``: "higher" or "lower" is the faithful direction)."""
    if iv is None or iv["low"] is None:
        return "no interval"
    if iv["low"] <= 0 <= iv["high"]:
        return "no difference"
    return "better" if (iv["low"] > 0) == (better == "higher") else "worse"


def interval_markdown(results: list[dict]) -> str | None:
    """The means with their 95 % bootstrap intervals over the pooled examples, then each explainer minus
    random on the same examples with the verdict (None when a window kept no per-example values)."""
    from attnscope.pipelines.faithfulness_uncertainty import interval_table

    values = pooled_examples(results)
    if values is None:
        return None
    explainers = [row["explainer"] for row in results[0]["rows"]]
    metrics = [m for m, _ in INTERVAL_COLUMNS if all(m in values[e] for e in explainers)]
    titles = [t for m, t in INTERVAL_COLUMNS if m in metrics]

    def cell(iv: dict | None, sign: str = "") -> str:
        if iv is None:
            return "–"
        if iv["low"] is None:
            return f"{iv['mean']:{sign}.3f}"
        return f"{iv['mean']:{sign}.3f} [{iv['low']:{sign}.3f}, {iv['high']:{sign}.3f}]"

    means = interval_table(values, explainers, metrics, None)
    n = max((iv["n"] for e in means for iv in means[e].values() if iv), default=0)
    lines = [f"95 % BCa bootstrap intervals over the {n} examples:", ""]
    lines += ["| explainer | " + " | ".join(titles) + " |", "|---|" + "---|" * len(titles)]
    lines += [f"| {e} | " + " | ".join(cell(means[e][m]) for m in metrics) + " |" for e in explainers]
    if "random" in explainers:
        diffs = interval_table(values, explainers, metrics, "random")
        better = {m: "lower" if "sufficiency" in m else "higher" for m in metrics}
        lines += ["", "Explainer − random on the same examples (paired), 95 % BCa interval and verdict:", ""]
        lines += ["| explainer | " + " | ".join(titles) + " |", "|---|" + "---|" * len(titles)]
        for e in explainers:
            if e != "random":
                cells = [f"{cell(diffs[e][m], '+')} {verdict(diffs[e][m], better[m])}" for m in metrics]
                lines.append(f"| {e} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="JSON files written by attnscope faithfulness --out")
    args = p.parse_args(argv)
    results = [json.loads(Path(path).read_text()) for path in args.results]
    sys.stdout.write(markdown(*pooled(results)) + "\n")
    extra = interval_markdown(results)
    if extra is not None:
        sys.stdout.write("\n" + extra + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
