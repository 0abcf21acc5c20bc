"""Dependency aliases for routes (``Annotated`` style)."""

from __future__ import annotations

import concurrent.futures
import secrets
import time
from typing import Annotated

import anyio.from_thread
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from attnscope.models.registry import get_spec
from attnscope.server.config import Settings
from attnscope.server.request_executor import DEADLINE_REASON, Cancelled, DeadlinePassed
from attnscope.server.schemas import RunCreate
from attnscope.server.service import RunService
from attnscope.server.store import Run


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_service(request: Request) -> RunService:
    return request.app.state.service


bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="needed when the server sets ATTNSCOPE_API_TOKEN: 'Authorization: Bearer <token>'",
)


async def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """When ATTNSCOPE_API_TOKEN is set, demand ``Authorization: Bearer <token>`` (async: no threadpool)."""
    token = request.app.state.settings.api_token
    if not token:
        return
    if credentials is None or not secrets.compare_digest(credentials.credentials.encode(), token.encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "this API needs a token: send the header 'Authorization: Bearer <ATTNSCOPE_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


POLL_SECONDS = 0.2  # how often a waiting restore looks whether its client is still there


def _client_left(request: Request) -> bool:
    """Whether ``request``'s client disconnected, asked from a threadpool thread (a sync dependency) on
    the event loop; False where there is no loop to ask (a caller off the threadpool)."""
    try:
        return anyio.from_thread.run(request.is_disconnected)
    except RuntimeError:
        return False


def _restore(request: Request | None, service: RunService, run_id: str) -> Run | None:
    """A run the database holds, computed again: model work, so it runs on the heavy executor (429
    when workers and queue are full, its deadline; 40 concurrent reads of a run no longer in memory
    all restored at once before). The wait stops like a heavy route's: when the client disconnects
    (looked at every ``POLL_SECONDS``) or at the deadline, cancelling the work (dropped while queued).
    An id the database lacks costs no slot. Without ``request`` (a caller already on a worker) it runs
    here."""
    executor = getattr(request.app.state, "executor", None) if request is not None else None
    if executor is None or service.records is None:
        return service.restore(run_id)
    if service.records.get(run_id) is None:
        return None
    fut, token = executor.submit(service.restore, run_id)  # ExecutorBusy (429) when full
    until = None if executor.deadline is None else time.monotonic() + executor.deadline
    while True:
        try:
            return fut.result(timeout=POLL_SECONDS)
        except concurrent.futures.TimeoutError:
            pass
        if until is not None and time.monotonic() >= until:
            token.cancel(DEADLINE_REASON)
            fut.cancel()
            raise DeadlinePassed(executor.deadline)
        if _client_left(request):
            token.cancel("the client disconnected")
            fut.cancel()  # still queued: never starts
            raise Cancelled("the client disconnected")


def get_run(run_id: str, service: Annotated[RunService, Depends(get_service)], request: Request = None) -> Run:
    run = service.store.get(run_id) or _restore(request, service, run_id)
    if run is None and (held := service.store.evicted(run_id)) is not None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"run {run_id!r} was evicted from memory: it held {held} bytes and the run store keeps at most "
            f"{service.store.max_bytes} bytes (ATTNSCOPE_MAX_RUN_BYTES), least recently used first. Posting the "
            "same text (same model and options) to POST /api/v1/runs recreates it under the same id",
        )
    if run is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no run with id {run_id!r}: it never existed here (nor in the database); "
            "create it again with POST /api/v1/runs",
        )
    return run


def known_model(body: RunCreate) -> None:
    """``POST /runs``: an unknown model, or a path outside the model roots, is refused here (its 4xx), before
    the run waits for a heavy worker: under load that wait took a minute for what the registry answers at
    once (``bench/load.py``, hostile "model path out of root")."""
    get_spec(body.model)


SettingsDep = Annotated[Settings, Depends(get_settings)]
ServiceDep = Annotated[RunService, Depends(get_service)]
RunDep = Annotated[Run, Depends(get_run)]
