"""Open the database named by the settings, migrate it to the newest schema, check it is writable.

The caller passes the settings (``Settings.database_url``, ``Settings.state_dir``: the variables
``ATTNSCOPE_DATABASE_URL`` and ``ATTNSCOPE_STATE_DIR``). A database URL (any SQLAlchemy URL, e.g.
``postgresql+psycopg2://user@host/db``) wins; otherwise an SQLite file ``attnscope.db`` in WAL mode
under the state folder: ``state_dir``, else ``$ATTNSCOPE_DATA_DIR/state`` when that is set, else
``~/.local/state/attnscope``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from attnscope.models.data_registry import configured_data_dir

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
SQLITE_FILE = "attnscope.db"


class DatabaseUnavailableError(RuntimeError):
    """The configured database cannot be opened, migrated or written; the message names the setting."""


def default_state_dir() -> Path:
    """Where the SQLite file lives when neither a URL nor a state folder is set (see the module docstring)."""
    data = configured_data_dir()  # ATTNSCOPE_DATA_DIR, read in attnscope.models.data_registry only
    if data is not None:
        return data / "state"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "attnscope"


def redact_url(url: str) -> str:
    """``url`` with everything between its user name and the last ``@`` (the password) replaced by
    ``***``, even when the rest does not parse (a malformed URL is shown to say what is wrong with it)."""
    at = url.rfind("@")
    scheme_end = url.find("://")
    start = scheme_end + 3 if 0 <= scheme_end < at else 0
    if at < 0 or ":" not in url[start:at]:
        return url
    return url[:start] + url[start:at].split(":", 1)[0] + ":***" + url[at:]


def resolve_url(database_url: str | None = None, state_dir: str | Path | None = None) -> tuple[str, str]:
    """``(url, setting)``: the URL to open and the name of the setting it came from."""
    if database_url:
        return database_url, "ATTNSCOPE_DATABASE_URL"
    folder = Path(state_dir) if state_dir else default_state_dir()
    return f"sqlite:///{folder / SQLITE_FILE}", "ATTNSCOPE_STATE_DIR"


@dataclass
class Database:
    """An engine and its session factory (``with db.session() as s, s.begin(): ...``)."""

    engine: Engine
    session: sessionmaker[Session]
    url: str  # password hidden

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # every new connection: WAL, foreign keys, wait on locks
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=10000")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()


def _revision(conn) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _migrate(engine: Engine, sqlite: bool, shown: str) -> None:
    """Alembic ``upgrade head`` in one transaction, logging the revision found and the one reached.

    On SQLite the whole upgrade runs inside one ``BEGIN IMMEDIATE``: Python's sqlite3 driver would
    otherwise commit each ``ALTER``/``CREATE`` on its own, so a process killed mid-migration left
    half a schema under the old revision number (and the next start-up failed on a duplicate column).
    In one transaction a kill leaves the old schema and its rows intact, and the next start-up migrates
    again from there. PostgreSQL runs DDL in transactions of its own (the same guarantee).
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.connect() as conn:
        raw = conn.connection.driver_connection if sqlite else None
        legacy = raw.isolation_level if sqlite else None
        try:
            if sqlite:
                raw.isolation_level = None  # the driver opens and commits nothing by itself: BEGIN is ours
                conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock first: no other writer mid-way
            found = _revision(conn)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            reached = _revision(conn)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            if sqlite:
                raw.isolation_level = legacy
    if found != reached:
        log.info("database %s: migrated from revision %s to %s", shown, found or "(empty)", reached)
    else:
        log.info("database %s: at revision %s", shown, reached)


def open_database(database_url: str | None = None, state_dir: str | Path | None = None) -> Database:
    """Open, migrate (Alembic ``upgrade head``) and write-check the database; raise
    ``DatabaseUnavailableError`` naming the setting to change when any of that fails."""
    url, setting = resolve_url(database_url, state_dir)
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # its message repeats the URL, password included
        raise DatabaseUnavailableError(
            f"{setting}={redact_url(url)!r} is not a database URL; write dialect+driver://user:password@host/dbname, "
            "e.g. postgresql+psycopg2://attnscope@db/attnscope or sqlite:////var/lib/attnscope/attnscope.db"
        ) from None
    shown = parsed.render_as_string(hide_password=True)
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite and parsed.database and parsed.database != ":memory:":
        folder = Path(parsed.database).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseUnavailableError(
                f"cannot create the state folder {folder} ({exc.strerror}); set {setting} to a writable folder"
            ) from None
    try:
        kwargs = {"connect_args": {"check_same_thread": False, "timeout": 10}} if sqlite else {"pool_pre_ping": True}
        engine = create_engine(parsed, **kwargs)
    except (SQLAlchemyError, ImportError) as exc:
        raise DatabaseUnavailableError(f"cannot use the database {shown} from {setting}: {exc}") from None
    if sqlite:
        _sqlite_pragmas(engine)
    try:
        _migrate(engine, sqlite, shown)
        with engine.begin() as conn:  # a read-only file passes the migration when there is nothing to do
            conn.execute(text("UPDATE alembic_version SET version_num = version_num"))
    except SQLAlchemyError as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise DatabaseUnavailableError(
            f"the database {shown} (from {setting}) cannot be opened, migrated or written: {reason}; "
            f"point {setting} at a writable, valid database (a new file is created when none exists)"
        ) from None
    return Database(engine, sessionmaker(engine, expire_on_commit=False), shown)
