"""``AttentionConfig.sliding_window`` / ``sliding_layers`` of the tiny causal LMs of ``tests/conftest.py``
agree with the masks the models themselves apply (transformers' eager attention maps): Mistral's
attention has no ``sliding_window`` attribute (it passes ``config.sliding_window`` at call time) and
once read as no window; Gemma 2 slides on its sliding layers only; Llama and Qwen2 do not slide."""

from __future__ import annotations

import pytest
import torch

PROMPT = "The capital of France is Paris, and the cat sat on the mat."


def _eager_windows(folder, ids: torch.Tensor) -> list[int | None]:
    """Per layer, how many most recent keys the last query sees in the model's own eager map (None: all)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.inference_mode():
        att = model(input_ids=ids, output_attentions=True, use_cache=False).attentions
    n = ids.shape[1]
    seen = []
    for layer in att:
        row = layer[0, :, n - 1]  # [head, key]
        keys = int((row > 0).any(0).sum())
        seen.append(None if keys == n else keys)
    return seen


@pytest.mark.parametrize(
    "arch, window, layers",
    [("llama", None, ()), ("qwen2", None, ()), ("mistral", 4, (0, 1)), ("gemma2", 4, (0,))],
)
def test_the_sliding_window_is_the_one_the_model_masks_with(arch, window, layers, tiny_causal_lms):
    from attnscope.models.loading import load_model

    root, folders = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        backend = load_model(f"local:{arch}", device="cpu")
    att = backend.attention
    assert (att.sliding_window, att.sliding_layers) == (window, layers)
    ids = backend.encode_text(PROMPT).ids_tensor("cpu")
    assert ids.shape[1] > 8  # long enough for a window of 4 to show
    expected = [window if i in layers else None for i in range(att.n_layers)]
    assert _eager_windows(folders[arch], ids) == expected
