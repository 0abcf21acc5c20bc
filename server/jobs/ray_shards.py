"""Data-set jobs on a Ray cluster (``ATTNSCOPE_RAY_ADDRESS``, or ``--executor ray`` on the CLI).

``RayExecutor`` starts ``workers`` actors (``ShardWorker``); each holds its own ``ModelCache``, so a
model is loaded once per actor and reused by every shard sent to it. The job's thread sends one shard
``(index, start, stop)`` to each idle actor as a Ray actor task, collects partial results as they come
(the manager checkpoints each and merges them in shard order, so the result is the one the in-process
executor gives), polls the busy actors for their progress and writes it to the job record, and on
cancel or shutdown tells them to stop at their next progress report. An actor asks for one CPU and,
when the cluster has GPUs, a GPU (or its share of them). Each actor computes with ``threads`` torch
threads, by default as many as the process that submits the job (the API) uses: float32 kernels
round differently with a different thread count, and with the same count (and CPU type) a job's
numbers are the same bits wherever its shards ran.

A whole (unsharded) kind such as ``probe`` runs as one task on one actor.

Workers import the job kinds' functions by module name: every node needs ``attnscope`` installed
(the same version; the compose ``ray`` profile runs the API's image on every node, a development
cluster started from a checkout's virtual environment after ``pip install -e .`` imports that
checkout). Guide: ``docs/guide/jobs.md``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from attnscope.server.jobs.kinds import JobKind
from attnscope.server.jobs.shards import ShardSink

log = logging.getLogger(__name__)
SETTING = "ATTNSCOPE_RAY_ADDRESS"


class RayUnavailableError(RuntimeError):
    """The Ray cluster named by the setting does not answer (or Ray is not installed)."""


class _Stopped(Exception):
    """Raised inside a shard on an actor that was told to stop."""


class _ActorService:
    """What a whole kind's runner gets on an actor: ``.models``, as the API's ``RunService`` has."""

    def __init__(self, models: Any):
        self.models = models


class ShardWorker:
    """A Ray actor's state: loaded models, the progress of the shard it runs, and stop requests.

    Runs as a threaded actor (two concurrent calls): ``run`` computes a shard while ``progress``
    and ``stop`` answer the driver."""

    def __init__(self, device: str | None = None, threads: int | None = None):
        import torch

        from attnscope.models.loading import ModelCache

        if threads:
            torch.set_num_threads(threads)

        self.models = ModelCache(device=device)
        import ray

        node = ray.get_runtime_context().get_node_id()[:8]
        self.name = f"ray:{node}@{socket.gethostname()}:{os.getpid()}"
        self._progress: tuple[str, int, int] | None = None  # (token, done, total)
        self._stopped: set[str] = set()
        self._lock = threading.Lock()

    def run(self, kind: JobKind, params: BaseModel, start: int, stop: int, token: str) -> tuple[dict, str]:
        """Shard ``[start, stop)`` of a sharded kind (or the whole of a whole kind): ``(partial, worker)``."""

        def progress(done: int, total: int) -> None:
            with self._lock:
                if token in self._stopped:
                    raise _Stopped(token)
                self._progress = (token, int(done), int(total))

        try:
            if kind.sharded:
                partial = kind.run_shard(params, self.models, start, stop, progress)
            else:
                partial = kind.runner(params, _ActorService(self.models), progress)
        finally:
            with self._lock:
                self._stopped.discard(token)
        return partial, self.name

    def progress(self) -> tuple[str, int, int] | None:
        with self._lock:
            return self._progress

    def stop(self, token: str) -> None:
        with self._lock:
            self._stopped.add(token)

    def ready(self) -> str:
        return self.name


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A TCP connect to the address' host and port: a dead address fails here in seconds, not after
    Ray's own minute of retries."""
    if address in ("auto", "local"):
        return
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    host, port = parts.hostname, parts.port or (10001 if parts.scheme == "ray" else 6379)
    if not host:
        raise RayUnavailableError(f"{SETTING}={address!r} is not an address: use host:port or ray://host:10001")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise RayUnavailableError(
            f"the Ray cluster at {SETTING}={address!r} does not answer ({host}:{port}: {exc.strerror or exc}); "
            f"start it (ray start --head) or fix {SETTING}, or unset {SETTING} to run jobs in-process"
        ) from None


