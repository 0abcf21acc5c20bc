"""The API's schemas are a typed contract: every field typed down to its leaves, one naming rule."""

from __future__ import annotations

import inspect
import types
import typing

from pydantic import BaseModel

import attnscope.server.schemas as schemas

MODELS = {n: c for n, c in vars(schemas).items() if inspect.isclass(c) and issubclass(c, BaseModel)}
SUFFIXES = ("Create", "Params", "Public", "List")
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
    bad = []
    for name, model in MODELS.items():
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
    """``*Create`` bodies, ``*Params`` job parameters, ``*Public`` answers, ``*List`` pages, plain nouns
    only for parts nested in another schema (see the package docstring)."""
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
    from attnscope.server.job_kinds import register_job_kinds
    from attnscope.server.jobs import JOB_KINDS

    register_job_kinds()
    assert set(schemas.JOB_PARAMS) == {"census", "probe", "faithfulness"} <= set(JOB_KINDS)
    for name, model in schemas.JOB_PARAMS.items():
        assert JOB_KINDS[name].params_model is model and model.__module__ == "attnscope.server.schemas.jobs"
