"""``create_app()``: the FastAPI application under ``/api/v1`` with OpenAPI docs at ``/docs``.

The interactive docs (Swagger UI at ``/docs``, ReDoc at ``/redoc``) load their scripts and styles from
the application itself (``/docs-assets``, the files the ``fastapi-offline`` package ships), never from a
CDN: the API works on a machine without internet access.
"""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager

import torch
from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline
from threadpoolctl import threadpool_limits

from attnscope.models import data_registry
from attnscope.models.device import pick_device
from attnscope.models.loading import ModelCache
from attnscope.pipelines.explainers.gradient import import_captum
from attnscope.server.config import VERSION, Settings
from attnscope.server.db.engine import open_database
from attnscope.server.db.run_records import RunRecords
from attnscope.server.deps import require_token
from attnscope.server.errors import document_common_errors, install_error_handlers
from attnscope.server.jobs.dataset_kinds import register_job_kinds
from attnscope.server.jobs.manager import JobManager
from attnscope.server.jobs.shards import InProcessExecutor
from attnscope.server.middleware import install_middleware
from attnscope.server.request_executor import HeavyExecutor
from attnscope.server.routes import (
    attention,
    circuits,
    compare,
    datasets,
    faithfulness,
    health,
    interventions,
    jobs,
    measure,
    models,
    qk,
    runs,
    structure,
    tokens,
    workspace,
    writes,
)
from attnscope.server.service import RunService
from attnscope.server.store import RunStore

log = logging.getLogger(__name__)
API_PREFIX = "/api/v1"
DOCS_ASSETS = "/docs-assets"  # Swagger UI and ReDoc scripts, served locally


def _preload(cache: ModelCache, names: list[str]) -> None:
    for name in names:
        try:
            cache.get(name)
        except Exception:  # a bad preload entry must not stop the API; requests report it
            log.exception("could not preload model %s", name)
    import_captum()  # a slow first import, here rather than in a request (it held the event loop ~1 s)


def make_executor(settings: Settings, service: RunService):
    """In-process, or Ray when ``ATTNSCOPE_RAY_ADDRESS`` is set (a clear error when it does not answer)."""
    if not settings.ray_address:
        return InProcessExecutor(service)
    from attnscope.server.jobs.ray_shards import RayExecutor

    return RayExecutor(
        settings.ray_address,
        workers=settings.ray_workers,
        device=settings.device,
        threads=settings.ray_threads or None,
        join=settings.ray_join,
    )


def _log_missing_data() -> None:
    """Say at start-up which data sets are not in the data folder and what needs them (the API serves anyway:
    MiniLM and the explore, compare, structure and measure pages need none)."""
    missing = [name for name, ok in data_registry.present().items() if not ok]
    if missing:
        log.info(
            "data sets not in the data folder: %s. Census, probe and faithfulness data-set jobs and the vision "
            "page's MNIST samples need them; fetch them with `%s` (or `make data`); GET /api/v1/datasets lists them",
            ", ".join(missing),
            data_registry.FETCH_COMMAND,
        )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    register_job_kinds()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.torch_threads:  # once, for the process: no request changes torch's threads
            torch.set_num_threads(settings.torch_threads)
        # the database first: a bad ATTNSCOPE_DATABASE_URL / ATTNSCOPE_STATE_DIR stops start-up with a clear message
        db = open_database(settings.database_url, settings.state_dir)
        cache = ModelCache(device=settings.device)
        app.state.settings = settings
        app.state.device_name = str(pick_device(settings.device))
        app.state.executor = HeavyExecutor(
            settings.heavy_workers, settings.heavy_queue, deadline=settings.request_deadline
        )
        app.state.db = db
        app.state.service = RunService(
            cache,
            RunStore(settings.max_runs, settings.max_run_bytes),
            RunRecords(db),
            recording_bytes=settings.max_recording_bytes,
        )
        try:
            executor = make_executor(settings, app.state.service)
        except Exception:
            db.close()
            raise
        app.state.jobs = JobManager(app.state.service, db, executor, max_queued=settings.max_queued_jobs)
        app.state.jobs.start()
        # numpy/scipy's BLAS, once for the process: a multi-threaded LAPACK call holds the GIL while it waits for its
        # threads, ~1 s on a loaded 2-core machine (a Lipschitz bound: 2.3-4.6 s with 2 threads, 0.08-0.15 s with 1)
        blas = threadpool_limits(settings.blas_threads, user_api="blas") if settings.blas_threads else None
        if settings.preload:
            threading.Thread(target=_preload, args=(cache, settings.preload), daemon=True).start()
        _log_missing_data()
        yield
        app.state.executor.shutdown()
        app.state.jobs.shutdown()
        db.close()
        if blas is not None:
            blas.restore_original_limits()

    app = FastAPIOffline(
        static_url=DOCS_ASSETS,
        title="attnscope API",
        version=VERSION,
        description="Attention maps of every layer and head, live. Runs are keyed by a content hash of (model, input): "
        "their inputs are kept in the database, their arrays in a bounded in-memory store, recomputed on demand. "
        "Data-set jobs, their progress and results are kept in the database. Attention is served one layer or one "
        "head at a time, as JSON or as a compact float16/uint8 binary encoding.",
        lifespan=lifespan,
    )
    if settings.allowed_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.allowed_origins, allow_methods=["*"], allow_headers=["*"]
        )
    install_middleware(app, settings)
    install_error_handlers(app)
    app.include_router(health.router, prefix=API_PREFIX)
    secured = [Depends(require_token)]
    app.include_router(models.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(workspace.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(runs.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(attention.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(structure.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(interventions.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(jobs.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(measure.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(datasets.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(faithfulness.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(compare.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(tokens.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(qk.runs_router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(qk.models_router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(writes.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(circuits.router, prefix=API_PREFIX, dependencies=secured)
    app.include_router(circuits.run_router, prefix=API_PREFIX, dependencies=secured)
    document_common_errors(app, token=bool(settings.api_token))
    return app
