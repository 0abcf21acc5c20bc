"""The QK attribution's ``RowProbe`` reads the one row it needs from the layer's queries and keys
(``read_qk``) instead of the layer's whole ``[head, query, key]`` logits: the row equals the one the old
probe took from those logits (the layer computed explicitly), for SmolLM2 (causal, RoPE, grouped-query
heads) and the tiny Gemma 2 (soft-cap, sliding-window mask), and the probed layer never hands it logits
(it keeps the fused kernel)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from attnscope.pipelines.qk.site_parts import RowProbe, record

TEXT = "The capital of France is Paris, and the cat sat on the mat. The cat sat on the"


@dataclass
class FullLogitsProbe:
    """The old probe: asks the layer for its whole logits ``[batch, head, query, key]`` (so the layer is
    computed explicitly) and keeps one row of them."""

    layer: int
    head: int
    query: int
    row: torch.Tensor | None = None
    full_shape: tuple[int, ...] | None = None

    def edit_logits(self, layer: int, logits: torch.Tensor) -> torch.Tensor:
        if layer == self.layer:
            self.row = logits[0, self.head, self.query].detach().float().cpu().clone()
            self.full_shape = tuple(logits.shape)
        return logits


class CountingRowProbe(RowProbe):
    """``RowProbe`` that counts the times it took its row from logits handed to it (never under
    ``attnscope_qk``, where ``read_qk`` comes first)."""

    handed: int = 0

    def edit_logits(self, layer: int, logits: torch.Tensor) -> torch.Tensor:
        if layer == self.layer and self.row is None:
            self.handed += 1
        return super().edit_logits(layer, logits)


def _rows(backend, inp, layer, head, query):
    old = FullLogitsProbe(layer, head, query)
    record(backend, inp, layer, probe=old)
    new = CountingRowProbe(layer, head, query)
    record(backend, inp, layer, probe=new)
    return old, new


def _same_row(old: torch.Tensor, new: torch.Tensor) -> None:
    assert old.shape == new.shape
    assert torch.equal(torch.isfinite(old), torch.isfinite(new))  # the same keys masked
    seen = torch.isfinite(old)
    assert torch.allclose(old[seen], new[seen], atol=1e-4, rtol=1e-5), (old[seen] - new[seen]).abs().max()


def test_smollm2_row_equals_the_row_of_the_full_logits(smollm2):
    inp = smollm2.encode_text(TEXT)
    n = len(inp)
    for layer, head, query in [(0, 4, n - 1), (18, 0, 12), (29, 8, n // 2)]:  # head 8 reads key head 2 of 3
        old, new = _rows(smollm2, inp, layer, head, query)
        assert old.full_shape == (1, smollm2.sites.n_heads, n, n)  # the old probe held every head's map
        assert new.handed == 0 and new.layer_edits(layer) == (False, False)
        _same_row(old.row, new.row)
        assert torch.isinf(new.row[query + 1 :]).all() and torch.isfinite(new.row[: query + 1]).all()


def test_gemma2_soft_capped_sliding_row_equals_the_row_of_the_full_logits(tiny_causal_lms):
    from attnscope.models.loading import load_model

    root, _ = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        backend = load_model("local:gemma2", device="cpu")
    inp = backend.encode_text(TEXT)
    n = len(inp)
    for layer in range(backend.sites.n_layers):
        old, new = _rows(backend, inp, layer, 1, n - 1)
        assert new.handed == 0
        _same_row(old.row, new.row)


def test_zoo_attention_still_hands_the_probe_its_logits():
    from attnscope.models.loading import load_model

    backend = load_model("text-vanilla", device="cpu")
    inp = backend.encode_text("a gripping , funny and moving film")
    old, new = _rows(backend, inp, 1, 3, 2)
    assert new.handed == 1
    _same_row(old.row, new.row)
