"""The only module that knows the API's URLs. Plain HTTP (httpx) + the API's pydantic schemas."""

from __future__ import annotations

import os

import httpx
import numpy as np

from analysis.codec import unpack  # pure numpy: the wire format is defined once, beside AttentionMaps
from server.schemas import ConvAttentionPair, ModelList, ModelStructure, RunPublic, SampleList


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

    def create_sample_run(self, model: str, dataset: str, index: int) -> RunPublic:
        """Run a dataset sample (vision models)."""
        body = {"model": model, "sample": {"dataset": dataset, "index": index}}
        return RunPublic.model_validate(self._request("POST", "/runs", json=body).json())

    def upload_image_run(self, model: str, blob: bytes, filename: str = "upload.png") -> RunPublic:
        """Upload a PNG/JPEG and run it through a vision model."""
        r = self._request("POST", "/runs/image", data={"model": model},
                          files={"file": (filename, blob, "application/octet-stream")})
        return RunPublic.model_validate(r.json())

    def samples(self, dataset: str = "mnist", offset: int = 0, limit: int = 50) -> SampleList:
        r = self._request("GET", f"/datasets/{dataset}/samples", params={"offset": offset, "limit": limit})
        return SampleList.model_validate(r.json())

    def run_image(self, run_id: str) -> bytes:
        """PNG bytes of the image a vision run's model saw."""
        return self._request("GET", f"/runs/{run_id}/image").content

    def structure(self, model: str) -> ModelStructure | None:
        """Learned head geometry (Gaussian heads), or None when the model has none."""
        try:
            return ModelStructure.model_validate(self._request("GET", f"/models/{model}/structure").json())
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def conv_vs_attention(self, run_id: str, channel: int = 0) -> ConvAttentionPair:
        """conv-attention runs: one first-layer channel as the convolution and as attention."""
        r = self._request("GET", f"/runs/{run_id}/conv-vs-attention", params={"channel": channel})
        return ConvAttentionPair.model_validate(r.json())

    def close(self) -> None:
        self._http.close()
