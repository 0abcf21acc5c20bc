"""The API's schemas are a typed contract: every field typed down to its leaves, one naming rule."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing

import numpy as np
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import attnscope.server.schemas as schemas

MODELS = {n: c for n, c in vars(schemas).items() if inspect.isclass(c) and issubclass(c, BaseModel)}


def _every_model() -> dict[str, type[BaseModel]]:
    """Every BaseModel subclass defined in a module of ``attnscope.server.schemas``, exported or not,
    and every model nested in their fields."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module(f"{schemas.__name__}.{info.name}")
        for c in vars(module).values():
            if inspect.isclass(c) and issubclass(c, BaseModel) and c.__module__ == module.__name__:
                found[f"{info.name}.{c.__name__}"] = c
    stack = list(found.values())
    while stack:
        for field in stack.pop().model_fields.values():
            for tp in _leaves(field.annotation):
                if inspect.isclass(tp) and issubclass(tp, BaseModel) and tp not in found.values():
                    found[f"{tp.__module__}.{tp.__name__}"] = tp
                    stack.append(tp)
    return found


def _leaves(tp) -> list:
    out = [tp]
    for arg in typing.get_args(tp):
        out += _leaves(arg)
    return out


SUFFIXES = ("Create", "Update", "Params", "Public", "List")
NESTED = {"Prediction", "NextToken", "GenerationOptions", "GenerationStep", "Generation", "ImageSource", "SampleRef"}


def _bare(tp, where: str) -> list[str]:
    """Places in a type annotation that are a bare ``list``/``dict``/``Any`` (untyped leaves)."""
    if tp is typing.Any or tp in (list, dict, tuple, set):
        return [where]
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _bare(typing.get_args(tp)[0], where)
    if origin is typing.Literal:
        return []
    out = []
    for arg in typing.get_args(tp):
        if arg is not types.NoneType and arg is not Ellipsis:
            out += _bare(arg, where)
    return out


def test_no_field_is_a_bare_list_dict_or_any():
    every = _every_model()
    assert set(MODELS.values()) <= set(every.values())
    assert {"job_results.CensusResultPublic", "job_results.FaithfulnessRow", "jobs.JobPublic"} <= set(every)
    bad = []
    for name, model in every.items():
        for field, info in model.model_fields.items():
            bad += _bare(info.annotation, f"{name}.{field}")
    assert not bad, f"untyped fields (give their items a type): {bad}"


def test_the_bare_check_catches_untyped_fields():
    class Loose(BaseModel):
        a: list
        b: dict[str, typing.Any] | None = None
        c: list[list[float]]

    found = [w for f, i in Loose.model_fields.items() for w in _bare(i.annotation, f)]
    assert found == ["a", "b"]


def test_every_schema_follows_the_naming_rule():
    """``*Create`` bodies, ``*Update`` PATCH bodies, ``*Params`` job parameters, ``*Public`` answers,
    ``*List`` pages, plain nouns only for parts nested in another schema (see the package docstring)."""
    nested = set()
    for model in MODELS.values():
        for info in model.model_fields.values():
            stack = [info.annotation]
            while stack:
                tp = stack.pop()
                if inspect.isclass(tp) and issubclass(tp, BaseModel):
                    nested.add(tp.__name__)
                stack += typing.get_args(tp)
    odd = [n for n in MODELS if not n.endswith(SUFFIXES) and n != "ErrorBody" and n not in nested]
    assert not odd, f"schemas outside the naming rule: {odd}"
    assert NESTED <= nested


def test_job_params_models_live_here_and_name_every_kind():
    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS

    register_job_kinds()
    kinds = {"census", "probe", "faithfulness", "head-effects", "dla", "circuit"}
    assert set(schemas.JOB_PARAMS) == kinds <= set(JOB_KINDS)
    for name, model in schemas.JOB_PARAMS.items():
        assert JOB_KINDS[name].params_model is model and model.__module__ == "attnscope.server.schemas.jobs"


def test_every_job_kind_has_a_result_model_told_apart_by_kind():
    assert set(schemas.JOB_RESULTS) == set(schemas.JOB_PARAMS)
    union = TypeAdapter(schemas.JobResultPublic)
    for kind, model in schemas.JOB_RESULTS.items():
        assert model.__name__.endswith("ResultPublic") and model.model_fields["kind"].default == kind
        assert typing.get_args(model.model_fields["kind"].annotation) == (kind,)
    mapping = union.json_schema()["discriminator"]["mapping"]
    assert {k: v.rsplit("/", 1)[-1] for k, v in mapping.items()} == {
        k: m.__name__ for k, m in schemas.JOB_RESULTS.items()
    }


def test_census_result_model_takes_the_pipelines_result_and_refuses_an_unnamed_field():
    """``merge_census`` on closed-form shard states (2 layers x 3 heads, values 0 and 2 per head):
    the result validates as ``CensusResultPublic`` with mean 1 and std 1 everywhere."""
    from attnscope.analysis.census import RunningStats
    from attnscope.pipelines.dataset_runs import CENSUS_METRICS, merge_census

    def shard(value: float) -> dict:
        stats = {}
        for k in CENSUS_METRICS:
            s = RunningStats()
            s.add(np.full((2, 3), value))
            stats[k] = s.state()
        return {"n": 1, "stats": stats}

    out = merge_census([shard(0.0), shard(2.0)], "minilm", "sst2", None, 0)
    result = TypeAdapter(schemas.JobResultPublic).validate_python(out)
    assert isinstance(result, schemas.CensusResultPublic) and result.n == 2 and len(result.rows) == 6
    assert set(result.metrics) == set(CENSUS_METRICS)
    assert result.rows[4].head == "L1H1" and result.rows[4].previous_mean == 1.0
    np.testing.assert_allclose(result.metrics["sink"].mean, 1.0)
    assert result.model_dump(exclude_unset=True) == out  # the model names every field the pipeline writes
    with pytest.raises(ValidationError, match="extra"):
        schemas.CensusResultPublic.model_validate({**out, "surprise": 1})


@pytest.mark.parametrize(
    "name, body",
    [
        ("writes.AttributionCreate", {"top_heads": False}),
        ("writes.GraphCreate", {"threshold": False}),
        ("writes.LensCreate", {"k": True}),
        ("interventions.InterventionCreate", {"interventions": [{"kind": "ablate", "heads": [[False, 0]]}]}),
        ("interventions.HeadEffectsCreate", {"chunk": "8"}),
        ("circuits.CircuitCreate", {"model": "m", "clean": "a", "corrupted": "b", "k": True}),
        ("circuits.PathPatchCreate", {"model": "m", "clean": "a", "corrupted": "b", "sender": "E", "receiver": 1}),
    ],
)
def test_request_bodies_take_json_types_as_the_schema_says(name, body):
    """Strict: ``false`` is no ``0`` and ``"8"`` no ``8`` (the contract fuzzing found attribution and graph
    accepting booleans for numbers once it reached them past the 404)."""
    with pytest.raises(ValidationError):
        _every_model()[name].model_validate(body)
