"""Explainers of a classifier's prediction, one verb: ``explain(example) -> scores[token]``.

from attnscope.pipelines.explainers import make_explainer, example_from_text
ex = example_from_text(loaded, "a gripping, funny film")
scores = make_explainer("rollout", loaded).explain(ex)     # one float per token
"""

from __future__ import annotations

from collections.abc import Sequence

from attnscope.pipelines.explainers.attention import AttentionGradient, Flow, RandomScores, RawAttention, Rollout
from attnscope.pipelines.explainers.base import (
    Encoded,
    Explainer,
    NotAClassifierError,
    char_spans_to_tokens,
    example_from_ids,
    example_from_text,
    example_from_words,
    make_predict,
    require_classifier,
)
from attnscope.pipelines.explainers.gradient import DeepLift, InputXGradient, IntegratedGradients, Occlusion, Saliency

EXPLAINERS: dict[str, type[Explainer]] = {
    cls.name: cls
    for cls in (
        RawAttention,
        Rollout,
        Flow,
        AttentionGradient,
        IntegratedGradients,
        Saliency,
        InputXGradient,
        DeepLift,
        Occlusion,
        RandomScores,
    )
}
DEFAULT_EXPLAINERS = (
    "attention",
    "rollout",
    "attn_grad",
    "integrated_gradients",
    "saliency",
    "input_x_gradient",
    "deeplift",
    "random",
)


class UnknownExplainerError(KeyError, ValueError):
    def __str__(self) -> str:
        return str(self.args[0])


def check_explainers(names: Sequence[str]) -> list[str]:
    """``names`` as a list when every one is in ``EXPLAINERS``, else ``UnknownExplainerError`` naming
    the unknown ones and the choices (the one check of explainer names)."""
    bad = [n for n in names if n not in EXPLAINERS]
    if bad:
        raise UnknownExplainerError(f"unknown explainer(s) {bad}; choose from {', '.join(EXPLAINERS)}")
    return list(names)


def make_explainer(name: str, loaded, **options) -> Explainer:
    """An explainer by name (see ``EXPLAINERS``) for a loaded classifier."""
    check_explainers([name])
    return EXPLAINERS[name](loaded, **options)


__all__ = [
    "EXPLAINERS",
    "DEFAULT_EXPLAINERS",
    "Encoded",
    "char_spans_to_tokens",
    "Explainer",
    "NotAClassifierError",
    "UnknownExplainerError",
    "check_explainers",
    "example_from_ids",
    "example_from_text",
    "example_from_words",
    "make_explainer",
    "make_predict",
    "require_classifier",
]
