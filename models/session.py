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

A session can also **stop** the forward pass at a site: ``session(rec, stop_at=StopAt("resid_pre",
4))`` ends the pass when it reaches the stream entering block 4 (after the session's hooks have seen
it), and the rest of the ``with`` block is skipped: later blocks and the unembedding are not
computed. ``stop.reached`` says whether it stopped (False: the pass never got there).

Site values: ``resid_pre``/``resid_mid``/``resid_post``/``attn_out``/``mlp_out`` ``[batch, pos,
d_model]`` in the model's dtype and device; ``head_z`` ``[batch, pos, head, head_dim]``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from attnscope.models.attention_fn import AttentionContext, QKRecorder, attention_context, current_context
from attnscope.models.site_table import site_modules
from attnscope.models.sites import SITE_NAMES, SiteOutOfRangeError, Sites

if TYPE_CHECKING:
    from attnscope.models.zoo.arch import Arch

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


@dataclass(eq=False)
class StopAt:
    """Where a session ends the forward pass: at ``site`` of block ``layer`` (the session's site hooks
    see the value first). ``reached`` is set once the pass has stopped there."""

    site: str
    layer: int
    reached: bool = False

    def __post_init__(self) -> None:
        if self.site not in SITE_NAMES:
            raise SiteOutOfRangeError(f"unknown site {self.site!r}: use {', '.join(SITE_NAMES)}")

    def wants(self, site: str, layer: int) -> bool:
        return site == self.site and layer == self.layer

    def edit_site(self, site: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        raise _Stopped(self)


class _Stopped(Exception):
    """Carries a session's ``StopAt`` out of the forward pass to that session (and no other)."""

    def __init__(self, stop: StopAt):
        super().__init__(f"stopped at {stop.site} of block {stop.layer}")
        self.stop = stop


@contextmanager
def session(
    *site_hooks: Any,
    recorder: QKRecorder | None = None,
    hooks: Sequence[Any] = (),
    return_probs: bool = False,
    start: Start | None = None,
    stop_at: StopAt | None = None,
) -> Iterator[AttentionContext]:
    """Within the block, the site taps call ``site_hooks``, the attention function (``attnscope_qk``
    and the zoo's attention) records into ``recorder`` and applies ``hooks``, and a ``start_shell``
    runs from ``start``, for this thread/task only; with ``stop_at`` the forward pass ends there and
    the rest of the block is skipped (see the module docstring)."""
    stops = () if stop_at is None else (stop_at,)
    try:
        with attention_context(
            recorder=recorder, hooks=hooks, return_probs=return_probs, site_hooks=(*site_hooks, *stops), start=start
        ) as ctx:
            yield ctx
    except _Stopped as exc:
        if exc.stop is not stop_at:  # an outer session's stop: its session ends the pass
            raise
        stop_at.reached = True


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


def attach(model: torch.nn.Module, family: str, config: Arch | None = None) -> Sites:
    """``Sites`` of ``model`` from the family table, with the session's taps installed (what a
    backend does at load; for a model built outside a backend, before it is shared). Zoo models:
    ``family=zoo_family(model.arch)`` and their typed ``model.arch`` as ``config``."""
    from attnscope.models.site_table import build_sites

    sites = build_sites(model, family, config)
    install_taps(model, sites)
    return sites


def zoo_family(arch: Arch | dict) -> str:
    """The table entry of a zoo architecture (a typed ``Arch`` or its JSON config): ``zoo-san`` for
    SAN, else ``zoo``."""
    from attnscope.models.zoo.arch import parse

    return parse(arch).sites_family


def taps_installed(model: torch.nn.Module) -> int:
    """How many taps ``install_taps`` put on ``model`` (0: none)."""
    return len(_INSTALLED.get(model, ()))


# ---------------------------------------------------------------------------------------- start
@dataclass(frozen=True)
class Start:
    """Run from block ``layer`` on: its input is ``hidden [1, pos, d_model]`` (the stream entering it,
    e.g. ``resid_pre[layer]`` of a recorded pass; ``None`` for block 0: the embeddings) repeated to
    ``rows`` rows; blocks before it hand their input on without computing."""

    layer: int
    hidden: torch.Tensor | None
    rows: int


def _gate(layer: int, forward):
    """Block ``layer``'s forward under the context's ``Start``: before the start block, hand the input
    on; at it, run on the start's rows; after it (or with no start), run as usual."""

    def gated(*args, **kwargs):
        ctx = current_context()
        start = None if ctx is None else ctx.start
        if start is None or layer > start.layer:
            return forward(*args, **kwargs)
        hidden = args[0] if args else kwargs["hidden_states"]
        if layer < start.layer:
            return hidden
        new = hidden if start.hidden is None else start.hidden.to(hidden.dtype).to(hidden.device)
        new = new.repeat(start.rows, 1, 1)  # [rows, pos, d_model]
        if args:
            return forward(new, *args[1:], **kwargs)
        return forward(**{**kwargs, "hidden_states": new})

    return gated


def start_shell(model: torch.nn.Module, sites: Sites) -> torch.nn.Module:
    """A per-request shell of ``model`` (``attnscope.models.shell``: new module objects sharing every
    tensor, the taps included) whose blocks honour the session's ``start=Start(...)``; the shared
    model is untouched. Families whose blocks take a pass state (the zoo) cannot start mid-way
    (``Sites.startable``)."""
    from attnscope.models.shell import module_shell

    if not sites.startable:
        raise SiteOutOfRangeError(f"the {sites.family} family's blocks cannot start from a recorded residual")
    shell = module_shell(model)
    body = getattr(shell, "base_model", shell)
    blocks = body.get_submodule(sites.blocks_path)
    for i, block in enumerate(blocks):
        block.forward = _gate(i, block.forward)  # on the shell's block only
    return shell
