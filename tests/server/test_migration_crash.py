"""kill -9 during a database migration (issue 29 item 6), on SQLite and on a real PostgreSQL server: a
process upgrading a 0001 database with runs in it is killed after revision 0002 has added its columns
and its index but before the upgrade commits. Nothing is lost: the old schema and its rows are intact,
the next start-up names the revision it found and the one it reached, and the runs come through."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text

from attnscope.server.db.engine import open_database
from attnscope.server.db.run_records import RunRecords
from tests.server.test_migrations import _migrate, _run_columns, _url

# the migrating process: holds (sleeps) right after 0002's CREATE INDEX ran, inside the upgrade
CHILD = """
import sys, time
from pathlib import Path
from sqlalchemy import event
from sqlalchemy.engine import Engine

marker = Path(sys.argv[1])

@event.listens_for(Engine, "after_cursor_execute")
def _hold(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith("CREATE INDEX") and "ix_runs_created" in statement:
        marker.write_text("migrating")
        time.sleep(600)

from attnscope.server.db.engine import open_database
open_database(sys.argv[2] or None, sys.argv[3] or None)
"""


def _revision(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def test_a_kill_mid_migration_leaves_the_old_schema_and_the_next_start_migrates(database, tmp_path, caplog):
    url = _url(database)
    _migrate(url, "0001")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runs (id, model, source_kind, text, token_ids, source, created, last_used) "
                "VALUES (:id, 'minilm', 'text', :text, :ids, NULL, :t, :t)"
            ),
            [dict(id=f"r{i}", text=f"run {i}", ids=json.dumps(list(range(i + 2))), t=float(i)) for i in range(20)],
        )
    engine.dispose()

    marker = tmp_path / "migrating"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(marker), database.get("database_url") or "", database.get("state_dir") or ""],
        cwd=Path(__file__).resolve().parents[2],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not marker.exists():
        assert child.poll() is None, child.stderr.read()[-2000:]
        assert time.time() < deadline, "the migration never reached 0002's index"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    # nothing of the half-done upgrade remains: the revision, the columns and the rows are 0001's
    assert _revision(url) == "0001"
    assert not {"name", "pinned", "n_tokens"} & _run_columns(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 20
    engine.dispose()

    with caplog.at_level(logging.INFO, logger="attnscope.server.db.engine"):
        db = open_database(database.get("database_url"), database.get("state_dir"))
    try:
        assert any("migrated from revision 0001 to 0002" in r.getMessage() for r in caplog.records), caplog.text
        page = RunRecords(db).list(limit=100)
        assert page.total == 20
        assert {s.id: s.n_tokens for s in page.items} == {f"r{i}": i + 2 for i in range(20)}
    finally:
        db.close()
    assert _revision(url) == "0002"
