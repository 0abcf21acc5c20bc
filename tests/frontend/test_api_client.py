"""The dashboard's HTTP client against a real API server."""

import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient, ApiError


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


def test_models_and_run(client):
    assert client.models().default == "minilm"
    run = client.create_run("minilm", "Attention is all you need.")
    assert run.shape[:2] == [6, 12] and client.run(run.id).tokens == run.tokens


@pytest.mark.parametrize("encoding, atol", [("float16", 1e-3), ("uint8", 4e-3)])
def test_binary_slices_match_json(client, encoding, atol):
    run = client.create_run("minilm", "Attention is all you need.")
    ref = client.attention(run.id, 2, encoding="json")
    got = client.attention(run.id, 2, encoding=encoding)
    assert got.shape == ref.shape == (12, run.shape[2], run.shape[3])
    np.testing.assert_allclose(got, ref, atol=atol)


def test_errors_carry_the_apis_message(client):
    with pytest.raises(ApiError, match="empty") as exc:
        client.create_run("minilm", " ")
    assert exc.value.status == 422
    with pytest.raises(ApiError, match="known models"):
        client.create_run("nope", "hi")


def test_unreachable_api_is_reported_not_raised_raw():
    c = ApiClient("http://127.0.0.1:9", timeout=2)
    with pytest.raises(ApiError, match="cannot reach"):
        c.health()
