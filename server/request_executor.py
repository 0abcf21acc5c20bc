"""The bounded executor for heavy routes: model work runs here, never in the request threadpool.

- A fixed number of worker threads (``ATTNSCOPE_HEAVY_WORKERS``) and a bounded queue
  (``ATTNSCOPE_HEAVY_QUEUE``): when both are full the request gets **429** with ``Retry-After``
  instead of waiting behind an unbounded backlog; ``Retry-After`` is the queue's expected wait (the
  items waiting times the mean run time of recent work, over the workers).
- **Cancellation**: when the client disconnects (or the server shuts down) the request's
  ``CancelToken`` is set; queued work is dropped, running work stops at its next
  ``attnscope.models.cancel.check_cancelled()`` (explainer batches, predict batches, Lipschitz
  steps call it).
- **Deadline**: work still queued or running ``ATTNSCOPE_REQUEST_DEADLINE`` seconds after it was
  accepted is cancelled the same way, and its request answered **504** ``deadline_exceeded`` at
  once, saying how to run it as a job (which has no deadline).
- **Prompt shutdown**: workers are daemon threads and ``shutdown()`` cancels everything, so SIGTERM
  exits within seconds even while heavy work runs (uvicorn gets ``timeout_graceful_shutdown``).
- ``/health`` never touches this executor nor the threadpool (an ``async def`` reading memory).

For a new route that does model work (a forward pass, an explainer, a sweep), write it as a plain
``def`` and put ``@heavy`` between the router decorator and the function::

    @router.post("/runs/{run_id}/interventions", response_model=..., responses=error_responses(404))
    @heavy
    def create_intervention(run: RunDep, body: InterventionCreate, service: ServiceDep) -> ...:
        ...  # runs on the executor; call check_cancelled() between steps of a long loop

Dependencies (``RunDep``, bodies, queries) are resolved first, as usual; the 429 is documented for
every route by ``document_common_errors``. Errors raised inside (``ApiError``, domain errors) reach
the handlers of ``attnscope.server.errors`` unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import math
import queue
import threading
import time
import typing
from collections.abc import Callable

from fastapi import Request, Response
from fastapi.exceptions import ResponseValidationError

from attnscope.models.cancel import Cancelled, CancelToken, cancel_scope
from attnscope.server.errors import ApiError

log = logging.getLogger(__name__)
_STOP = object()


class ExecutorBusy(ApiError):
    """429: the executor's queue is full."""

    def __init__(self, retry_after: int, queued: int):
        super().__init__(
            429,
            f"the server is busy: {queued} heavy requests are running or queued; retry after {retry_after} s, or "
            "run data-set-sized work as a job (POST /api/v1/jobs)",
            code="busy",
            headers={"Retry-After": str(retry_after)},
        )


DEADLINE_REASON = "the request's deadline passed"


class DeadlinePassed(ApiError):
    """504: the work ran past ``ATTNSCOPE_REQUEST_DEADLINE``; it was cancelled like a client that left."""

    def __init__(self, deadline: float):
        super().__init__(
            504,
            f"this request ran past this server's per-request deadline of {deadline:g} s (ATTNSCOPE_REQUEST_DEADLINE) "
            "and was stopped. Ask for less (fewer explainers or steps, a shorter text), or run it as a job, which has "
            'no deadline and reports progress: POST /api/v1/jobs {"kind": ..., "params": {...}} '
            "(GET /api/v1/jobs/kinds lists the kinds and their parameters)",
            code="deadline_exceeded",
        )


