"""What Compare holds of a comparison (``ComparePair``: the two runs, their per-head divergences and,
compared on aligned tokens, the positions) and the pair whose maps it draws for a map kind
(``shown_pair``: attention weights or value-weighted maps, ``map_kind``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.map_kind import kind_note, shown_id
from attnscope.frontend.run_record import RunRecord


class ComparePair(BaseModel):
    """What ``compare-pair`` holds: the two runs and their per-head divergences ``[layer][head]``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    a: RunRecord
    b: RunRecord
    js: list[list[float]]
    tv: list[list[float]]
    max_abs_diff: list[list[float]]
    positions_a: list[int] | None = None  # compared on aligned tokens: A's positions, paired with B's
    positions_b: list[int] | None = None
    note: str = ""  # the map kind drawn (``map_kind.kind_note``): "" for the attention weights as asked

    def tokens(self) -> tuple[list[str], list[str]]:
        """A's and B's tokens at the compared positions (all of them, or the aligned ones)."""
        if self.positions_a is None or self.positions_b is None:
            return list(self.a.tokens), list(self.b.tokens)
        return [self.a.tokens[i] for i in self.positions_a], [self.b.tokens[j] for j in self.positions_b]

    @classmethod
    def from_store(cls, data) -> ComparePair | None:
        """The pair a store holds; ``None`` for an empty, stale or garbled one (the page then asks
        for a new comparison)."""
        if not isinstance(data, dict) or not data:
            return None
        try:
            return cls.model_validate(data)
        except ValidationError:
            return None


def shown_pair(api: ApiClient, pair: ComparePair, kind: str | None) -> ComparePair:
    """The pair whose maps the page draws for the map ``kind``: ``pair`` itself for the weights; for
    ``value-weighted`` A's and B's value-weighted maps' runs (same tokens and positions) with their
    divergences; when the API has no value-weighted maps for either side both keep the weights and
    ``note`` says why."""
    if kind != "value-weighted":
        return pair
    id_a, note = shown_id(api, pair.a.id, kind)
    id_b, note_b = shown_id(api, pair.b.id, kind) if id_a != pair.a.id else (pair.b.id, note)
    if id_b == pair.b.id:  # refused for A or for B: the weights on both sides, A − B means one kind
        return pair.model_copy(update={"note": note if id_a == pair.a.id else note_b})
    try:
        cmp = api.compare_heads(id_a, id_b, align=pair.positions_a is not None)
    except ApiError as exc:
        return pair.model_copy(update={"note": kind_note(kind, exc.detail)})
    a, b = pair.a.model_copy(update={"id": id_a}), pair.b.model_copy(update={"id": id_b})
    return pair.model_copy(
        update={"a": a, "b": b, "js": cmp.js, "tv": cmp.tv, "max_abs_diff": cmp.max_abs_diff, "note": note}
    )
