"""One error model for the whole API: every error answer is ``{"detail": str, "code": str}``
(``ErrorBody``), 422 included, and the server keeps serving after each.

For routes (yours too):

- Raise ``ApiError(status, "what went wrong and what to change", code="...")`` (or a plain
  ``HTTPException``: its status picks the code, e.g. 404 -> ``not_found``). Never return an error
  body by hand.
- Declare every status the route can return beyond the common ones with
  ``responses=error_responses(404, 409)`` (descriptions optional: ``error_responses(404, {409: "why"})``).
  ``document_common_errors(app)`` (called by ``create_app``) adds to every route what the
  cross-cutting parts can answer: 400 (Host), 401 (token), 413 (body size), 422 (validation),
  429 (busy/rate limit), 500. schemathesis checks that nothing else comes back.
- Domain exceptions of ``attnscope.models`` are mapped here once (``install_error_handlers``).
- Never put a server path in a detail: ``public_message(exc)`` strips them.
"""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from attnscope.analysis.indices import OutOfRangeError
from attnscope.models.cancel import Cancelled
from attnscope.models.capture import EmptyInputError, NotAGeneratorError, TooManyTokensError, WrongModalityError
from attnscope.models.data_registry import DataSetMissingError
from attnscope.models.inputs import InvalidImageError
from attnscope.models.registry import ModelOutsideRootsError, UnknownModelError, UnsupportedModelError
from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError
from attnscope.models.zoo.manifest import CheckpointMismatchError, CheckpointMissingError
from attnscope.models.zoo.samples import UnknownSampleError
from attnscope.server.schemas import ErrorBody
from attnscope.server.structure_pass import PassCancelled

log = logging.getLogger(__name__)

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "busy",
    500: "internal",
    503: "unavailable",
}
DESCRIPTIONS = {
    400: "the Host header is not one this server answers (ATTNSCOPE_ALLOWED_HOSTS), or a form POST lacks "
    "the X-Requested-With header",
    401: "ATTNSCOPE_API_TOKEN is set and the request has no valid 'Authorization: Bearer <token>'",
    403: "the request names something outside what this server may read",
    404: "no such resource (model, run, job, dataset or sample)",
    409: "the resource is not in a state that allows this (e.g. a job still running)",
    413: "the body, the upload or the requested computation is over this server's limit",
    415: "the upload is not a PNG or JPEG image",
    422: "invalid input: the detail names each field and what to change",
    429: "too much work queued (Retry-After says when to try again) or the per-client rate limit is reached",
    500: "a bug: the detail says so, the traceback is in the server log",
    503: "a model checkpoint is missing or does not match its manifest, or a data set is not in the data folder "
    "(the detail names the command that fetches it)",
    504: "the model work ran past the per-request deadline (ATTNSCOPE_REQUEST_DEADLINE) and was stopped: "
    "ask for less or run it as a job (POST /api/v1/jobs)",
}
CSRF_PARAMETER = {
    "name": "X-Requested-With",
    "in": "header",
    "required": True,
    "schema": {"type": "string", "minLength": 1, "example": "XMLHttpRequest"},
    "description": "any value (e.g. XMLHttpRequest): a form POST without it is refused (400 csrf_header_missing), "
    "so a page on another site cannot send it",
}
# an absolute POSIX path; the API's own routes (/api/v1/...) are advice to the user and stay
_PATH = re.compile(r"(?<![\w.:/])/(?!api/v\d+/)(?:[\w.@+-]+/)+[\w.@+-]*")


class ApiError(HTTPException):
    """An HTTP error with a stable ``code`` (default: from the status)."""

    def __init__(self, status_code: int, detail: str, code: str | None = None, headers: dict | None = None):
        super().__init__(status_code, detail, headers=headers)
        self.code = code or CODES.get(status_code, "error")


def public_message(text: str) -> str:
    """``text`` with absolute server paths cut to their last component (``.../name``)."""
    return _PATH.sub(lambda m: ".../" + m.group(0).rstrip("/").rsplit("/", 1)[-1], str(text))


def error_response(code: int, detail: str, err: str | None = None, headers: dict | None = None) -> JSONResponse:
    """The one error answer: ``{"detail", "code"}`` with ``code`` from the status unless given."""
    body = {"detail": public_message(detail), "code": err or CODES.get(code, "error")}
    return JSONResponse(body, status_code=code, headers=headers)