class HeavyExecutor:
    """``workers`` daemon threads taking work from a queue of at most ``queue_limit`` waiting items;
    ``deadline`` (seconds, None: none): work still queued or running that long after it was submitted
    is cancelled and its request answered 504."""

    def __init__(
        self,
        workers: int = 2,
        queue_limit: int = 16,
        retry_after: int = 2,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.workers = max(1, int(workers))
        self.queue_limit = max(0, int(queue_limit))
        self.retry_after = retry_after  # the Retry-After before any work has finished (no duration known)
        self.deadline = deadline
        self._clock = clock
        self._mean_seconds: float | None = None  # moving average of how long one item of work runs
        self._queue: queue.Queue = queue.Queue()
        self._slots = threading.BoundedSemaphore(self.workers + self.queue_limit)
        self._tokens: set[CancelToken] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"attnscope-heavy-{i}", daemon=True) for i in range(self.workers)
        ]
        for t in self._threads:
            t.start()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._tokens)

    def expected_wait(self) -> int:
        """Seconds until work submitted now would start: the items waiting (plus this one) times the
        mean run time, over the workers; ``retry_after`` per item until one has finished. 1..3600."""
        per_item = self._mean_seconds if self._mean_seconds is not None else self.retry_after
        waiting = self._queue.qsize() + 1
        return int(min(3600, max(1, math.ceil(per_item * waiting / self.workers))))

    def submit(self, fn: Callable, /, *args, **kwargs) -> tuple[concurrent.futures.Future, CancelToken]:
        """Queue ``fn(*args, **kwargs)``; ``ExecutorBusy`` (429, ``Retry-After`` from ``expected_wait``)
        when workers and queue are full."""
        if self._closed:
            raise ApiError(503, "the server is shutting down; retry on the next instance", code="unavailable")
        if not self._slots.acquire(blocking=False):
            raise ExecutorBusy(self.expected_wait(), self.workers + self.queue_limit)
        fut: concurrent.futures.Future = concurrent.futures.Future()
        token = CancelToken()
        with self._lock:
            self._tokens.add(token)
        self._queue.put((fut, token, fn, args, kwargs))
        return fut, token

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fut, token, fn, args, kwargs = item
            deliver: Callable[[], object] | None = None
            try:
                if not fut.set_running_or_notify_cancel():  # cancelled while queued
                    continue
                if token.cancelled:
                    deliver = functools.partial(fut.set_exception, Cancelled(token.reason))
                    continue
                started = self._clock()
                try:
                    with cancel_scope(token):
                        result = fn(*args, **kwargs)
                except BaseException as exc:  # delivered to the awaiting request
                    deliver = functools.partial(fut.set_exception, exc)
                else:
                    deliver = functools.partial(fut.set_result, result)
                self._record(started)
            finally:
                # the slot is free before the answer is delivered: a client that sends its next
                # request on reading this answer must find it free (not a 429 from a finished request)
                with self._lock:
                    self._tokens.discard(token)
                self._slots.release()
                if deliver is not None:
                    deliver()

    def _record(self, started: float) -> None:
        seconds = max(0.0, self._clock() - started)
        with self._lock:
            mean = self._mean_seconds
            self._mean_seconds = seconds if mean is None else 0.8 * mean + 0.2 * seconds

    async def run(self, request: Request | None, fn: Callable, /, *args, **kwargs):
        """Run ``fn`` on a worker and await it; cancel it when ``request``'s client disconnects or the
        deadline passes (504 at once; the worker stops at its next ``check_cancelled``)."""
        fut, token = self.submit(fn, *args, **kwargs)
        watcher = asyncio.create_task(self._watch(request, token, fut)) if request is not None else None
        try:
            waited = asyncio.wrap_future(fut)
            if self.deadline is None:
                return await waited
            try:
                return await asyncio.wait_for(waited, timeout=self.deadline)
            except TimeoutError:
                log.info("deadline of %g s passed: cancelling its work", self.deadline)
                token.cancel(DEADLINE_REASON)
                fut.cancel()  # still queued: never starts
                raise DeadlinePassed(self.deadline) from None
        except asyncio.CancelledError:  # the server cancelled the request task (shutdown)
            token.cancel("the server is shutting down")
            fut.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()

    @staticmethod
    async def _watch(request: Request, token: CancelToken, fut: concurrent.futures.Future) -> None:
        while not fut.done():
            if await request.is_disconnected():
                log.info("client left %s %s: cancelling its work", request.method, request.url.path)
                token.cancel("the client disconnected")
                return
            await asyncio.sleep(0.1)

    def shutdown(self) -> None:
        """Cancel all queued and running work; workers exit (daemon threads never block exit)."""
        self._closed = True
        with self._lock:
            for token in self._tokens:
                token.cancel("the server is shutting down")
        for _ in self._threads:
            self._queue.put(_STOP)


def _encoded(fn: Callable, route, /, *args, **kwargs):
    """``fn``'s answer checked against the route's response model and encoded to JSON here, on the
    worker: for an ``async`` route FastAPI would do both on the event loop (a large answer held every
    other request, ``/health`` included, while it was encoded). A ``Response`` passes through."""
    result = fn(*args, **kwargs)
    field = getattr(route, "response_field", None)
    if field is None or isinstance(result, Response):
        return result
    value, errors = field.validate(result, {}, loc=("response",))
    if errors:
        raise ResponseValidationError(errors=errors, body=result)
    return Response(field.serialize_json(value), status_code=route.status_code or 200, media_type="application/json")


def heavy(fn: Callable) -> Callable:
    """Route decorator: run the (plain ``def``) route body on the app's ``HeavyExecutor``."""
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
    has_request = any(hints.get(p.name) is Request for p in params)
    if not has_request:
        params.append(inspect.Parameter("_heavy_request", inspect.Parameter.KEYWORD_ONLY, annotation=Request))

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        if has_request:
            request = next(v for v in [*args, *kwargs.values()] if isinstance(v, Request))
        else:
            request = kwargs.pop("_heavy_request")
        executor: HeavyExecutor = request.app.state.executor
        return await executor.run(request, _encoded, fn, request.scope.get("route"), *args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))
    del wrapper.__wrapped__  # FastAPI must read the signature above, not the plain function's
    wrapper.__heavy__ = fn  # the plain body (tests, introspection)
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


__all__ = ["Cancelled", "DeadlinePassed", "ExecutorBusy", "HeavyExecutor", "heavy"]
