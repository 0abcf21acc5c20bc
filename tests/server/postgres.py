"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a temporary folder, on a free
port, listening on a unix socket in that folder only (no TCP), stopped and removed afterwards.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` OS user (Debian's
``postgresql`` package creates it; ``make postgresql`` installs the package), through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from tests.conftest import free_port


def pg_bin(name: str) -> str | None:
    """A PostgreSQL program: on PATH, else in Debian's versioned folder (newest version)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return candidates[-1] if candidates else None


def missing_reason() -> str | None:
    """Why the server cannot be started here (None when it can)."""
    if pg_bin("initdb") is None or pg_bin("pg_ctl") is None:
        return "PostgreSQL is not installed (make postgresql: Debian's postgresql package)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a 'postgres' OS user to run the server as"
    return None


class LocalPostgres:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="attnscope-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.dir.chmod(0o700)

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self._as_user, *args], capture_output=True, text=True, timeout=120, check=True)

    def start(self) -> LocalPostgres:
        self._run(pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses='' -c fsync=off -c max_connections=60"
        self._run(
            pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "server.log"), "-o", options, "-w", "start"
        )
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg2://postgres@/{database}?host={self.dir}&port={self.port}"

    def new_database(self) -> str:
        """A fresh, empty database on this server; its SQLAlchemy URL."""
        import psycopg2

        name = f"t{uuid.uuid4().hex[:12]}"
        conn = psycopg2.connect(dbname="postgres", user="postgres", host=str(self.dir), port=self.port)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
        conn.close()
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
