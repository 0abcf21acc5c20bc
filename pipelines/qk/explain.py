"""Why a head attends, on a loaded model: the query/key view and the QK attribution of one (head,
query, key) of one input, and the composition scores of its weights (``docs/methods/qk-attribution.md``).
Everything model-specific comes from ``backend.sites``; nothing here asks what kind of model it runs."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from attnscope.pipelines.qk.composition import MODES, CompositionScores, LayerHeadWeights, composition_scores
from attnscope.pipelines.qk.qk_attribution import QKAttribution, qk_attribution
from attnscope.pipelines.qk.qk_view import QKView, check_pair, qk_view
from attnscope.pipelines.qk.site_parts import RowProbe, attention_norm, head_qk, record, stream_parts


@dataclass(frozen=True)
class PairExplanation:
    """The view and the attribution of ``L{layer}H{head}`` at (``query``, ``key``) of one input;
    ``tokens`` the input's position labels; ``model_score`` the model's own logit of the pair (after a
    soft-cap where the model has one; None where its attention does not call hooks); ``softcap`` the
    model's logit soft-cap ``c`` (Gemma 2: the softmax reads ``c tanh(score / c)``; the attribution splits
    the score before it, which the cap maps monotonically) or None."""

    layer: int
    head: int
    query: int
    key: int
    tokens: tuple[str, ...]
    view: QKView
    attribution: QKAttribution
    model_score: float | None = None
    softcap: float | None = None

    @property
    def capped_score(self) -> float:
        """The logit the softmax reads: the score, soft-capped where the model caps it."""
        s = self.view.score
        return s if self.softcap is None else self.softcap * math.tanh(s / self.softcap)


def check_request(backend, n_tokens: int, layer: int, head: int, query: int, key: int) -> None:
    """Refuse what the model cannot answer, naming the range or the missing part: a family without a
    ``Sites`` entry, content-free heads, a layer/head outside the model (``SitesUnavailableError`` /
    ``SiteOutOfRangeError``), positions out of range or a key after the query of a causal model
    (``ValueError``)."""
    sites = backend.sites
    sites.block(layer)
    sites.check_head(head)
    sites.require("W_Q", "W_K", feature="the query/key view")
    att = backend.attention
    check_pair(n_tokens, query, key, bool(att.causal))


def explain_pair(backend, inp, layer: int, head: int, query: int, key: int, hooks: Sequence = ()) -> PairExplanation:
    """One recorded forward pass of ``inp`` (up to ``layer``), then the view and the attribution of the
    pair (with attention ``hooks``, e.g. an intervention's, applied to that pass)."""
    check_request(backend, len(inp), layer, head, query, key)
    sites = backend.sites
    scale = float(backend.attention.scale or sites.d_head**-0.5)
    qk = head_qk(sites, layer, head, scale)
    norm = attention_norm(sites, layer)
    probe = RowProbe(layer, head, query)
    rec = record(backend, inp, layer, hooks, probe)
    resid = rec.values["resid_pre"][layer][0]  # [token, d_model]
    view = qk_view(resid, qk, query, key, norm=norm, causal=bool(backend.attention.causal))
    model_score = None
    if probe.row is not None:  # the model's own mask (sliding windows too) and soft-max
        seen = torch.nonzero(torch.isfinite(probe.row)).flatten()
        if not torch.isfinite(probe.row[key]):
            raise ValueError(
                f"key {key} is masked for query {query} in layer {layer} (a sliding window or padding): this query "
                f"attends to keys {int(seen.min())}..{int(seen.max())} only"
            )
        model_score = float(probe.row[key])
        view = replace(view, weight=float(torch.softmax(probe.row, -1)[key]))
    parts, labels, clean = stream_parts(sites, rec, layer, (query, key))
    att = qk_attribution(
        parts[:, 0], parts[:, 1], labels, qk, query, key, norm=norm, resid_query=clean[0], resid_key=clean[1]
    )
    softcap = backend.attention.softcap
    return PairExplanation(layer, head, query, key, tuple(inp.tokens), view, att, model_score, softcap)


def sites_composition(backend, *, modes=MODES, samples: int = 32, seed: int = 0) -> CompositionScores:
    """Q-, K- and/or V-composition (``modes``) between every pair of heads of the model (from
    ``backend.sites``). Pre-norm: each reader's norm gain (and centering) folds into its weights.
    Post-norm (BERT, MiniLM): a head reads the stream as it is, and what layer ``a``'s heads write
    reaches layer ``b`` through the norms of blocks ``a..b-1`` (``ln_attn``, ``ln_mlp`` each, their
    divisors dropped: the score is scale-free in the writer), the direct path past the MLPs as in the
    pre-norm case."""
    sites = backend.sites
    sites.require("W_Q", "W_K", feature="composition scores")
    pre = sites.norm_placement == "pre"
    layers = [
        LayerHeadWeights(
            w_q=blk.W_Q,
            w_k=blk.W_K,
            w_v=blk.W_V,
            w_o=blk.W_O if blk.ln_attn_out is None else blk.W_O * _gain(blk.ln_attn_out),  # Gemma 2's sandwich
            reader_gain=_gain(blk.ln_attn) if pre else None,
            reader_centres=pre and blk.ln_attn.kind == "layernorm",
        )
        for blk in sites.blocks
    ]
    between = None if pre else _post_norm_paths(sites)
    return composition_scores(layers, modes=tuple(modes), samples=samples, seed=seed, between=between)


def norm_matrix(norm) -> torch.Tensor:
    """``[d_model, d_model]`` a norm with its divisor dropped, row convention: ``C diag(g)`` (``C`` the
    centering of a LayerNorm, the identity for an RMSNorm), float64."""
    d = int(norm.weight.shape[0]) if norm.weight is not None else None
    gain = _gain(norm)
    m = torch.diag(gain.to(torch.float64)) if gain is not None else torch.eye(d, dtype=torch.float64)
    if norm.kind == "layernorm":
        m = m - m.mean(0, keepdim=True)  # C @ diag(g): every column centred
    return m


def _post_norm_paths(sites):
    """``between(a, b)`` of a post-norm model: the product of blocks ``a..b-1``'s two norms."""
    per_block = [norm_matrix(blk.ln_attn) @ norm_matrix(blk.ln_mlp) for blk in sites.blocks]

    def between(a: int, b: int) -> torch.Tensor:
        m = per_block[a]
        for k in range(a + 1, b):
            m = m @ per_block[k]
        return m

    return between


def _gain(norm) -> torch.Tensor | None:
    """``[d_model]`` the diagonal a pre-attention norm multiplies by: ``1 + weight`` for Gemma's norms."""
    if norm.weight is None:
        return None
    return norm.weight + 1.0 if norm.kind == "rmsnorm1p" else norm.weight


class CompositionCache:
    """Composition scores per (model, mode), computed once from the weights and kept (bounded LRU,
    thread-safe): they depend on the weights only, and SmolLM2's take seconds."""

    def __init__(self, max_entries: int = 12):
        self._cache: OrderedDict[tuple[str, str], CompositionScores] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, backend, mode: str) -> CompositionScores:
        key = (backend.spec.name, mode)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        comp = sites_composition(backend, modes=(mode,))
        with self._lock:
            self._cache[key] = comp
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return comp
