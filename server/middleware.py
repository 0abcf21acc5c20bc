"""The API's ASGI middlewares (pure ASGI: no body is buffered, nothing runs in the threadpool).

From the outside in (``install_middleware`` adds them in this order):

- ``SecurityHeaders``: ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
  ``X-Frame-Options: DENY`` and a ``Content-Security-Policy`` with ``frame-ancestors 'none'`` on every
  answer (the interactive docs get a policy that lets their own local scripts run).
- ``HostCheck``: Starlette's ``TrustedHostMiddleware`` on ``ATTNSCOPE_ALLOWED_HOSTS`` (a guard against
  DNS rebinding of a localhost server), answering 400 in the API's error model.
- ``RateLimit`` (only with ``ATTNSCOPE_RATE_LIMIT``): a moving window per client address (the
  ``limits`` package); over it: 429 ``rate_limited`` with ``Retry-After``. ``/health`` is exempt.
- ``BodyLimit``: 413 when ``Content-Length`` is over the limit, before a byte of the body is read;
  a body without one (chunked) is counted as it streams and cut at the limit. JSON and other
  bodies: ``ATTNSCOPE_MAX_BODY_BYTES``; multipart uploads: ``ATTNSCOPE_MAX_UPLOAD_BYTES``.
- ``JsonKeyLimit``: a JSON body with more than ``MAX_JSON_KEYS`` object keys (this API's bodies have a
  few dozen) gets 422 before validation: pydantic would list every unknown key, seconds of the event
  loop and megabytes of detail for a 1 MiB body of 90,000 keys. Its ``:`` bound the keys (a byte count,
  on the loop); over the limit, the keys are counted exactly off the loop without parsing the body
  (``attnscope.server.json_scan``: parsing holds the GIL, so it stalled ``/health`` from a thread too).
- ``DocsToken`` (only with ``ATTNSCOPE_API_TOKEN``): ``/openapi.json``, ``/docs`` and ``/redoc`` need the
  bearer token like every route but ``/health`` (the schema names every route and limit).
- ``CsrfGuard``: a POST/PUT/PATCH/DELETE whose body a cross-site HTML form could send
  (``multipart/form-data``, ``application/x-www-form-urlencoded``, ``text/plain``) must carry
  ``X-Requested-With`` (any value): a browser only lets a page add it after a CORS preflight, which
  this API grants only to ``ATTNSCOPE_ALLOWED_ORIGINS``.
"""

from __future__ import annotations

import hmac
import math
import time

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attnscope.server.errors import error_response
from attnscope.server.json_scan import json_depth, json_keys

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
# Swagger UI and ReDoc: their scripts and styles are local (/docs-assets) plus one inline start-up script
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
DOCS_PATHS = ("/docs", "/redoc")
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded", "text/plain")
CSRF_HEADER = "X-Requested-With"


class SecurityHeaders:
    """Adds the security headers to every HTTP answer (keeps any the app set itself)."""

    def __init__(self, app: ASGIApp, docs_paths: tuple[str, ...] = DOCS_PATHS):
        self.app = app
        self.docs_paths = docs_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        csp = DOCS_CSP if path.startswith(self.docs_paths) else API_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", csp.encode()),
                    (b"cross-origin-opener-policy", b"same-origin"),
                ]
                message["headers"] = [*message.get("headers", []), *[(k, v) for k, v in extra if k not in present]]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class HostCheck:
    """``TrustedHostMiddleware`` on ``allowed_hosts``; a refused Host gets 400 in the error model."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]):
        self.app = app
        self.allowed_hosts = list(allowed_hosts)
        self.allow_any = "*" in self.allowed_hosts
        self._check = TrustedHostMiddleware(self._passed, allowed_hosts=self.allowed_hosts, www_redirect=False)

    async def _passed(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["attnscope.host_ok"] = True
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allow_any or scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)

        async def guard(message: Message) -> None:
            if scope.get("attnscope.host_ok"):
                await send(message)  # the app's own answer; the refusal (plain text) is dropped

        await self._check(scope, receive, guard)
        if not scope.get("attnscope.host_ok") and scope["type"] == "http":
            host = Headers(scope=scope).get("host", "")
            await error_response(
                400,
                f"the Host header {host[:100]!r} is not one this server answers; set ATTNSCOPE_ALLOWED_HOSTS "
                "(comma-separated) on the server to add it",
                "bad_host",
            )(scope, receive, send)


class RateLimit:
    """At most ``rate`` requests (``limits`` syntax, e.g. ``"600/minute"``) per client address."""

    def __init__(self, app: ASGIApp, rate: str, exempt: tuple[str, ...] = ("/api/v1/health",)):
        from limits import parse_many
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        self.app = app
        self.rate = rate
        self.items = parse_many(rate)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "") in self.exempt:
            return await self.app(scope, receive, send)
        client = (scope.get("client") or ("unknown", 0))[0]
        for item in self.items:
            if not self.limiter.hit(item, client):
                reset, _ = self.limiter.get_window_stats(item, client)
                retry = max(1, math.ceil(reset - time.time()))
                return await error_response(
                    429,
                    f"rate limit reached: this server allows {self.rate} per client (ATTNSCOPE_RATE_LIMIT); "
                    f"retry after {retry} s",
                    "rate_limited",
                    headers={"Retry-After": str(retry)},
                )(scope, receive, send)
        await self.app(scope, receive, send)


class BodyTooLarge(StarletteHTTPException):
    """413 raised from ``receive`` once a streamed body passes the limit (FastAPI lets it through)."""

    code = "too_large"

    def __init__(self, detail: str):
        super().__init__(413, detail, headers={"Connection": "close"})


def _limit_message(kind: str, size: str, limit: int, setting: str) -> str:
    return (
        f"the request {kind} is {size}; this server takes at most {limit:,} bytes ({setting}): send less, or "
        "run data-set-sized work as a job (POST /api/v1/jobs)"
    )


class BodyLimit:
    """413 for a body over its limit: by ``Content-Length`` before reading, else while streaming."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        upload = headers.get("content-type", "").lower().startswith("multipart/")
        limit = self.max_upload_bytes if upload else self.max_body_bytes
        kind, setting = ("upload", "ATTNSCOPE_MAX_UPLOAD_BYTES") if upload else ("body", "ATTNSCOPE_MAX_BODY_BYTES")
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            detail = _limit_message(kind, f"{int(length):,} bytes (Content-Length)", limit, setting)
            return await error_response(413, detail, headers={"Connection": "close"})(scope, receive, send)
        total = 0
        started = False

        async def counted() -> Message:
            nonlocal total
            message = await receive()
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > limit:
                    raise BodyTooLarge(_limit_message(kind, f"over {limit:,} bytes (cut there)", limit, setting))
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge as exc:  # raised outside FastAPI's handlers (e.g. in a middleware)
            if started:
                raise
            await error_response(413, exc.detail, headers=exc.headers)(scope, receive, send)


