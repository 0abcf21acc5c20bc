"""attnscope's side of a peer comparison: one quantity, measured once in this fresh process
(``common.measure``), its answer saved for the driver to check against the peer's.

    .venv/bin/python bench/peers/attnscope_side.py TASK IDS.json OUT_DIR [--threads 1] [--target ID]
        [--position P]

TASK:
- ``maps``: the lazy run (``backend.run``: SDPA forward with queries and keys recorded, predictions)
  plus every head's map ``[query, key]`` computed once (``AttentionMaps.head``; ``GET
  /runs/{id}/attention?head=H`` serves one) and dropped, as a user paging through all of them would; then,
  untimed, the stack written to ``OUT_DIR/maps.npy`` layer by layer for the check. Head by head, not
  a layer at a time: a layer's ``[head, query, key]`` block is 9 maps alive at once (37.7 MB at 1,024
  tokens, 604 MB at 4,096), a head's is one, and the time is the same (2.3-2.7 s CPU both ways at
  1,024 tokens, alternated).
- ``lens``: the recorded run (``record_writes``: the transformer body with the blocks' writes and the
  queries and keys recorded; no prediction, whose unembedding of every position a recording never reads)
  plus the logit lens of one position at every layer (``lens_grid``, top 10 and the target's
  probability): what ``POST /runs/{id}/lens`` computes.
- ``dla``: the recorded run plus the direct logit attribution of ``--target`` at ``--position``,
  per head (``attribute(..., split=False)``).
- ``eraser`` (``IDS.json`` is the items file of ``ferret_eraser.py``: ids, special positions, target, scores per
  explainer): AOPC comprehensiveness and sufficiency under ferret's convention with MiniLM SST-2
  (``evaluate_many`` over groups of sentences, as the faithfulness data-set job runs it).
- ``ig`` / ``ablation``: the explainers of the next token (the predicted one) on the ids, as
  ``POST /runs/{id}/faithfulness`` runs them: ``integrated_gradients`` (32 steps, captum's Gauss-Legendre
  rule, baseline: every non-special token's embedding replaced by the pad token's) and ``occlusion``
  (captum ``FeatureAblation``, one token at a time replaced by the pad token, SmolLM2 having no mask
  token); both attribute the probability ``p(next token)``.
- ``eap`` (``--pair PAIR.json``): edge attribution patching over every edge (``circuits.attribution.eap``
  as ``POST /circuits`` runs it,
  noising, metric ``answer_logit_diff`` at the last position), scores ``[sender, receiver]`` with the
  graph's names.
- ``grid``: the zero-ablation grid of every head (``head_effects``: the mean next-token loss change).
- ``patch-head`` / ``patch-resid`` (``--pair PAIR.json``): the corrupted run with one head's output
  (``head_effects(..., "patch")``) or the residual stream after one block at one position
  (``residual_patching``) taken from the clean run, metric ``answer_logit_diff`` at the last position
  (``POST /runs/{id}/head-effects`` and ``.../residual-patching``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, maps_file, measure, save  # noqa: E402


def eraser(items_path: str, out: Path) -> dict:
    """ERASER under ferret's convention for every item and explainer, as the faithfulness data-set job runs
    it: ``evaluate_many`` over groups of ``EVAL_CHUNK`` sentences (every perturbation of a group in one
    ``predict`` call). ``[item, explainer, (AOPC comprehensiveness, AOPC sufficiency)]`` saved."""
    from attnscope.analysis.faithfulness import Scored, evaluate_many, get_convention
    from attnscope.models.loading import load_model
    from attnscope.pipelines.explainers import make_predict
    from attnscope.pipelines.faithfulness_shards import EVAL_CHUNK

    clf = load_model("minilm-sst2", "cpu")
    predict = make_predict(clf)
    conv = get_convention("ferret")
    items = json.loads(Path(items_path).read_text())
    scored = [Scored(np.asarray(it["ids"]), it["scores"], tuple(it["special"]), it["target"]) for it in items]

    def run(batch):
        rows = []
        for first in range(0, len(batch), EVAL_CHUNK):
            for res in evaluate_many(predict, batch[first : first + EVAL_CHUNK], k=0.2, convention=conv):
                rows.append([[r.aopc_comprehensiveness, r.aopc_sufficiency] for r in res.values()])
        return np.asarray(rows)

    run(scored[:1])  # warm
    aopc, report = measure(lambda: run(scored))
    save(out, aopc=aopc)
    report.update(items=len(items), chunk=EVAL_CHUNK)
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "task", choices=["maps", "lens", "dla", "grid", "patch-head", "patch-resid", "eraser", "ig", "ablation", "eap"]
    )
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", type=int, default=None)
    ap.add_argument("--position", type=int, default=-1)
    ap.add_argument("--no-check", action="store_true", help="maps: skip writing the stack for the check")
    ap.add_argument("--pair", default=None, help="patch-*: JSON with clean, corrupted, answers")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.task == "eraser":
        report = eraser(a.ids, Path(a.out))
        report.update(side="attnscope", task=a.task, threads=torch.get_num_threads())
        emit(report)
        return
    ids = json.loads(Path(a.ids).read_text())
    os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(len(ids), 4096))
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", "cpu", capture="lazy")
    out = Path(a.out)
    inp = lm.encode_ids(ids)
    pos = a.position % len(ids)
    lm.run(lm.encode_ids(ids[:32]), hidden_states=False)  # warm: weights paged in, kernels chosen

    if a.task == "maps":

        def every_map():
            cap = lm.run(inp, hidden_states=False)
            maps = cap.maps
            for layer in range(maps.n_layers):
                for head in range(maps.n_heads):
                    maps.head(layer, head)  # every head's full map, computed and dropped
            return cap

        cap, report = measure(every_map)
        maps = cap.maps
        report["shape"] = list(maps.shape)
        if not a.no_check:
            stack = maps_file(out, tuple(maps.shape))
            for layer in range(maps.n_layers):
                stack[layer] = maps.block(layer)
            stack.flush()
    elif a.task in ("lens", "dla"):
        from attnscope.pipelines.writes.recorded import attribute, lens_grid, record_writes

        if a.task == "lens":
            target = None if a.target is None else torch.tensor([a.target])

            def lens():
                writes = record_writes(lm, inp)
                return lens_grid(writes, range(pos, pos + 1), 10, target)

            rows, report = measure(lens)
            save(out, top_ids=rows.top_ids, top_probs=rows.top_probs, target_prob=rows.target_prob)
        else:

            def dla():
                writes = record_writes(lm, inp)
                return attribute(writes, pos, a.target, split=False)

            att, report = measure(dla)
            save(out, heads=att.heads, mlp=att.mlp, embed=np.float64(att.embed), logit=np.float64(att.logit))
            report["residual_error"] = float(att.residual_error)
    elif a.task == "eap":
        from attnscope.pipelines.circuits.attribution import eap
        from attnscope.pipelines.circuits.metric import CircuitMetric
        from attnscope.pipelines.circuits.patching import prepare

        pair = json.loads(Path(a.pair).read_text())
        clean, corrupted = torch.tensor([pair["clean"]]), torch.tensor([pair["corrupted"]])
        metric = CircuitMetric("answer_logit_diff", answers=(tuple(pair["answers"]),))

        def scores(c, k):  # what POST /circuits computes for method "eap"
            return eap(prepare(lm.model, lm.sites, c, k, metric))

        scores(clean[:, -6:], corrupted[:, -6:])  # warm on the prompt's last 6 tokens
        s_, report = measure(lambda: scores(clean, corrupted))
        prep = prepare(lm.model, lm.sites, clean, corrupted, metric)
        save(out, scores=s_)
        (out / "names.json").write_text(
            json.dumps({"senders": prep.graph.sender_names(), "receivers": prep.graph.receiver_names()})
        )
        ids = pair["clean"]
    elif a.task in ("ig", "ablation"):
        from attnscope.pipelines.explainers import example_from_ids, make_explainer

        name = "integrated_gradients" if a.task == "ig" else "occlusion"
        explainer = make_explainer(name, lm, **({"n_steps": 32} if a.task == "ig" else {}))
        warm = example_from_ids(lm, ids[:16])
        explainer.explain(replace(warm, target=explainer.target_of(warm)))
        ex = example_from_ids(lm, ids)
        ex = replace(ex, target=explainer.target_of(ex))  # the predicted next token (untimed, as for the peers)
        scores, report = measure(lambda: explainer.explain(ex))
        save(out, scores=scores, target=np.int64(ex.target))
    elif a.task.startswith("patch"):
        from attnscope.pipelines.interventions import MetricSpec, head_effects
        from attnscope.pipelines.interventions.sweep import residual_patching

        pair = json.loads(Path(a.pair).read_text())
        clean, corrupted = lm.encode_ids(pair["clean"]), lm.encode_ids(pair["corrupted"])
        metric = MetricSpec("answer_logit_diff", answers=tuple(pair["answers"]))

        def patch():  # noising the corrupted run with the clean one = TransformerLens's patching
            if a.task == "patch-head":
                return head_effects(lm, corrupted, "patch", metric, source=clean)
            return residual_patching(lm, corrupted, clean, metric)

        head_effects(lm, lm.encode_ids(ids[:16]), "zero", MetricSpec())  # warm the grid's path, as for grid
        grid, report = measure(patch)
        save(out, effect=grid["effect"])
        ids = pair["clean"]
    else:
        from attnscope.pipelines.interventions import MetricSpec, head_effects

        head_effects(lm, lm.encode_ids(ids[:16]), "zero", MetricSpec())  # warm the grid's own path
        grid, report = measure(lambda: head_effects(lm, inp, "zero", MetricSpec()))
        save(out, effect=grid["effect"])
    report.update(side="attnscope", task=a.task, tokens=len(ids), threads=torch.get_num_threads())
    emit(report)


if __name__ == "__main__":
    main()
