"""``attnscope circuit``: the head-level circuit of a clean/corrupted text pair (EAP or EAP-IG, the top
edges, faithfulness, exact re-check), or with ``--sender``/``--receiver`` one edge path-patched exactly."""

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
        args.check, 5,
    )  # fmt: skip
    lines = [f"{res.method} circuit of {args.model}: {res.n_edges} edges in the graph, {len(res.edges)} kept\n"]
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


def add_parsers(sub) -> None:
    p = sub.add_parser("circuit", help="head-level circuit of a clean/corrupted pair (EAP, EAP-IG, path patching)")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--clean", required=True)
    p.add_argument("--corrupted", required=True, help="the same number of tokens as --clean")
    p.add_argument("--metric", default="answer_logit_diff", choices=("answer_logit_diff", "answer_prob", "loss"))
    p.add_argument("--answer", default=None, help="one token, e.g. ' Paris'")
    p.add_argument("--wrong", default=None, help="one token, e.g. ' Rome'")
    p.add_argument("--method", default="eap", choices=("eap", "eap-ig"))
    p.add_argument("--steps", type=int, default=5, help="EAP-IG steps (1..64)")
    p.add_argument("--k", type=int, default=50, help="edges kept")
    p.add_argument("--check", type=int, default=0, help="top edges re-checked by exact patching (0 or 2..200)")
    p.add_argument("--sender", default=None, help="with --receiver: path-patch this one edge (E, a3.h4, m2)")
    p.add_argument("--receiver", default=None, help="a3.h4<q>, a3.g1<k>, m5 or logits")
    p.add_argument("--direction", default="noising", choices=("noising", "denoising"))
    p.add_argument("--device", default=None)
    p.add_argument("--out", default="", help="also write the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Input the model cannot take (different token lengths, an answer of several tokens, an unknown
    node) is a message on stderr and exit status 2."""
    from attnscope.models.loading import load_model

    try:
        if (args.sender is None) != (args.receiver is None):
            raise ValueError("give both --sender and --receiver to path-patch one edge, or neither for a circuit")
        backend = load_model(args.model, args.device)
        report, text = (_circuit if args.sender is None else _edge)(args, backend)
    except ValueError as exc:  # CircuitInputError, SitesUnavailableError
        sys.stderr.write(f"attnscope circuit: {exc}\n")
        return 2
    sys.stdout.write(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0
