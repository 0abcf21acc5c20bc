"""GET /health: liveness and what the process holds."""

from __future__ import annotations

from fastapi import APIRouter

from attnscope.models.device import pick_device
from attnscope.server.config import VERSION
from attnscope.server.deps import ServiceDep, SettingsDep
from attnscope.server.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, summary="Liveness and state of the API process")
def read_health(settings: SettingsDep, service: ServiceDep) -> Health:
    return Health(
        version=VERSION,
        device=str(pick_device(settings.device)),
        loaded_models=service.models.loaded_names(),
        runs_stored=len(service.store),
    )
