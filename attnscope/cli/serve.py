"""``attnscope serve | api | dashboard``: the REST API (uvicorn), the dashboard (gunicorn), or both."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time

from attnscope.cli.common import settings

log = logging.getLogger("attnscope")


def _add_api_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=settings().api_host, help="bind address (ATTNSCOPE_API_HOST)")
    p.add_argument("--port", type=int, default=settings().api_port, help="port (ATTNSCOPE_API_PORT)")


def _add_dash_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dash-host", default=settings().dash_host, help="bind address (ATTNSCOPE_DASH_HOST)")
    p.add_argument("--dash-port", type=int, default=settings().dash_port, help="port (ATTNSCOPE_DASH_PORT)")
    p.add_argument(
        "--api-url",
        default=settings().api_url or "",
        help="URL of the API the dashboard talks to (ATTNSCOPE_API_URL)",
    )


def uvicorn_options(conf) -> dict:
    """How uvicorn treats proxy headers, from ``ATTNSCOPE_FORWARDED_ALLOW_IPS`` (``conf``: the settings).
    Unset: ``X-Forwarded-For``/``-Proto`` are ignored, the client is the socket's peer (uvicorn's own
    default trusts them from 127.0.0.1, so any local client could name itself anew per request and
    pass the rate limit). Set (the proxy's addresses): they are honoured from those addresses only."""
    if not conf.forwarded_allow_ips:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": conf.forwarded_allow_ips}


def run_api(host: str, port: int) -> None:
    import uvicorn

    from attnscope.server.main import create_app

    code = 0
    conf = settings()
    try:
        uvicorn.run(
            create_app(conf),
            host=host,
            port=port,
            log_level="info",
            timeout_graceful_shutdown=5,
            **uvicorn_options(conf),
        )
    except SystemExit as stop:  # uvicorn raises the SIGTERM it caught again once it has shut down
        code = stop.code if isinstance(stop.code, int) else 0
    # The app's shutdown has run (executors stopped, database closed). Leave without the interpreter's
    # final garbage collection: with torch and the models' object graphs it took 8-11 s on 2 cores, past
    # the 8 s a container gets to stop on SIGTERM.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_dashboard(api_url: str, host: str, port: int, threads: int = 8) -> None:
    """Serve the dashboard with gunicorn (one process, ``threads`` threads: callbacks wait on the
    API, sometimes for seconds, so several run at once); Flask's server only if gunicorn is absent."""
    from attnscope.frontend.app import create_dash_app
    from attnscope.frontend.security import DashSecurity, check_exposure

    conf = settings()
    security = DashSecurity(
        credential=conf.dash_token or conf.api_token,
        allowed_hosts=tuple(conf.allowed_hosts),
        max_callback_bytes=conf.dash_max_callback_bytes,
        secure_cookie=conf.dash_secure_cookie,
        **({"secret": conf.dash_secret.encode()} if conf.dash_secret else {}),
    )
    # compose binds 0.0.0.0 in the container and publishes the port on ATTNSCOPE_BIND of the host
    check_exposure(host, security.credential, allow_open=conf.dash_allow_open, exposed_on=conf.dash_exposed_on)
    app = create_dash_app(api_url, token=conf.api_token, security=security)  # ATTNSCOPE_API_TOKEN: the API asks for it
    log.info("dashboard on http://%s:%d (API %s)", host, port, api_url)
    try:
        from gunicorn.app.base import BaseApplication
    except ImportError:  # pragma: no cover - gunicorn is a dependency; kept for stripped installs
        app.run(host=host, port=port, debug=False, threaded=True)
        return

    class _Dashboard(BaseApplication):
        def load_config(self) -> None:
            for key, value in {
                "bind": f"{host}:{port}",
                "workers": 1,
                "worker_class": "gthread",
                "threads": threads,
                "timeout": 600,
                "graceful_timeout": 2,  # a stop (SIGTERM) waits at most 2 s for callbacks in flight
                "accesslog": None,
                "errorlog": "-",
                "loglevel": "warning",
            }.items():
                self.cfg.set(key, value)

        def load(self):
            return app.server

    _Dashboard().run()


def _serve(args: argparse.Namespace) -> int:
    """API in a child process, dashboard in this one; both stop together."""
    api_url = args.api_url or f"http://{args.host}:{args.port}"
    api = subprocess.Popen(
        [sys.executable, "-m", "attnscope.cli", "api", "--host", args.host, "--port", str(args.port)]
    )
    try:
        import httpx

        deadline = time.time() + 300
        while time.time() < deadline:
            if api.poll() is not None:
                log.error("the API process exited with code %s", api.returncode)
                return 1
            try:
                if httpx.get(f"{api_url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        sys.stdout.write(
            f"\n  attnscope API        {api_url}/api/v1   (docs: {api_url}/docs)\n"
            f"  attnscope dashboard  http://{args.dash_host}:{args.dash_port}/\n\n"
        )
        sys.stdout.flush()
        run_dashboard(api_url, args.dash_host, args.dash_port)
        return 0
    finally:
        api.send_signal(signal.SIGTERM)
        try:
            api.wait(timeout=10)
        except subprocess.TimeoutExpired:
            api.kill()


def add_parsers(sub) -> None:
    """``serve``, ``api`` and ``dashboard``."""
    p_serve = sub.add_parser("serve", help="start the API and the dashboard on localhost")
    _add_api_args(p_serve)
    _add_dash_args(p_serve)
    p_api = sub.add_parser("api", help="start the REST API")
    _add_api_args(p_api)
    p_dash = sub.add_parser("dashboard", help="start the dashboard (talks to the API over HTTP)")
    _add_dash_args(p_dash)


def run(args: argparse.Namespace) -> int:
    if args.command == "api":
        run_api(args.host, args.port)
        return 0
    try:
        if args.command == "serve":
            return _serve(args)
        run_dashboard(args.api_url or "http://127.0.0.1:8000", args.dash_host, args.dash_port)
    except ValueError as refused:  # check_exposure, or a malformed dashboard setting
        log.error("%s", refused)
        return 2
    return 0
