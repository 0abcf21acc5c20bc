"""The model view's head badges: a head's type labels in a few letters (``badge_text``), and for a
head whose only type is a sink, what it does with the rest of its attention (``resting_type``).

On a decoder LLM nearly every head puts most of its weight on the first token (the attention sink:
Xiao et al. 2023) and is labelled ``sink`` and nothing else, because the census's scores are masses
of the whole row (``analysis/heads.py``: not renormalised). That sink is the head's resting state;
its job is in the rest of the row. ``resting_type`` renormalises each position score over the mass
that is not on the sink (``score / (1 - sink)``) and names the best one when it holds at least
``RESTING_THRESHOLD`` of the rest: a badge ``sink›prev`` reads "a sink at rest, a previous-token head
in what remains".

Only the run's own position scores (previous, self, next) are read: the probe's duplicate/induction
scores come from another input, whose sink mass is not this one's. The row right after a first-token
sink has the sink as its previous token (and the row before a closing SEP has it as its next), so a
sink head scores some "previous" for nothing; that row's weight (at most 1) is taken out of the mean
over the ``R`` rows (``(score * R - 1) / (R - 1)``, a lower bound), so a short prompt cannot make
every sink a previous-token head.
"""

from __future__ import annotations

from attnscope.server.schemas import HeadScores

BADGES = {
    "previous": "prev",
    "next": "next",
    "self": "self",
    "cls-sink": "CLS",
    "sep-sink": "SEP",
    "sink": "sink",
    "broad": "broad",
    "local": "local",
    "duplicate": "dup",
    "induction": "ind",
}
SINKS = ("sink", "cls-sink", "sep-sink")
SINK_SCORE = {"sink": "sink", "cls-sink": "cls_sink", "sep-sink": "sep_sink"}
# position scores a sink head's rest is read for (masses of the row, renormalised over the non-sink part)
RESTING = ("previous", "self", "next")
EDGE = {"sink": "previous", "cls-sink": "previous", "sep-sink": "next"}  # the position scores the sink itself
RESTING_THRESHOLD = 0.5  # the share of the non-sink mass a type must hold (the census's sink threshold)
MIN_REST = 0.02  # below this much mass off the sink the rest is noise: no second type


def badge_text(labels: list[str]) -> str:
    """Short badge for a head's type labels (shift-3 -> "-3", shift(+1,+0) -> "(+1,+0)")."""
    short = [BADGES.get(l.replace("_", "-")) or l.removeprefix("shift") for l in labels]
    return " ".join(short[:2])


def resting_type(head: HeadScores, n_tokens: int) -> tuple[str, float] | None:
    """``(type, share)`` of a head whose only labels are sinks, in a run of ``n_tokens``: the position
    type holding the largest share of the mass off the sink (``score / (1 - sink mass)``, the score
    the sink itself gives taken out) when that share is at least ``RESTING_THRESHOLD``; None for any
    other head (its labels already say what it does)."""
    sinks = [l for l in head.labels if l in SINKS]
    if not sinks or len(sinks) != len(head.labels):
        return None
    on_sink = min(1.0, sum(getattr(head, SINK_SCORE[l]) or 0.0 for l in sinks))
    rest = 1.0 - on_sink
    if rest < MIN_REST:
        return None
    rows = max(n_tokens - 2, 2)  # fewer rows than the census used: a larger correction (conservative)
    edges = {EDGE[l] for l in sinks}

    def score(t: str) -> float:
        value = getattr(head, t if t != "self" else "self_") or 0.0
        return max(0.0, (value * rows - 1.0) / (rows - 1)) if t in edges else value

    shares = {t: score(t) / rest for t in RESTING}
    best = max(shares, key=shares.get)
    return (best, min(1.0, shares[best])) if shares[best] >= RESTING_THRESHOLD else None


def head_badge(head: HeadScores | None, n_tokens: int) -> tuple[str, str]:
    """``(badge, description)`` of a head for the model view (a run of ``n_tokens``): its labels, or
    for a sink at rest ``"sink›prev"`` and a sentence with the share."""
    if head is None or not head.labels:
        return "", "no type"
    kinds = ", ".join(head.labels)
    second = resting_type(head, n_tokens)
    if second is None:
        return badge_text(head.labels), kinds
    kind, share = second
    sink = BADGES[next(l for l in head.labels if l in SINKS)]
    return (
        f"{sink}›{BADGES[kind]}",
        f"{kinds} at rest; {kind} holds {share:.0%} of the attention off the sink",
    )
