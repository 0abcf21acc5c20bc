"""Cooperative cancellation of model work: the API sets a request's token when its client leaves
(or the server shuts down); long loops call ``check_cancelled()`` between forward passes.

A forward pass itself cannot be interrupted; these checks bound what runs after a cancel to one
step (one batch of an explainer, one draw of a Lipschitz estimate). Outside the API (scripts, tests,
jobs) no token is set and ``check_cancelled`` costs one context-variable read.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Cancelled(Exception):
    """The work's client left or the server is shutting down; nobody wants the result."""


class CancelToken:
    """A flag one thread sets and the worker reads (``threading.Event``)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self.reason = self.reason or reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_current: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("attnscope_cancel", default=None)


@contextmanager
def cancel_scope(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the one ``check_cancelled`` reads inside the ``with`` block (this thread/context)."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def check_cancelled() -> None:
    """Raise ``Cancelled`` when the current work's token was set."""
    token = _current.get()
    if token is not None and token.cancelled:
        raise Cancelled(token.reason)


def checker():
    """``check_cancelled`` bound to the current work's token, callable from any thread (the threads of a
    pool do not inherit the context variable): ``check()`` raises ``Cancelled`` once the token is set."""
    token = _current.get()

    def check() -> None:
        if token is not None and token.cancelled:
            raise Cancelled(token.reason)

    return check
