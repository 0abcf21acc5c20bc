"""The only module that knows the API's URLs. Plain HTTP (httpx) + the API's pydantic schemas."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote

import httpx
import numpy as np

from attnscope.analysis.codec import (  # pure numpy: the wire format is defined once, beside AttentionMaps
    MEDIA_TYPE,
    unpack,
    unpack_top_k,
)
from attnscope.frontend.api_jobs import JobsApi
from attnscope.server.schemas import (
    AttributionPublic,
    CompositionPublic,
    ConvAttentionPublic,
    DataSetExamplePublic,
    DataSetList,
    EvolutionPublic,
    ExplainerPublic,
    FaithfulnessPublic,
    FixedPointPublic,
    GraphPublic,
    HeadComparisonPublic,
    HeadEffectsPublic,
    HeadsPublic,
    HealthPublic,
    ImportancePublic,
    InterventionPublic,
    LensPublic,
    LipschitzPublic,
    MeasurePublic,
    ModelList,
    ModelStructurePublic,
    ParticlesPublic,
    QKPublic,
    ResidualPatchingPublic,
    RunPublic,
    RunSummaryList,
    RunSummaryPublic,
    SampleList,
    ShiftPublic,
    StructurePassPublic,
    TokenCountPublic,
    ValueWeightedPublic,
)
from attnscope.server.schemas.circuits import CircuitPublic


class Thumbnails(NamedTuple):
    """A run's model-view thumbnails (``GET /runs/{id}/thumbnails``): ``means [layer, head, R, R]``
    (each ``stride x stride`` block's mean weight), ``key_means [layer, head, R, len(keys)]`` (each
    block of rows' mean weight on each key of ``keys``)."""

    stride: int
    keys: tuple[int, ...]
    means: np.ndarray
    key_means: np.ndarray


class ApiError(Exception):
    """The API answered with an error; ``str()`` is its message, fit to show a user."""

    def __init__(self, status: int, detail: str):
        self.status, self.detail = status, detail
        super().__init__(detail)


class ApiClient(JobsApi):
    """Typed access to the attnscope REST API at ``base_url`` (default ``http://127.0.0.1:8000``), with
    ``token`` as the bearer token when the API asks for one. Both come from the caller: the command
    line passes ``ATTNSCOPE_API_URL`` and ``ATTNSCOPE_API_TOKEN`` from the server's settings."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 120.0):
        base = (base_url or "http://127.0.0.1:8000").rstrip("/")
        self.base_url = base
        headers = {}
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

    def health(self) -> HealthPublic:
        return HealthPublic.model_validate(self._request("GET", "/health").json())

    def models(self) -> ModelList:
        return ModelList.model_validate(self._request("GET", "/models").json())

    def count_tokens(self, model: str, text: str) -> TokenCountPublic:
        """How many positions ``text`` takes in ``model``, against its limit (``over_limit``)."""
        r = self._request("POST", f"/models/{model}/tokenize", json={"text": text})
        return TokenCountPublic.model_validate(r.json())

    def create_run(self, model: str, text: str, generate: dict | None = None, thumbnails: bool = False) -> RunPublic:
        """Run ``text``; causal LMs also take ``generate`` (``GenerateCreate`` fields: ``max_new_tokens``,
        ``greedy`` or ``temperature``, ``seed``): the run then covers prompt + generated tokens.
        ``thumbnails``: the API computes the run's model-view thumbnails with it (``thumbnails``)."""
        body: dict = {"model": model, "text": text}
        if generate is not None:
            body["generate"] = generate
        if thumbnails:
            body["thumbnails"] = True
        return RunPublic.model_validate(self._request("POST", "/runs", json=body).json())

    def run(self, run_id: str, summary: bool = False) -> RunPublic:
        """The run; ``summary``: its prediction without the per-position lists (top-k, loss)."""
        params = {"prediction": "summary"} if summary else {}
        return RunPublic.model_validate(self._request("GET", f"/runs/{run_id}", params=params).json())

    def attention(
        self,
        run_id: str,
        layer: int,
        head: int | None = None,
        encoding: str = "float16",
        rows: tuple[int, int] | None = None,
        cols: tuple[int, int] | None = None,
        stride: int = 1,
        pool: str = "max",
    ) -> np.ndarray:
        """One layer ``[head, query, key]`` or one head ``[query, key]``, optionally a window of
        ``rows`` x ``cols`` (half-open position ranges) pooled by ``stride`` (``pool``: max or mean).

        ``encoding`` is ``"json"`` (full float32 precision) or a binary one (``float16``/``uint8``).
        """
        params: dict = {"layer": layer, "format": encoding}
        if head is not None:
            params["head"] = head
        if rows is not None:
            params["rows"] = f"{rows[0]}:{rows[1]}"
        if cols is not None:
            params["cols"] = f"{cols[0]}:{cols[1]}"
        if stride != 1:
            params.update(stride=stride, pool=pool)
        r = self._request("GET", f"/runs/{run_id}/attention", params=params)
        if encoding == "json":
            return np.asarray(r.json()["weights"], dtype=np.float32)
        try:
            return unpack(r.content)[0]
        except ValueError as exc:
            raise ApiError(502, f"the API sent an attention blob this dashboard cannot read: {exc}") from exc

    def thumbnails(self, run_id: str, layers: tuple[int, int] | None = None) -> Thumbnails:
        """The run's model-view thumbnails of ``layers`` (``(start, stop)``, default all; computed once
        by the API, binary float16)."""
        params = {} if layers is None else {"layers": f"{layers[0]}:{layers[1]}"}
        r = self._request("GET", f"/runs/{run_id}/thumbnails", params=params, headers={"Accept": MEDIA_TYPE})
        try:
            both, header = unpack(r.content)
            cells, keys = int(header["cells"]), tuple(int(k) for k in header["keys"])
        except (ValueError, KeyError) as exc:
            raise ApiError(502, f"the API sent thumbnails this dashboard cannot read: {exc}") from exc
        return Thumbnails(int(header["stride"]), keys, both[..., :cells], both[..., cells:])

    def attention_top_k(
        self, run_id: str, layer: int, k: int = 8, head: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's ``k`` strongest keys: ``(indices, weights)``, each ``[head, query, k]`` for a
        layer or ``[query, k]`` for one head (binary: uint16/uint32 indices + float16 weights)."""
        params: dict = {"layer": layer, "format": "topk", "k": k}
        if head is not None:
            params["head"] = head
        r = self._request("GET", f"/runs/{run_id}/attention", params=params, headers={"Accept": MEDIA_TYPE})
        try:
            indices, weights, _ = unpack_top_k(r.content)
        except ValueError as exc:
            raise ApiError(502, f"the API sent a top-k blob this dashboard cannot read: {exc}") from exc
        return indices, weights

    def rows(self, run_id: str, query: int) -> np.ndarray:
        """Every layer's and head's attention row of position ``query``: ``[layer, head, key]``
        (causal runs: keys ``0..query``, the prompt and the tokens generated before)."""
        r = self._request("GET", f"/runs/{run_id}/rows/{query}", params={"format": "float16"})
        try:
            return unpack(r.content)[0]
        except ValueError as exc:
            raise ApiError(502, f"the API sent an attention blob this dashboard cannot read: {exc}") from exc

    # ------------------------------------------------------------------ structure analyses
    def shift(self, run_id: str, k: int = 8, threshold: float = 0.5) -> ShiftPublic:
        r = self._request("GET", f"/runs/{run_id}/shift", params={"k": k, "threshold": threshold})
        return ShiftPublic.model_validate(r.json())

    def structure_pass(self, run_id: str, cancel: bool = False) -> StructurePassPublic:
        """Where the run's shared structure pass stands; ``cancel``: stop it (and its waiting requests)."""
        path = f"/runs/{run_id}/structure-pass" + ("/cancel" if cancel else "")
        return StructurePassPublic.model_validate(self._request("POST" if cancel else "GET", path).json())

    def heads(self, run_id: str, probe: bool = True) -> HeadsPublic:
        return HeadsPublic.model_validate(self._request("GET", f"/runs/{run_id}/heads", params={"probe": probe}).json())

    def qk(
        self, run_id: str, layer: int, head: int, query: int, key: int, parts: int = 24, terms: int = 20
    ) -> QKPublic:
        """Why ``L{layer}H{head}`` attends from ``query`` to ``key``: the query/key view and QK attribution."""
        params = {"layer": layer, "head": head, "query": query, "key": key, "parts": parts, "terms": terms}
        return QKPublic.model_validate(self._request("GET", f"/runs/{run_id}/qk", params=params).json())

    def composition(self, model: str, mode: str = "k") -> CompositionPublic:
        """Q-, K- or V-composition scores of every pair of the model's heads (from its weights)."""
        r = self._request("GET", f"/models/{model}/composition", params={"mode": mode})
        return CompositionPublic.model_validate(r.json())

    def evolution(self, run_id: str, compare_to: str | None = None) -> EvolutionPublic:
        params = {"compare_to": compare_to} if compare_to else {}
        return EvolutionPublic.model_validate(self._request("GET", f"/runs/{run_id}/evolution", params=params).json())

    def importance(
        self, run_id: str, method: str = "rollout", row: str = "cls", layer: int | None = None
    ) -> ImportancePublic:
        """``method`` is ``rollout`` or ``flow``; ``row`` is ``cls``, ``mean`` or a position; ``layer``:
        through which layer (default: the last)."""
        params = {"row": row} if layer is None else {"row": row, "layer": layer}
        return ImportancePublic.model_validate(self._request("GET", f"/runs/{run_id}/{method}", params=params).json())

    # ------------------------------------------------------------ measure-theoretic view
    def measure(self, run_id: str, compare: str | None = None) -> MeasurePublic:
        """W1 between successive layers (and with ``compare``'s run), max-entropy deviation per layer."""
        params = {"compare": compare} if compare else {}
        return MeasurePublic.model_validate(self._request("GET", f"/runs/{run_id}/measure", params=params).json())

    def particles(self, run_id: str, dims: int = 2) -> ParticlesPublic:
        """Hidden states ``[layer + 1][token][dims]`` projected by one PCA over all depths."""
        r = self._request("GET", f"/runs/{run_id}/particles", params={"dims": dims})
        return ParticlesPublic.model_validate(r.json())

    def lipschitz(
        self,
        model: str,
        layer: int,
        run_id: str | None = None,
        text: str | None = None,
        residual: bool = False,
        steps: int | None = None,
        draws: int | None = None,
    ) -> LipschitzPublic:
        """DERIVED bound (log10) and empirical estimate for one attention layer."""
        params: dict = {"layer": layer, "residual": residual}
        for key, value in (("run_id", run_id), ("text", text), ("steps", steps), ("draws", draws)):
            if value is not None:
                params[key] = value
        r = self._request("GET", f"/models/{model}/lipschitz", params=params)
        return LipschitzPublic.model_validate(r.json())

    def fixed_point(self, run_id: str, steps: int = 30, layer: int | None = None) -> FixedPointPublic:
        """W1 between successive iterates of the shared block (or of ``layer``'s block)."""
        params: dict = {"steps": steps}
        if layer is not None:
            params["layer"] = layer
        r = self._request("GET", f"/runs/{run_id}/fixed-point", params=params)
        return FixedPointPublic.model_validate(r.json())

    # ------------------------------------------------------------------ vision runs
    def create_sample_run(self, model: str, dataset: str, index: int) -> RunPublic:
        """Run a dataset sample (vision models)."""
        body = {"model": model, "sample": {"dataset": dataset, "index": index}}
        return RunPublic.model_validate(self._request("POST", "/runs", json=body).json())

    def upload_image_run(self, model: str, blob: bytes, filename: str = "upload.png") -> RunPublic:
        """Upload a PNG/JPEG and run it through a vision model."""
        r = self._request(
            "POST",
            "/runs/image",
            data={"model": model},
            files={"file": (filename, blob, "application/octet-stream")},
            headers={"X-Requested-With": "attnscope-dashboard"},  # the API refuses form posts without it (CSRF)
        )
        return RunPublic.model_validate(r.json())

    def datasets(self) -> DataSetList:
        """The registered data sets, which are in the API's data folder, and the command that fetches each."""
        return DataSetList.model_validate(self._request("GET", "/datasets").json())

    def dataset_example(
        self, dataset: str, key: str, split: str | None = None, allow_offensive: bool = False
    ) -> DataSetExamplePublic:
        """One text example by the id or index a job result names it by (its text, words and label)."""
        params = {k: v for k, v in (("split", split), ("allow_offensive", allow_offensive or None)) if v}
        r = self._request("GET", f"/datasets/{dataset}/examples/{quote(str(key), safe='')}", params=params)
        return DataSetExamplePublic.model_validate(r.json())

    def samples(self, dataset: str = "mnist", offset: int = 0, limit: int = 50) -> SampleList:
        r = self._request("GET", f"/datasets/{dataset}/samples", params={"offset": offset, "limit": limit})
        return SampleList.model_validate(r.json())

    def run_image(self, run_id: str) -> bytes:
        """PNG bytes of the image a vision run's model saw."""
        return self._request("GET", f"/runs/{run_id}/image").content

    def structure(self, model: str) -> ModelStructurePublic | None:
        """Learned head geometry (Gaussian heads), or None when the model has none."""
        try:
            return ModelStructurePublic.model_validate(self._request("GET", f"/models/{model}/structure").json())
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def conv_vs_attention(self, run_id: str, channel: int = 0) -> ConvAttentionPublic:
        """conv-attention runs: one first-layer channel as the convolution and as attention."""
        r = self._request("GET", f"/runs/{run_id}/conv-vs-attention", params={"channel": channel})
        return ConvAttentionPublic.model_validate(r.json())

    # ------------------------------------------------------------------ faithfulness
    def explainers(self) -> list[ExplainerPublic]:
        return [ExplainerPublic.model_validate(e) for e in self._request("GET", "/faithfulness/explainers").json()]

    def faithfulness(self, run_id: str, body: dict) -> FaithfulnessPublic:
        """Explain a run's prediction and score the explanations (body: ``FaithfulnessCreate`` fields)."""
        return FaithfulnessPublic.model_validate(
            self._request("POST", f"/runs/{run_id}/faithfulness", json=body).json()
        )

    # ------------------------------------------------------------------ compare
    def compare_heads(self, a: str, b: str, align: bool = False) -> HeadComparisonPublic:
        """Per-head JS divergence, total variation and largest difference of run ``a`` from run ``b``
        (``align``: on their aligned tokens, ``positions_a``/``positions_b``)."""
        r = self._request("GET", "/compare/heads", params={"a": a, "b": b, "align": align})
        return HeadComparisonPublic.model_validate(r.json())

    def circuit(self, body: dict) -> CircuitPublic:
        """``POST /circuits`` (``body``: a ``CircuitCreate``): the top edges, faithfulness and its curve."""
        return CircuitPublic.model_validate(self._request("POST", "/circuits", json=body).json())

    def intervene(self, run_id: str, body: dict) -> InterventionPublic:
        """``POST /runs/{id}/interventions`` (``body``: an ``InterventionCreate``): the altered
        prediction, effects and ``altered_run_id``."""
        r = self._request("POST", f"/runs/{run_id}/interventions", json=body)
        return InterventionPublic.model_validate(r.json())

    def head_effects(self, run_id: str, body: dict | None = None) -> HeadEffectsPublic:
        """``POST /runs/{id}/head-effects`` (``body``: a ``HeadEffectsCreate``): the per-head effect
        grid beside attention importance."""
        r = self._request("POST", f"/runs/{run_id}/head-effects", json=body or {})
        return HeadEffectsPublic.model_validate(r.json())

    def residual_patching(self, run_id: str, body: dict) -> ResidualPatchingPublic:
        """``POST /runs/{id}/residual-patching`` (``body``: a ``ResidualPatchingCreate``): the layer x
        position patching sweep ``effect [layer][position]``."""
        r = self._request("POST", f"/runs/{run_id}/residual-patching", json=body)
        return ResidualPatchingPublic.model_validate(r.json())

    # ------------------------------------------------------------------ what heads write
    def lens(self, run_id: str, positions: str | None = None, k: int = 3, target: str | None = None) -> LensPublic:
        """The logit lens of ``positions`` (``"start:stop"``; default the last) at every layer."""
        body = {"k": k} | ({"positions": positions} if positions else {}) | ({"target": target} if target else {})
        return LensPublic.model_validate(self._request("POST", f"/runs/{run_id}/lens", json=body).json())

    def attribution(
        self, run_id: str, position: int | None = None, top_heads: int = 1, split_heads: list | None = None
    ) -> AttributionPublic:
        """Direct logit attribution of the model's own next token after ``position`` (default the last),
        the ``top_heads`` largest heads split over their sources, or the heads ``split_heads``
        (``[[layer, head], ...]``)."""
        body = {"top_heads": top_heads} | ({} if position is None else {"position": position})
        body |= {} if split_heads is None else {"split_heads": split_heads}
        return AttributionPublic.model_validate(self._request("POST", f"/runs/{run_id}/attribution", json=body).json())

    def graph(
        self, run_id: str, position: int | None = None, threshold: float = 0.04, max_nodes: int = 2000
    ) -> GraphPublic:
        """The contribution graph of the prediction after ``position`` (default the last)."""
        body = {"threshold": threshold, "max_nodes": max_nodes} | ({} if position is None else {"position": position})
        return GraphPublic.model_validate(self._request("POST", f"/runs/{run_id}/graph", json=body).json())

    def value_weighted(self, run_id: str) -> str:
        """The id of the run whose maps are ``run_id``'s value-weighted maps (made once, then kept)."""
        r = self._request("POST", f"/runs/{run_id}/value-weighted")
        return ValueWeightedPublic.model_validate(r.json()).value_weighted_run_id

    def list_runs(self, offset: int = 0, limit: int = 50, **filters) -> RunSummaryList:
        """A page of the database's runs; ``filters``: ``model``, ``pinned``, ``q`` (None: not sent)."""
        params = {"offset": offset, "limit": limit} | {k: v for k, v in filters.items() if v is not None}
        return RunSummaryList.model_validate(self._request("GET", "/runs", params=params).json())

    def update_run(self, run_id: str, **fields) -> RunSummaryPublic:
        """Rename (``name``) and/or pin (``pinned``) a stored run."""
        return RunSummaryPublic.model_validate(self._request("PATCH", f"/runs/{run_id}", json=fields).json())

    def delete_run(self, run_id: str) -> None:
        self._request("DELETE", f"/runs/{run_id}")

    def close(self) -> None:
        self._http.close()