def error_responses(*statuses) -> dict:
    """``responses=`` for a route: ``error_responses(404, 409)`` or with descriptions ``{409: "..."}``."""
    out: dict = {}
    for s in statuses:
        items = s.items() if isinstance(s, dict) else [(s, DESCRIPTIONS.get(s, ""))]
        for code, description in items:
            out[int(code)] = {"model": ErrorBody, "description": description or DESCRIPTIONS.get(code, "error")}
    return out


def _where(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "cookie")]
    return ".".join(parts) or "request"


MAX_DETAIL_ERRORS = 20  # errors listed in a 422's detail; the rest are counted
MAX_DETAIL_LINE = 300  # characters of one error's line
MAX_DETAIL_CHARS = 4000  # characters of the whole detail


def validation_detail(errors: list[dict], prefix: str = "") -> str:
    """One readable line per pydantic error: ``field.path: message`` (the limits pydantic states);
    at most ``MAX_DETAIL_ERRORS`` lines of ``MAX_DETAIL_LINE`` characters, ``MAX_DETAIL_CHARS`` in all,
    then how many more there were."""
    msgs: list[str] = []
    size = 0
    for e in errors[:MAX_DETAIL_ERRORS]:
        msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        line = f"{prefix}{_where(tuple(e.get('loc', ())))}: {msg}"
        line = line if len(line) <= MAX_DETAIL_LINE else line[: MAX_DETAIL_LINE - 1] + "…"
        if size + len(line) > MAX_DETAIL_CHARS:
            break
        msgs.append(line)
        size += len(line) + 2
    if len(errors) > len(msgs):
        msgs.append(f"and {len(errors) - len(msgs):,} more errors")
    return "; ".join(msgs) or "invalid request"


