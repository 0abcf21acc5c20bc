"""The numbers the Sites rewrite (issue #22) must hold: interventions, head-effect grids, lazy maps and
measure views on MiniLM, SmolLM2, zoo models and one tiny Hugging Face model per supported family.

``python tests/pipelines/before_after.py`` writes ``tests/pipelines/data/before_after_<group>.npz`` with the
code it imports; it was run with the code before the rewrite (``main`` at 90cb962) and
``tests/pipelines/test_before_after.py`` compares the current code's values with it (1e-6).

Only public functions whose signatures the rewrite keeps are called here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TINY = ("gpt2", "llama", "qwen2", "mistral", "phi", "gemma2")
TEXT = "The cat sat on the mat. The cat sat on the"
CORRUPT = "The dog sat on the rug. The dog sat on the"
SST = "a gorgeous, witty, seductive movie."
SST_CORRUPT = "a boring, witty, seductive movie."


def _tiny_backends(root: Path) -> dict:
    """The conftest's tiny random causal LMs (same seeds), saved under ``root`` and loaded lazily."""
    import importlib.util
    import os

    import torch
    from transformers import AutoModelForCausalLM

    # the tests' root conftest by its path: under pytest, ``import conftest`` may find another folder's
    spec = importlib.util.spec_from_file_location("attnscope_tests_root_conftest", HERE.parent / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

    tokenizer = conftest._tiny_tokenizer()
    for arch, config in conftest.tiny_causal_configs(len(tokenizer)).items():
        if arch not in TINY:
            continue
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() == 2 and ("q_proj" in name or "k_proj" in name or "c_attn" in name):
                    p.mul_(40.0)
        model.save_pretrained(root / arch)
        tokenizer.save_pretrained(root / arch)
    os.environ["ATTNSCOPE_MODEL_DIRS"] = str(root)
    from attnscope.models.loading import load_model

    return {arch: load_model(f"local:{arch}", device="cpu") for arch in TINY}


def _effects(res: dict) -> np.ndarray:
    return np.array([res["effects"][k] for k in sorted(res["effects"])], dtype=np.float64)


def _prediction(pred: dict) -> np.ndarray:
    if pred["kind"] == "classification":
        return np.asarray(pred["probs"], np.float64)
    if pred["kind"] == "embedding":
        return np.asarray(pred["embedding"], np.float64)
    return np.asarray([t["prob"] for t in pred["top_k"][-1]] + [t["token_id"] for t in pred["top_k"][-1]], np.float64)


def interventions(out: dict, key: str, backend, inp, src, grids=("zero", "patch")) -> None:
    """Every intervention kind once (effects, altered prediction, altered maps) and the grids."""
    from attnscope.pipelines.interventions import (
        EdgeKnockout,
        HeadAblation,
        HeadPatch,
        InterventionSet,
        ResidualPatch,
        head_effects,
        intervene,
    )

    n_l, n_h = backend.n_layers, backend.n_heads
    last = n_l - 1
    sets = {
        "zero": InterventionSet((HeadAblation(((0, 1), (last, n_h - 1)), "zero"),)),
        "uniform_knock": InterventionSet(
            (HeadAblation(((last, 0),), "uniform"), EdgeKnockout((0,), ((3, 1), (4, 2)), (0, 1)))
        ),
        "patch": InterventionSet((HeadPatch(((0, 0), (last, 1))), ResidualPatch(0, (1, 2)))),
    }
    for name, iset in sets.items():
        res = intervene(backend, inp, iset, source=src, want_maps=True)
        out[f"{key}/{name}/effects"] = _effects(res)
        out[f"{key}/{name}/clean"] = _prediction(res["clean"])
        out[f"{key}/{name}/altered"] = _prediction(res["altered"])
        out[f"{key}/{name}/altered_maps"] = res["altered_maps"].weights.astype(np.float64)
    for method in grids:
        res = head_effects(backend, inp, method, source=src if method == "patch" else None, chunk=5)
        for kind, grid in sorted(res["grids"].items()):
            out[f"{key}/grid_{method}/{kind}"] = np.asarray(grid, np.float64)


def lazy_maps(out: dict, key: str, backend, text: str) -> None:
    cap = backend.run(backend.encode_text(text))
    out[f"{key}/maps"] = cap.maps.weights.astype(np.float64)


def measure_views(out: dict, key: str, loaded, text: str) -> None:
    from attnscope.models.capture import capture
    from attnscope.pipelines.layers import (
        AttentionSublayer,
        extract_attention_params,
        layer_input,
        max_entropy_deviation,
    )

    cap = capture(loaded, text)
    out[f"{key}/max_entropy"] = np.asarray(max_entropy_deviation(loaded, cap), np.float64)
    params = extract_attention_params(loaded, 1)
    for name in ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"):
        out[f"{key}/params/{name}"] = getattr(params, name)
    x = layer_input(loaded, cap.hidden_states, 1)
    out[f"{key}/layer_input"] = x
    out[f"{key}/sublayer"] = AttentionSublayer(loaded, 1, residual=True).numpy(x)
    if loaded.spec.name.startswith("minilm"):
        from attnscope.pipelines.layers import layer_context

        h, c = layer_context(loaded, text, 1)
        out[f"{key}/context_in"], out[f"{key}/context_out"] = h, c


def shared_blocks(out: dict, key: str, loaded, text: str) -> None:
    from attnscope.models.capture import capture
    from attnscope.pipelines.fixed_key_block import BlockHalves, extract_fixed_key_block
    from attnscope.pipelines.shared_block import iterate_shared_block

    x0 = capture(loaded, text).hidden_states[0].astype(np.float64)
    fk = extract_fixed_key_block(loaded, x0)
    for name in ("ln1_gamma", "ln2_gamma", "head_norms", "score_radius"):
        out[f"{key}/fk/{name}"] = np.asarray(getattr(fk, name), np.float64)
    out[f"{key}/fk/scalars"] = np.array([fk.ln1_eps, fk.ln2_eps, fk.ffn_norm])
    mid, full = BlockHalves(loaded, x0)(x0)
    out[f"{key}/halves"] = np.stack([mid, full])
    it = iterate_shared_block(loaded, x0, 4)
    out[f"{key}/w1_steps"] = np.asarray(it.result.w1_steps, np.float64)
    demo = iterate_shared_block(loaded, x0, 3, layer=0) if not loaded.model.encoder.shared else None
    if demo is not None:
        out[f"{key}/demo_w1"] = np.asarray(demo.result.w1_steps, np.float64)


def _tiny(tmp: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for arch, backend in _tiny_backends(tmp).items():
        ids = list(backend.encode_text(TEXT).token_ids)
        swapped = [*ids[:3], (ids[3] + 7) % len(backend.tokenizer), *ids[4:]]  # same length: one token swapped
        inp, src = backend.encode_ids(ids), backend.encode_ids(swapped)
        interventions(out, f"tiny-{arch}", backend, inp, src)
        lazy_maps(out, f"tiny-{arch}", backend, TEXT)
    return out


def measure(group: str, tmp: Path) -> dict[str, np.ndarray]:
    """The values of one group: ``minilm``, ``minilm-sst2``, ``smollm2``, ``text-vanilla``,
    ``text-ha`` or ``tiny`` (the six tiny Hugging Face families)."""
    from attnscope.models.loading import load_model

    if group == "tiny":
        return _tiny(tmp)
    out: dict[str, np.ndarray] = {}
    backend = load_model(group, device="cpu")
    if group == "minilm":
        interventions(out, group, backend, *_pair(backend, SST, SST_CORRUPT), grids=("zero",))
        lazy_maps(out, group, backend, SST)
        measure_views(out, group, backend, SST)
    elif group == "minilm-sst2":
        interventions(out, group, backend, *_pair(backend, SST, SST_CORRUPT), grids=("zero", "uniform", "patch"))
    elif group == "smollm2":
        interventions(out, group, backend, *_pair(backend, TEXT, CORRUPT), grids=("zero",))
        lazy_maps(out, group, backend, TEXT)
    elif group == "text-vanilla":
        interventions(out, group, backend, *_pair(backend, "a gorgeous witty movie", "a tedious witty movie"))
        measure_views(out, group, backend, "a gripping , funny and deeply moving film")
    elif group == "text-ha":
        shared_blocks(out, group, backend, "a gripping , beautifully acted film")
    else:
        raise ValueError(f"unknown group {group!r}")
    return out


def _pair(backend, text: str, corrupt: str):
    return backend.encode_text(text), backend.encode_text(corrupt)


GROUPS = ("minilm", "minilm-sst2", "smollm2", "text-vanilla", "text-ha", "tiny")


def fixture(group: str) -> Path:
    return HERE / "data" / f"before_after_{group}.npz"


if __name__ == "__main__":
    import tempfile

    for group in sys.argv[1:] or GROUPS:
        with tempfile.TemporaryDirectory() as tmp:
            values = measure(group, Path(tmp))
        fixture(group).parent.mkdir(exist_ok=True)
        np.savez_compressed(fixture(group), **values)
        print(f"{group}: {len(values)} arrays -> {fixture(group)}")  # noqa: T201 - a script's report
