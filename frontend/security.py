"""The dashboard's doors: Host allow-list, callback body limit, callback errors as 4xx, log-in, CSRF.

The dashboard's server holds the API token (``ATTNSCOPE_API_TOKEN``) and calls the API with it, so
whoever can send it a callback acts with the API's authority. ``install_security(app, settings)`` puts,
before every request of the Flask server behind Dash:

- the API's ``Host`` allow-list (``ATTNSCOPE_ALLOWED_HOSTS``, same default): 400 otherwise (DNS rebinding);
- on ``/_dash-update-component``: 413 when the body is over ``ATTNSCOPE_DASH_MAX_CALLBACK_BYTES`` (by
  ``Content-Length`` before a byte is read, or cut while a chunked body streams); 400 for a body that is
  not a callback request (not JSON, nested deeper than the parser goes, not an object, an unknown output);
  a callback that raises on the inputs it was sent answers 400 too (logged with its traceback), never a 500;
- repeated wrong tokens at ``/login`` from one address: 429 with ``Retry-After`` (``attnscope.frontend.login``);
- when a credential is set (``ATTNSCOPE_DASH_TOKEN``, else the API token): every page and route but
  ``/login``, ``/logout`` and the static assets needs a session, made by logging in at ``/login`` with
  that credential (or ``Authorization: Bearer <credential>`` on each request, for scripts). The session
  cookie is HttpOnly, SameSite=Strict, signed, 12 h long, and Secure over https (or always with
  ``ATTNSCOPE_DASH_SECURE_COOKIE=1``, behind a proxy that ends TLS);
- CSRF: a POST carrying the session cookie must send the ``X-CSRFToken`` header equal to the session's
  token (double submit: Dash's renderer copies the ``_csrf_token`` cookie into that header on every
  callback); any POST whose ``Origin`` is not this server is refused (403).

``check_exposure`` refuses to serve without a credential on an address other than loopback unless
``ATTNSCOPE_DASH_ALLOW_OPEN=1``.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
from dataclasses import dataclass, field
from functools import wraps
from urllib.parse import quote, urlsplit

import flask
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from attnscope.frontend.login import CSRF_COOKIE, SESSION_COOKIE, login_routes

log = logging.getLogger("attnscope.frontend")

# the API's default (attnscope.server.config.DEFAULT_ALLOWED_HOSTS; tests/frontend/test_security.py
# checks that both stay equal: the dashboard may not import the server)
DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]", "api", "dashboard", "testserver")
CALLBACK_PATH = "/_dash-update-component"
CSRF_HEADER = "X-CSRFToken"
SESSION_SECONDS = 12 * 3600
PUBLIC_PREFIXES = ("/login", "/logout", "/assets/", "/_dash-component-suites/", "/_favicon.ico")
DEFAULT_MAX_CALLBACK_BYTES = 16 * 2**20  # an uploaded 10 MB image travels base64-encoded in a callback


@dataclass(frozen=True)
class DashSecurity:
    """The dashboard's security settings: the command line fills them from ``attnscope.server.config.Settings``
    (``ATTNSCOPE_DASH_*``, ``ATTNSCOPE_ALLOWED_HOSTS``); the dashboard never reads the environment."""

    credential: str | None = None
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS
    max_callback_bytes: int = DEFAULT_MAX_CALLBACK_BYTES
    secure_cookie: bool | None = None  # None: Secure when the request came over https
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(bind_host: str, credential: str | None, allow_open: bool, exposed_on: str | None = None) -> None:
    """``ValueError`` when the dashboard would serve without a credential on a non-loopback address.
    ``exposed_on``: where it is reachable when that differs from the bind address (a container binds
    0.0.0.0 while compose publishes the port on the host's loopback)."""
    where = exposed_on or bind_host
    if credential or allow_open or is_loopback(where):
        return
    raise ValueError(
        f"the dashboard would answer anyone who reaches {where} with the API's authority and no log-in: set "
        "ATTNSCOPE_API_TOKEN (or ATTNSCOPE_DASH_TOKEN) so that it asks for a log-in, bind it to 127.0.0.1, "
        "or set ATTNSCOPE_DASH_ALLOW_OPEN=1 to serve it open on purpose"
    )


def host_allowed(host_header: str, allowed: tuple[str, ...]) -> bool:
    """Starlette's TrustedHostMiddleware rule: the Host without its port, exact or ``*.domain``, or ``*``."""
    if "*" in allowed:
        return True
    host = host_header.strip().lower()
    host = host.rsplit("]", 1)[0] + "]" if host.startswith("[") else host.split(":", 1)[0]
    for pattern in allowed:
        pattern = pattern.lower()
        if host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])):
            return True
    return False


