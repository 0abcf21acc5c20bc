"""Probe inputs built by the analysis, run through a model: the repeated-random-token sequence
that reveals duplicate-token and induction heads (``attnscope.analysis.heads.make_probe_ids``).

Encoders see ``[CLS] r_1..r_20 r_1..r_20 [SEP]``; causal LMs see ``r_1..r_30 r_1..r_30`` (after the
BOS token when their tokenizer adds one), the probe of Olsson et al. 2022: an induction head
attends from each token of the second copy to the token after its earlier occurrence.
"""

from __future__ import annotations

import numpy as np

from attnscope.analysis.heads import induction_scores, make_probe_ids
from attnscope.analysis.maps import AttentionMaps
from attnscope.models.loading import Backend

PROBE_LENGTH = 40  # encoders: 20 random tokens, then the same 20 again
CAUSAL_PROBE_LENGTH = 60  # causal LMs: 2 x 30 random tokens


def probe_ids(loaded: Backend, length: int | None = None, seed: int = 0) -> np.ndarray:
    """The probe's full ids (special tokens included), as the model's tokenizer frames a text."""
    tok = loaded.tokenizer
    if tok is None or not hasattr(tok, "__len__") or loaded.spec.modality != "text":
        raise ValueError(f"model {loaded.spec.name!r} has no subword tokenizer; the probe needs one")
    causal = loaded.attention.causal
    length = length or (CAUSAL_PROBE_LENGTH if causal else PROBE_LENGTH)
    body = make_probe_ids(len(tok), length, seed=seed, exclude_ids=tok.all_special_ids)
    if causal:  # the BOS token the tokenizer puts before a text, if any; no closing token
        bos = tok.bos_token_id
        adds_bos = bos is not None and tok("a", verbose=False)["input_ids"][:1] == [bos]
        return np.asarray(([bos] if adds_bos else []) + body.tolist())
    first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
    last = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
    ids = [i for i in (first,) if i is not None] + body.tolist() + [i for i in (last,) if i is not None]
    return np.asarray(ids)


def probe_note(loaded: Backend, length: int | None = None, seed: int = 0) -> str:
    """How the probe was built, for the API's ``probe`` note."""
    causal = loaded.attention.causal
    half = (length or (CAUSAL_PROBE_LENGTH if causal else PROBE_LENGTH)) // 2
    if causal:
        return f"repeated random tokens: r1..r{half} r1..r{half} (causal LM), seed {seed}"
    return f"repeated random tokens: [CLS] r1..r{half} r1..r{half} [SEP], seed {seed}"


def repeated_token_probe(loaded: Backend, length: int | None = None, seed: int = 0) -> tuple[AttentionMaps, np.ndarray]:
    """Maps ``[layer, head, query, key]`` of the probe and its full ids (special tokens included,
    aligned to the map positions). Text models with a subword tokenizer only."""
    ids = probe_ids(loaded, length, seed)
    maps = loaded.run(loaded.encode_ids(ids), hidden_states=False).maps
    return maps, ids


def mean_induction_scores(loaded: Backend, half: int = 30, seeds=(0, 1, 2, 3, 4)) -> np.ndarray:
    """``[layer, head]``: each head's induction score (``analysis.heads.induction_scores``) on the
    probe of ``half`` random tokens repeated once, averaged over the probe ``seeds``."""
    scores = []
    for s in seeds:
        maps, ids = repeated_token_probe(loaded, 2 * half, seed=s)
        scores.append(induction_scores(maps, ids))
    return np.mean(scores, axis=0)
