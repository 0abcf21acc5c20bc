"""The database layer on SQLite and on a real PostgreSQL server: Alembic migrations, job and run
records, and bad databases (read-only, corrupt, unreachable, not a URL) stopping start-up with a
message that names the setting, without touching the data."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import inspect, text

from attnscope.server.config import Settings
from attnscope.server.db.engine import MIGRATIONS, SQLITE_FILE, DatabaseUnavailableError, open_database
from attnscope.server.db.run_records import RunRecords
from attnscope.server.jobs.records import JobRecords, ShardCheckpoint
from attnscope.server.main import create_app
from tests.conftest import free_port


def _open(database: dict):
    return open_database(database.get("database_url"), database.get("state_dir"))


def _head() -> str:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


def test_migrations_create_the_schema_and_a_second_open_keeps_the_data(database):
    db = _open(database)
    try:
        tables = set(inspect(db.engine).get_table_names())
        assert {"runs", "jobs", "job_shards", "alembic_version"} <= tables
        with db.engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == _head()
        JobRecords(db).create("j1", "census", {"n": 3})
    finally:
        db.close()
    db = _open(database)  # migrating an up-to-date database is a no-op
    try:
        assert JobRecords(db).get("j1").params == {"n": 3}
    finally:
        db.close()


def test_job_records_move_through_their_states_and_keep_nan(database):
    db = _open(database)
    try:
        jobs = JobRecords(db)
        jobs.create("a", "census", {"n": 20})
        assert jobs.start("a", "in-process@here", total=20, shards_total=2, done=0)
        assert not jobs.start("a", "other", 20, 2, 0)  # only a queued job starts
        assert not jobs.cancel_queued("a")
        jobs.save_shard("a", ShardCheckpoint(1, 10, 20, {"mean": [float("nan"), 1.5]}), "w1", 10)
        jobs.save_shard("a", ShardCheckpoint(0, 0, 10, {"mean": [0.25]}), "w2", 20)
        shards = jobs.shards("a")
        assert [s.index for s in shards] == [0, 1] and math.isnan(shards[1].partial["mean"][0])
        assert jobs.get("a").shards_done == 2 and jobs.get("a").done == 20
        assert jobs.interrupt_running() == ["a"]
        job = jobs.get("a")
        assert job.status == "interrupted" and "2 of 2 shards were saved" in job.message
        assert jobs.requeue_interrupted("a") and not jobs.requeue_interrupted("a")
        jobs.finish("a", "done", result={"x": float("nan"), "rows": [{"v": 1}]})
        assert math.isnan(jobs.result("a")["x"]) and jobs.get("a").has_rows
        jobs.create("b", "probe", {})
        assert jobs.cancel_queued("b") and jobs.get("b").status == "cancelled"
        assert [j.id for j in jobs.list(kind="census")] == ["a"] and jobs.count("cancelled") == 1
    finally:
        db.close()


def test_an_interrupted_job_counts_only_the_examples_its_saved_shards_hold(database):
    """Progress inside the shard that was running dies with the process: once interrupted, a job's
    ``done`` is what its saved shards hold, as a resume counts it (a kill -9 mid-shard once left 52 of
    75 where 50 were saved)."""
    db = _open(database)
    try:
        jobs = JobRecords(db)
        jobs.create("c", "census", {"n": 75})
        assert jobs.start("c", "in-process@here", total=75, shards_total=3, done=0)
        jobs.save_shard("c", ShardCheckpoint(0, 0, 25, {"mean": [0.5]}), "w", 25)
        jobs.save_shard("c", ShardCheckpoint(1, 25, 50, {"mean": [0.5]}), "w", 50)
        jobs.progress("c", 52)  # two examples of the third shard, then the process dies
        assert jobs.get("c").done == 52
        assert jobs.interrupt_running() == ["c"]
        job = jobs.get("c")
        assert (job.status, job.done, job.shards_done) == ("interrupted", 50, 2)
        jobs.create("d", "census", {"n": 10})  # nothing saved: nothing counted
        assert jobs.start("d", "in-process@here", total=10, shards_total=1, done=0)
        jobs.progress("d", 7)
        assert jobs.interrupt("d") and jobs.get("d").done == 0
    finally:
        db.close()


def test_run_records_keep_the_input_and_image_bytes(database):
    db = _open(database)
    try:
        runs = RunRecords(db)
        image = bytes(range(256)) * 4
        runs.save("r1", "vit", "upload", image=image, image_sha256="x" * 64, source={"name": "a.png"})
        runs.save("r1", "vit", "upload", image=b"ignored: same id, same content")
        got = runs.get("r1")
        assert got.image == image and got.source == {"name": "a.png"} and got.model == "vit"
        runs.save("r2", "minilm", "text", text="héllo", options={"generate": None}, token_ids=[1, 2])
        assert runs.get("r2").text == "héllo" and runs.get("nope") is None
    finally:
        db.close()


def test_a_corrupt_sqlite_file_stops_start_up_naming_the_setting_and_is_left_as_it_was(tmp_path):
    path = tmp_path / SQLITE_FILE
    garbage = b"this is no SQLite database\x00" * 100
    path.write_bytes(garbage)
    with pytest.raises(DatabaseUnavailableError) as err:
        open_database(None, tmp_path)
    message = str(err.value)
    assert "ATTNSCOPE_STATE_DIR" in message and "file is not a database" in message
    with pytest.raises(DatabaseUnavailableError, match="ATTNSCOPE_STATE_DIR"):
        with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path)))):
            pass
    assert path.read_bytes() == garbage  # nothing overwritten


def test_a_read_only_database_url_stops_start_up_and_keeps_its_jobs(tmp_path):
    db = open_database(None, tmp_path)
    JobRecords(db).create("kept", "census", {"n": 1})
    db.close()
    url = f"sqlite:///file:{tmp_path / SQLITE_FILE}?mode=ro&uri=true"
    with pytest.raises(DatabaseUnavailableError) as err:
        open_database(url)
    assert "ATTNSCOPE_DATABASE_URL" in str(err.value) and "readonly" in str(err.value).replace("-", "")
    db = open_database(None, tmp_path)
    assert JobRecords(db).get("kept") is not None
    db.close()


def _make_read_only(path: Path) -> bool:
    """The file can no longer be written by this process: ``chattr +i`` as root (root writes through
    file modes), ``chmod 444`` otherwise. False when that is not possible here."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        return True
    return shutil.which("chattr") is not None and subprocess.run(["chattr", "+i", str(path)]).returncode == 0


