"""``attnscope circuit``: the head-level circuit of a clean/corrupted text pair (EAP or EAP-IG, the top
edges, faithfulness, exact re-check), or with ``--sender``/``--receiver`` one edge path-patched exactly,
or with ``--task induction|capitals|ioi`` the ``circuit`` job over a pair set (the same shards and
merge as ``POST /jobs``, in this process; capitals and ioi keep the items the model solves)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path


def _circuit(args, backend) -> tuple[dict, str]:
    from attnscope.pipelines.circuits.texts import circuit_of_texts

    res = circuit_of_texts(
        backend, args.clean, args.corrupted, args.metric, args.answer, args.wrong, args.method, args.steps, args.k,
        args.check, 5, threshold=args.threshold,
    )  # fmt: skip
    lines = [f"{res.method} circuit of {args.model}: {res.n_edges} edges in the graph, {res.n_kept} kept"]
    lines.append(f" (|score| >= {args.threshold:g})\n" if args.threshold is not None else "\n")
    lines.append(f"metric clean {res.m_clean:.4f}, corrupted {res.m_corrupted:.4f}, circuit {res.m_circuit:.4f} ")
    lines.append(f"(faithfulness {res.faithfulness:.3f})\n\n| sender | receiver | score |\n|---|---|---|\n")
    lines += [f"| {s} | {r} | {v:+.4f} |\n" for s, r, v in res.edges[:20]]
    lines.append("\nfaithfulness curve: " + ", ".join(f"k={k}: {f:.3f}" for k, f in res.curve) + "\n")
    if res.check:
        lines.append(f"exact re-check of the top {len(res.check)} edges: Spearman {res.check_spearman:.3f}\n")
    return dataclasses.asdict(res), "".join(lines)


def _edge(args, backend) -> tuple[dict, str]:
    from attnscope.pipelines.circuits.texts import edge_of_texts

    res = edge_of_texts(
        backend, args.clean, args.corrupted, args.sender, args.receiver, args.direction, args.metric, args.answer,
        args.wrong,
    )  # fmt: skip
    text = (
        f"{res.direction} {res.sender} -> {res.receiver}: exact effect {res.effect:+.4f}, EAP {res.eap:+.4f} "
        f"(metric clean {res.m_clean:.4f}, corrupted {res.m_corrupted:.4f})\n"
    )
    return dataclasses.asdict(res), text


def _job(args, backend) -> tuple[dict, str]:
    from attnscope.cli.common import OneModel, in_process
    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS

    register_job_kinds()
    kind = JOB_KINDS["circuit"]
    params = {"model": args.model, "task": args.task, "n": args.n, "seed": args.seed, "method": args.method,
              "steps": args.steps, "k": args.k, "threshold": args.threshold, "ablation": args.ablation, "top": args.top,
              "curve": [int(x) for x in args.curve.split(",")]}  # fmt: skip
    if args.task == "induction":
        params.update(half=args.half, bos=args.bos)
    else:
        params["metric"] = args.metric
    params = kind.resolve(kind.validate(params), OneModel(backend))  # capitals, ioi: the items it solves

    def progress(done, total):
        sys.stderr.write(f"\rpairs {done}/{total}")

    res = in_process("circuit", params, backend, progress)
    sys.stderr.write("\n")

    def iv(v):
        return f"{v['mean']:.4g} [{v['low']:.4g}, {v['high']:.4g}]" if v["low"] is not None else f"{v['mean']:.4g}"

    if args.task == "induction":
        bos = args.bos if args.bos is not None else getattr(backend.tokenizer, "bos_token_id", None)
        lines = [f"{res['method']} over {res['n']} {res['task']} pairs of {args.model} (first token {bos}, "]
    else:
        lines = [f"{res['method']} over {res['n']} {res['task']} pairs of {args.model} "]
        lines.append(f"(the {res['n']} of {res['generated']} items it solves, {res['metric']}, ")
    lines.append(f"{res['ablation']} ablation); ")
    lines.append("means with 95 % t intervals over the pairs\n\n")
    for key in ("m_clean", "m_corrupted", "m_empty", "faithfulness"):
        lines.append(f"- {key}: {iv(res[key])}\n")
    lines.append("\n| edges kept | faithfulness |\n|---|---|\n")
    lines += [f"| {c['k']} | {iv(c)} |\n" for c in res["curve"]]
    lines.append("\n| rank | sender | receiver | mean score | 95 % interval |\n|---|---|---|---|---|\n")
    lines += [
        f"| {r['rank']} | {r['sender']} | {r['receiver']} | {r['mean']:+.4g} | [{r['low']:+.4g}, {r['high']:+.4g}] |\n"
        for r in res["rows"][:20]
    ]
    return res, "".join(lines)


def add_parsers(sub) -> None:
    p = sub.add_parser("circuit", help="head-level circuit of a clean/corrupted pair (EAP, EAP-IG, path patching)")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--clean", default=None)
    p.add_argument("--corrupted", default=None, help="the same number of tokens as --clean")
    p.add_argument(
        "--task",
        default=None,
        choices=("induction", "capitals", "ioi"),
        help="the circuit job over a pair set (capitals, ioi: the items the model solves)",
    )
    p.add_argument("--n", type=int, default=20, help="--task induction: pairs (pair i: seed + i); ioi: items drawn")
    p.add_argument("--half", type=int, default=15, help="--task induction: tokens per copy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bos", type=int, default=None, help="--task induction: first token id (default: the bos)")
    p.add_argument("--ablation", default="corrupted", choices=("corrupted", "mean"))
    p.add_argument("--top", type=int, default=200, help="--task: edges in the table")
    p.add_argument("--curve", default="0,10,25,50,100,200,500", help="--task: edge counts of the curve")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--metric", default="answer_logit_diff", choices=("answer_logit_diff", "answer_prob", "loss"))
    p.add_argument("--answer", default=None, help="one token, e.g. ' Paris'")
    p.add_argument("--wrong", default=None, help="one token, e.g. ' Rome'")
    p.add_argument("--method", default="eap", choices=("eap", "eap-ig"))
    p.add_argument("--steps", type=int, default=5, help="EAP-IG steps (1..64)")
    p.add_argument("--k", type=int, default=50, help="edges kept")
    p.add_argument("--threshold", type=float, default=None, help="instead of --k: keep the edges with |score| >= this")
    p.add_argument("--check", type=int, default=0, help="top edges re-checked by exact patching (0 or 2..200)")
    p.add_argument("--sender", default=None, help="with --receiver: path-patch this one edge (E, a3.h4, m2)")
    p.add_argument("--receiver", default=None, help="a3.h4<q>, a3.g1<k>, m5 or logits")
    p.add_argument("--direction", default="noising", choices=("noising", "denoising"))
    p.add_argument("--device", default=None)
    p.add_argument("--out", default="", help="also write the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Input the model cannot take (different token lengths, an answer of several tokens, an unknown
    node) is a message on stderr and exit status 2."""
    from pydantic import ValidationError

    from attnscope.models.loading import load_model

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        if (args.sender is None) != (args.receiver is None):
            raise ValueError("give both --sender and --receiver to path-patch one edge, or neither for a circuit")
        if args.task is None and (args.clean is None or args.corrupted is None):
            raise ValueError("give --clean and --corrupted (one pair), or --task induction|capitals|ioi (a pair set)")
        backend = load_model(args.model, args.device)
        run = _job if args.task else _circuit if args.sender is None else _edge
        report, text = run(args, backend)
    except (ValueError, ValidationError) as exc:  # CircuitInputError, SitesUnavailableError, ParamsError
        sys.stderr.write(f"attnscope circuit: {exc}\n")
        return 2
    sys.stdout.write(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0
