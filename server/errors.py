"""Map domain errors to clear 4xx answers; the server keeps serving after each."""

from __future__ import annotations

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from attnscope.models.capture import EmptyInputError, NotAGeneratorError, TooManyTokensError, WrongModalityError
from attnscope.models.inputs import InvalidImageError
from attnscope.models.registry import ModelOutsideRootsError, UnknownModelError, UnsupportedModelError
from attnscope.models.zoo.manifest import CheckpointMismatchError, CheckpointMissingError
from attnscope.models.zoo.samples import UnknownSampleError


def _json(code: int, detail: str, **extra) -> JSONResponse:
    return JSONResponse({"detail": detail, **extra}, status_code=code)


def _where(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or "request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        msgs = []
        for e in errors:
            msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
            msgs.append(f"{_where(tuple(e.get('loc', ())))}: {msg}")
        safe = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
        return _json(status.HTTP_422_UNPROCESSABLE_CONTENT, "; ".join(msgs), errors=safe)

    @app.exception_handler(UnknownModelError)
    async def _unknown_model(_: Request, exc: UnknownModelError) -> JSONResponse:
        return _json(status.HTTP_404_NOT_FOUND, f"{exc} (see GET /api/v1/models)")

    @app.exception_handler(ModelOutsideRootsError)
    async def _outside(_: Request, exc: ModelOutsideRootsError) -> JSONResponse:
        return _json(status.HTTP_403_FORBIDDEN, str(exc))

    @app.exception_handler(TooManyTokensError)
    async def _too_long(_: Request, exc: TooManyTokensError) -> JSONResponse:
        return _json(status.HTTP_413_CONTENT_TOO_LARGE, str(exc), limit=exc.limit, n_tokens=exc.n_tokens)

    @app.exception_handler(EmptyInputError)
    async def _empty(_: Request, exc: EmptyInputError) -> JSONResponse:
        return _json(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))

    @app.exception_handler(InvalidImageError)
    async def _bad_image(_: Request, exc: InvalidImageError) -> JSONResponse:
        return _json(exc.status, str(exc))

    @app.exception_handler(WrongModalityError)
    @app.exception_handler(NotAGeneratorError)
    @app.exception_handler(UnsupportedModelError)
    async def _modality(_: Request, exc: ValueError) -> JSONResponse:
        return _json(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))

    @app.exception_handler(UnknownSampleError)
    async def _sample(_: Request, exc: UnknownSampleError) -> JSONResponse:
        return _json(status.HTTP_404_NOT_FOUND, f"{exc} (see GET /api/v1/datasets)")

    @app.exception_handler(CheckpointMissingError)
    @app.exception_handler(CheckpointMismatchError)
    async def _checkpoint(_: Request, exc: Exception) -> JSONResponse:
        return _json(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc))
