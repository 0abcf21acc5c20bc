"""TransformerLens's side of the comparison (run with the Python of ``.cache/peer-venvs/transformer-lens``;
nothing from attnscope is imported). The model is SmolLM2 from the Hugging Face folder attnscope
converted from the GGUF file (``~/.cache/attnscope/smollm2``: config, float32 safetensors, tokenizer),
loaded offline with ``TransformerBridge.boot_transformers(folder, device="cpu", dtype=torch.float32)``.

    PYTHON bench/peers/tlens_side.py TASK FOLDER IDS.json OUT_DIR [--threads 1] [--target ID] [--position P]

TASK (each measured once by ``common.measure``, after a warm-up forward of 32 tokens):
- ``maps``: ``run_with_cache(ids, names_filter=<hook_pattern>)``: every attention pattern, held in
  the cache as 30 tensors ``[1, head, query, key]``; then, untimed, written to ``OUT_DIR/maps.npy``.
- ``lens``: ``run_with_cache`` of the residual streams, ``cache.accumulated_resid(apply_ln=True,
  pos_slice=P)`` (each layer's stream through the final norm, its own scale recomputed), the
  unembedding and a softmax, top 10 per layer.
- ``dla``: ``run_with_cache`` (``hook_z`` and the final norm's scale), ``cache.stack_head_results(layer=-1,
  pos_slice=P)`` and ``cache.logit_attrs(..., tokens=TARGET, pos_slice=P)`` (the final norm's scale
  frozen at its value), in compatibility mode with the final norm's weight folded into ``W_U``
  (``enable_compatibility_mode(center_writing_weights=False, center_unembed=False)``: TransformerLens's
  ``tokens_to_residual_directions`` warns that without the fold the result is misleading). The raw
  bridge's answer (no fold) is saved too, untimed, as ``heads_raw``.
- ``grid``: the zero-ablation grid through ``transformer_lens.patching``: every head's ``hook_z``
  replaced by zeros at all positions (``get_act_patch_attn_head_out_all_pos`` with a "clean" cache
  of zeros), metric the mean next-token loss minus the clean loss.
- ``patch-head`` / ``patch-resid`` (``--pair PAIR.json``: ``clean``, ``corrupted`` ids of one length and
  ``answers`` ``[correct, wrong]``): activation patching as ``transformer_lens.patching`` defines it, the
  corrupted run with one activation taken from the clean run's cache, metric ``logit[correct] -
  logit[wrong]`` at the last position minus the corrupted run's: per head, ``hook_z`` at every position
  (``get_act_patch_attn_head_out_all_pos``); per layer and position, the residual stream after the block
  (``generic_activation_patch`` of ``resid_post`` with ``layer_pos_patch_setter``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, maps_file, measure, save  # noqa: E402


def load(folder: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformer_lens.model_bridge import TransformerBridge

    model = TransformerBridge.boot_transformers(folder, device="cpu", dtype=torch.float32)
    model.eval()
    return model


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean ``-log p(next)`` over positions ``0..n-2`` of ``logits [1, n, vocab]``."""
    logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)
    return -logp.gather(-1, tokens[0, 1:, None]).mean()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["maps", "lens", "dla", "grid", "patch-head", "patch-resid"])
    ap.add_argument("folder")
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", type=int, default=None)
    ap.add_argument("--position", type=int, default=-1)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--pair", default=None, help="patch-*: JSON with clean, corrupted, answers")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    from importlib.metadata import version

    model = load(a.folder)
    out = Path(a.out)
    ids = torch.tensor([json.loads(Path(a.ids).read_text())])
    n = ids.shape[1]
    pos = a.position % n
    model(ids[:, :32])  # warm

    if a.task == "maps":

        def patterns():
            _, cache = model.run_with_cache(ids, names_filter=lambda name: name.endswith("hook_pattern"))
            return cache

        cache, report = measure(patterns)
        names = sorted((k for k in cache.keys() if k.endswith("hook_pattern")), key=lambda k: int(k.split(".")[1]))
        first = cache[names[0]]
        shape = (len(names), *first.shape[1:])
        report["shape"] = list(shape)
        report["pattern_bytes"] = sum(cache[k].numel() * cache[k].element_size() for k in names)
        if not a.no_check:
            stack = maps_file(out, shape)
            for layer, name in enumerate(names):
                stack[layer] = cache[name][0].float().numpy()
            stack.flush()
    elif a.task == "lens":

        def lens():
            _, cache = model.run_with_cache(ids, names_filter=lambda name: "hook_resid" in name or "ln_final" in name)
            resid = cache.accumulated_resid(layer=None, incl_mid=False, apply_ln=True, pos_slice=pos)  # [L+1, 1, d]
            logits = model.unembed(resid)  # [L+1, 1, vocab]
            probs = torch.softmax(logits[:, 0].float(), dim=-1)
            top = probs.topk(10, dim=-1)
            return probs, top

        (probs, top), report = measure(lens)
        target_prob = probs[:, a.target] if a.target is not None else top.values[:, 0]
        save(out, top_ids=top.indices.numpy(), top_probs=top.values.numpy(), target_prob=target_prob.numpy())
    elif a.task == "dla":

        def dla():
            _, cache = model.run_with_cache(
                ids, names_filter=lambda name: name.endswith("hook_z") or "ln_final" in name
            )
            stack, labels = cache.stack_head_results(layer=-1, pos_slice=pos, return_labels=True)
            attrs = cache.logit_attrs(stack, tokens=torch.tensor([a.target]), pos_slice=pos)
            return attrs, labels

        n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
        raw = dla()[0].clone()  # untimed: the default (raw-weights) bridge, whose W_U lacks the final norm's weight
        # TransformerLens's own advice for DLA: compatibility mode folds the final norm's weight into W_U.
        # Its default also centres the unembedding (every logit minus the mean logit) and the writing
        # weights; both are turned off so that the quantity is the logit itself, as attnscope reads it.
        model.enable_compatibility_mode(disable_warnings=True, center_writing_weights=False, center_unembed=False)
        model(ids[:, :32])
        import ctypes
        import gc

        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand the untimed run's freed pages back before measuring
        (attrs, labels), report = measure(dla)
        save(
            out,
            heads=attrs.reshape(-1).numpy().reshape(n_layers, n_heads),
            heads_raw=raw.reshape(-1).numpy().reshape(n_layers, n_heads),
        )
        report["labels"] = [labels[0], labels[-1]]
    elif a.task.startswith("patch"):
        from transformer_lens import patching

        pair = json.loads(Path(a.pair).read_text())
        clean_ids, corrupted_ids = torch.tensor([pair["clean"]]), torch.tensor([pair["corrupted"]])
        right, wrong = pair["answers"]

        def diff(logits: torch.Tensor) -> torch.Tensor:
            return logits[0, -1, right].float() - logits[0, -1, wrong].float()

        base = diff(model(corrupted_ids))

        def patch():
            if a.task == "patch-head":
                _, cache = model.run_with_cache(clean_ids, names_filter=lambda name: name.endswith("hook_z"))
                return patching.get_act_patch_attn_head_out_all_pos(
                    model, corrupted_ids, cache, lambda logits: diff(logits) - base
                )
            _, cache = model.run_with_cache(clean_ids, names_filter=lambda name: name.endswith("hook_resid_post"))
            return patching.generic_activation_patch(
                model,
                corrupted_ids,
                cache,
                lambda logits: diff(logits) - base,
                patch_setter=patching.layer_pos_patch_setter,
                activation_name="resid_post",
                index_axis_names=("layer", "pos"),
            )

        effect, report = measure(patch)
        save(out, effect=effect.float().numpy())
        n = clean_ids.shape[1]
    else:
        from transformer_lens import patching

        clean = next_token_loss(model(ids), ids)

        def grid():
            _, cache = model.run_with_cache(ids, names_filter=lambda name: name.endswith("hook_z"))
            for k in list(cache.keys()):
                cache.cache_dict[k] = torch.zeros_like(cache[k])
            return patching.get_act_patch_attn_head_out_all_pos(
                model, ids, cache, lambda logits: next_token_loss(logits, ids) - clean
            )

        effect, report = measure(grid)
        save(out, effect=effect.float().numpy())
    report.update(side="transformer-lens", version=version("transformer-lens"), task=a.task, tokens=n)
    report["threads"] = torch.get_num_threads()
    emit(report)


if __name__ == "__main__":
    main()