def _join(address: str) -> None:
    """Make this machine a Ray node without CPUs (``ray start --address``): a driver connecting to a
    cluster by its GCS address must run on one of its nodes (a container next to the cluster)."""
    import shutil
    import subprocess
    import sys

    ray_cli = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    cmd = [ray_cli, "start", f"--address={address}", "--num-cpus=0", "--num-gpus=0"]
    cmd += ["--object-store-memory=100000000", "--disable-usage-stats"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RayUnavailableError(
            f"could not join the Ray cluster at {SETTING}={address!r} as a node (ATTNSCOPE_RAY_JOIN): "
            + " / ".join(tail)
        )


class RayExecutor:
    """Shards as Ray actor tasks on ``workers`` actors; see the module docstring.

    ``address`` None (the CLI without an address) starts a local Ray instance for this process.
    ``join`` first makes this machine a node of the cluster with no CPUs (``ATTNSCOPE_RAY_JOIN``: the
    API in its own container, as in the compose ``ray`` profile).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None,
        workers: int = 2,
        device: str | None = None,
        poll_s: float = 0.2,
        cpus_per_worker: float = 1.0,
        threads: int | None = None,
        join: bool = False,
    ):
        if workers < 1:
            raise ValueError("ATTNSCOPE_RAY_WORKERS must be at least 1")
        try:
            import ray
        except ImportError:
            raise RayUnavailableError(
                f"{SETTING} is set but Ray is not installed: pip install 'attnscope[ray]' (or unset {SETTING})"
            ) from None
        self.ray, self.address, self.poll_s = ray, address, poll_s
        self._owns = not ray.is_initialized()
        if address:
            _check_reachable(address)
        if self._owns:
            if join and address:
                _join(address)
            try:
                kwargs = {"num_cpus": workers * cpus_per_worker} if not address else {}
                ray.init(address=address, namespace="attnscope", log_to_driver=False, **kwargs)
            except Exception as exc:  # ConnectionError, TimeoutError, RuntimeError: say which setting to change
                raise RayUnavailableError(
                    f"could not connect to the Ray cluster at {SETTING}={address!r}: {exc}; "
                    f"fix {SETTING} or unset it to run jobs in-process"
                ) from None
        gpus = float(ray.cluster_resources().get("GPU", 0))
        gpus_each = min(1.0, gpus / workers) if gpus else 0
        cls = ray.remote(ShardWorker).options(
            num_cpus=cpus_per_worker,
            num_gpus=gpus_each,
            max_concurrency=2,
            max_restarts=1,
            max_task_retries=1,
            scheduling_strategy="SPREAD",  # one actor per node first: the load spread over the machines
        )
        if not threads:
            import torch

            threads = torch.get_num_threads()
        self.threads = threads
        self.actors = [cls.remote(device, threads) for _ in range(workers)]
        log.info(
            "Ray executor: %d actors on %s (%s GPU, %d torch threads each)",
            workers,
            address or "a local Ray",
            gpus_each,
            threads,
        )

    @property
    def worker(self) -> str:
        return f"ray@{self.address or 'local'}"

    def wait_ready(self, timeout: float = 120) -> list[str]:
        """The actors' names once each has started (a check that the cluster can place them)."""
        return self.ray.get([a.ready.remote() for a in self.actors], timeout=timeout)

    def _result(self, ref: Any, index: int) -> tuple[dict, str]:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the shard's own error, as in-process
            cause = getattr(exc, "cause", None)
            if isinstance(cause, Exception):
                raise cause from None
            raise
        except self.ray.exceptions.RayActorError as exc:
            raise RuntimeError(f"the Ray worker running shard {index} died: {exc}") from None

    def _poll(self, busy: dict, sink: ShardSink, sharded: bool) -> None:
        refs = {actor.progress.remote(): (token, index) for actor, index, _s, _e, token in busy.values()}
        try:
            values = self.ray.get(list(refs), timeout=10)
        except self.ray.exceptions.GetTimeoutError:
            return
        for (token, index), value in zip(refs.values(), values):
            if value is None or value[0] != token:
                continue
            if sharded:
                sink.progress(index, value[1])
            else:
                sink.whole_progress(value[1], value[2])

    def _stop(self, busy: dict) -> None:
        """Tell busy actors to stop at their next progress report and wait (bounded) until they have."""
        for actor, _i, _s, _e, token in busy.values():
            actor.stop.remote(token)
        if busy:
            self.ray.wait(list(busy), num_returns=len(busy), timeout=30)

    def run(self, kind: JobKind, params: BaseModel, pending: list[tuple[int, int, int]], sink: ShardSink) -> None:
        todo = deque(pending)
        idle = list(self.actors)
        busy: dict[Any, tuple[Any, int, int, int, str]] = {}
        last_poll = 0.0
        try:
            while todo or busy:
                sink.check()
                while todo and idle:
                    index, start, stop = todo.popleft()
                    actor, token = idle.pop(0), uuid.uuid4().hex
                    busy[actor.run.remote(kind, params, start, stop, token)] = (actor, index, start, stop, token)
                ready, _ = self.ray.wait(list(busy), num_returns=1, timeout=self.poll_s)
                for ref in ready:
                    actor, index, start, stop, _token = busy.pop(ref)
                    partial, worker = self._result(ref, index)
                    idle.append(actor)
                    sink.shard_done(index, start, stop, partial, worker)
                if busy and time.monotonic() - last_poll >= self.poll_s:
                    last_poll = time.monotonic()
                    self._poll(busy, sink, kind.sharded)
        except BaseException:
            self._stop(busy)
            raise

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # the cluster went away first
                log.debug("could not kill a Ray actor", exc_info=True)
        self.actors = []
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
