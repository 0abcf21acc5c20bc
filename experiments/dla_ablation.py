"""Direct logit attribution beside the ablation effect, per head, on SmolLM2 factual prompts (#23
items 7 and the ">= 50 prompts" finding): for each prompt (the 20 countries of
``pipelines.circuits.tasks.CAPITALS`` in three one-token-answer templates, 60 prompts; the contrast is
the next country's capital in that table), each head's DLA of ``logit(answer) - logit(contrast)`` at
the last position (``pipelines.writes``) and the change of the same logit difference when that head
alone is zero-ablated (``pipelines.interventions.head_effects``), ranked against each other over the
270 heads with Spearman's rho, two ways:

- ``signed``: DLA against ``-effect``. A head that writes the answer directly should, ablated, lower
  the difference, so a direct writer and a direct suppressor sit at the two ends alike. This is the
  definition the head-effects route answers as ``dla_agreement``
  (``pipelines.writes.beside_effects.dla_agreement``).
- ``abs``: ``|DLA|`` against ``|effect|``: whether the heads that matter directly are the ones that
  matter at all, whatever the sign (it counts a head whose direct write is compensated downstream as
  agreement, so it is reported beside the signed one, not instead).

Over the prompts: each definition's mean rho with its bootstrap (BCa) interval.

    .venv/bin/python -m attnscope.experiments.dla_ablation [--prompts 60] [--method zero] [--top 5] [--out OUT]

Prints Markdown (a row per prompt and the summary); ``--out OUT`` also writes every prompt's values:
``OUT.json`` (per prompt: both rhos, the clean logit difference and the DLA and effect grids
``[layer][head]``; the summary intervals) and ``OUT-examples.csv`` (long format: one row per prompt
and head).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from attnscope.analysis.stats import bootstrap_interval
from attnscope.pipelines.circuits.tasks import CAPITALS
from attnscope.pipelines.interventions.apply import head_effects
from attnscope.pipelines.interventions.metrics import MetricSpec
from attnscope.pipelines.writes.beside_effects import dla_agreement
from attnscope.pipelines.writes.readouts import single_token_id
from attnscope.pipelines.writes.recorded import attribute, record_writes

TEMPLATES = ("The capital of {} is", "The capital city of {} is", "{}'s capital is")


def facts() -> list[tuple[str, str, str]]:
    """``(prompt, answer, contrast)``: every template over ``CAPITALS`` (60 prompts), templates outermost;
    the contrast is the next country's capital in the table (single tokens of SmolLM2's tokenizer)."""
    countries = list(CAPITALS)
    return [
        (t.format(c), " " + CAPITALS[c], " " + CAPITALS[countries[(i + 1) % len(countries)]])
        for t in TEMPLATES
        for i, c in enumerate(countries)
    ]


FACTS = facts()


def compare(lm, prompt: str, answer: str, contrast: str, method: str) -> dict:
    """DLA ``[layer, head]``, ablation effect ``[layer, head]``, the clean logit difference and the two
    rank correlations (``rho``: DLA vs -effect; ``rho_abs``: |DLA| vs |effect|)."""
    inp = lm.encode_text(prompt)
    a, b = single_token_id(lm, answer), single_token_id(lm, contrast)
    pos = len(inp) - 1
    att = attribute(record_writes(lm, inp), pos, a, b, split=False)
    dla = att.heads
    metric = MetricSpec("answer_logit_diff", (pos,), (a, b))
    eff = head_effects(lm, inp, method=method, metric=metric)["effect"]
    agreement, _ = dla_agreement(dla, eff, metric.kind)  # signed: Spearman of DLA with -effect
    rho_abs, p_abs = spearmanr(np.abs(dla).ravel(), np.abs(eff).ravel())
    return {
        "dla": dla, "effect": eff, "logit_diff": float(att.logit),
        "rho": agreement.rho, "p": agreement.p, "rho_abs": float(rho_abs), "p_abs": float(p_abs),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=len(FACTS), help=f"how many of the {len(FACTS)} facts")
    ap.add_argument("--method", default="zero", choices=("zero", "mean"))
    ap.add_argument("--top", type=int, default=5, help="heads of largest DLA listed for the first prompt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="", help="OUT.json and OUT-examples.csv with every prompt's values")
    ap.add_argument("--summary", default="", help="print the summary of a written OUT.json (no model run)")
    args = ap.parse_args()
    if args.summary:
        print(summarise(json.loads(Path(args.summary).read_text())))
        return
    torch.set_num_threads(args.threads)
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", "cpu", capture="lazy")
    rows = []
    print("| prompt | answer - contrast | clean diff | rho signed (DLA vs -effect) | rho abs (|DLA| vs |effect|) |")
    print("|---|---|---|---|---|")
    for k, (prompt, answer, contrast) in enumerate(FACTS[: args.prompts]):
        r = compare(lm, prompt, answer, contrast, args.method)
        rows.append(r)
        print(
            f"| {prompt} | `{answer}` - `{contrast}` | {r['logit_diff']:+.2f} | {r['rho']:+.3f} | "
            f"{r['rho_abs']:+.3f} |",
            flush=True,
        )
        if k == 0:
            first = r
    order = np.argsort(-first["dla"], axis=None)[: args.top]
    print(f"\nHeads of largest DLA on the first prompt ({args.method} ablation effect beside):\n")
    print("| head | DLA | ablation effect | ablation rank (of 270, most negative first) |")
    print("|---|---|---|---|")
    eff_rank = np.argsort(np.argsort(first["effect"], axis=None))
    for o in order:
        layer, head = np.unravel_index(o, first["dla"].shape)
        print(
            f"| L{layer}H{head} | {first['dla'][layer, head]:+.3f} | {first['effect'][layer, head]:+.3f} | "
            f"{int(eff_rank[o]) + 1} |"
        )
    summary = {"method": args.method}
    right = sum(r["logit_diff"] > 0 for r in rows)
    print(f"\nThe model prefers the answer to the contrast on {right} of {len(rows)} prompts.")
    for key, what in (("rho", "signed, DLA vs -effect"), ("rho_abs", "abs, |DLA| vs |effect|")):
        iv = bootstrap_interval([r[key] for r in rows])
        summary[key] = {"mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n}
        print(
            f"Mean rho ({what}) over {iv.n} prompts: {iv.mean:+.3f}, "
            f"95 % BCa bootstrap interval [{iv.low:+.3f}, {iv.high:+.3f}]"
        )
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        per_prompt = [
            {"prompt": q, "answer": a, "contrast": b, "logit_diff": r["logit_diff"], "rho": r["rho"], "p": r["p"],
             "rho_abs": r["rho_abs"], "p_abs": r["p_abs"], "dla": r["dla"].tolist(), "effect": r["effect"].tolist()}
            for (q, a, b), r in zip(FACTS[: args.prompts], rows)
        ]  # fmt: skip
        out.with_suffix(".json").write_text(json.dumps({**summary, "prompts": per_prompt}, indent=1) + "\n")
        with out.with_name(out.name + "-examples.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["prompt", "head", "dla", "effect"])
            writer.writeheader()
            writer.writerows(prompt_rows(per_prompt))


def summarise(doc: dict) -> str:
    """Markdown summary of a written ``OUT.json``: each definition's mean rho with its BCa interval over
    the prompts and over the countries (each country's mean over its templates: the prompts of one
    country are not independent), the mean per template, and how often the head of largest DLA is the
    head whose ablation lowers the difference most, with that head's median ablation rank."""
    prompts = doc["prompts"]
    by_country: dict[str, list[dict]] = {}
    by_template: dict[str, list[dict]] = {}
    for p in prompts:
        by_country.setdefault(p["answer"], []).append(p)
        by_template.setdefault(_template_of(p["prompt"]), []).append(p)
    lines = [f"{len(prompts)} prompts, {len(by_country)} countries, {sum(p['logit_diff'] > 0 for p in prompts)} "
             "with the answer above the contrast\n"]  # fmt: skip
    for key, what in (("rho", "signed, DLA vs -effect"), ("rho_abs", "abs, |DLA| vs |effect|")):
        over_p = bootstrap_interval([p[key] for p in prompts])
        over_c = bootstrap_interval([float(np.mean([p[key] for p in ps])) for ps in by_country.values()])
        per_t = ", ".join(f"{t!r} {np.mean([p[key] for p in ps]):+.3f}" for t, ps in by_template.items())
        lines.append(
            f"- rho {what}: mean {over_p.mean:+.3f}; 95 % BCa over prompts [{over_p.low:+.3f}, {over_p.high:+.3f}], "
            f"over countries [{over_c.low:+.3f}, {over_c.high:+.3f}]; per template: {per_t}"
        )
    ranks, same = [], 0
    for p in prompts:
        dla, eff = np.asarray(p["dla"]), np.asarray(p["effect"])
        top = np.argmax(dla)
        same += int(top == np.argmin(eff))
        ranks.append(int(np.argsort(np.argsort(eff, axis=None))[top]) + 1)
    lines.append(
        f"- the head of largest DLA is the head whose ablation lowers the difference most on {same} of "
        f"{len(prompts)} prompts; its ablation rank: median {np.median(ranks):.0f}, quartiles "
        f"{np.percentile(ranks, 25):.0f}-{np.percentile(ranks, 75):.1f} (of 270)"
    )
    return "\n".join(lines)


def _template_of(prompt: str) -> str:
    for t in TEMPLATES:
        head, tail = t.split("{}")
        if prompt.startswith(head) and prompt.endswith(tail):
            return t
    return "?"


def prompt_rows(per_prompt: list[dict]) -> list[dict]:
    """The long-format table of the prompts' grids: one row per prompt and head (its DLA and effect)."""
    return [
        {"prompt": r["prompt"], "head": f"L{layer}H{head}", "dla": d, "effect": e}
        for r in per_prompt
        for layer, (d_row, e_row) in enumerate(zip(r["dla"], r["effect"]))
        for head, (d, e) in enumerate(zip(d_row, e_row))
    ]


if __name__ == "__main__":
    main()
