"""GET /models: every model the API can run."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

from attnscope.models.registry import get_spec, list_specs
from attnscope.server.deps import ServiceDep, SettingsDep
from attnscope.server.errors import public_message
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import ModelList, ModelPublic, ModelStructurePublic

router = APIRouter(tags=["models"])


@router.get("/models", response_model=ModelList, summary="List the models this API can run")
def read_models(settings: SettingsDep) -> ModelList:
    models = [
        ModelPublic(
            name=s.name,
            family=s.family,
            modality=s.modality,
            source=s.source,
            task=s.task,
            description=public_message(s.description),  # no server path in any answer
            paper=s.paper,
            max_tokens=s.max_tokens,
            default=s.name == settings.default_model,
            accuracy=s.extra.get("accuracy"),
            params=s.extra.get("params"),
            context=s.extra.get("context") if s.task == "causal-lm" else None,
            kv_heads=s.extra.get("kv_heads"),
        )
        for s in list_specs()
    ]
    return ModelList(default=settings.default_model, models=models)


@router.get(
    "/models/{name}/structure",
    response_model=ModelStructurePublic,
    summary="Learned per-head geometry (Gaussian heads: centre and covariance per layer and head)",
)
@heavy
def read_model_structure(name: str, service: ServiceDep) -> ModelStructurePublic:
    get_spec(name)  # 404 for unknown models before loading anything
    structure = service.models.get(name).structure()
    if structure is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"model {name!r} has no closed-form head geometry (only Gaussian-attention models do)",
        )
    return ModelStructurePublic(model=name, **structure)
