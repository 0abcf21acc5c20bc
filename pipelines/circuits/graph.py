"""The head-level computational graph of a pre-norm decoder, as index arithmetic over ``Sites``.

Senders (``S = 1 + n_layers * (n_heads + 1)``): ``E`` (the embedding: the stream entering block 0),
``a{l}.h{h}`` (query head ``h``'s write ``z_h @ W_O[h]``, times the layer scale where there is one),
``m{l}`` (the MLP's output). Receivers (``R = n_layers * (n_heads + 2 n_kv + 1) + 1``): ``a{l}.h{h}<q>``
per query head, ``a{l}.g{g}<k>`` / ``a{l}.g{g}<v>`` per **key/value head** (grouped-query attention:
query heads ``g * n_heads / n_kv .. (g + 1) * n_heads / n_kv - 1`` share them, so a k/v edge feeds
all of them), ``m{l}`` (the MLP's input) and ``logits`` (the final norm's input).

An edge ``u -> v`` exists when ``u`` is upstream of ``v`` in the residual stream: order key ``-1``
for ``E``, ``2l`` for heads (as senders and q/k/v receivers), ``2l + 1`` for the MLP, ``2L`` for the
logits; ``u -> v`` iff ``key(u) < key(v)``. The stream a receiver reads is the sum of its senders'
outputs plus the biases (``b_O``), which do not depend on the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from attnscope.models.sites import Sites, SitesUnavailableError

PARTS = ("q", "k", "v")


class CircuitInputError(ValueError):
    """A request the circuit engine cannot answer (unknown node, lengths that differ, bounds): 422."""


def check_sites(sites: Sites) -> None:
    """Refuse the families whose stream is not a sum of the graph's senders (post-norm, parallel,
    sandwich norms, shared blocks) or that lack what the engine reads."""
    sites.require("final_norm", "lm_head", "W_Q", "W_K", feature="circuits")
    why = None
    if sites.norm_placement != "pre":
        why = "post-norm blocks (the stream is renormalised after each block)"
    elif sites.parallel:
        why = "parallel attention and MLP blocks"
    elif sites.shared or sites.pass_state:
        why = "a shared block"
    elif any(b.ln_attn_out is not None or b.ln_mlp_out is not None for b in sites.blocks):
        why = "sandwich norms (an attention output that is not linear in the heads)"
    elif any(b.scores != "content" or b.position_bias for b in sites.blocks):
        why = "heads whose logits are not q . k"
    if why is not None:
        raise SitesUnavailableError(f"circuits need a sequential pre-norm decoder; the {sites.family} family has {why}")


@dataclass(frozen=True)
class Graph:
    n_layers: int
    n_heads: int
    n_kv: int

    @classmethod
    def of(cls, sites: Sites) -> Graph:
        return cls(sites.n_layers, sites.n_heads, sites.n_kv_heads)

    # ---------------------------------------------------------------- senders
    @property
    def n_senders(self) -> int:
        return 1 + self.n_layers * (self.n_heads + 1)

    def head_sender(self, layer: int, head: int) -> int:
        return 1 + layer * (self.n_heads + 1) + head

    def mlp_sender(self, layer: int) -> int:
        return 1 + layer * (self.n_heads + 1) + self.n_heads

    def sender_names(self) -> list[str]:
        out = ["E"]
        for layer in range(self.n_layers):
            out += [f"a{layer}.h{h}" for h in range(self.n_heads)] + [f"m{layer}"]
        return out

    def sender_keys(self) -> np.ndarray:
        keys = [-1]
        for layer in range(self.n_layers):
            keys += [2 * layer] * self.n_heads + [2 * layer + 1]
        return np.asarray(keys)

    # -------------------------------------------------------------- receivers
    @property
    def per_layer(self) -> int:
        return self.n_heads + 2 * self.n_kv + 1

    @property
    def n_receivers(self) -> int:
        return self.n_layers * self.per_layer + 1

    def receiver(self, layer: int, part: str, index: int = 0) -> int:
        """Receiver index of ``part`` (``q`` head ``index``, ``k``/``v`` key/value head ``index``,
        ``mlp``) at ``layer``, or ``logits``."""
        if part == "logits":
            return self.n_layers * self.per_layer
        base = layer * self.per_layer
        offset = {"q": 0, "k": self.n_heads, "v": self.n_heads + self.n_kv, "mlp": self.n_heads + 2 * self.n_kv}[part]
        return base + offset + index

    def slots(self, layer: int, part: str) -> slice:
        """The receiver indices of one part of a layer: ``q`` ``[n_heads]``, ``k``/``v`` ``[n_kv]``."""
        start = self.receiver(layer, part, 0)
        return slice(start, start + (self.n_heads if part == "q" else self.n_kv if part in ("k", "v") else 1))

    def receiver_names(self) -> list[str]:
        out = []
        for layer in range(self.n_layers):
            out += [f"a{layer}.h{h}<q>" for h in range(self.n_heads)]
            out += [f"a{layer}.g{g}<{p}>" for p in ("k", "v") for g in range(self.n_kv)]
            out.append(f"m{layer}")
        return [*out, "logits"]

    def receiver_keys(self) -> np.ndarray:
        keys = []
        for layer in range(self.n_layers):
            keys += [2 * layer] * (self.n_heads + 2 * self.n_kv) + [2 * layer + 1]
        return np.asarray([*keys, 2 * self.n_layers])

    def valid(self) -> np.ndarray:
        """``[S, R]`` bool: which (sender, receiver) pairs are edges."""
        return self.sender_keys()[:, None] < self.receiver_keys()[None, :]

    # ------------------------------------------------------------------ names
    def parse_sender(self, name: str) -> int:
        names = self.sender_names()
        if name not in names:
            raise CircuitInputError(f"unknown sender {name!r}: use E, a<layer>.h<head> or m<layer> (e.g. a0.h1, m2)")
        return names.index(name)

    def parse_receiver(self, name: str) -> int:
        names = self.receiver_names()
        if name in names:
            return names.index(name)
        m = re.fullmatch(r"a(\d+)\.h(\d+)<([kv])>", name)
        if m and int(m[1]) < self.n_layers and int(m[2]) < self.n_heads:  # a query head's k/v: its kv head
            g = int(m[2]) // (self.n_heads // self.n_kv)
            return names.index(f"a{m[1]}.g{g}<{m[3]}>")
        raise CircuitInputError(
            f"unknown receiver {name!r}: use a<layer>.h<head><q>, a<layer>.g<kv head><k|v>, m<layer> or logits"
        )

    def edge(self, sender: str, receiver: str) -> tuple[int, int]:
        s, r = self.parse_sender(sender), self.parse_receiver(receiver)
        if not self.valid()[s, r]:
            raise CircuitInputError(
                f"{sender} -> {receiver} is not an edge: the sender is not upstream of the receiver"
            )
        return s, r
