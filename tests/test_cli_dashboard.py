"""``attnscope dashboard`` as users start it (make serve, the Docker image): gunicorn serves the Dash
app with threads, talks to the API, and stops at once on SIGTERM."""

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_dashboard_command_serves_with_gunicorn_and_stops_on_sigterm(api_url):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnscope.cli", "dashboard", "--dash-port", str(port), "--api-url", api_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert httpx.get(f"http://127.0.0.1:{port}/_dash-layout", timeout=10).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/_dash-dependencies", timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-2000:]
    assert "development server" not in out