MAX_JSON_KEYS = 4096
MAX_JSON_DEPTH = 64  # a request body nests a few levels; Python's parser gives up near 1,000 (RecursionError)


class JsonKeyLimit:
    """422 for a JSON body of more than ``max_keys`` object keys or nested deeper than ``MAX_JSON_DEPTH``,
    before it reaches the parser (which would fail on ~1,000 levels with a RecursionError) and validation."""

    def __init__(self, app: ASGIApp, max_keys: int = MAX_JSON_KEYS):
        self.app = app
        self.max_keys = max_keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        ctype = Headers(scope=scope).get("content-type", "").split(";", 1)[0].strip().lower()
        if not ctype.endswith("json"):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:  # bounded: BodyLimit (outside) cuts the body at ATTNSCOPE_MAX_BODY_BYTES
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        # cheap bounds first (bytes.count, ~1 ms per MiB), the exact scans off the loop (json_scan)
        if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH:
            depth = await anyio.to_thread.run_sync(json_depth, body)
            if depth > MAX_JSON_DEPTH:
                return await error_response(
                    422,
                    f"the JSON body nests {depth:,} levels deep; this server takes at most {MAX_JSON_DEPTH} "
                    "(a request body nests a few levels: see the schema at /docs)",
                    "invalid",
                )(scope, receive, send)
        if body.count(b":") > self.max_keys:
            keys = await anyio.to_thread.run_sync(json_keys, body)
            if keys > self.max_keys:
                return await error_response(
                    422,
                    f"the JSON body has {keys:,} object keys; this server takes at most {self.max_keys:,} "
                    "(a request body has a few dozen fields: see the schema at /docs)",
                    "invalid",
                )(scope, receive, send)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class DocsToken:
    """401 for the OpenAPI document and the interactive docs without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str, paths: tuple[str, ...] = ("/openapi.json", *DOCS_PATHS)):
        self.app = app
        self.token = token.encode()
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path in self.paths or path.startswith(tuple(p + "/" for p in self.paths))):
            scheme, _, value = Headers(scope=scope).get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
                return await error_response(
                    401,
                    "this API needs a token, its schema and docs too: send 'Authorization: Bearer "
                    "<ATTNSCOPE_API_TOKEN>' (the REST API reference of the documentation site lists every route)",
                    "unauthorized",
                    headers={"WWW-Authenticate": "Bearer"},
                )(scope, receive, send)
        await self.app(scope, receive, send)


class CsrfGuard:
    """A body a cross-site form could send needs an ``X-Requested-With`` header."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            headers = Headers(scope=scope)
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype in FORM_TYPES and not headers.get("x-requested-with"):
                return await error_response(
                    400,
                    f"a {ctype} {scope['method']} needs the header '{CSRF_HEADER}: XMLHttpRequest' (any value): "
                    "without it a page on another site could send this form",
                    "csrf_header_missing",
                )(scope, receive, send)
        await self.app(scope, receive, send)


def install_middleware(app, settings) -> None:
    """Wrap ``app`` (FastAPI) in the middlewares above, outermost first as the module docstring lists."""
    app.add_middleware(CsrfGuard)
    if settings.api_token:
        app.add_middleware(DocsToken, token=settings.api_token)
    app.add_middleware(JsonKeyLimit)
    app.add_middleware(BodyLimit, max_body_bytes=settings.max_body_bytes, max_upload_bytes=settings.max_upload_bytes)
    if settings.rate_limit:
        app.add_middleware(RateLimit, rate=settings.rate_limit)
    app.add_middleware(HostCheck, allowed_hosts=settings.allowed_hosts)
    app.add_middleware(SecurityHeaders)
