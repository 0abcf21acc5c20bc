"""One request session for recording and editing at a model's sites (``attnscope.models.sites``).

A backend whose family has a ``Sites`` entry installs its **site taps** once, when it is built
(before any request shares it): a forward pre-hook and hook per block (``resid_pre``,
``resid_post``), a pre-hook on the output projection (``head_z``: its input, the heads' outputs
``[batch, pos, head, head_dim]``), hooks on the modules whose outputs are ``attn_out`` and
``mlp_out``, and one on a norm for ``resid_mid``. Each tap reads the ``ContextVar`` request context
of ``attnscope.models.attention_fn`` and does nothing without one, so the taps are as invisible to
other requests as ``attnscope_qk`` is: no request registers a hook, replaces a method or sets an
attribute on the shared model. A request opens a session::

    rec = SiteRecorder({"resid_pre", "head_z"}, layers={3})
    with session(rec):                                 # this thread / task only
        backend.model(**enc)
    rec.values["head_z"][3]                            # [batch, pos, head, head_dim]

A site hook is any object with ``edit_site(site, layer, value) -> value`` (a recorder returns the
value unchanged; an edit returns another tensor of the same shape) and optionally
``wants(site, layer) -> bool`` so that taps skip sites it leaves alone. Hooks run in order; the
session nests over attention hooks (``hooks=``, see ``attention_fn``) and the QK recorder
(``recorder=``), so one forward pass can record queries and keys, edit attention and record the
residual stream together.

Site values: ``resid_pre``/``resid_mid``/``resid_post``/``attn_out``/``mlp_out`` ``[batch, pos,
d_model]`` in the model's dtype and device; ``head_z`` ``[batch, pos, head, head_dim]``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from attnscope.models.attention_fn import AttentionContext, QKRecorder, attention_context, current_context
from attnscope.models.site_table import site_modules
from attnscope.models.sites import SITE_NAMES, SiteOutOfRangeError, Sites

_INSTALLED: weakref.WeakKeyDictionary[torch.nn.Module, tuple] = weakref.WeakKeyDictionary()
_INSTALL_LOCK = threading.Lock()


@dataclass
class SiteRecorder:
    """Keeps the values of ``sites`` (default: all) at ``layers`` (default: all) of the forward passes
    of one session: ``values[site][layer]`` (detached; a later pass at the same site replaces it)."""

    sites: Collection[str] = SITE_NAMES
    layers: Collection[int] | None = None
    values: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.sites) - set(SITE_NAMES)
        if unknown:
            raise SiteOutOfRangeError(f"unknown sites {sorted(unknown)}: use {', '.join(SITE_NAMES)}")
        self.sites = frozenset(self.sites)
        self.layers = None if self.layers is None else frozenset(int(i) for i in self.layers)

    def wants(self, site: str, layer: int) -> bool:
        return site in self.sites and (self.layers is None or layer in self.layers)

    def edit_site(self, site: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        self.values.setdefault(site, {})[layer] = value.detach().clone()
        return value

    def stacked(self, site: str) -> torch.Tensor:
        """``[layer, ...]`` the recorded layers of ``site`` in layer order."""
        got = self.values.get(site, {})
        return torch.stack([got[i] for i in sorted(got)])


@contextmanager
def session(
    *site_hooks: Any,
    recorder: QKRecorder | None = None,
    hooks: Sequence[Any] = (),
    return_probs: bool = False,
) -> Iterator[AttentionContext]:
    """Within the block, the site taps call ``site_hooks`` and the attention function records into
    ``recorder`` and applies ``hooks``, for this thread/task only (see the module docstring)."""
    with attention_context(recorder=recorder, hooks=hooks, return_probs=return_probs, site_hooks=site_hooks) as ctx:
        yield ctx


def check_layers(sites: Sites, layers: Collection[int] | None) -> None:
    """Refuse a layer outside ``0..n_layers-1`` (``SiteOutOfRangeError``, a 422 naming the range)."""
    for layer in layers or ():
        sites.block(layer)


# ---------------------------------------------------------------------------------------- taps
def _run_hooks(site: str, layer: int, value: torch.Tensor) -> torch.Tensor | None:
    """The context's site hooks applied to ``value`` (None: no context, no hook wants the site)."""
    ctx = current_context()
    if ctx is None or not ctx.site_hooks:
        return None
    changed = None
    for hook in ctx.site_hooks:
        wants = getattr(hook, "wants", None)
        if wants is not None and not wants(site, layer):
            continue
        new = hook.edit_site(site, layer, value if changed is None else changed)
        changed = new
    return changed


def _cursor_layer() -> int:
    ctx = current_context()
    return -1 if ctx is None else ctx.cursor.layer


def _block_pre(index: int, n_layers: int, shared: bool):
    def hook(module, args, kwargs):
        ctx = current_context()
        if ctx is None:
            return None
        cur = ctx.cursor
        cur.layer = (cur.calls % n_layers) if shared else index
        cur.calls += 1
        if not ctx.site_hooks:
            return None
        hidden = args[0] if args else kwargs["hidden_states"]
        new = _run_hooks("resid_pre", cur.layer, hidden)
        if new is None or new is hidden:
            return None
        return ((new, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": new})

    return hook


def _replace_output(output, new):
    if isinstance(output, tuple):
        return (new, *output[1:])
    return new


def _output_tap(site: str, index: int | None):
    def hook(module, args, output):
        layer = index if index is not None else _cursor_layer()
        value = output[0] if isinstance(output, tuple) else output
        new = _run_hooks(site, layer, value)
        return None if new is None or new is value else _replace_output(output, new)

    return hook


def _input_tap(site: str, index: int | None, split: tuple[int, int] | None = None):
    def hook(module, args):
        layer = index if index is not None else _cursor_layer()
        x = args[0]
        value = x if split is None else x.unflatten(-1, split)
        new = _run_hooks(site, layer, value)
        if new is None or new is value:
            return None
        return (new if split is None else new.flatten(-2), *args[1:])

    return hook


def install_taps(model: torch.nn.Module, sites: Sites) -> None:
    """Install the site taps on ``model`` once (idempotent; call before the model is shared).
    A shared block (``sites.shared``) gets one set of taps that read the layer from the cursor."""
    with _INSTALL_LOCK:
        if model in _INSTALLED:
            return
        handles = []
        seen: set[int] = set()
        split = (sites.n_heads, sites.d_head)
        for blk in sites.blocks:
            if id(blk.block) in seen:
                continue
            seen.add(id(blk.block))
            index = None if sites.shared else blk.index
            mods = site_modules(sites.family, blk.block)
            handles.append(
                blk.block.register_forward_pre_hook(
                    _block_pre(blk.index, sites.n_layers, sites.shared), with_kwargs=True
                )
            )
            handles.append(blk.block.register_forward_hook(_output_tap("resid_post", index)))
            handles.append(mods["o"].register_forward_pre_hook(_input_tap("head_z", index, split)))
            handles.append(mods["attn_out"].register_forward_hook(_output_tap("attn_out", index)))
            handles.append(mods["mlp_out"].register_forward_hook(_output_tap("mlp_out", index)))
            if not sites.parallel:
                if sites.norm_placement == "pre":
                    handles.append(mods["ln_mlp"].register_forward_pre_hook(_input_tap("resid_mid", index)))
                else:
                    handles.append(mods["ln_attn"].register_forward_hook(_output_tap("resid_mid", index)))
        _INSTALLED[model] = tuple(handles)


def taps_installed(model: torch.nn.Module) -> int:
    """How many taps ``install_taps`` put on ``model`` (0: none)."""
    return len(_INSTALLED.get(model, ()))
