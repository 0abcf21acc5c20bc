"""How many tokens a hard rationale of fraction ``k`` holds: the three counting rules of faithfulness tools.

Comprehensiveness removes the top tokens, sufficiency keeps only the top tokens. Tools disagree on how many,
and the disagreement moves AOPC (``docs/claims.md``, "Counting rules"). Each rule below is written from the
tool's code; ``n`` is the number of non-special tokens, ``k`` the fraction:

| rule | removed (comprehensiveness) | kept (sufficiency) | when a count is 0 |
|---|---|---|---|
| `eraser-code` | `n - int((1 - k) * n)` | `int(k * n)` | the example keeps only its special tokens |
| `eraser-order` | as `eraser-code` | as `eraser-code` | as `eraser-code` |
| `ceil` | `ceil(k n)`, at least 1 | `ceil(k n)`, at least 1 | never 0 (n > 0) |
| `ferret` | `int(k * n)` | `int(k * n)` | the bin is skipped |

Sources: ERASER's `rationale_benchmark/models/encode_attend.py` keeps `nlargest(int(k_fraction * len(doc)))`
tokens (sufficiency) and `nsmallest(int((1 - k_fraction) * len(doc)))` (comprehensiveness); ferret's
`evaluators/utils_from_soft_to_discrete.py` (`_get_id_tokens_percentage`) takes `v = int(percentage * len(...))`
for both and returns no rationale unless `v > 0`; `ceil` is attnscope's rule before the counting rules became
an option (both sides ceil(k n)).

``eraser-code`` copies ERASER's counts only: attnscope then feeds the tokens left in document order.
``eraser-order`` copies the order too. ``heapq.nlargest`` and ``nsmallest`` return their items sorted by
score, and ERASER's ``encode_attend.py`` appends them to ``evidence_only_docs`` and ``no_evidence_docs`` as
returned, so its sufficiency input is the kept tokens from the highest score down and its comprehensiveness
input the remaining tokens from the lowest score up (``attnscope.analysis.conventions.perturb``). Ties:
ERASER's tuples ``(score, token)`` fall back to comparing the tokens; attnscope's to the position.

``eraser-code`` and ``ferret`` use Python's ``int()`` of the floating-point product exactly as the tools do,
so their quirks carry over (``int(0.29 * 100)`` is 28, because ``0.29 * 100`` is 28.999999999999996);
``ceil`` subtracts 1e-9 before rounding up so that ``0.07 * 100`` (7.000000000000001) counts 7.

Example (``n = 16``, ``k = 0.2``): ``ceil`` removes and keeps 4; ``eraser-code`` removes 4
(16 - int(12.8)) and keeps 3; ``ferret`` removes and keeps 3.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

CountingRule = Literal["eraser-code", "eraser-order", "ceil", "ferret"]
COUNTING_RULES: tuple[str, ...] = ("eraser-code", "eraser-order", "ceil", "ferret")
SCORE_ORDERED_RULES: tuple[str, ...] = ("eraser-order",)
"""The rules that feed the kept and remaining tokens in score order rather than document order."""
DEFAULT_RULE: CountingRule = "eraser-code"


class RationaleCounts(NamedTuple):
    """Tokens removed for comprehensiveness and kept for sufficiency; ``None``: the bin is skipped."""

    remove: int | None
    keep: int | None


def token_count(fraction: float, n: int, mode: str = "ceil") -> int:
    """How many of ``n`` tokens a fraction ``k`` means: ``ceil``: ceil(k n) in [1, n] (0 when n is 0);
    ``floor``: ``int(k * n)`` as Python computes it (ERASER's and ferret's kept count)."""
    if mode == "ceil":
        return min(n, max(1, math.ceil(fraction * n - 1e-9))) if n else 0
    if mode == "floor":
        return min(n, int(fraction * n))
    raise ValueError(f"unknown count mode {mode!r}; choose 'ceil' or 'floor'")


def rationale_counts(fraction: float, n: int, rule: str = DEFAULT_RULE) -> RationaleCounts:
    """Tokens removed and kept at fraction ``k`` of ``n`` candidate tokens under ``rule`` (module table).

    Args:
        fraction: ``k`` in (0, 1].
        n: number of candidate (non-special) tokens, >= 0.
        rule: ``"eraser-code"``, ``"eraser-order"`` (same counts), ``"ceil"`` or ``"ferret"``.

    Returns:
        ``RationaleCounts(remove, keep)``; under ``ferret`` both are ``None`` when ``int(k n)`` is 0.
    """
    if rule not in COUNTING_RULES:
        raise ValueError(f"unknown counting rule {rule!r}; choose one of {', '.join(COUNTING_RULES)}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1]; got {fraction}")
    if n < 0:
        raise ValueError(f"n must be >= 0; got {n}")
    if rule == "ceil":
        c = token_count(fraction, n, "ceil")
        return RationaleCounts(c, c)
    if rule == "ferret":
        v = int(fraction * n)
        return RationaleCounts(v, v) if v > 0 else RationaleCounts(None, None)
    return RationaleCounts(n - min(n, int((1 - fraction) * n)), min(n, int(fraction * n)))
