"""POST /models/{name}/tokenize: how many positions a text takes, against the model's limit (the
dashboard's token counter, before Run)."""

from __future__ import annotations

from fastapi import APIRouter

from attnscope.models.capture import TooManyTokensError
from attnscope.models.registry import get_spec
from attnscope.server.deps import ServiceDep
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import TokenCountPublic, TokenizeCreate

router = APIRouter(tags=["models"])


@router.post(
    "/models/{name}/tokenize",
    response_model=TokenCountPublic,
    responses=error_responses({404: "no model with this name", 422: "a blank text, or a vision model"}),
    summary="Count a text's tokens as a run of this model would (special tokens included)",
)
@heavy
def tokenize(name: str, body: TokenizeCreate, service: ServiceDep) -> TokenCountPublic:
    """The count a run sees: the model's own tokenizer, special tokens included. A text over the
    limit is counted all the same (``over_limit``), not refused."""
    get_spec(name)  # 404 for an unknown model before loading anything
    loaded = service.models.get(name)
    try:
        n = len(loaded.encode_text(body.text).tokens)
    except TooManyTokensError as exc:
        n = exc.n_tokens
    return TokenCountPublic(model=name, n_tokens=n, max_tokens=loaded.max_tokens, over_limit=n > loaded.max_tokens)
