"""A [CLS]-pooled classifier whose last block is computed for position 0 alone.

A BERT-style sequence classifier reads one vector: position 0 of its last block's output, through the
pooler and the classifier. Its last block needs every position's keys and values, but its query, the
attention output, the output projection, the two norms and the MLP are read at position 0 only. For a
six-block MiniLM over ``n`` tokens that leaves about ``1/6 * (1 - 3/12)`` of the multiply-adds out
(every block: Q, K, V, O are four ``d x d`` products, the MLP eight; the last block keeps K and V for
every position and the rest for one): the ERASER evaluation runs thousands of such forward passes.

``ClsReadout(backend)`` is built once per request: a module shell (``attnscope.models.shell``) of the
classifier whose body stops one block early (the shell's own block list; the shared model is not
touched), then the last block from ``Sites`` (``attnscope.models.sites``) at position 0:

    q = x[:, 0] W_Q + b_Q,  k = x W_K + b_K,  v = x W_V + b_V          per head
    a = softmax(q k^T / sqrt(d_head), padded keys masked)
    h = ln_attn(x[:, 0] + sum_h (a v)_h W_O[h] + b_O)
    y = ln_mlp(h + mlp_out(mlp(h)))
    logits = unembed(y)                                                 pooler, then classifier

It equals the full forward's logits to float32 rounding (``tests/models/test_cls_readout.py``).
``cls_readout(backend)`` gives None where the model is not such a classifier (post-norm blocks, [CLS]
pooling, plain content attention, a two-module MLP): callers then run the whole model.
"""

from __future__ import annotations

import math
import threading
import weakref

import torch

from attnscope.models.shell import module_shell
from attnscope.models.site_table import site_modules
from attnscope.models.sites import Sites, SitesUnavailableError


def _fits(sites: Sites, model: torch.nn.Module) -> bool:
    """Whether the last block can be read at [CLS] alone by the arithmetic above."""
    u, last = sites.unembed, sites.blocks[-1]
    config = getattr(model, "config", None)
    return (
        u is not None
        and u.kind == "classifier"
        and u.pooling == "cls"
        and sites.norm_placement == "post"
        and not (sites.parallel or sites.shared or sites.pass_state)
        and sites.final_norm is None
        and sites.n_layers >= 2
        and sites.n_kv_heads == sites.n_heads
        and last.scores == "content"
        and not last.position_bias
        and last.rope is None
        and last.W_Q is not None
        and last.out_scale is None
        and last.mlp_scale is None
        and last.ln_attn_out is None
        and last.ln_mlp_out is None
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and isinstance(site_modules(sites.family, last.block)["mlp_out"], torch.nn.Linear)
    )


class ClsReadout:
    """``readout(input_ids [B, T], attention_mask [B, T]) -> logits [B, classes]`` of ``backend``'s
    classifier (right or left padding; ``attention_mask`` 1 on real tokens)."""

    def __init__(self, model: torch.nn.Module, sites: Sites):
        self.sites = sites
        self.last = sites.blocks[-1]
        self.mlp_out = site_modules(sites.family, self.last.block)["mlp_out"]
        self.shell = module_shell(model)
        body = getattr(self.shell, "base_model", self.shell)
        parent_path, _, name = sites.blocks_path.rpartition(".")
        parent = body.get_submodule(parent_path) if parent_path else body
        blocks = getattr(parent, name)
        # the shell's own list, one block short: the shared model keeps all of its blocks
        setattr(parent, name, torch.nn.ModuleList(list(blocks)[:-1]))
        self.body = body

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        s, blk = self.sites, self.last
        x = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # [B, T, d]
        x0 = x[:, 0]  # [B, d]
        q = torch.einsum("bd,hde->bhe", x0, blk.W_Q)  # [B, H, dh]
        k = torch.einsum("btd,hde->bhte", x, blk.W_K)  # [B, H, T, dh]
        v = torch.einsum("btd,hde->bhte", x, blk.W_V)
        if blk.b_Q is not None:
            q = q + blk.b_Q
        if blk.b_K is not None:
            k = k + blk.b_K[:, None]
        if blk.b_V is not None:
            v = v + blk.b_V[:, None]
        scores = torch.einsum("bhe,bhte->bht", q, k) / math.sqrt(s.d_head)
        scores = scores.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
        z = torch.einsum("bht,bhte->bhe", torch.softmax(scores, dim=-1), v)  # [B, H, dh]
        attn = torch.einsum("bhe,hed->bd", z, blk.W_O)
        if blk.b_O is not None:
            attn = attn + blk.b_O
        h = blk.ln_attn.apply(x0 + attn)
        y = blk.ln_mlp.apply(h + self.mlp_out(blk.mlp(h)))
        return s.unembed.logits(y)


_READOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def cls_readout(backend) -> ClsReadout | None:
    """The ``ClsReadout`` of ``backend``'s classifier, or None where it does not fit (see the module
    docstring) or the model has no ``Sites`` entry. Built once per loaded backend (its shell costs
    about 20 ms of module copying) and kept beside it, never on it: a readout holds no state a call
    changes, so concurrent requests share it."""
    with _LOCK:
        if backend in _READOUTS:
            return _READOUTS[backend]
    model = getattr(backend, "classifier", None)
    readout = None
    if model is not None:
        try:
            sites = backend.sites
        except SitesUnavailableError:
            sites = None
        if sites is not None and _fits(sites, model):
            readout = ClsReadout(model, sites)
    with _LOCK:
        return _READOUTS.setdefault(backend, readout)
