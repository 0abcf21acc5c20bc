"""Alembic revision 0002 (the workspace of runs: name, pin, token count) on SQLite and on a real
PostgreSQL server: a database made at 0001 with runs in it is upgraded in place, its runs keep their
inputs and get their token count from the stored ids; downgrading removes the columns again."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from attnscope.server.db.engine import MIGRATIONS, open_database, resolve_url
from attnscope.server.db.run_records import RunRecords


def _migrate(url: str, revision: str, down: bool = False) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            cfg = Config()
            cfg.set_main_option("script_location", str(MIGRATIONS))
            cfg.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(cfg, revision)
    finally:
        engine.dispose()


def _url(database: dict) -> str:
    url, _ = resolve_url(database.get("database_url"), database.get("state_dir"))
    return url


def _run_columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {c["name"] for c in inspect(engine).get_columns("runs")}
    finally:
        engine.dispose()


def test_0002_upgrades_a_database_with_runs_and_counts_their_tokens(database):
    url = _url(database)
    _migrate(url, "0001")
    assert not {"name", "pinned", "n_tokens"} & _run_columns(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        insert = text(
            "INSERT INTO runs (id, model, source_kind, text, token_ids, source, created, last_used) "
            "VALUES (:id, :model, :kind, :text, :ids, :source, :t, :t)"
        )
        conn.execute(
            insert,
            dict(id="old-text", model="minilm", kind="text", text="a b c", ids="[101, 7, 8, 102]", source=None, t=10.0),
        )
        conn.execute(
            insert,
            dict(
                id="old-image",
                model="vit",
                kind="sample",
                text="",
                ids=None,
                source='{"dataset": "mnist", "index": 3}',
                t=20.0,
            ),
        )
    engine.dispose()

    db = open_database(database.get("database_url"), database.get("state_dir"))  # upgrades to head
    try:
        page = RunRecords(db).list()
        by_id = {s.id: s for s in page.items}
        assert page.total == 2 and [s.id for s in page.items] == ["old-image", "old-text"]  # newest first
        assert by_id["old-text"].n_tokens == 4 and by_id["old-image"].n_tokens is None
        assert not any(s.pinned or s.name for s in page.items)
        assert RunRecords(db).get("old-text").text == "a b c"  # the input is kept
        assert RunRecords(db).update("old-text", name="kept", pinned=True).pinned
        RunRecords(db).save("old-image", "vit", "sample", n_tokens=50)  # computed again: counted now
        RunRecords(db).save("old-text", "minilm", "text", n_tokens=99)  # a count already there stays
        by_id = {s.id: s for s in RunRecords(db).list().items}
        assert by_id["old-image"].n_tokens == 50 and by_id["old-text"].n_tokens == 4
    finally:
        db.close()

    _migrate(url, "0001", down=True)
    assert not {"name", "pinned", "n_tokens"} & _run_columns(url)
    _migrate(url, "head")
    assert {"name", "pinned", "n_tokens"} <= _run_columns(url)
