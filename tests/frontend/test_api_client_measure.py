"""The dashboard's measure calls against a real API server."""

import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient, ApiError


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def run(client):
    return client.create_run("minilm", "Tokens are particles moving through the layers.")


def test_measure_particles_and_fixed_point(client, run):
    m = client.measure(run.id)
    assert len(m.w1_successive) == 6 and max(m.max_entropy_deviation) < 1e-5
    p = client.particles(run.id, dims=3)
    assert np.asarray(p.coords).shape == (7, len(run.tokens), 3)
    fp = client.fixed_point(run.id, steps=4, layer=1)
    assert len(fp.w1_steps) == 4 and fp.demonstration


def test_lipschitz_through_the_client(client, run):
    r = client.lipschitz("minilm", 4, run_id=run.id, steps=3, draws=1)
    assert r.layer == 4 and r.log10_estimate <= r.log10_bound


def test_errors_carry_the_apis_message(client, run):
    with pytest.raises(ApiError, match="0..5") as exc:
        client.lipschitz("minilm", 7, run_id=run.id)
    assert exc.value.status == 422
    with pytest.raises(ApiError, match="no shared block"):
        client.fixed_point(run.id)
    with pytest.raises(ApiError, match="no run"):
        client.particles("nope")