def _make_writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o644)


def test_a_read_only_sqlite_file_stops_start_up_naming_the_setting_and_keeps_the_data(tmp_path):
    db = open_database(None, tmp_path)
    JobRecords(db).create("kept", "census", {"n": 1})
    db.close()
    path = tmp_path / SQLITE_FILE
    before = path.read_bytes()
    if not _make_read_only(path):
        pytest.skip("cannot make a file read-only for root here (no chattr +i)")
    try:
        with pytest.raises(DatabaseUnavailableError) as err:
            with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path)))):
                pass
        message = str(err.value)
        assert "ATTNSCOPE_STATE_DIR" in message and "writable" in message
        assert path.read_bytes() == before
    finally:
        _make_writable(path)
    db = open_database(None, tmp_path)
    assert JobRecords(db).get("kept") is not None
    db.close()


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("not a url", "is not a database URL"),
        ("nosuchdialect://x/y", "cannot use the database"),
        (f"postgresql+psycopg2://u:secret@127.0.0.1:{free_port()}/db", "cannot be opened, migrated or written"),
        # issue 29 part 5: malformed URLs were echoed, password and all
        ("postgresql://u:secret@db:notaport/x", "is not a database URL"),
        ("postgresql://u:secret@@db/x nonsense", "ATTNSCOPE_DATABASE_URL"),
        ("::u:secret@", "is not a database URL"),
        ("post gres://u:se:cr@et@host", "is not a database URL"),
    ],
)
def test_bad_database_urls_name_the_setting_and_hide_the_password(url, fragment):
    with pytest.raises(DatabaseUnavailableError) as err:
        open_database(url)
    message = str(err.value)
    assert "ATTNSCOPE_DATABASE_URL" in message and fragment in message
    assert "secret" not in message and "cr@et" not in message
