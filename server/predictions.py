"""The one conversion of a model's typed output (``attnscope.models.interface.ModelOutput``:
``Classification | Embedding | NextToken``) into the API's ``Prediction`` and into the JSON the run
records keep. A generation travels separately (``RunPublic.generation``), so neither holds it."""

from __future__ import annotations

import json

from attnscope.models.interface import ModelOutput
from attnscope.server.schemas import Prediction


def _fields(output: ModelOutput) -> dict:
    return {k: v for k, v in output.items() if k != "generation"}


def prediction_of(output: ModelOutput) -> Prediction:
    """The API's ``Prediction`` of ``output``: its ``kind`` and the fields that are set."""
    return Prediction(**_fields(output))


def prediction_fields(output: ModelOutput) -> dict:
    """The same fields as JSON values, for a run's database record."""
    return json.loads(json.dumps(_fields(output), default=str))
