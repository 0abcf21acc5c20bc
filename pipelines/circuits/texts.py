"""Circuits of a loaded backend from texts: what the routes and the CLI call.

``circuit_of_texts`` tokenises a clean and a corrupted text (the same number of tokens, else refused),
scores every edge (EAP or EAP-IG), keeps the top ``k`` edges, measures their faithfulness and the
faithfulness curve, and re-checks the top ``n_check`` edges by exact path patching (Spearman).
``edge_of_texts`` path-patches one named edge and gives its EAP score beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.circuits.attribution import eap, eap_ig
from attnscope.pipelines.circuits.extract import exact_recheck, faithfulness_curve, ranked_edges, top_edges
from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import Prepared, faithfulness, patch_edge, prepare

MAX_TOKENS = 128


def _token(backend, text: str, what: str) -> int:
    ids = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise CircuitInputError(f"{what} {text!r} is {len(ids)} tokens; it must be exactly one (e.g. ' Paris')")
    return int(ids[0])


def prepare_texts(
    backend,
    clean: str,
    corrupted: str,
    metric: str = "answer_logit_diff",
    answer: str | None = None,
    wrong: str | None = None,
) -> Prepared:
    if backend.spec.task != "causal-lm":
        raise CircuitInputError(f"circuits read a causal LM's next-token logits; {backend.spec.name!r} is not one")
    a, b = backend.encode_text(clean).token_ids, backend.encode_text(corrupted).token_ids
    if len(a) > MAX_TOKENS:
        raise CircuitInputError(f"the clean text is {len(a)} tokens; circuits take at most {MAX_TOKENS}: shorten it")
    if len(a) != len(b):
        raise CircuitInputError(
            f"the clean text is {len(a)} tokens and the corrupted one {len(b)}: they must have the same number of "
            "tokens (positions are patched one to one); reword the corrupted text"
        )
    answers = None
    if metric != "loss":
        if answer is None or wrong is None:
            raise CircuitInputError(f"metric {metric} needs an answer and a wrong answer (one token each)")
        answers = ((_token(backend, answer, "answer"), _token(backend, wrong, "wrong answer")),)
    dev = backend.device
    ids = torch.tensor([list(a)], device=dev), torch.tensor([list(b)], device=dev)
    return prepare(backend.model, backend.sites, *ids, CircuitMetric(metric, answers=answers))


@dataclass(frozen=True)
class CircuitResult:
    method: str
    steps: int | None
    senders: list[str]
    receivers: list[str]
    n_edges: int
    edges: list[tuple[str, str, float]]  # the kept edges, by |score|
    m_clean: float
    m_corrupted: float
    m_circuit: float
    faithfulness: float
    curve: list[tuple[int, float]]
    check_spearman: float | None
    check: list[tuple[str, str, float, float]]  # (sender, receiver, score, exact effect)


def circuit_of_texts(
    backend,
    clean: str,
    corrupted: str,
    metric: str = "answer_logit_diff",
    answer=None,
    wrong=None,
    method: str = "eap",
    steps: int = 5,
    k: int = 50,
    n_check: int = 0,
    curve_points: int = 5,
) -> CircuitResult:
    prep = prepare_texts(backend, clean, corrupted, metric, answer, wrong)
    if method not in ("eap", "eap-ig"):
        raise CircuitInputError(f"method {method!r} is not eap or eap-ig")
    scores = eap(prep) if method == "eap" else eap_ig(prep, steps)
    keep = top_edges(scores, k=k)
    g = prep.graph
    sn, rn = g.sender_names(), g.receiver_names()
    kept = [(sn[s], rn[r], float(scores[s, r])) for s, r in ranked_edges(scores)[:k]]
    ks = sorted({int(x) for x in np.linspace(0, k, max(2, curve_points)).round()})
    curve = faithfulness_curve(prep, scores, ks)
    f = faithfulness(prep, keep)
    check, rho = [], None
    if n_check:
        agree = exact_recheck(prep, scores, n_check)
        check = [(s, r, a, e) for (s, r), a, e in zip(agree.edges, agree.attributed, agree.exact, strict=True)]
        rho = agree.spearman
    m_c = prep.m_corrupted + f * (prep.m_clean - prep.m_corrupted)
    return CircuitResult(
        method,
        steps if method == "eap-ig" else None,
        sn,
        rn,
        int(g.valid().sum()),
        kept,
        prep.m_clean,
        prep.m_corrupted,
        m_c,
        f,
        curve,
        rho,
        check,
    )


@dataclass(frozen=True)
class EdgeResult:
    sender: str
    receiver: str
    direction: str
    effect: float
    eap: float
    m_clean: float
    m_corrupted: float


def edge_of_texts(
    backend,
    clean: str,
    corrupted: str,
    sender: str,
    receiver: str,
    direction: str = "noising",
    metric: str = "answer_logit_diff",
    answer=None,
    wrong=None,
) -> EdgeResult:
    prep = prepare_texts(backend, clean, corrupted, metric, answer, wrong)
    s, r = prep.graph.edge(sender, receiver)
    effect = patch_edge(prep, s, r, direction)
    score = float(eap(prep, direction)[s, r])
    rn = prep.graph.receiver_names()[r]
    return EdgeResult(sender, rn, direction, effect, score, prep.m_clean, prep.m_corrupted)
