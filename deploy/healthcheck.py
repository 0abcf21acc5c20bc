"""Container health check for the attnscope image (standard library only).

The image runs either the API (`attnscope api`) or the dashboard (`attnscope dashboard`), and
Docker's HEALTHCHECK is one command for both, so this script probes whichever one this
container runs:

    python healthcheck.py              # role read from the command line of PID 1
    python healthcheck.py api          # GET http://127.0.0.1:$ATTNSCOPE_API_PORT/api/v1/health
    python healthcheck.py dashboard    # GET http://127.0.0.1:$ATTNSCOPE_DASH_PORT/

ATTNSCOPE_HEALTH_URL, when set, is probed instead. Exit status 0 means healthy, 1 unhealthy.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def _role() -> str:
    if len(sys.argv) > 1:
        return sys.argv[1]
    try:
        with open("/proc/1/cmdline", "rb") as fh:
            args = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        args = []
    return "dashboard" if "dashboard" in args else "api"


def _connect_host(bind: str) -> str:
    # A wildcard bind address is reachable on loopback; IPv6 literals need brackets in a URL.
    if bind in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind == "::":
        return "[::1]"
    return f"[{bind}]" if ":" in bind else bind


def _url(role: str) -> str:
    explicit = os.environ.get("ATTNSCOPE_HEALTH_URL")
    if explicit:
        return explicit
    if role == "dashboard":
        host = _connect_host(os.environ.get("ATTNSCOPE_DASH_HOST", "127.0.0.1"))
        return f"http://{host}:{os.environ.get('ATTNSCOPE_DASH_PORT', '8050')}/"
    host = _connect_host(os.environ.get("ATTNSCOPE_API_HOST", "127.0.0.1"))
    return f"http://{host}:{os.environ.get('ATTNSCOPE_API_PORT', '8000')}/api/v1/health"


def main() -> int:
    url = _url(_role())
    request = urllib.request.Request(url, headers={"User-Agent": "attnscope-healthcheck"})
    token = os.environ.get("ATTNSCOPE_API_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=4) as response:  # noqa: S310 (fixed local URL)
            ok = 200 <= response.status < 300
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1
    if not ok:
        print(f"unhealthy: {url}: HTTP {response.status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
