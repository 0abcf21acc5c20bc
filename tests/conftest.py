"""Shared fixtures: the real MiniLM, a live API + dashboard on loopback ports."""

from __future__ import annotations

import os
import socket
import threading
import time

import httpx
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Property tests: a fixed example stream and no example database in CI, so a run is reproducible.
from hypothesis import settings as _hyp_settings  # noqa: E402

_hyp_settings.register_profile("ci", derandomize=True, database=None, deadline=None)
if os.environ.get("CI"):
    _hyp_settings.load_profile("ci")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def minilm():
    from attnscope.models.loading import load_model

    return load_model("minilm", device="cpu")


class _ThreadedUvicorn:
    def __init__(self, app, port: int):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def api_url():
    """A real API server (uvicorn) on a free loopback port, for the whole session."""
    from attnscope.server.config import Settings
    from attnscope.server.main import create_app

    port = free_port()
    with _ThreadedUvicorn(create_app(Settings(preload=["minilm"], max_runs=64)), port):
        url = f"http://127.0.0.1:{port}"
        httpx.get(f"{url}/api/v1/health", timeout=10).raise_for_status()
        yield url


@pytest.fixture(scope="session")
def dashboard_url(api_url):
    """The Dash dashboard (werkzeug, threaded) talking to ``api_url`` over HTTP."""
    from werkzeug.serving import make_server

    from attnscope.frontend.app import create_dash_app

    app = create_dash_app(api_url)
    port = free_port()
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    thread.join(timeout=10)
