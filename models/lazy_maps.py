"""Lazy attention maps from recorded queries and keys (see ``docs/methods/lazy-maps.md``).

``QKMapSource`` keeps, per layer, one example's post-RoPE queries ``[head, token, dim]`` and keys
``[kv_head, token, dim]`` (the model's dtype and device, as ``attnscope_qk`` recorded them), or the
stream they are projected from (``attnscope.models.stream_qk.StreamQK``: a causal LM's run, the heads
a request reads projected again), with the mask inputs, and computes any block ``[head, row, col]`` of

    p = softmax_keys(mask(softcap(q k^T * scale)))        (with learned sinks: one more logit per head)

on request, in float32, exactly as transformers' eager attention does: query head ``h`` reads key
head ``kv_head_of[h]`` (grouped-query attention), masked keys are ``-inf``, a soft-cap is
``c tanh(s / c)``, a sink is a logit column in the softmax that is then dropped. A block of a
column range keeps the normalisation over every key of the row. Work is done in row chunks so that
no more than ``CHUNK_ELEMENTS`` logits are alive at once (besides the returned block), and at
most ``CHUNK_ROWS`` rows a chunk: a causal chunk stops at its last row's key (half the work of a
full layer), and its logits stay in cache while they are scaled, masked and soft-maxed in place.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from attnscope.models.attention_fn import LayerRecord
from attnscope.models.qk_layer import QKLayer

CHUNK_ELEMENTS = 1 << 24  # float32 logits alive per chunk (64 MiB)
CHUNK_ROWS = 128  # rows per chunk at most: a causal chunk computes keys up to its last row only

__all__ = ["CHUNK_ELEMENTS", "CHUNK_ROWS", "QKLayer", "QKMapSource"]


def _own(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when it is all its storage holds (one example's view of a batch of one), else one
    contiguous copy of it, so that a source keeps only its own example alive."""
    if t.untyped_storage().nbytes() == t.numel() * t.element_size():
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _tensor_bytes(tensors: Sequence[torch.Tensor | None]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (a mask shared by layers counts once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


class QKMapSource:
    """A ``MapSource`` (``attnscope.analysis.map_source``) backed by recorded queries and keys."""

    def __init__(self, layers: Sequence[QKLayer]):
        if not layers:
            raise ValueError("a QK map source needs at least one layer")
        self.layers = list(layers)
        self._rebuilt: tuple[int, torch.Tensor, torch.Tensor] | None = None  # the last layer rebuilt from a stream
        self._held: dict[int, list] = {}  # layer -> [readers, query, key] while ``hold`` readers read it
        self._held_lock = threading.Lock()
        first = self.layers[0]
        self.n_heads, self.n_tokens = first.n_heads, first.n_tokens
        for i, lay in enumerate(self.layers):
            if lay.stream is None and (
                lay.query.shape[:2] != (self.n_heads, self.n_tokens) or lay.key.shape[1] != self.n_tokens
            ):
                raise ValueError(f"layer {i}: query {tuple(lay.query.shape)} / key {tuple(lay.key.shape)} disagree")
            if (lay.n_heads, lay.n_tokens) != (self.n_heads, self.n_tokens):
                raise ValueError(
                    f"layer {i}: {lay.n_heads} heads x {lay.n_tokens} tokens, layer 0 has "
                    f"{self.n_heads} x {self.n_tokens}"
                )
            if self.n_heads % lay.n_kv_heads:
                raise ValueError(f"layer {i}: {self.n_heads} query heads cannot share {lay.n_kv_heads} key heads")

    @classmethod
    def from_records(
        cls,
        records: Sequence[LayerRecord],
        index: int = 0,
        length: int | None = None,
        streams: Mapping[int, Any] | None = None,
    ) -> QKMapSource:
        """Example ``index`` of a recorded batch, cut to its first ``length`` positions (right
        padding removed). Tensors are copied out of the batch (at most once; not at all when the
        recorded tensor is this example alone), so the source holds only this example; a mask
        shared by several layers stays shared. ``streams``: ``{layer: StreamQK}`` of this example
        (``attnscope.models.stream_qk.streams_of``) for records without queries and keys."""
        masks: dict[int, torch.Tensor | None] = {}
        layers = []
        for rec in records:
            stream = None if rec.query is not None else (streams or {}).get(rec.layer)
            if rec.query is None and stream is None:
                raise ValueError(f"layer {rec.layer}: no queries and keys recorded, and no stream to rebuild them")
            n = (rec.query.shape[2] if stream is None else stream.n_tokens) if length is None else int(length)
            mask = None
            if rec.mask is not None:
                key = id(rec.mask)
                if key not in masks:
                    m = rec.mask[index if rec.mask.shape[0] > 1 else 0, :, :n, :n]
                    masks[key] = _own(m)
                mask = masks[key]
            layers.append(
                QKLayer(
                    query=None if stream is not None else _own(rec.query[index, :, :n]),
                    key=None if stream is not None else _own(rec.key[index, :, :n]),
                    mask=mask,
                    is_causal=rec.is_causal,
                    scale=rec.scale,
                    softcap=rec.softcap,
                    sinks=None if rec.sinks is None else rec.sinks.clone(),
                    stream=stream,
                )
            )
        return cls(layers)

    # ------------------------------------------------------------------ MapSource
    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (len(self.layers), self.n_heads, self.n_tokens, self.n_tokens)

    @property
    def nbytes(self) -> int:
        tensors: list[torch.Tensor | None] = []
        for lay in self.layers:
            tensors += lay.stored()
        rebuilt = self._rebuilt
        return _tensor_bytes([*tensors, *(rebuilt[1:] if rebuilt is not None else ())])

    def queries_keys(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``layer``'s ``(query [head, token, dim], key [kv_head, token, dim])``. A layer held as a
        stream is rebuilt once for a run of requests at that layer: the last rebuilt layer is kept
        (one layer's queries and keys; a request at another layer replaces it). Threads may rebuild
        the same layer twice; each reads a whole pair (one tuple, assigned at once)."""
        lay = self.layers[layer]
        if lay.stream is None:
            return lay.query, lay.key
        held = self._held.get(layer)
        if held is not None:
            return held[1], held[2]
        rebuilt = self._rebuilt
        if rebuilt is not None and rebuilt[0] == layer:
            return rebuilt[1], rebuilt[2]
        q, k = lay.queries_keys()
        self._rebuilt = (layer, q, k)
        return q, k

    @property
    def device(self) -> torch.device:
        return self.layers[0].device

    @contextmanager
    def hold(self, layer: int) -> Iterator[None]:
        """Within the block, ``layer``'s queries and keys stay rebuilt for every thread (a pass whose
        threads each read their own layer in bands of rows would otherwise rebuild it at each band);
        dropped when its last holder leaves. Nothing to hold for a layer that keeps them."""
        if self.layers[layer].stream is None:
            yield
            return
        with self._held_lock:
            entry = self._held.get(layer)
            if entry is not None:
                entry[0] += 1
        if entry is None:
            q, k = self.queries_keys(layer)  # outside the lock: other layers' holders go on
            with self._held_lock:
                entry = self._held.setdefault(layer, [0, q, k])
                entry[0] += 1
        try:
            yield
        finally:
            with self._held_lock:
                entry[0] -= 1
                if entry[0] == 0:
                    del self._held[layer]

    def block(self, layer: int, heads: Sequence[int], rows: slice, cols: slice) -> np.ndarray:
        """float32 ``[len(heads), rows, cols]`` of ``layer`` (numpy, on the host)."""
        return self.block_tensor(layer, heads, rows, cols).cpu().numpy()

    @torch.inference_mode()
    def block_tensor(self, layer: int, heads: Sequence[int], rows: slice, cols: slice) -> torch.Tensor:
        """As ``block``, a float32 tensor on the source's device."""
        r0, r1, _ = rows.indices(self.n_tokens)
        c0, c1, _ = cols.indices(self.n_tokens)
        r1, c1 = max(r0, r1), max(c0, c1)
        n, heads = self.n_tokens, list(heads)
        device = self.layers[layer].device
        if r1 == r0 or c1 == c0:
            return torch.zeros(len(heads), r1 - r0, c1 - c0, dtype=torch.float32, device=device)
        out = None
        for a, b, k_end, probs in self._row_chunks(layer, heads, r0, r1):
            if (c0, c1) == (0, n) and (a, b) == (r0, r1) and k_end == n:  # one chunk, every key: the block itself
                return probs
            if out is None:
                out = torch.empty(len(heads), r1 - r0, c1 - c0, dtype=torch.float32, device=device)
            c_end = max(c0, min(c1, k_end))
            out[:, a - r0 : b - r0, : c_end - c0] = probs[:, :, c0:c_end]
            out[:, a - r0 : b - r0, c_end - c0 :] = 0.0  # keys after a causal row
        return out

    @torch.inference_mode()
    def pooled(
        self,
        layer: int,
        heads: Sequence[int],
        rows: tuple[int, int],
        cols: tuple[int, int],
        stride: int,
        mode: str = "max",
        keys: Sequence[int] = (),
    ) -> tuple[np.ndarray, np.ndarray]:
        """``layer``'s ``rows`` x ``cols`` window pooled in ``stride x stride`` blocks as
        ``attnscope.analysis.slices.pool_blocks`` does (``mode`` max or mean; a block cut by the edge
        pools the cells it has), computed a chunk of rows at a time without building the window:
        ``(pooled [len(heads), ceil(R / stride), ceil(C / stride)], key_means [len(heads),
        ceil(R / stride), len(keys)])``, the second each row block's mean weight on each key of
        ``keys`` (what the thumbnails' sink hiding needs, read in the same pass). float32 numpy."""
        (r0, r1), (c0, c1) = rows, cols
        heads, keys = list(heads), [int(k) for k in keys]
        n_r, n_c = -(-(r1 - r0) // stride), -(-(c1 - c0) // stride)
        device = self.layers[layer].device
        sums = torch.zeros(len(heads), n_r, n_c * stride, dtype=torch.float32, device=device)
        key_sums = torch.zeros(len(heads), n_r, len(keys), dtype=torch.float32, device=device)
        key_idx = torch.as_tensor(keys, dtype=torch.long, device=device)
        for a, b, k_end, probs in self._row_chunks(layer, heads, r0, r1, multiple=stride):
            c_end = max(c0, min(c1, k_end))  # keys after a causal row stay 0
            visible = key_idx < k_end
            full = (b - a) // stride * stride
            i = (a - r0) // stride
            # each block of ``stride`` rows reduced first (a view of the chunk, no copy), then its columns
            parts = [probs[:, :full].reshape(len(heads), -1, stride, k_end)] if full else []
            if b - a > full:  # the window's last rows, a block cut by the edge
                parts.append(probs[:, full:].unsqueeze(1))
            for part in parts:  # [h, row blocks, rows, k_end]
                nb = part.shape[1]
                reduced = part.amax(dim=2) if mode == "max" else part.sum(dim=2)
                sums[:, i : i + nb, : c_end - c0] = reduced[:, :, c0:c_end]
                if keys and bool(visible.any()):
                    key_sums[:, i : i + nb, visible] = part[..., key_idx[visible]].sum(dim=2)
                i += nb
        cells = sums.view(len(heads), n_r, n_c, stride)
        row_n = torch.clamp(r1 - r0 - torch.arange(n_r, device=device) * stride, max=stride).float()
        if mode == "max":
            return cells.amax(dim=3).cpu().numpy(), (key_sums / row_n[None, :, None]).cpu().numpy()
        col_n = torch.clamp(c1 - c0 - torch.arange(n_c, device=device) * stride, max=stride).float()
        means = cells.sum(dim=3) / (row_n[:, None] * col_n[None, :])
        return means.cpu().numpy(), (key_sums / row_n[None, :, None]).cpu().numpy()

    @torch.inference_mode()
    def top_k(
        self, layer: int, heads: Sequence[int], rows: tuple[int, int], cols: tuple[int, int], k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``rows`` the ``k`` keys of ``cols`` with the largest weight, as
        ``attnscope.analysis.slices.top_k`` orders them (largest first, ties to the lower index),
        computed a chunk of rows at a time in torch (no sort of whole rows): ``(indices [len(heads),
        R, k]`` absolute key positions int64, ``weights [len(heads), R, k]`` float32)."""
        (r0, r1), (c0, c1) = rows, cols
        heads = list(heads)
        device = self.layers[layer].device
        idx_out = torch.empty(len(heads), r1 - r0, k, dtype=torch.long, device=device)
        w_out = torch.empty(len(heads), r1 - r0, k, dtype=torch.float32, device=device)
        for a, b, k_end, probs in self._row_chunks(layer, heads, r0, r1):
            c_end = max(c0, min(c1, k_end))
            x = probs.new_zeros(len(heads), b - a, c1 - c0)  # keys after a causal row: weight 0
            x[:, :, : c_end - c0] = probs[:, :, c0:c_end]
            kth = torch.topk(x, k, dim=-1).values[..., -1:]  # each row's k-th largest weight
            above = x > kth
            # the keys above it, then as many keys equal to it as are left, the lower indices first
            ties = (x == kth) & ((x == kth).cumsum(dim=-1) <= k - above.sum(dim=-1, keepdim=True))
            chosen = torch.nonzero(above | ties)[:, 2].view(len(heads), b - a, k)  # [h, rows, k] ascending
            weights = torch.gather(x, -1, chosen)
            weights, order = torch.sort(weights, dim=-1, descending=True, stable=True)
            idx_out[:, a - r0 : b - r0] = torch.gather(chosen, -1, order) + c0
            w_out[:, a - r0 : b - r0] = weights
        return idx_out.cpu().numpy(), w_out.cpu().numpy()

    def _row_chunks(self, layer: int, heads: list[int], r0: int, r1: int, multiple: int = 1):
        """``(a, b, k_end, probs [len(heads), b - a, k_end])`` for chunks of rows ``r0..r1`` (each a
        multiple of ``multiple`` rows but the last): the probabilities of every key a row can see
        (a causal chunk stops at its last row's key; later keys are 0). The tensor is the chunk's
        own buffer, reused by nothing: a caller copies what it keeps before the next chunk."""
        lay = self.layers[layer]
        n = self.n_tokens
        group = self.n_heads // lay.n_kv_heads
        device = lay.device
        query, key = self.queries_keys(layer)
        if heads == list(range(self.n_heads)):  # every head: no gather
            q_all = query
            k_all = key if group == 1 else key.repeat_interleave(group, dim=0)
        else:
            head_idx = torch.as_tensor(heads, dtype=torch.long, device=device)
            q_all = query.index_select(0, head_idx)  # [h, T, D]
            k_all = key.index_select(0, torch.div(head_idx, group, rounding_mode="floor"))  # [h, T, D]
        k_t = k_all.float().transpose(1, 2)  # [h, D, T]
        sinks = None if lay.sinks is None else lay.sinks.float()[heads][:, None, None]  # [h, 1, 1]
        step = max(1, min(CHUNK_ROWS, CHUNK_ELEMENTS // max(1, len(heads) * n)))
        step = max(multiple, step - step % multiple)
        for a in range(r0, r1, step):
            b = min(r1, a + step)
            # keys a causal row can see end at the row; later keys are 0 (no need to compute them)
            k_end = b if lay.is_causal else n
            # every step in place on the chunk's own logits: a fresh [h, rows, keys] tensor per
            # elementwise op (scale, mask, softmax) costs more than the op itself
            logits = torch.matmul(q_all[:, a:b].float(), k_t[:, :, :k_end]).mul_(lay.scale)  # [h, rows, k_end]
            if lay.softcap is not None:
                logits.div_(lay.softcap).tanh_().mul_(lay.softcap)
            if lay.mask is not None:
                m = lay.mask[:, a:b, :k_end]
                if m.shape[0] > 1:
                    m = m[heads]
                if m.dtype == torch.bool:
                    logits.masked_fill_(~m, float("-inf"))
                else:
                    logits.add_(m.float())
            elif lay.is_causal and b - a > 1:  # keys before the chunk are all visible: mask its own triangle
                tri = torch.ones(b - a, b - a, dtype=torch.bool, device=device).triu_(1)
                logits[:, :, a:k_end].masked_fill_(tri, float("-inf"))
            if sinks is None:
                probs = torch.softmax(logits, dim=-1, out=logits)  # [h, rows, k_end]
            else:  # the sink is one more logit per head in the normalisation, then dropped
                lse = torch.logaddexp(torch.logsumexp(logits, dim=-1, keepdim=True), sinks.expand(-1, b - a, 1))
                probs = logits.sub_(lse).exp_()
            if lay.mask is not None:
                probs = probs.nan_to_num_(nan=0.0)  # a row with every key masked attends to nothing
            yield a, b, k_end, probs
