"""``attnscope lens | attribute | graph``: what a causal LM's layers and heads write toward its next token
(``lens`` and ``attribute`` also read a classifier's class logits)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _write(report: dict, text: str, out: str) -> None:
    sys.stdout.write(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(report, indent=1) + "\n")


def run_lens(args: argparse.Namespace) -> int:
    """The logit lens of one position (default the last) of ``--text``: per layer the top tokens and the
    target's probability and rank, as Markdown (and JSON with ``--out``)."""
    from attnscope.models.loading import load_model
    from attnscope.pipelines.writes.readouts import lens_of_run

    backend = load_model(args.model, args.device)
    inp = backend.encode_text(args.text)
    pos = len(inp) - 1 if args.position is None else args.position
    asked = args.position is not None
    grid = lens_of_run(backend, inp.token_ids, pos, pos + 1, args.k, args.target, positions_asked=asked)
    dec = backend.tokenizer.decode if grid.labels is None else lambda c: grid.labels[c[0]]
    target = dec([grid.target_ids[0]])
    pos = grid.positions[0]
    layers = []
    if grid.labels is None:
        lines = [f"logit lens of {args.model} at position {pos} ({inp.tokens[pos]!r}), target {target!r}\n\n"]
    else:
        lines = [f"class lens of {args.model} (its head reads positions {list(grid.pooled)}), class {target!r}\n\n"]
    unit, read = ("token", "tokens") if grid.labels is None else ("class", "classes")
    lines.append(f"| layer | top {read} | target prob | target rank |\n|---|---|---|---|\n")
    for layer in range(grid.layers):
        c = grid.cell(layer, 0)
        top = [(int(t), dec([int(t)]), float(p)) for t, p in zip(grid.rows.top_ids[c], grid.rows.top_probs[c])]
        row = {
            "layer": layer,
            "top": [{"token_id": t, "token": s, "prob": p} for t, s, p in top],
            "target_prob": float(grid.rows.target_prob[c]),
            "target_rank": int(grid.rows.target_rank[c]),
        }
        layers.append(row)
        shown = ", ".join(f"{s!r} {p:.3f}" for _, s, p in top)
        lines.append(f"| {layer} | {shown} | {row['target_prob']:.4f} | {row['target_rank']} |\n")
    first = grid.first_top_layer(0)
    lines.append(f"\n{target!r} is the lens's top {unit} from layer {first} on (layer 0: the embedding)\n")
    report = {"model": args.model, "text": args.text, "position": pos, "target": target}
    report.update(readout="token" if grid.labels is None else "class", pooled=grid.pooled and list(grid.pooled))
    report.update(target_id=grid.target_ids[0])
    report.update(first_top_layer=first, layers=layers)
    _write(report, "".join(lines), args.out)
    return 0


def run_attribute(args: argparse.Namespace) -> int:
    """Direct logit attribution of the next token at one position of ``--text``: the biggest heads
    and MLPs, each head split over its source tokens, as Markdown (and JSON with ``--out``)."""
    import numpy as np

    from attnscope.models.loading import load_model
    from attnscope.pipelines.writes.readouts import attribution_of_run

    backend = load_model(args.model, args.device)
    inp = backend.encode_text(args.text)
    res = attribution_of_run(backend, inp.token_ids, args.position, args.target, args.contrast, None, args.top)
    att = res.attribution
    dec = backend.tokenizer.decode if res.labels is None else lambda c: res.labels[c[0]]
    pos = res.position
    what = repr(dec([res.target_id])) + ("" if res.contrast_id is None else f" - {dec([res.contrast_id])!r}")
    where = f"position {pos}" if res.pooled is None else f"the pooled positions {list(res.pooled)}"
    lines = [f"direct logit attribution of {what} at {where} of {args.model}\n\n"]
    lines.append(f"logit {att.logit:.4f} = embed {att.embed:.4f} + heads {att.heads.sum():.4f} + attention biases ")
    if att.norm_bias is not None:
        lines.append(f"{att.attn_bias.sum():.4f} + block norm biases {att.norm_bias.sum():.4f} + ")
        lines.append(f"MLPs {att.mlp.sum():.4f} + biases {att.bias:.4f} ")
    else:
        lines.append(f"{att.attn_bias.sum():.4f} + MLPs {att.mlp.sum():.4f} + biases {att.bias:.4f} ")
    lines.append(f"(residual error {att.residual_error:.2e}, frozen norm scale {att.scale:.4f})\n\n")
    lines.append("| head | part | top sources |\n|---|---|---|\n")
    splits = []
    for (layer, head), row in zip(res.split_heads, [] if res.splits is None else res.splits):
        top = np.argsort(-np.abs(row))[:3]
        shown = ", ".join(f"{j}:{inp.tokens[j]!r} {row[j]:+.3f}" for j in top)
        lines.append(f"| L{layer}H{head} | {att.heads[layer, head]:+.4f} | {shown} |\n")
        splits.append({"layer": layer, "head": head, "part": float(att.heads[layer, head]), "sources": row.tolist()})
    mlp_top = np.argsort(-np.abs(att.mlp))[:5]
    lines.append("\n| MLP | part |\n|---|---|\n" + "".join(f"| {i} | {att.mlp[i]:+.4f} |\n" for i in mlp_top))
    report = {
        "model": args.model,
        "text": args.text,
        "position": pos,
        "readout": "token" if res.labels is None else "class",
        "pooled": res.pooled and list(res.pooled),
        "target_id": res.target_id,
        "target": dec([res.target_id]),
        "contrast_id": res.contrast_id,
        "logit": att.logit,
        "embed": att.embed,
        "heads": att.heads.tolist(),
        "attn_bias": att.attn_bias.tolist(),
        "mlp": att.mlp.tolist(),
        "bias": att.bias,
        "norm_bias": None if att.norm_bias is None else att.norm_bias.tolist(),
        "residual_error": att.residual_error,
        "splits": splits,
    }
    _write(report, "".join(lines), args.out)
    return 0


