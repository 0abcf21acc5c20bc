"""A job's status line: kind, id, state, examples done of total, its error, and a note when N asked
for more examples than the data set holds (the job then covers all of them and says so)."""

from __future__ import annotations

from attnscope.server.schemas import JobPublic

# the kinds whose ``total`` counts examples (sharded over the data set); the others report steps
EXAMPLE_KINDS = frozenset({"census", "faithfulness", "head-effects", "dla"})


def n_shortfall(status: JobPublic) -> str:
    """``""``, or a sentence when ``params.n`` asks for more examples than the job covers."""
    asked, total = status.params.get("n"), status.total
    if status.kind not in EXAMPLE_KINDS or not isinstance(asked, int) or not total or total >= asked:
        return ""
    start = status.params.get("start")
    where = f" from index {start}" if isinstance(start, int) and start else ""
    dataset = status.params.get("dataset") or "the"
    return f"N = {asked} asked, but the {dataset} data set has {total} examples{where}: the job uses all {total}"


def status_line(status: JobPublic) -> str:
    """``"census 3f2a: running · 25/872 · N = 1000 asked, but ..."``."""
    text = f"{status.kind} {status.id}: {status.status} · {status.done}/{status.total or '?'}"
    if status.error:
        text += f" · {status.error}"
    note = n_shortfall(status)
    return text + (f" · {note}" if note else "")
