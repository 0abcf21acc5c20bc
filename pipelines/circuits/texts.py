"""Circuits of a loaded backend from texts: what the routes and the CLI call.

``circuit_of_texts`` tokenises a clean and a corrupted text (the same number of tokens, else refused),
scores every edge (EAP or EAP-IG), keeps the top ``k`` edges, measures their faithfulness and the
faithfulness curve, and re-checks the top ``n_check`` edges by exact path patching (Spearman).
``edge_of_texts`` path-patches one named edge and gives its EAP score beside it. ``prepare_pairs``
stacks a posted pair set into one batch (every text the same number of tokens, at most
``MAX_BATCH_TOKENS`` pairs x tokens: the bound on a request's memory, ``bench/circuits.py``) and
refuses the pairs the model fails (``failing_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.circuits.attribution import eap, eap_ig
from attnscope.pipelines.circuits.extract import exact_recheck, faithfulness_curve, ranked_edges, top_edges
from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import (
    Prepared,
    empty_metric,
    faithfulness,
    mean_senders,
    patch_edge,
    prepare,
)

MAX_TOKENS = 128
MAX_BATCH_TOKENS = 512  # pairs x tokens of one request: its [senders, pairs, tokens, d_model] tensors
ABLATIONS = ("corrupted", "mean")


def _token(backend, text: str, what: str) -> int:
    ids = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise CircuitInputError(f"{what} {text!r} is {len(ids)} tokens; it must be exactly one (e.g. ' Paris')")
    return int(ids[0])


@dataclass(frozen=True)
class TextPair:
    """One clean/corrupted pair as text; ``answer``/``wrong`` (one token each) for the answer metrics;
    ``label`` names it in results (default ``pair {index}``)."""

    clean: str
    corrupted: str
    answer: str | None = None
    wrong: str | None = None
    label: str = ""


def check_causal(backend) -> None:
    if backend.spec.task != "causal-lm":
        raise CircuitInputError(f"circuits read a causal LM's next-token logits; {backend.spec.name!r} is not one")


def encode_pair(backend, pair: TextPair, metric: str, what: str = "the") -> tuple[list[int], list[int], tuple | None]:
    """``(clean ids, corrupted ids, (answer, wrong) token ids or None)`` of one pair; ``what`` names the
    pair in refusals (e.g. ``"pair 3's"``)."""
    a, b = backend.encode_text(pair.clean).token_ids, backend.encode_text(pair.corrupted).token_ids
    if len(a) > MAX_TOKENS:
        raise CircuitInputError(f"{what} clean text is {len(a)} tokens; circuits take at most {MAX_TOKENS}: shorten it")
    if len(a) != len(b):
        raise CircuitInputError(
            f"{what} clean text is {len(a)} tokens and {what} corrupted one {len(b)}: they must have the same number "
            "of tokens (positions are patched one to one); reword the corrupted text"
        )
    answers = None
    if metric != "loss":
        if pair.answer is None or pair.wrong is None:
            raise CircuitInputError(
                f"metric {metric} needs an answer and a wrong answer (one token each) for {what} pair"
            )
        answers = (_token(backend, pair.answer, f"{what} answer"), _token(backend, pair.wrong, f"{what} wrong answer"))
    return list(a), list(b), answers


def failing_rows(prep: Prepared) -> list[tuple[int, float, float]]:
    """The rows of a prepared pair set the model fails: ``(row, clean value, corrupted value)`` where the
    clean input does not beat the corrupted one (answer metrics: the answer's logit does not exceed the
    wrong answer's on the clean input; ``loss``: the clean loss is not below the corrupted one)."""
    out = []
    for i in range(prep.clean_ids.shape[0]):
        if prep.metric.kind == "loss":
            row = CircuitMetric("loss", prep.metric.positions)
            ids = prep.clean_ids[i : i + 1]
            c = float(row(prep.clean.logits[i : i + 1], ids))
            d = float(row(prep.corrupted.logits[i : i + 1], ids))
            if not c < d:
                out.append((i, c, d))
        else:
            ans = (prep.metric.answers[i],)
            row = CircuitMetric("answer_logit_diff", prep.metric.positions, ans)
            c = float(row(prep.clean.logits[i : i + 1], prep.clean_ids[i : i + 1]))
            d = float(row(prep.corrupted.logits[i : i + 1], prep.clean_ids[i : i + 1]))
            if not c > 0:
                out.append((i, c, d))
    return out


def refuse_failures(prep: Prepared, labels: list[str] | None = None) -> None:
    """Refuse a posted pair set with pairs the model fails (``failing_rows``), naming them."""
    bad = failing_rows(prep)
    if not bad:
        return
    names = [labels[i] if labels else f"pair {i}" for i, _, _ in bad]
    if prep.metric.kind == "loss":
        why = "the clean text's loss is not below the corrupted one's"
    else:
        why = "the model does not prefer the answer to the wrong answer on the clean text (logit difference <= 0)"
    detail = ", ".join(f"{n} ({c:+.3g} vs {d:+.3g})" for n, (_, c, d) in zip(names[:10], bad[:10], strict=False))
    raise CircuitInputError(
        f"the model fails {len(bad)} of {prep.clean_ids.shape[0]} pairs: {why}: {detail}; drop or fix those pairs"
    )


def prepare_pairs(backend, pairs: list[TextPair], metric: str = "answer_logit_diff", check: bool = True) -> Prepared:
    """One batch of ``pairs``: every text the same number of tokens (the pairs of one request are one
    batch, patched position by position); ``check`` refuses pairs the model fails (``refuse_failures``)."""
    check_causal(backend)
    if not pairs:
        raise CircuitInputError("the pair set is empty: give at least one clean/corrupted pair")
    many = len(pairs) > 1
    enc = [encode_pair(backend, p, metric, f"pair {i}'s" if many else "the") for i, p in enumerate(pairs)]
    lengths = {len(a) for a, _, _ in enc}
    if len(lengths) > 1:
        raise CircuitInputError(
            f"the pairs have {len(lengths)} different token lengths ({', '.join(map(str, sorted(lengths)))}): the "
            "pairs of one request are one batch, so every text must have the same number of tokens; split them "
            "by length or reword them (a job takes pairs of different lengths)"
        )
    n_tokens = len(enc[0][0])
    if len(pairs) * n_tokens > MAX_BATCH_TOKENS:
        raise CircuitInputError(
            f"{len(pairs)} pairs of {n_tokens} tokens are {len(pairs) * n_tokens} tokens; a circuit request takes at "
            f"most {MAX_BATCH_TOKENS} (pairs x tokens, what bounds its memory): send at most "
            f"{max(1, MAX_BATCH_TOKENS // n_tokens)} pairs of this length, or run a circuit job (POST /api/v1/jobs, "
            "kind circuit: one pair at a time, any number)"
        )
    answers = None if metric == "loss" else tuple(ans for _, _, ans in enc)
    dev = backend.device
    clean = torch.tensor([a for a, _, _ in enc], device=dev)
    corrupted = torch.tensor([b for _, b, _ in enc], device=dev)
    prep = prepare(backend.model, backend.sites, clean, corrupted, CircuitMetric(metric, answers=answers))
    if check:
        refuse_failures(prep)
    return prep


def prepare_texts(
    backend,
    clean: str,
    corrupted: str,
    metric: str = "answer_logit_diff",
    answer: str | None = None,
    wrong: str | None = None,
) -> Prepared:
    return prepare_pairs(backend, [TextPair(clean, corrupted, answer, wrong)], metric, check=False)


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
    n_pairs: int = 1
    ablation: str = "corrupted"
    m_empty: float | None = None  # M(every edge patched): m_corrupted, or the mean-ablated graph's
    n_kept: int = 0  # edges in the circuit (``edges`` lists at most k of them)
    threshold: float | None = None


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
    pairs: list[TextPair] | None = None,
    ablation: str = "corrupted",
    threshold: float | None = None,
) -> CircuitResult:
    """The circuit of one pair (``clean``/``corrupted``) or of a posted pair set (``pairs``: one batch,
    scores and metrics averaged over it, pairs the model fails refused). ``ablation``: edges outside the
    circuit read their corrupted values or their mean over the pairs (``mean``: two pairs at least).
    The circuit is the top ``k`` edges by ``|score|``, or (``threshold`` given) every edge with
    ``|score| >= threshold``, of which the top ``k`` are listed (``n_kept`` counts them all); the curve
    runs from 0 to the circuit's size."""
    if method not in ("eap", "eap-ig"):
        raise CircuitInputError(f"method {method!r} is not eap or eap-ig")
    if ablation not in ABLATIONS:
        raise CircuitInputError(f"ablation {ablation!r} is not one of {', '.join(ABLATIONS)}")
    if pairs is None:
        prep = prepare_texts(backend, clean, corrupted, metric, answer, wrong)
    else:
        prep = prepare_pairs(backend, pairs, metric)
    source = None
    if ablation == "mean":
        if prep.clean_ids.shape[0] < 2:
            raise CircuitInputError("mean ablation needs a pair set (two pairs at least): post pairs, or use corrupted")
        source = mean_senders(prep.model, prep.sites, prep.clean_ids)
    m_empty = empty_metric(prep, source)
    scores = eap(prep) if method == "eap" else eap_ig(prep, steps)
    keep = top_edges(scores, k=k) if threshold is None else top_edges(scores, threshold=threshold)
    n_kept = int(keep.sum())
    g = prep.graph
    sn, rn = g.sender_names(), g.receiver_names()
    kept = [(sn[s], rn[r], float(scores[s, r])) for s, r in ranked_edges(scores)[: min(k, n_kept)]]
    ks = sorted({int(x) for x in np.linspace(0, n_kept, max(2, curve_points)).round()})
    curve = faithfulness_curve(prep, scores, ks, source, m_empty)
    f = faithfulness(prep, keep, source, m_empty)
    check, rho = [], None
    if n_check:
        agree = exact_recheck(prep, scores, n_check)
        check = [(s, r, a, e) for (s, r), a, e in zip(agree.edges, agree.attributed, agree.exact, strict=True)]
        rho = agree.spearman
    m_c = m_empty + f * (prep.m_clean - m_empty)
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
        int(prep.clean_ids.shape[0]),
        ablation,
        m_empty,
        n_kept,
        threshold,
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
