"""POST /models/{name}/tokenize over HTTP (the session's live API): the count a run sees, against
the model's limit, and clear 4xx answers for what cannot be counted."""

import httpx
import pytest

from attnscope.server.schemas import MAX_TEXT_CHARS


def _count(api_url, model, body):
    return httpx.post(f"{api_url}/api/v1/models/{model}/tokenize", json=body, timeout=120)


def _run(api_url, model, text):
    return httpx.post(f"{api_url}/api/v1/runs", json={"model": model, "text": text}, timeout=120)


@pytest.mark.parametrize("model", ["minilm", "smollm2"])
def test_the_count_is_the_runs_number_of_positions(api_url, model):
    text = "The cat sat on the mat because it was tired."
    r = _count(api_url, model, {"text": text})
    assert r.status_code == 200, r.text
    run = _run(api_url, model, text).json()
    limit = next(m["max_tokens"] for m in httpx.get(f"{api_url}/api/v1/models").json()["models"] if m["name"] == model)
    assert r.json() == {"model": model, "n_tokens": len(run["tokens"]), "max_tokens": limit, "over_limit": False}


def test_a_text_over_the_limit_is_counted_not_refused_and_a_run_refuses_it(api_url):
    text = "word " * 600  # MiniLM: one token a word, plus [CLS] and [SEP]
    r = _count(api_url, "minilm", {"text": text})
    assert r.status_code == 200, r.text
    assert r.json() == {"model": "minilm", "n_tokens": 602, "max_tokens": 512, "over_limit": True}
    refused = _run(api_url, "minilm", text)
    assert refused.status_code == 413 and "602 tokens" in refused.json()["detail"]


@pytest.mark.parametrize(
    ("model", "body", "status", "phrase"),
    [
        ("minilm", {"text": "   "}, 422, "empty"),
        ("minilm", {"text": "x" * (MAX_TEXT_CHARS + 1)}, 422, "text"),
        ("minilm", {"text": "hi", "extra": 1}, 422, "extra"),
        ("minilm", {"text": 3}, 422, "text"),
        ("nope", {"text": "hi"}, 404, "nope"),
        ("vit", {"text": "hi"}, 422, "image"),
    ],
)
def test_what_cannot_be_counted_is_a_clear_4xx(api_url, model, body, status, phrase):
    r = _count(api_url, model, body)
    assert r.status_code == status, r.text
    assert set(r.json()) >= {"detail", "code"} and phrase in r.json()["detail"].lower()
    assert httpx.get(f"{api_url}/api/v1/health", timeout=10).status_code == 200  # still serving
