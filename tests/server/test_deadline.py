"""Issue 29 part 3: a deadline per request (``ATTNSCOPE_REQUEST_DEADLINE``) beside the compute budget.
Work past it is cancelled like a client that left (``attnscope.models.cancel``) and answered 504."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from attnscope.models.cancel import check_cancelled
from attnscope.server.config import Settings
from attnscope.server.request_executor import DeadlinePassed, HeavyExecutor

API = "/api/v1"


def _run_in_own_loop(coro):
    """``asyncio.run`` on a thread of its own: a browser test's Playwright (sync API) may leave an event
    loop running on the main thread of the same pytest process."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_the_deadline_is_a_setting_with_a_default_of_minutes(monkeypatch):
    assert Settings().request_deadline == 180
    monkeypatch.setenv("ATTNSCOPE_REQUEST_DEADLINE", "0")
    assert Settings().request_deadline is None  # 0: none
    monkeypatch.setenv("ATTNSCOPE_REQUEST_DEADLINE", "-1")
    with pytest.raises(ValueError, match="request_deadline"):
        Settings()


def test_work_past_the_deadline_is_answered_504_and_stops_at_its_next_check():
    """A loop that would run forever stops once the deadline cancels it; its slot comes back."""
    ex = HeavyExecutor(workers=1, queue_limit=0, deadline=0.2)
    steps = []

    def forever():
        while True:
            steps.append(1)
            check_cancelled()
            time.sleep(0.001)

    with pytest.raises(DeadlinePassed) as refused:
        _run_in_own_loop(ex.run(None, forever))
    assert refused.value.status_code == 504
    wait_until = time.time() + 60
    while ex.in_flight and time.time() < wait_until:
        time.sleep(0.01)
    assert ex.in_flight == 0 and steps  # the worker left the loop at a check_cancelled
    assert _run_in_own_loop(ex.run(None, lambda: 7)) == 7  # the worker serves again
    ex.shutdown()


def test_a_budget_sized_request_is_cut_off_with_504_saying_how_to_run_it_as_a_job(start_api):
    """Integrated gradients (256 steps) and occlusion on 380 tokens: ~350,000 token-steps, inside the
    default budget of 400,000 and minutes of CPU; a 3 s deadline stops it."""
    text = " ".join(["a gripping , funny and moving film ."] * 47)
    with start_api(Settings(preload=[], max_runs=4, request_deadline=3)) as url:
        client = httpx.Client(base_url=url + API, timeout=120)
        for _ in range(30):  # a cold model load may itself pass 3 s: it finishes, the next try is quick
            r = client.post("/runs", json={"model": "minilm-sst2", "text": text})
            if r.status_code != 504:
                break
        assert r.status_code == 201, r.text
        run = r.json()
        body = {
            "explainers": ["integrated_gradients", "occlusion"],
            "metrics": ["comprehensiveness"],
            "options": {"integrated_gradients": {"n_steps": 256}, "occlusion": {"max_tokens": 512}},
        }
        r = client.post(f"/runs/{run['id']}/faithfulness", json=body)
        assert r.status_code == 504, r.text
        answer = r.json()
        assert answer["code"] == "deadline_exceeded"
        assert "ATTNSCOPE_REQUEST_DEADLINE" in answer["detail"] and "POST /api/v1/jobs" in answer["detail"]
        wait_until = time.time() + 120
        while client.get("/health").json()["heavy_in_flight"] and time.time() < wait_until:
            time.sleep(0.2)
        assert client.get("/health").json()["heavy_in_flight"] == 0  # cancelled at its next batch


class _Clock:
    """A time source the test moves by hand (the executor's durations without sleeping)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_retry_after_is_the_queues_expected_wait():
    """Issue 29 part 5: Retry-After was 2 s whatever the queue held. With work taking 30 s, one worker
    and one item waiting, the next request waits for that item and the running one: 60 s."""
    import threading

    from attnscope.server.request_executor import ExecutorBusy

    clock = _Clock()
    ex = HeavyExecutor(workers=1, queue_limit=1, retry_after=2, clock=clock)

    def takes_30_s():
        clock.now += 30

    assert ex.expected_wait() == 2  # no work finished yet: retry_after per item
    fut, _ = ex.submit(takes_30_s)
    fut.result(timeout=60)
    release = threading.Event()
    running, _ = ex.submit(release.wait)
    waiting_until = time.time() + 60
    while ex._queue.qsize() and time.time() < waiting_until:  # the worker has taken it
        time.sleep(0.01)
    ex.submit(lambda: None)  # waits in the queue
    with pytest.raises(ExecutorBusy) as busy:
        ex.submit(lambda: None)
    assert busy.value.headers["Retry-After"] == "60" and "retry after 60 s" in busy.value.detail
    release.set()
    running.result(timeout=60)
    ex.shutdown()
