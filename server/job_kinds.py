"""The dataset-level job kinds the API offers (registered once, at import)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from attnscope.models.registry import require_text_model
from attnscope.pipelines.dataset_runs import run_census, run_probe
from attnscope.pipelines.datasets import check_split
from attnscope.server.jobs import register_job_kind


class CensusParams(BaseModel):
    model: str = Field("minilm", description="registry name")
    dataset: Literal["sst2", "movies"] = "sst2"
    n: int = Field(200, ge=1, le=5000, description="examples (a seeded sample of the split)")
    split: str | None = Field(
        None,
        description="data set split: sst2 dev|train, movies rationales|fold10 (default: sst2 dev, movies rationales)",
    )
    seed: int = Field(0, ge=0, description="seed of the example sample (and of the CNN probe)")

    @field_validator("model")
    @classmethod
    def _known_text_model(cls, v: str) -> str:
        require_text_model(v)
        return v

    @model_validator(mode="after")
    def _known_split(self):
        check_split(self.dataset, self.split)
        return self


class ProbeParams(CensusParams):
    n: int = Field(200, ge=10, le=5000)
    size: int = Field(32, ge=4, le=128, description="maps are cropped/padded to size x size")
    folds: int = Field(5, ge=2, le=10)
    classifier: Literal["logistic", "cnn"] = Field(
        "logistic",
        description="logistic regression on the flattened maps, or a 2-layer CNN with one "
        "input channel per head (docs/methods/heads.md, the attention-map probe)",
    )


def _census(params: CensusParams, service, progress) -> dict:
    loaded = service.models.get(params.model)
    return run_census(loaded, params.dataset, params.n, params.split, params.seed, progress)


def _probe(params: ProbeParams, service, progress) -> dict:
    loaded = service.models.get(params.model)
    return run_probe(
        loaded,
        params.dataset,
        params.n,
        params.split,
        params.seed,
        params.size,
        params.folds,
        progress,
        params.classifier,
    )


register_job_kind(
    "census",
    CensusParams,
    _census,
    "per-head shift, entropy, distance and sink statistics over N examples (mean and std)",
)
register_job_kind(
    "probe", ProbeParams, _probe, "per-layer accuracy of predicting the label from that layer's attention maps alone"
)
