"""The only module that knows the API's URLs. Plain HTTP (httpx) + the API's pydantic schemas."""

from __future__ import annotations

import os

import httpx
import numpy as np

from analysis.codec import unpack  # pure numpy: the wire format is defined once, beside AttentionMaps
from server.schemas import ExplainerInfo, FaithfulnessPublic, JobPublic, ModelList, RunPublic


class ApiError(Exception):
    """The API answered with an error; ``str()`` is its message, fit to show a user."""

    def __init__(self, status: int, detail: str):
        self.status, self.detail = status, detail
        super().__init__(detail)


class ApiClient:
    """Typed access to the attnscope REST API."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 120.0):
        base = (base_url or os.environ.get("ATTNSCOPE_API_URL") or "http://127.0.0.1:8000").rstrip("/")
        self.base_url = base
        headers = {}
        token = token if token is not None else os.environ.get("ATTNSCOPE_API_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=f"{base}/api/v1", timeout=timeout, headers=headers)

    def _request(self, method: str, path: str, **kw) -> httpx.Response:
        try:
            r = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ApiError(503, f"cannot reach the attnscope API at {self.base_url}: {exc}") from exc
        if r.status_code >= 400:
            try:
                detail = r.json().get("detail", r.text)
            except ValueError:
                detail = r.text
            raise ApiError(r.status_code, str(detail))
        return r

    def health(self) -> dict:
        return self._request("GET", "/health").json()

    def models(self) -> ModelList:
        return ModelList.model_validate(self._request("GET", "/models").json())

    def create_run(self, model: str, text: str) -> RunPublic:
        return RunPublic.model_validate(self._request("POST", "/runs", json={"model": model, "text": text}).json())

    def run(self, run_id: str) -> RunPublic:
        return RunPublic.model_validate(self._request("GET", f"/runs/{run_id}").json())

    def attention(self, run_id: str, layer: int, head: int | None = None, encoding: str = "float16") -> np.ndarray:
        """One layer ``[head, query, key]`` or one head ``[query, key]``.

        ``encoding`` is ``"json"`` (full float32 precision) or a binary one (``float16``/``uint8``).
        """
        params: dict = {"layer": layer, "format": encoding}
        if head is not None:
            params["head"] = head
        r = self._request("GET", f"/runs/{run_id}/attention", params=params)
        if encoding == "json":
            return np.asarray(r.json()["weights"], dtype=np.float32)
        try:
            return unpack(r.content)[0]
        except ValueError as exc:
            raise ApiError(502, f"the API sent an attention blob this dashboard cannot read: {exc}") from exc

    def explainers(self) -> list[ExplainerInfo]:
        return [ExplainerInfo.model_validate(e) for e in self._request("GET", "/faithfulness/explainers").json()]

    def faithfulness(self, run_id: str, body: dict) -> FaithfulnessPublic:
        """Explain a run's prediction and score the explanations (body: ``FaithfulnessCreate`` fields)."""
        return FaithfulnessPublic.model_validate(self._request("POST", f"/runs/{run_id}/faithfulness", json=body).json())

    def create_job(self, kind: str, params: dict) -> JobPublic:
        return JobPublic.model_validate(self._request("POST", "/jobs", json={"kind": kind, "params": params}).json())

    def job(self, job_id: str) -> JobPublic:
        return JobPublic.model_validate(self._request("GET", f"/jobs/{job_id}").json())

    def job_result(self, job_id: str, format: str = "json"):
        """A finished job's result: a dict (json) or CSV text (csv)."""
        r = self._request("GET", f"/jobs/{job_id}/result", params={"format": format})
        return r.json() if format == "json" else r.text

    def close(self) -> None:
        self._http.close()
