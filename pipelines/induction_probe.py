"""Probe inputs built by the analysis, run through a model: the repeated-random-token sequence
that reveals duplicate-token and induction heads (``attnscope.analysis.heads.make_probe_ids``)."""

from __future__ import annotations

import numpy as np
import torch

from attnscope.analysis.heads import make_probe_ids
from attnscope.analysis.maps import AttentionMaps
from attnscope.models.capture import capture_encoded
from attnscope.models.loading import LoadedModel

PROBE_LENGTH = 40  # 20 random tokens, then the same 20 again


def repeated_token_probe(
    loaded: LoadedModel, length: int = PROBE_LENGTH, seed: int = 0
) -> tuple[AttentionMaps, np.ndarray]:
    """Maps ``[layer, head, query, key]`` of ``[CLS] r_1..r_m r_1..r_m [SEP]`` and its full ids
    (special tokens included, aligned to the map positions). Hugging Face text models only."""
    tok = loaded.tokenizer
    if tok is None or not hasattr(tok, "all_special_ids") or loaded.spec.modality != "text":
        raise ValueError(f"model {loaded.spec.name!r} has no text tokenizer; the probe needs one")
    body = make_probe_ids(len(tok), length, seed=seed, exclude_ids=tok.all_special_ids)
    first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
    last = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
    ids = [i for i in (first,) if i is not None] + body.tolist() + [i for i in (last,) if i is not None]
    enc = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    if "token_type_ids" in tok.model_input_names:
        enc["token_type_ids"] = torch.zeros(1, len(ids), dtype=torch.long)
    maps = capture_encoded(loaded, enc, hidden_states=False)[0].maps
    return maps, np.asarray(ids)