def _allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method the OpenAPI document lists for ``path``: of its literal path when there is one
    (``/jobs/kinds``, not also ``/jobs/{job_id}``), else of every template matching it."""
    methods: set[str] = set()
    prefix = app.root_path or ""
    paths = app.openapi().get("paths", {})
    literal = [t for t in paths if "{" not in t and prefix + t == path]
    for template in literal or list(paths):
        regex, _, _ = compile_path(prefix + template)
        if regex.match(path):
            methods |= {m.upper() for m in paths[template] if m in ("get", "post", "put", "patch", "delete")}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method of every route on this path, not only the first route's
            headers["Allow"] = ", ".join(_allowed_methods(app, request.url.path))
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 405:
            detail = f"method {request.method} is not allowed here; allowed: {headers['Allow']}"
        elif exc.status_code == 404 and detail == "Not Found":
            detail = f"no route {request.url.path}; see the API reference at /docs"
        return error_response(exc.status_code, detail, getattr(exc, "code", None), headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(status.HTTP_422_UNPROCESSABLE_CONTENT, validation_detail(exc.errors()))

    @app.exception_handler(UnknownModelError)
    async def _unknown_model(_: Request, exc: UnknownModelError) -> JSONResponse:
        return error_response(status.HTTP_404_NOT_FOUND, f"{exc} (see GET /api/v1/models)")

    @app.exception_handler(ModelOutsideRootsError)
    async def _outside(_: Request, exc: ModelOutsideRootsError) -> JSONResponse:
        return error_response(status.HTTP_403_FORBIDDEN, str(exc))

    @app.exception_handler(TooManyTokensError)
    async def _too_long(_: Request, exc: TooManyTokensError) -> JSONResponse:
        return error_response(status.HTTP_413_CONTENT_TOO_LARGE, str(exc))

    @app.exception_handler(EmptyInputError)
    async def _empty(_: Request, exc: EmptyInputError) -> JSONResponse:
        return error_response(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))

    @app.exception_handler(InvalidImageError)
    async def _bad_image(_: Request, exc: InvalidImageError) -> JSONResponse:
        return error_response(exc.status, str(exc))

    @app.exception_handler(OutOfRangeError)
    @app.exception_handler(WrongModalityError)
    @app.exception_handler(NotAGeneratorError)
    @app.exception_handler(UnsupportedModelError)
    @app.exception_handler(SitesUnavailableError)  # a family without a Sites entry: names the missing parts
    @app.exception_handler(SiteOutOfRangeError)  # a block or head outside the model: names the range
    async def _modality(_: Request, exc: ValueError) -> JSONResponse:
        return error_response(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))

    @app.exception_handler(UnknownSampleError)
    async def _sample(_: Request, exc: UnknownSampleError) -> JSONResponse:
        return error_response(status.HTTP_404_NOT_FOUND, f"{exc} (see GET /api/v1/datasets)")

    @app.exception_handler(CheckpointMissingError)
    @app.exception_handler(CheckpointMismatchError)
    @app.exception_handler(DataSetMissingError)
    async def _checkpoint(_: Request, exc: Exception) -> JSONResponse:
        return error_response(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc))

    @app.exception_handler(PassCancelled)
    async def _pass_cancelled(_: Request, exc: PassCancelled) -> JSONResponse:  # a user asked: it is read
        return error_response(
            status.HTTP_409_CONFLICT, f"{exc} (POST .../structure-pass/cancel); ask again to start a new pass"
        )

    @app.exception_handler(Cancelled)
    async def _cancelled(_: Request, exc: Cancelled) -> JSONResponse:  # nobody reads it: the client left
        return error_response(status.HTTP_503_SERVICE_UNAVAILABLE, f"the work was cancelled ({exc})")

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(
            status.HTTP_500_INTERNAL_SERVER_ERROR,
            f"internal error ({type(exc).__name__}); the server keeps serving, the traceback is in its log",
        )


def document_common_errors(app: FastAPI, token: bool = True) -> None:
    """Make ``app.openapi()`` list on every operation the errors the cross-cutting layers can answer
    with (400 Host/CSRF, 401 token, 413 body size, 422 validation, 429 busy/rate limit, 500), all with
    ``ErrorBody``; FastAPI's own 422 schema (an array of errors) is replaced: this API answers a string.

    ``token=False`` (no ``ATTNSCOPE_API_TOKEN``): the document names no security scheme and no 401,
    since the server asks for none. A form body (``multipart/form-data``) documents the required
    ``X-Requested-With`` header (``attnscope.server.middleware.CsrfGuard``)."""
    base_openapi = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = base_openapi()
        heavy_ops = {  # (path without the router's prefix, method) on the heavy executor: its deadline answers 504
            (r.path, m.lower())
            for top in app.routes
            for r in getattr(getattr(top, "original_router", None), "routes", [top])
            if getattr(getattr(r, "endpoint", None), "__heavy__", None)
            for m in r.methods
        }
        ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
        doc.setdefault("components", {}).setdefault("schemas", {})["ErrorBody"] = ErrorBody.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        for schema in ("HTTPValidationError", "ValidationError"):
            doc["components"]["schemas"].pop(schema, None)
        if not token:
            doc["components"].pop("securitySchemes", None)
        for path, item in doc.get("paths", {}).items():
            for method, op in item.items():
                if not isinstance(op, dict) or "responses" not in op:
                    continue
                heavy_op = (path.removeprefix("/api/v1"), method) in heavy_ops or (path, method) in heavy_ops
                if heavy_op or "{run_id}" in path:  # a run read back from the database is restored on the executor
                    op["responses"].setdefault("504", {"description": DESCRIPTIONS[504]})
                if not token:
                    op.pop("security", None)
                    op["responses"].pop("401", None)
                if "multipart/form-data" in op.get("requestBody", {}).get("content", {}):
                    op.setdefault("parameters", []).append(CSRF_PARAMETER)
                common = [400, 429, 500]
                if op.get("parameters") or op.get("requestBody"):
                    common.append(422)
                if any(p.get("in") in ("path", "query") for p in op.get("parameters", [])):
                    common.append(404)  # a path or query parameter names a run, model, job, dataset or sample
                if op.get("requestBody"):
                    common.append(413)
                if op.get("security"):
                    common.append(401)
                for code in common:
                    key = str(code)
                    if key not in op["responses"] or code == 422:
                        op["responses"][key] = {"description": DESCRIPTIONS[code], "content": ref}
                for key, resp in op["responses"].items():
                    if key.startswith(("4", "5")) and "content" not in resp:
                        resp["content"] = ref
        app.openapi_schema = doc
        return doc

    app.openapi = openapi