def _problem(status: int, detail: str, code: str):
    response = flask.jsonify({"detail": detail, "code": code})
    response.status_code = status
    return response


class _Guard:
    """The checks of the module docstring, bound to one Flask app."""

    def __init__(self, app, settings: DashSecurity):
        self.app, self.settings = app, settings
        self.signer = URLSafeTimedSerializer(settings.secret, salt="attnscope-dashboard-session")

    # ------------------------------------------------------------------ sessions
    def session_csrf(self) -> str | None:
        """The CSRF token of a valid session cookie, else None."""
        raw = flask.request.cookies.get(SESSION_COOKIE)
        if not raw:
            return None
        try:
            data = self.signer.loads(raw, max_age=SESSION_SECONDS)
        except BadSignature:
            return None
        return data.get("csrf") if isinstance(data, dict) else None

    def bearer_ok(self) -> bool:
        auth = flask.request.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        return scheme.lower() == "bearer" and self.credential_ok(value.strip())

    def credential_ok(self, value: str) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), (self.settings.credential or "").encode())

    def _secure(self) -> bool:
        s = self.settings.secure_cookie
        return flask.request.is_secure if s is None else s

    def start_session(self, response: flask.Response) -> flask.Response:
        csrf = secrets.token_urlsafe(32)
        common = dict(max_age=SESSION_SECONDS, samesite="Strict", secure=self._secure(), path="/")
        response.set_cookie(SESSION_COOKIE, self.signer.dumps({"csrf": csrf}), httponly=True, **common)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=False, **common)  # Dash's renderer reads it
        return response

    # ------------------------------------------------------------------ before every request
    def before(self):
        request = flask.request
        if not host_allowed(request.host, self.settings.allowed_hosts):
            return _problem(
                400,
                f"the Host header {request.host[:100]!r} is not one this dashboard answers; set "
                "ATTNSCOPE_ALLOWED_HOSTS (comma-separated) on the dashboard to add it",
                "bad_host",
            )
        if request.method == "POST" and not self._same_origin():
            return _problem(403, "a POST from another site (its Origin header) is refused", "cross_origin")
        if request.path == CALLBACK_PATH:
            too_large = self._check_size()
            if too_large is not None:
                return too_large
        if self.settings.credential and not request.path.startswith(PUBLIC_PREFIXES):
            refused = self._check_auth()
            if refused is not None:
                return refused
        return None

    def _same_origin(self) -> bool:
        """No Origin, ``null`` (what a browser sends under ``Referrer-Policy: no-referrer``, the
        dashboard's), or this server. A page of another site cannot send a JSON callback without a CORS
        preflight (never granted), and forms are refused (415), so ``null`` opens nothing."""
        origin = flask.request.headers.get("Origin")
        if not origin or origin == "null":
            return True
        return urlsplit(origin).netloc.lower() == flask.request.host.lower()

    def _check_size(self):
        limit = self.settings.max_callback_bytes
        length = flask.request.content_length
        if length is not None and length > limit:
            return _problem(413, self._size_message(f"{length:,} bytes (Content-Length)"), "too_large")
        flask.request.max_content_length = limit  # a chunked body is cut at the limit while it streams
        return None

    def _size_message(self, size: str) -> str:
        limit = self.settings.max_callback_bytes
        return (
            f"this callback request is {size}; the dashboard takes at most {limit:,} bytes "
            "(ATTNSCOPE_DASH_MAX_CALLBACK_BYTES): send a smaller image or text"
        )

    def _check_auth(self):
        request = flask.request
        csrf = self.session_csrf()
        if csrf is None and self.bearer_ok():
            return None  # a script with the credential in a header: no cookie, no CSRF to guard
        if csrf is None:
            if request.method == "GET" and not request.path.startswith("/_dash"):
                return flask.redirect(f"/login?next={quote(request.full_path.rstrip('?'), safe='/?=&')}", 303)
            return _problem(401, "log in first: open /login and enter the dashboard's access token", "login_required")
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            sent = request.headers.get(CSRF_HEADER, "")
            if not sent or not hmac.compare_digest(sent.encode(), csrf.encode()):
                return _problem(
                    403,
                    f"the {CSRF_HEADER} header must repeat the session's {CSRF_COOKIE} cookie (reload the page)",
                    "csrf_failed",
                )
        return None

    def check_callback_body(self):
        """After Dash's own set-up (which fills the callback map): the body is a callback request."""
        request = flask.request
        if request.path != CALLBACK_PATH or request.method != "POST":
            return None
        limit = self.settings.max_callback_bytes
        if not request.is_json:
            return _problem(415, "a callback request is sent as Content-Type: application/json", "bad_callback")
        try:
            data = request.get_data(cache=True)  # Werkzeug stops a streamed body at the limit
        except RequestEntityTooLarge:
            data = None
        if data is None or (len(data) >= limit and request.content_length is None):
            return _problem(413, self._size_message(f"over {limit:,} bytes (cut there)"), "too_large")
        try:
            body = json.loads(data)
        except ValueError:
            return _problem(400, "a callback request is a JSON object; this body is not JSON", "bad_callback")
        except RecursionError:  # nested deeper than the parser goes (about 1,000 levels): no callback sends that
            return _problem(400, "this callback body is nested too deeply to be a callback request", "bad_callback")
        problem = _callback_shape_problem(body, self.app.callback_map)
        return None if problem is None else _problem(400, problem, "bad_callback")


