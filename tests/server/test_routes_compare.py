"""GET /compare/heads over HTTP (the session's live API): per-head divergences of two runs, and
clear 4xx answers when the runs cannot be compared."""

import httpx
import numpy as np
import pytest


def _run(api_url, model, text):
    r = httpx.post(f"{api_url}/api/v1/runs", json={"model": model, "text": text}, timeout=120)
    assert r.status_code == 201, r.text
    return r.json()


def _compare(api_url, a, b):
    return httpx.get(f"{api_url}/api/v1/compare/heads", params={"a": a, "b": b}, timeout=120)


def test_a_run_against_itself_is_zero_and_a_minimal_pair_is_not(api_url):
    a = _run(api_url, "minilm", "The cat sat on the mat.")
    b = _run(api_url, "minilm", "The dog sat on the mat.")
    same = _compare(api_url, a["id"], a["id"])
    assert same.status_code == 200, same.text
    assert np.allclose(same.json()["js"], 0, atol=1e-6) and same.json()["shape"] == [6, 12, 9, 9]
    pair = _compare(api_url, a["id"], b["id"]).json()
    js, tv = np.array(pair["js"]), np.array(pair["tv"])
    assert js.shape == (6, 12) and (js >= 0).all() and (js <= 1).all() and js.max() > 1e-3
    assert (tv >= js - 1e-6).all()  # JS in bits never exceeds total variation (Lin 1991)
    assert pair["tokens_a"][2] == "cat" and pair["tokens_b"][2] == "dog"


def test_two_models_with_one_shape_compare_on_one_text(api_url):
    a = _run(api_url, "minilm", "a gripping , funny film")
    b = _run(api_url, "minilm-sst2", "a gripping , funny film")
    r = _compare(api_url, a["id"], b["id"])
    assert r.status_code == 200, r.text
    assert r.json()["model_a"] == "minilm" and r.json()["model_b"] == "minilm-sst2"
    assert np.array(r.json()["js"]).max() > 1e-4  # fine-tuning moved some heads


@pytest.mark.parametrize(
    ("b_text", "status", "phrase"),
    [("The cat sat on the big red mat.", 422, "tokens"), (None, 404, "no run with id")],
)
def test_runs_that_cannot_be_compared_get_a_clear_4xx(api_url, b_text, status, phrase):
    a = _run(api_url, "minilm", "The cat sat on the mat.")
    b = _run(api_url, "minilm", b_text)["id"] if b_text else "0" * 24
    r = _compare(api_url, a["id"], b)
    assert r.status_code == status and phrase in r.json()["detail"] and r.json()["code"]
    bad = httpx.get(f"{api_url}/api/v1/compare/heads", params={"a": "x" * 65, "b": a["id"]}, timeout=30)
    assert bad.status_code == 422


def test_texts_of_different_lengths_compare_on_their_aligned_tokens(api_url):
    a = _run(api_url, "minilm", "The cat sat on the mat.")
    b = _run(api_url, "minilm", "The cat sat on the big red mat.")
    r = httpx.get(f"{api_url}/api/v1/compare/heads", params={"a": a["id"], "b": b["id"], "align": True}, timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    pa, pb = body["positions_a"], body["positions_b"]
    assert [body["tokens_a"][i] for i in pa] == [body["tokens_b"][j] for j in pb]  # equal tokens only here
    assert len(pa) == len(a["tokens"]) and "big" not in [body["tokens_b"][j] for j in pb]
    js = np.array(body["js"])
    assert js.shape == (6, 12) and (js >= 0).all() and (js <= 1).all() and js.max() > 1e-3
    same = httpx.get(f"{api_url}/api/v1/compare/heads", params={"a": a["id"], "b": a["id"], "align": True}, timeout=120)
    assert np.allclose(same.json()["js"], 0, atol=1e-6) and same.json()["positions_a"] == list(range(9))
    plain = _compare(api_url, a["id"], a["id"]).json()
    assert plain["positions_a"] is None
