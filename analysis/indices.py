"""The one check of an index against a size (a layer, a head, a query position, a class ...).

``check_index("layer", 7, 6)`` raises ``OutOfRangeError("layer=7 is out of range: this model has 6
layers, use 0..5")``: the message names the parameter, the size and the valid range, so it reads as
what to change. The API answers it with a 422; ``OutOfRangeError`` is both an ``IndexError`` and a
``ValueError`` so callers that catch either keep working.
"""

from __future__ import annotations

from numbers import Integral


class OutOfRangeError(IndexError, ValueError):
    """An index outside ``0..size - 1`` (or ``-size..size - 1`` where negative indices are allowed)."""

    def __str__(self) -> str:
        return str(self.args[0])


def check_index(
    name: str, value: int, size: int, owner: str = "this model", what: str | None = None, negative: bool = False
) -> int:
    """``value`` when it indexes ``size`` items, else ``OutOfRangeError`` saying what to send.

    ``owner`` and ``what`` word the message (``"this run"``, ``"positions"``; ``what`` defaults to
    ``name + "s"``); ``negative`` also accepts ``-size..-1`` (counted from the end)."""
    low = -size if negative else 0
    if isinstance(value, bool) or not isinstance(value, Integral) or not low <= value < size:
        raise OutOfRangeError(
            f"{name}={value!r} is out of range: {owner} has {size} {what or name + 's'}, use {low}..{size - 1}"
        )
    return value
