"""The builder of ``Sites`` (``attnscope.models.sites``) from a model family's entry in the table
(``attnscope.models.site_families``: a new family is one entry there plus a test), and the modules
the request session taps (``site_modules``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch

from attnscope.models.site_families import FAMILIES, Family
from attnscope.models.sites import BlockSites, Norm, Pooler, Rope, Sites, SitesUnavailableError, Unembed

if TYPE_CHECKING:
    from attnscope.models.zoo.arch import Arch


def _get(root: torch.nn.Module, path: str | None):
    """The attribute at dotted ``path`` of ``root`` (None for a None path or a missing attribute)."""
    if path is None:
        return None
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _view(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach()


def _in_proj(module, n: int, d: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``nn.Linear`` ``[n * d, d_model]`` -> ``W [n, d_model, d]``, ``b [n, d]``."""
    w = _view(module.weight).unflatten(0, (n, d)).transpose(1, 2)
    b = _view(module.bias)
    return w, None if b is None else b.unflatten(0, (n, d))


def _qkv(fam: Family, blk, n_heads: int, n_kv: int, d: int, d_model: int) -> list:
    """``[W_Q, b_Q, W_K, b_K, W_V, b_V]`` of one block in the family's layout."""
    if fam.proj == "linear":
        out = []
        for path, n in ((fam.q, n_heads), (fam.k, n_kv), (fam.v, n_kv)):
            module = _get(blk, path)
            out.extend((None, None) if module is None else _in_proj(module, n, d))
        return out
    module = _get(blk, fam.qkv)
    w, b = _view(module.weight), _view(module.bias)
    if fam.proj == "conv1d-fused":  # weight [d_model, 3 * d_model]: q | k | v column blocks
        out = []
        for i in range(3):
            wi = w[:, i * n_heads * d : (i + 1) * n_heads * d].unflatten(1, (n_heads, d)).permute(1, 0, 2)
            bi = None if b is None else b[i * n_heads * d : (i + 1) * n_heads * d].unflatten(0, (n_heads, d))
            out.extend((wi, bi))
        return out
    if fam.proj == "neox-fused":  # weight [heads * 3 * d, d_model]: per head q, k, v
        w3 = w.unflatten(0, (n_heads, 3, d))
        b3 = None if b is None else b.unflatten(0, (n_heads, 3, d))
        out = []
        for i in range(3):
            out.extend((w3[:, i].transpose(1, 2), None if b3 is None else b3[:, i]))
        return out
    raise SitesUnavailableError(f"projection layout {fam.proj!r} is not one of linear, conv1d-fused, neox-fused")


