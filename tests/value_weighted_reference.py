"""An independent computation of value-weighted maps (Kobayashi et al. 2020) of a Hugging Face model
with eager attention, with or without zero-ablated heads, for the tests of the value-weighted maps
after an intervention: hand-placed hooks read each block's values (its value projection's output)
and zero the ablated heads' slice of the output projection's input, the model's own attentions
(``output_attentions``) give the weights, and ``||v_j W_O[h]||`` is the norm of each key's
``[d_model]`` vector. Nothing of attnscope's anatomy (``Sites``) or recording is used."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch


@torch.no_grad()
def hooked_value_weighted(
    model: torch.nn.Module,
    n_layers: int,
    value_proj: Callable[[int], torch.nn.Module],
    out_proj: Callable[[int], torch.nn.Module],
    n_heads: int,
    n_kv: int,
    ablate: Sequence[tuple[int, int]] = (),
    **inputs,
) -> tuple[np.ndarray, np.ndarray]:
    """``(maps, norms)``: float32 ``[layer, head, query, key]`` ``a_ij ||v_j W_O[h]||`` (not
    normalised) and ``[layer, head, key]`` ``||v_j W_O[h]||`` of one forward
    of ``model(**inputs)`` in which each ``(layer, head)`` of ``ablate`` writes zero (its slice of the
    output projection's input set to 0); ``value_proj(l)`` / ``out_proj(l)``: block ``l``'s value
    and output projections (``nn.Linear``, weights ``[out, in]``)."""
    values: dict[int, torch.Tensor] = {}
    handles = []
    for layer in range(n_layers):
        handles.append(
            value_proj(layer).register_forward_hook(lambda m, a, o, layer=layer: values.__setitem__(layer, o.detach()))
        )
    for layer, head in ablate:
        d = out_proj(layer).weight.shape[1] // n_heads

        def zero(module, args, head=head, d=d):
            x = args[0].clone()
            x[..., head * d : (head + 1) * d] = 0.0
            return (x, *args[1:])

        handles.append(out_proj(layer).register_forward_pre_hook(zero))
    try:
        out = model(**inputs, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    maps, tables = [], []
    for layer in range(n_layers):
        a = out.attentions[layer][0].float()  # [head, query, key]
        W_O = out_proj(layer).weight.float()  # [d_model, head * d_head]
        d = W_O.shape[1] // n_heads
        v = values[layer][0].float().reshape(a.shape[-1], n_kv, d)  # [key, kv_head, d_head]
        norms = torch.stack(
            [(v[:, h // (n_heads // n_kv)] @ W_O[:, h * d : (h + 1) * d].T).norm(dim=-1) for h in range(n_heads)]
        )  # [head, key]
        maps.append(a * norms[:, None, :])
        tables.append(norms)
    return torch.stack(maps).numpy(), torch.stack(tables).numpy()


def normalised(raw: np.ndarray) -> np.ndarray:
    """Each row of ``raw [..., key]`` divided by its sum (the served maps' normalisation)."""
    total = raw.sum(-1, keepdims=True)
    return np.divide(raw, total, out=np.zeros_like(raw), where=total > 0)
