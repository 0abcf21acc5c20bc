"""GET /health: liveness and what the process holds, on a cheap path.

``async def`` with no dependencies that run in the threadpool: it reads memory only, so it answers
while the heavy executor and the threadpool are full (docs/guide/configuration.md, limits)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnscope.server.config import VERSION
from attnscope.server.schemas import HealthPublic

router = APIRouter(tags=["health"])


@router.get(
    "/health", response_model=HealthPublic, summary="Liveness and state of the API process (cheap, never queued)"
)
async def read_health(request: Request) -> HealthPublic:
    state = request.app.state
    return HealthPublic(
        version=VERSION,
        device=state.device_name,
        loaded_models=state.service.models.loaded_names(),
        runs_stored=len(state.service.store),
    )
