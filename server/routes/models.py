"""GET /models: every model the API can run."""

from __future__ import annotations

from fastapi import APIRouter

from models.registry import list_specs
from server.deps import SettingsDep
from server.schemas import ModelList, ModelPublic

router = APIRouter(tags=["models"])


@router.get("/models", response_model=ModelList, summary="List the models this API can run")
def read_models(settings: SettingsDep) -> ModelList:
    models = [
        ModelPublic(
            name=s.name, family=s.family, modality=s.modality, source=s.source, task=s.task,
            description=s.description, paper=s.paper, max_tokens=s.max_tokens,
            default=s.name == settings.default_model,
            accuracy=s.extra.get("accuracy"), params=s.extra.get("params"),
        )
        for s in list_specs()
    ]
    return ModelList(default=settings.default_model, models=models)