def graph_request(args: argparse.Namespace):
    """The command's options as the graph route's body (``GraphCreate``): the same bounds, the same
    messages (a ``pydantic.ValidationError`` past them)."""
    from attnscope.server.schemas import GraphCreate

    return GraphCreate(position=args.position, threshold=args.threshold, max_nodes=args.max_nodes, target=args.target)


def run_graph(args: argparse.Namespace) -> int:
    """The contribution graph of one prediction of ``--text`` (default the last position) as JSON: the
    fields of ``POST /runs/{id}/graph`` (nodes, edges with their heads' shares, the logit's direct
    parts), on stdout, or in ``--out`` with a one-line summary on stdout."""
    from attnscope.models.loading import load_model
    from attnscope.pipelines.writes.graph_run import prediction_graph

    body = graph_request(args)
    backend = load_model(args.model, args.device)
    inp = backend.encode_text(args.text)
    pg = prediction_graph(backend, inp.token_ids, body.position, body.threshold, body.max_nodes, body.target)
    g, att = pg.result.graph, pg.attribution
    attention, mlp = pg.block_parts()
    report = {
        "model": args.model,
        "text": args.text,
        "position": pg.result.position,
        "threshold": pg.result.threshold,
        "max_nodes": pg.result.max_nodes,
        "target_id": pg.target_id,
        "target": backend.tokenizer.decode([pg.target_id]),
        "nodes": [{"kind": k, "layer": la, "position": p, "token": inp.tokens[p]} for k, la, p in pg.nodes],
        "edges": [
            {
                "source": pg.index[s],
                "target": pg.index[t],
                "kind": kind,
                "weight": w,
                "heads": [float(x) for x in g.heads[(s, t)]] if kind == "attention" else None,
            }
            for s, t, kind, w in g.edges
        ],
        "logit": att.logit,
        "bias": att.bias,
        "embed": att.embed,
        "attention": attention,
        "mlp": mlp,
    }
    if not args.out:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
        return 0
    n_att = sum(e["kind"] == "attention" for e in report["edges"])
    summary = (
        f"contribution graph of {report['target']!r} at position {pg.result.position} of {args.model} "
        f"(threshold {pg.result.threshold}): {len(pg.nodes)} nodes, {len(g.edges)} edges ({n_att} attention)\n"
    )
    _write(report, summary, args.out)
    return 0


def add_parsers(sub) -> None:
    """``lens``, ``attribute`` and ``graph``."""
    for name, helptext in (
        (
            "lens",
            "logit lens: each layer's residual stream at one position read through the unembedding "
            "(a classifier: its class lens)",
        ),
        (
            "attribute",
            "direct logit attribution of the next token (a classifier: a class) into heads (split over "
            "sources) and MLPs",
        ),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--model", default="smollm2")
        p.add_argument("--text", required=True)
        p.add_argument(
            "--position", type=int, default=None, help="zero-based; default the last position (classifiers: none)"
        )
        p.add_argument(
            "--target",
            default=None,
            help="one token (e.g. ' Paris'); default the model's own next token. A classifier: a class label",
        )
        p.add_argument("--device", default=None)
        p.add_argument("--out", default="", help="also write the report as JSON")
        if name == "lens":
            p.add_argument("--k", type=int, default=None, help="top tokens per layer, default 5 (a classifier: all)")
        else:
            p.add_argument(
                "--contrast", default=None, help="one token (a class label): attribute logit(target) - logit(contrast)"
            )
            p.add_argument("--top", type=int, default=8, help="heads split over their sources")
    p = sub.add_parser("graph", help="the contribution graph of one prediction (Ferrando and Voita 2024) as JSON")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--text", required=True)
    p.add_argument("--position", type=int, default=None, help="zero-based; default the last position")
    p.add_argument("--threshold", type=float, default=0.04, help="keep edges of importance >= this, in [0, 1]")
    p.add_argument("--max-nodes", type=int, default=2000, help="refuse a larger graph (at most 10,000)")
    p.add_argument("--target", default=None, help="one token whose logit's direct parts are given; default the next")
    p.add_argument("--device", default=None)
    p.add_argument("--out", default="", help="write the JSON here (stdout: a summary) instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; input the model cannot take (an answer of several tokens, a position out of
    range, a model without an unembedding) is a message on stderr and exit status 2."""
    from pydantic import ValidationError

    runners = {"lens": run_lens, "attribute": run_attribute, "graph": run_graph}
    try:
        return runners[args.command](args)
    except ValidationError as exc:  # a graph option past the route's bounds
        reasons = "; ".join(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        sys.stderr.write(f"attnscope {args.command}: {reasons}\n")
        return 2
    except ValueError as exc:  # WritesInputError, SitesUnavailableError, SiteOutOfRangeError, GraphTooLargeError
        sys.stderr.write(f"attnscope {args.command}: {exc}\n")
        return 2
