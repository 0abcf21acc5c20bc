"""The jobs resource of the API (``/jobs``): create, read, list, cancel, resume, results. A mixin of
``ApiClient`` (which holds the HTTP client and ``_request``); the URLs are known here only."""

from __future__ import annotations

from pydantic import TypeAdapter

from attnscope.server.schemas import (
    CensusResultPublic,
    FaithfulnessResultPublic,
    JobPublic,
    JobResultPublic,
    ProbeResultPublic,
)

_JOB_RESULT = TypeAdapter(JobResultPublic)


class JobsApi:
    """``/jobs`` calls; ``self._request(method, path, **kw) -> httpx.Response`` comes from ``ApiClient``."""

    def create_job(self, kind: str, params: dict) -> JobPublic:
        return JobPublic.model_validate(self._request("POST", "/jobs", json={"kind": kind, "params": params}).json())

    def job(self, job_id: str) -> JobPublic:
        return JobPublic.model_validate(self._request("GET", f"/jobs/{job_id}").json())

    def cancel_job(self, job_id: str) -> JobPublic:
        """Cancel a job (a queued one at once, a running one at its next progress report)."""
        return JobPublic.model_validate(self._request("POST", f"/jobs/{job_id}/cancel").json())

    def job_result(self, job_id: str) -> CensusResultPublic | ProbeResultPublic | FaithfulnessResultPublic:
        """A finished job's result as its kind's model (``JobResultPublic``: told apart by ``kind``).
        ``result.model_dump_json(exclude_unset=True)`` gives back the API's JSON."""
        return _JOB_RESULT.validate_python(self._request("GET", f"/jobs/{job_id}/result").json())

    def job_result_csv(self, job_id: str) -> str:
        """A finished job's result rows as CSV text."""
        return self._request("GET", f"/jobs/{job_id}/result", params={"format": "csv"}).text

    def jobs(self, kind: str | None = None, limit: int = 50) -> list[JobPublic]:
        """The newest jobs (from the API's database), oldest first; only ``kind`` when given."""
        params = {"limit": limit} | ({"kind": kind} if kind else {})
        return [JobPublic.model_validate(j) for j in self._request("GET", "/jobs", params=params).json()]

    def resume_job(self, job_id: str) -> JobPublic:
        return JobPublic.model_validate(self._request("POST", f"/jobs/{job_id}/resume").json())
