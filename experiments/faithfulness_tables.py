"""The faithfulness tables of the docs, from saved ``attnscope faithfulness`` results (one or more windows of
one data set):

    python -m attnscope.experiments.faithfulness_tables results/faithfulness-movies.json \\
        results/faithfulness-movies-20-39.json

prints the explainer x metric table as Markdown. Windows are pooled exactly: every column is the mean over
all examples (the n-weighted mean of the windows' means), and IOU F1 is the F1 of the pooled IOU precision
and recall, as each window computes it from its own means. The windows must share model, data set,
convention, counting rule and k (checked).
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="JSON files written by attnscope faithfulness --out")
    args = p.parse_args(argv)
    results = [json.loads(Path(path).read_text()) for path in args.results]
    sys.stdout.write(markdown(*pooled(results)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
