"""Single figures the docs quote, measured by one command: ``python -m attnscope.experiments values``
(writes ``results/experiments/values.json``).

- ``conv_attention``: how closely the ``conv-attention`` model's constructed 9-head attention layer reproduces
  its first 3 x 3 convolution: the largest absolute difference between the two first-layer outputs
  (``[position, channel]``, every channel) on each of the fixed 300 held-out digits
  (``attnscope.experiments.measure.eval_set``), each output against the same convolution computed in float64,
  and the largest output magnitude for scale.
- ``minilm_next_token``: MiniLM's next-token head L1H8 on sentences it was never checked on before (the 300 SST-2
  dev sentences of the seed tables): its mass at offset +1 per sentence (2D-free shift scan,
  ``attnscope.analysis.shift``) and its mass on [CLS]/[SEP], as quantiles over the sentences.
"""

from __future__ import annotations

import json
import logging

import numpy as np

from attnscope.analysis.shift import scan_shifts
from attnscope.experiments import measure, seeds
from attnscope.models.capture import capture_image, capture_truncated
from attnscope.models.loading import load_model

log = logging.getLogger(__name__)

QUANTILES = (0.0, 0.05, 0.5, 0.95, 1.0)


def _quantiles(x) -> dict[str, float]:
    x = np.asarray(x, dtype=np.float64)
    return {f"q{int(q * 100):02d}": float(f"{np.quantile(x, q):.4g}") for q in QUANTILES} | {
        "mean": float(f"{x.mean():.4g}")
    }


def conv_attention_agreement(n: int = measure.N_EVAL) -> dict:
    import torch
    from torch.nn import functional as F

    model = load_model("conv-attention", "cpu")
    net = model.model
    w, b = net.conv1.weight.detach().double(), net.conv1.bias.detach().double()
    digits, _ = measure.eval_set("vision", n)
    diffs, ref_conv, ref_attn, scale = [], [], [], 0.0
    for d in digits:
        img = model.prepare_image(d)
        pair = capture_image(model, img).extras["conv_vs_attention"]  # [2, position, channel]: conv | attention
        diffs.append(float(np.abs(pair[0] - pair[1]).max()))
        with torch.no_grad():  # the same convolution in float64, from the same input grid
            x = net._grid(model.encode_image(img).pixels).double()
            ref = F.conv2d(x, w, b, padding=1)[0].flatten(1).T.numpy()  # [position, channel]
        ref_conv.append(float(np.abs(pair[0] - ref).max()))
        ref_attn.append(float(np.abs(pair[1] - ref).max()))
        scale = max(scale, float(np.abs(pair[0]).max()))
    return {
        "n_digits": len(digits),
        "max_abs_diff": _quantiles(diffs),
        "conv_vs_float64": _quantiles(ref_conv),
        "attention_vs_float64": _quantiles(ref_attn),
        "max_abs_output": round(scale, 4),
    }


def minilm_next_token(n: int = measure.N_EVAL, layer: int = 1, head: int = 8) -> dict:
    model = load_model("minilm", "cpu")
    texts, _ = measure.eval_set("text", n)
    nxt, special = [], []
    for t in texts:
        maps = capture_truncated(model, t).maps
        if maps.n_tokens - len(maps.special) < 3:
            continue  # a one- or two-word sentence has (almost) no next token to look at
        nxt.append(float(scan_shifts(maps, workers=1).mass_at(1)[layer, head]))
        rows = [i for i in range(maps.n_tokens) if i not in maps.special]
        special.append(float(maps.weights[layer, head][rows][:, list(maps.special)].sum(-1).mean()))
    return {
        "head": f"L{layer}H{head}",
        "n_sentences": len(nxt),
        "next_token_mass": _quantiles(nxt),
        "special_mass": _quantiles(special),
    }


PARTS = {"conv_attention": conv_attention_agreement, "minilm_next_token": minilm_next_token}


def write_values(parts=tuple(PARTS)) -> dict:
    """Measure ``parts`` (default all) into ``results/experiments/values.json``, keeping the other parts there."""
    path = seeds.RESULTS / "values.json"
    out = json.loads(path.read_text()) if path.is_file() else {}
    out["command"] = "python -m attnscope.experiments values"
    for name in parts:
        out[name] = PARTS[name]()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    log.info("wrote %s", path)
    return out
