"""The model interface that code outside ``attnscope.models`` imports: the ``Backend`` protocol and
what flows through it, and a model's anatomy. Pipelines and the server import these names from here,
never from ``attnscope.models.backends`` or the zoo's modules (an import-linter contract in
``pyproject.toml`` holds it)."""

from attnscope.models.backends.base import AttentionConfig, Backend, Capture, ModelInput, TextTokenizer
from attnscope.models.outputs import BatchOutput, Classification, Embedding, ModelOutput, NextToken
from attnscope.models.sites import BlockSites, Norm, Rope, SiteOutOfRangeError, Sites, SitesUnavailableError, Unembed

__all__ = [
    "AttentionConfig",
    "Backend",
    "BatchOutput",
    "BlockSites",
    "Capture",
    "Classification",
    "Embedding",
    "ModelInput",
    "ModelOutput",
    "NextToken",
    "Norm",
    "Rope",
    "SiteOutOfRangeError",
    "Sites",
    "SitesUnavailableError",
    "TextTokenizer",
    "Unembed",
]
