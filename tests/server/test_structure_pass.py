"""The structure routes share one pass over a run's maps (``server/structure_pass.py``): the shift,
heads, evolution and rollout answers of one run cost one ``reduce_maps`` pass, and each equals the
analysis computed on its own (``scan_shifts``, ``implied_convolution``, ``classify_heads``,
``attention_distance``, ``evolution``, ``rollout_importance``) on the same maps; other offsets make a
pass of their own; beyond ``MEAN_BYTES`` the head means are not kept and evolution/rollout still answer."""

from __future__ import annotations

import numpy as np
import pytest

from attnscope.analysis.distance import attention_distance
from attnscope.analysis.evolution import evolution
from attnscope.analysis.heads import classify_heads
from attnscope.analysis.implied_conv import implied_convolution
from attnscope.analysis.rollout import rollout_importance
from attnscope.analysis.shift import scan_shifts
from attnscope.server import structure_pass

API = "/api/v1"
TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat."


@pytest.fixture()
def made(client):
    rid = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT + " Again."}).json()["id"]
    service = client.app.state.service
    return rid, service, service.store.get(rid)


def _get(client, path, **params):
    r = client.get(f"{API}/runs/{path}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_one_pass_serves_every_route_and_equals_each_analysis_alone(client, made):
    rid, service, run = made
    before = service.structure.passes
    shift = _get(client, f"{rid}/shift")
    heads = _get(client, f"{rid}/heads", probe=False)
    evo = _get(client, f"{rid}/evolution")
    roll = _get(client, f"{rid}/rollout")
    through = _get(client, f"{rid}/rollout", layer=2)
    assert service.structure.passes - before == 1
    maps = run.capture.maps
    scan, conv = scan_shifts(maps), implied_convolution(maps)
    np.testing.assert_allclose(shift["shift_score"], scan.shift_score, atol=1e-6)
    np.testing.assert_allclose(shift["mass"], scan.mass, atol=1e-6)
    np.testing.assert_allclose(shift["kernel"], conv.kernel, atol=1e-6)
    types = classify_heads(maps)
    assert [h["labels"] for h in heads["heads"]] == [r["labels"] for r in types.table()]
    np.testing.assert_allclose(heads["distance_per_layer"], attention_distance(maps).per_layer, atol=1e-5)
    ev = evolution(maps)
    np.testing.assert_allclose(evo["profile"]["head_entropy"], ev.head_entropy, atol=1e-5)
    np.testing.assert_allclose(evo["profile"]["js_next"], ev.js_next, atol=1e-6)
    np.testing.assert_allclose(roll["values"], rollout_importance(maps, -1).values, atol=1e-6)
    three = maps.select(layers=range(3))
    np.testing.assert_allclose(through["values"], rollout_importance(three, -1).values, atol=1e-6)


def test_other_offsets_make_their_own_pass(client, made):
    rid, service, run = made
    _get(client, f"{rid}/shift")
    before = service.structure.passes
    wide = _get(client, f"{rid}/shift", k=3)
    assert service.structure.passes - before == 1
    np.testing.assert_allclose(wide["shift_score"], scan_shifts(run.capture.maps, k=3).shift_score, atol=1e-6)
    _get(client, f"{rid}/shift", k=3)
    assert service.structure.passes - before == 1


def test_beyond_the_mean_budget_evolution_and_rollout_read_one_walk_over_the_head_means(client, monkeypatch):
    """Past ``MEAN_BYTES`` the head means are not kept: evolution and rollout (the output row, the mean
    row, through any layer) read one walk over them (``analysis.mean_walk``) that the shared pass's
    machinery counts, and equal the analyses that keep every head mean; another row is a walk of its own."""
    rid = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT + " Long."}).json()["id"]
    service = client.app.state.service
    run = service.store.get(rid)
    monkeypatch.setattr(structure_pass, "MEAN_BYTES", 0)
    assert service.structure.mean_for(run) is None
    before = service.structure.passes
    evo = _get(client, f"{rid}/evolution")
    roll = _get(client, f"{rid}/rollout")
    mean_row = _get(client, f"{rid}/rollout", row="mean", layer=2)
    assert service.structure.get(run).head_mean is None
    assert service.structure.passes - before == 2  # the shared pass (entropy, ...) and one walk
    maps = run.capture.maps
    ev = evolution(maps)
    np.testing.assert_allclose(evo["profile"]["head_entropy"], ev.head_entropy, atol=1e-5)
    np.testing.assert_allclose(evo["profile"]["js_next"], ev.js_next, atol=1e-6)
    np.testing.assert_allclose(evo["profile"]["cosine_next"], ev.cosine_next, atol=1e-6)
    np.testing.assert_allclose(roll["values"], rollout_importance(maps, -1).values, atol=1e-6)
    three = maps.select(layers=range(3))
    np.testing.assert_allclose(mean_row["values"], rollout_importance(three, None).values, atol=1e-6)
    row5 = _get(client, f"{rid}/rollout", row="5")
    assert service.structure.passes - before == 3 and row5["row"] == 5
    np.testing.assert_allclose(row5["values"], rollout_importance(maps, 5).values, atol=1e-6)
    _get(client, f"{rid}/evolution")
    assert service.structure.passes - before == 3  # kept