def _out_proj(fam: Family, module, n_heads: int, d: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The output projection -> ``W_O [n_heads, d, d_model]``, ``b_O [d_model]``."""
    w = _view(module.weight)
    if fam.proj == "conv1d-fused":  # Conv1D weight [heads * d, d_model]
        w_o = w.unflatten(0, (n_heads, d))
    else:  # nn.Linear weight [d_model, heads * d]
        w_o = w.unflatten(1, (n_heads, d)).permute(1, 2, 0)
    return w_o, _view(module.bias)


def _norm(kind: str, module) -> Norm:
    eps = next((getattr(module, a) for a in ("eps", "variance_epsilon", "epsilon") if hasattr(module, a)), 1e-5)
    return Norm(kind, _view(getattr(module, "weight", None)), _view(getattr(module, "bias", None)), float(eps), module)


def _missing(fam: Family, body, blocks) -> list[str]:
    """The table paths that this model does not have (empty: it matches its family's entry)."""
    block = blocks[0]
    paths = [fam.attn, fam.o, fam.ln_attn, fam.ln_mlp, fam.mlp, fam.attn_out, fam.mlp_out]
    paths += [fam.v] if fam.qkv is None else [fam.qkv]
    missing = [p for p in paths if p is not None and _get(block, p) is None]
    missing += [f"body.{p}" for p in (fam.embed, fam.final_norm, fam.rope) if p is not None and _get(body, p) is None]
    return missing


def build_sites(model: torch.nn.Module, family: str, config: Arch | None = None) -> Sites:
    """``Sites`` of ``model`` from the table entry ``family`` (``SitesUnavailableError`` naming what is
    missing when there is no entry or the model does not match it). ``config``: for the zoo, its typed
    architecture (``attnscope.models.zoo.arch``: ``heads``, ``depth``, ``pool``); Hugging Face models read
    ``model.config``."""
    fam = FAMILIES.get(family)
    if fam is None:
        raise SitesUnavailableError(
            f"model family {family!r} has no Sites entry (blocks, per-head Q/K/V/O weights, norms, unembedding); "
            f"site-based analyses support {', '.join(sorted(FAMILIES))}"
        )
    body = model if family.startswith("zoo") else getattr(model, "base_model", model)
    layer_list = _get(body, fam.blocks)
    if layer_list is None:
        raise SitesUnavailableError(f"{type(model).__name__} has no blocks at {fam.blocks!r} ({family} family)")
    blocks_list = list(layer_list)
    missing = _missing(fam, body, blocks_list)
    if missing:
        raise SitesUnavailableError(f"{type(model).__name__} lacks {', '.join(missing)} of the {family} family's entry")
    if family.startswith("zoo"):
        if config is None:
            raise SitesUnavailableError(f"{family}: a zoo model's sites need its architecture (config)")
        n_layers, n_heads = int(config.depth), int(config.heads)
        w_v = _get(blocks_list[0], fam.v).weight
        d_head, n_kv = int(w_v.shape[0]) // n_heads, n_heads
        d_model = int(w_v.shape[1])
        shared = len(blocks_list) == 1 and n_layers > 1
        parallel = False
    else:
        c = model.config
        n_layers, n_heads = int(c.num_hidden_layers), int(c.num_attention_heads)
        n_kv = int(getattr(c, "num_key_value_heads", None) or n_heads)
        d_model = int(c.hidden_size)
        d_head = int(getattr(c, "head_dim", None) or d_model // n_heads)
        shared = False
        parallel = fam.parallel or (bool(getattr(c, fam.parallel_attr, False)) if fam.parallel_attr else False)
    rope = None
    if fam.rope is not None:
        attn0 = _get(blocks_list[0], fam.attn)
        rotate = getattr(sys.modules[type(attn0).__module__], fam.rotate, None)
        if rotate is None:
            raise SitesUnavailableError(f"{family}: the attention's module has no {fam.rotate} to apply rotary angles")
        rope = Rope(_get(body, fam.rope), rotate)
    blocks = []
    for i in range(n_layers):
        blk = blocks_list[0 if shared else i]
        w_q, b_q, w_k, b_k, w_v, b_v = _qkv(fam, blk, n_heads, n_kv, d_head, d_model)
        o = _get(blk, fam.o)
        w_o, b_o = _out_proj(fam, o, n_heads, d_head)
        mlp_in, mlp_proj = _get(blk, fam.mlp_in), _get(blk, fam.mlp_proj)
        if fam.scores_attr is not None:
            scores = f"san-{_get(blk, fam.scores_attr)}"
        else:
            scores = "content" if w_q is not None else "none"
        blocks.append(
            BlockSites(
                index=i,
                block=blk,
                attn=_get(blk, fam.attn),
                out_proj=o,
                mlp=_get(blk, fam.mlp),
                W_Q=w_q,
                b_Q=b_q,
                W_K=w_k,
                b_K=b_k,
                W_V=w_v,
                b_V=b_v,
                W_O=w_o,
                b_O=b_o,
                ln_attn=_norm(fam.norm, _get(blk, fam.ln_attn)),
                ln_mlp=_norm(fam.norm, _get(blk, fam.ln_mlp)),
                rope=rope,
                out_scale=_view(_get(blk, fam.out_scale)),
                mlp_scale=_view(_get(blk, fam.mlp_scale)),
                logit_edits=fam.logit_carry is None or _get(blk, fam.logit_carry) is None,
                ln_attn_out=None if fam.attn_out_norm is None else _norm(fam.norm, _get(blk, fam.attn_out_norm)),
                ln_mlp_out=None if fam.mlp_out_norm is None else _norm(fam.norm, _get(blk, fam.mlp_out_norm)),
                scores=scores,
                position_bias=_get(blk, fam.bias_path) is not None,
                W_in=None if mlp_in is None else _view(mlp_in.weight).T,
                b_in=None if mlp_in is None else _view(mlp_in.bias),
                W_out=None if mlp_proj is None else _view(mlp_proj.weight).T,
                b_out=None if mlp_proj is None else _view(mlp_proj.bias),
                act=fam.act,
            )
        )
    final = _get(body, fam.final_norm)
    head = _get(model, fam.unembed)
    unembed = None
    if head is not None and getattr(head, "weight", None) is not None:
        if fam.unembed_kind == "lm_head":
            pooling = "position"
        else:
            pooling = fam.pooling or str(getattr(config, "pool", "mean"))
        if pooling in ("position", "mean", "cls"):
            softcap = getattr(model.config, fam.softcap_attr, None) if fam.softcap_attr else None
            dense = _get(body, fam.pooler)
            unembed = Unembed(
                _view(head.weight).T,
                _view(head.bias),
                fam.unembed_kind,
                pooling,
                None if softcap is None else float(softcap),
                None if dense is None else Pooler(_view(dense.weight).T, _view(dense.bias), fam.pooler_act),
            )
    return Sites(
        family=family,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        d_model=d_model,
        d_head=d_head,
        blocks=tuple(blocks),
        embed=_get(body, fam.embed),
        final_norm=None if final is None else _norm(fam.norm, final),
        unembed=unembed,
        norm_placement=fam.placement,
        parallel=parallel,
        shared=shared,
        blocks_path=fam.blocks,
        startable=fam.startable,
        pass_state=fam.pass_state,
        shared_state=getattr(model, "shared_block_kwargs", None) if shared else None,
    )


def site_modules(family: str, block: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """Block ``block``'s modules the session taps: ``attn_out``/``mlp_out`` (their outputs),
    ``o`` (its input: the heads' outputs), ``ln_attn``/``ln_mlp`` (``resid_mid``)."""
    fam = FAMILIES[family]
    return {
        "o": _get(block, fam.o),
        "attn_out": _get(block, fam.attn_out or fam.o),
        "mlp_out": _get(block, fam.mlp_out or fam.mlp),
        "ln_attn": _get(block, fam.ln_attn),
        "ln_mlp": _get(block, fam.ln_mlp),
    }
