"""Errors of encoding and running an input; each message says what to change (the API answers 4xx)."""

from __future__ import annotations


class EmptyInputError(ValueError):
    """The text is empty or only whitespace."""


class TooManyTokensError(ValueError):
    """The text tokenises to more positions than the model accepts."""

    def __init__(self, n_tokens: int, limit: int, model: str, what: str = "the text", hint: str = ""):
        self.n_tokens, self.limit, self.model = n_tokens, limit, model
        super().__init__(
            f"{what} has {n_tokens} tokens but model {model!r} accepts at most {limit} "
            f"(including special tokens); {hint or f'shorten the text by about {n_tokens - limit} tokens'}"
        )


class WrongModalityError(ValueError):
    """A text was sent to a vision model, or an image to a text model."""


class NotAGeneratorError(ValueError):
    """Generation, next-token options or a chat template were asked of a model that has none."""
