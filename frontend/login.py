"""The dashboard's log-in: the page, ``/login`` and ``/logout``, and the throttle on wrong tokens.

Wrong tokens are counted per client address (a moving window, the ``limits`` package, in memory):
beyond ``LOGIN_FAILURES`` the log-in answers **429** ``login_throttled`` with ``Retry-After`` (the
seconds until the oldest failure leaves the window) before the token is compared, so guessing the
credential costs a window per few tries. A right token is never counted.
"""

from __future__ import annotations

import html
import logging
import math
import time
from urllib.parse import quote

import flask
from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger("attnscope.frontend")
SESSION_COOKIE = "attnscope_session"
CSRF_COOKIE = "_csrf_token"  # Dash's renderer reads this cookie and sends it as X-CSRFToken
LOGIN_FAILURES = "5/minute"  # wrong tokens per client address

LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>attnscope: log in</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="login">
<h1>attnscope</h1>
<form method="post" action="/login?next={next}">
<label for="token">Access token (the API's ATTNSCOPE_API_TOKEN, or ATTNSCOPE_DASH_TOKEN)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit" id="login-button">Log in</button>
</form>
<p class="error" role="alert">{error}</p>
</main></body></html>"""


def _safe_next(target: str | None) -> str:
    """Only a path of this server (never ``//elsewhere`` or a full URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def login_routes(server: flask.Flask, guard, problem, failures: str = LOGIN_FAILURES) -> None:
    """``/login`` (GET: the page; POST: the credential -> a session) and ``/logout`` on ``server``;
    ``guard`` is ``security._Guard``; ``problem(status, detail, code)`` the JSON error answer."""
    limit, limiter = parse(failures), MovingWindowRateLimiter(MemoryStorage())

    def page(error: str = "", status: int = 200):
        nxt = html.escape(quote(_safe_next(flask.request.args.get("next")), safe="/"), quote=True)
        return flask.Response(LOGIN_PAGE.format(next=nxt, error=html.escape(error)), status, mimetype="text/html")

    @server.route("/login", methods=["GET", "POST"])
    def login():
        if flask.request.method == "GET":
            return page()
        flask.request.max_content_length = 8192
        if not guard.settings.credential:
            return flask.redirect("/", 303)
        client = flask.request.remote_addr or "unknown"
        if not limiter.test(limit, client):  # before the token is even compared
            wait = max(1, math.ceil(limiter.get_window_stats(limit, client).reset_time - time.time()))
            log.warning("dashboard log-in throttled for %s (%s wrong tokens)", client, failures)
            response = problem(
                429, f"too many wrong tokens from this address ({failures}); retry after {wait} s", "login_throttled"
            )
            response.headers["Retry-After"] = str(wait)
            return response
        if not guard.credential_ok(flask.request.form.get("token", "").strip()):
            limiter.hit(limit, client)
            log.warning("dashboard log-in refused from %s", client)
            return page("That token is not the dashboard's access token.", 401)
        return guard.start_session(flask.redirect(_safe_next(flask.request.args.get("next")), 303))

    @server.route("/logout")
    def logout():
        response = flask.redirect("/login", 303)
        for name in (SESSION_COOKIE, CSRF_COOKIE):
            response.delete_cookie(name, path="/", samesite="Strict")
        return response