def test_the_walk_reports_progress_and_a_cancel_stops_it(client, monkeypatch):
    """A long run's evolution request waits on the walk over the head means: the status route reports
    the walk's bands while it runs, and a cancel stops it (409) like the shared pass."""
    import threading

    rid = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT + " Walked."}).json()["id"]
    monkeypatch.setattr(structure_pass, "MEAN_BYTES", 0)
    _get(client, f"{rid}/shift")  # the shared pass first: what is left running is the walk
    real = structure_pass.walk_head_means
    started, go = threading.Event(), threading.Event()

    def gated(maps, rows, progress=None, **kw):
        def report(done, total):
            progress(done, total)
            started.set()
            assert go.wait(60), "the test never opened the gate"

        return real(maps, rows, progress=report, **kw)

    monkeypatch.setattr(structure_pass, "walk_head_means", gated)
    answer = {}
    thread = threading.Thread(target=lambda: answer.setdefault("evo", client.get(f"{API}/runs/{rid}/evolution")))
    thread.start()
    try:
        assert started.wait(60)
        status = _get(client, f"{rid}/structure-pass")
        assert (status["state"], status["done"], status["total"]) == ("running", 1, 6)  # MiniLM: 6 layers
        assert client.post(f"{API}/runs/{rid}/structure-pass/cancel").json()["state"] == "running"
    finally:
        go.set()
        thread.join(60)
    assert answer["evo"].status_code == 409 and "cancelled" in answer["evo"].json()["detail"]
    assert _get(client, f"{rid}/structure-pass")["state"] == "cancelled"
    monkeypatch.setattr(structure_pass, "walk_head_means", real)
    assert _get(client, f"{rid}/evolution")["profile"]["js_next"]  # a request after the cancel walks again


def test_a_cancelled_request_stops_the_pass_and_the_next_one_makes_it(made):
    from attnscope.models.cancel import Cancelled, CancelToken, cancel_scope
    from attnscope.server.structure_pass import StructurePasses

    _, _, run = made
    passes = StructurePasses()
    token = CancelToken()
    token.cancel("client gone")
    with cancel_scope(token), pytest.raises(Cancelled, match="client gone"):
        passes.get(run)
    assert passes.passes == 0
    red = passes.get(run)  # no token: made, and kept
    assert passes.passes == 1 and passes.get(run) is red


def test_progress_is_reported_and_a_cancel_stops_the_pass_and_its_waiters(client, monkeypatch):
    """A gate on the real pass's progress holds it after its first band: the status route says running
    1 of 6 (MiniLM: 6 layers, one band each), a cancel stops it at its next band, the shift request
    and a heads request waiting on the same pass both answer 409, and a request after the cancel
    makes a fresh pass that every route then reads (status done)."""
    import threading

    rid = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT + " Cancelled."}).json()["id"]
    service = client.app.state.service
    run = service.store.get(rid)
    assert _get(client, f"{rid}/structure-pass")["state"] == "idle"
    real = structure_pass.reduce_maps
    started, go = threading.Event(), threading.Event()

    def gated(maps, parts, progress=None, **kw):
        def report(done, total):
            progress(done, total)
            started.set()
            assert go.wait(60), "the test never opened the gate"

        return real(maps, parts, progress=report, workers=1, **kw)

    monkeypatch.setattr(structure_pass, "reduce_maps", gated)
    answers = {}
    asks = {
        "shift": lambda: client.get(f"{API}/runs/{rid}/shift"),
        "heads": lambda: client.get(f"{API}/runs/{rid}/heads", params={"probe": False}),
    }
    threads = [threading.Thread(target=lambda n=n, f=f: answers.__setitem__(n, f())) for n, f in asks.items()]
    threads[0].start()
    try:
        assert started.wait(60)
        threads[1].start()
        while (status := _get(client, f"{rid}/structure-pass"))["waiting"] < 1:  # the heads request queued
            assert threads[1].is_alive(), answers
        assert (status["state"], status["done"], status["total"], status["waiting"]) == ("running", 1, 6, 1)
        cancelled = client.post(f"{API}/runs/{rid}/structure-pass/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "running"
    finally:
        go.set()
        for t in threads:
            t.join(60)
    for name, answer in answers.items():
        assert answer.status_code == 409, (name, answer.text)
        assert "cancelled" in answer.json()["detail"]
    assert set(answers) == {"shift", "heads"}
    assert _get(client, f"{rid}/structure-pass")["state"] == "cancelled"
    before = service.structure.passes
    shift = _get(client, f"{rid}/shift")
    np.testing.assert_allclose(shift["shift_score"], scan_shifts(run.capture.maps).shift_score, atol=1e-6)
    assert service.structure.passes - before == 1
    assert _get(client, f"{rid}/structure-pass")["state"] == "done"
    assert client.post(f"{API}/runs/{rid}/structure-pass/cancel").json()["state"] == "done"  # nothing to stop
    _get(client, f"{rid}/heads", probe=False)  # a cancel with nothing in flight leaves the kept pass
    assert service.structure.passes - before == 1


def test_status_routes_refuse_a_run_not_in_memory(client):
    assert client.get(f"{API}/runs/nope/structure-pass").status_code == 404
    assert client.post(f"{API}/runs/nope/structure-pass/cancel").status_code == 404