def _callback_shape_problem(body, callback_map: dict) -> str | None:
    """What is wrong with a callback request body (``output``, ``outputs``, ``inputs``, ``state``,
    ``changedPropIds`` as Dash's renderer sends them), or None."""
    if not isinstance(body, dict):
        return "a callback request is a JSON object with 'output', 'outputs' and 'inputs'"
    output = body.get("output")
    if not isinstance(output, str) or output not in callback_map:
        return f"'output' names no callback of this dashboard ({str(output)[:80]!r})"
    if not isinstance(body.get("outputs"), (list, dict)):
        return "'outputs' must be a list or an object"
    for key in ("inputs", "state", "changedPropIds"):
        if key in body and not isinstance(body[key], list):
            return f"'{key}' must be a list"
    if "inputs" not in body:
        return "'inputs' is missing"
    if not all(isinstance(p, str) for p in body.get("changedPropIds", [])):
        return "'changedPropIds' must be a list of strings"
    return None


def _callback_errors_as_4xx(server: flask.Flask) -> None:
    """A callback that raises on the inputs it was sent answers 400 (logged with its traceback)."""
    from dash.exceptions import PreventUpdate

    endpoint = next(r.endpoint for r in server.url_map.iter_rules() if r.rule.endswith(CALLBACK_PATH))
    dispatch = server.view_functions[endpoint]

    @wraps(dispatch)
    def guarded(*args, **kwargs):
        try:
            return dispatch(*args, **kwargs)
        except (PreventUpdate, HTTPException):
            raise
        except Exception as exc:
            log.exception("a dashboard callback failed on the request it was sent")
            return _problem(
                400,
                f"this callback request could not be processed ({type(exc).__name__}); reload the page",
                "callback_failed",
            )

    server.view_functions[endpoint] = guarded


def install_security(app, settings: DashSecurity) -> None:
    """Every check of the module docstring on ``app`` (a ``dash.Dash``)."""
    server: flask.Flask = app.server
    guard = _Guard(app, settings)
    server.before_request_funcs.setdefault(None, []).insert(0, guard.before)  # before Dash's own
    server.before_request(guard.check_callback_body)
    login_routes(server, guard, _problem)
    _callback_errors_as_4xx(server)

    @server.errorhandler(RequestEntityTooLarge)
    def _too_large(_exc):
        return _problem(413, guard._size_message(f"over {settings.max_callback_bytes:,} bytes"), "too_large")
