"""Schemas of the token counter: how many positions a text takes in a model, against its limit."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from attnscope.server.schemas.core import MAX_TEXT_CHARS


class TokenizeCreate(BaseModel):
    """Body of ``POST /models/{name}/tokenize``: the text to count (as a run would tokenise it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(
        ...,
        max_length=MAX_TEXT_CHARS,
        json_schema_extra={"pattern": r"\S"},
        description=f"the text to count, at most {MAX_TEXT_CHARS:,} characters",
        examples=["The cat sat on the mat because it was tired."],
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is empty or only whitespace; send at least one word")
        return v


class TokenCountPublic(BaseModel):
    """A text's length in the model's positions (special tokens included), against its limit."""

    model: str
    n_tokens: int = Field(..., ge=0, description="positions the text takes, special tokens included")
    max_tokens: int = Field(..., ge=1, description="the most a run of this model takes (GET /models)")
    over_limit: bool = Field(
        ..., description="n_tokens > max_tokens: a run refuses the text; data-set jobs keep its first max_tokens"
    )
