"""The dataset-level job kinds the API offers (registered once, at import)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from attnscope.models.registry import get_spec, require_text_model
from attnscope.pipelines.dataset_runs import census_shard, merge_census, pick_examples, run_probe
from attnscope.pipelines.datasets import check_split
from attnscope.server.jobs import register_job_kind, register_sharded_job_kind


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


@lru_cache(maxsize=8)
def _examples(dataset: str, n: int, split: str | None, seed: int) -> tuple:
    return tuple(pick_examples(dataset, n, split, seed))


def census_size(params: CensusParams) -> int:
    """Examples a census covers (``n``, or the whole split when it is smaller)."""
    return len(_examples(params.dataset, params.n, params.split, params.seed))


def census_run_shard(params: CensusParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)`` of the census' seeded sample: per-head running statistics."""
    examples = list(_examples(params.dataset, params.n, params.split, params.seed)[start:stop])
    return census_shard(models.get(params.model), examples, progress)


def census_merge(params: CensusParams, partials: list[dict]) -> dict:
    return merge_census(partials, get_spec(params.model).name, params.dataset, params.split, params.seed)


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


register_sharded_job_kind(
    "census",
    CensusParams,
    size=census_size,
    run_shard=census_run_shard,
    merge=census_merge,
    description="per-head shift, entropy, distance and sink statistics over N examples (mean and std)",
    shard_size=25,
)
register_job_kind(
    "probe", ProbeParams, _probe, "per-layer accuracy of predicting the label from that layer's attention maps alone"
)


class HeadEffectsParams(BaseModel):
    model: str = Field("minilm-sst2", description="registry name of a text model")
    dataset: Literal["sst2", "movies"] = "sst2"
    n: int = Field(50, ge=1, le=1000, description="examples (a seeded sample of the split)")
    split: str | None = Field(None, description="data set split (default: sst2 dev, movies rationales)")
    seed: int = Field(0, ge=0, description="seed of the example sample")
    method: Literal["zero", "mean", "uniform"] = Field("zero", description="ablation applied to each head in turn")
    metric: Literal["prob", "logit_diff", "flip", "cosine", "loss"] | None = Field(
        None, description="default: the task's first (classifiers prob, embedding models cosine, causal LMs loss)"
    )
    max_tokens: int = Field(64, ge=4, le=128, description="each text is cut to this many tokens")
    chunk: int = Field(32, ge=1, le=64, description="copies of an input per batched forward pass")

    @field_validator("model")
    @classmethod
    def _known_text_model(cls, v: str) -> str:
        require_text_model(v)
        return v

    @model_validator(mode="after")
    def _known_split(self):
        check_split(self.dataset, self.split)
        return self


def head_effects_size(params: HeadEffectsParams) -> int:
    return len(_examples(params.dataset, params.n, params.split, params.seed))


def head_effects_run_shard(params: HeadEffectsParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)``: running statistics of every head's ablation effect."""
    from attnscope.pipelines.interventions import InterventionError
    from attnscope.pipelines.interventions.dataset import grid_shard

    examples = list(_examples(params.dataset, params.n, params.split, params.seed)[start:stop])
    backend = models.get(params.model)
    try:
        return grid_shard(
            backend, examples, params.method, params.metric, params.max_tokens, params.chunk, progress=progress
        )
    except InterventionError as exc:  # the job fails with the reason (a model or metric that does not fit)
        raise ValueError(str(exc)) from None


def head_effects_merge(params: HeadEffectsParams, partials: list[dict]) -> dict:
    from attnscope.pipelines.interventions.dataset import merge_grids

    return merge_grids(partials, get_spec(params.model).name, params.method, params.dataset)


register_sharded_job_kind(
    "head-effects",
    HeadEffectsParams,
    size=head_effects_size,
    run_shard=head_effects_run_shard,
    merge=head_effects_merge,
    description="per-head ablation effect over N examples: mean and std of the metric change, classifiers' flip rate",
    shard_size=10,
)
