"""The dashboard's intervention calls against a real API server: the API's response models back,
equal to the JSON the API sent."""

import httpx
import pytest

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.server.schemas import HeadEffectsPublic, InterventionPublic


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def run(client):
    return client.create_run("minilm-sst2", "a gorgeous, witty, seductive movie.")


def test_intervene_gives_the_intervention_model(client, run, api_url):
    body = {"interventions": [{"kind": "ablate", "heads": [[5, 3], [4, 1]], "method": "zero"}]}
    res = client.intervene(run.id, body)
    assert isinstance(res, InterventionPublic) and res.run_id == run.id and res.clean.kind == "classification"
    raw = httpx.post(f"{api_url}/api/v1/runs/{run.id}/interventions", json=body, timeout=120).json()
    assert res.effects == pytest.approx(raw["effects"], abs=1e-9) and res.altered.probs == pytest.approx(
        raw["altered"]["probs"], abs=1e-9
    )
    assert client.run(res.altered_run_id).tokens == run.tokens


def test_head_effects_give_the_grid_model(client, run):
    res = client.head_effects(run.id, {"method": "zero", "chunk": 12})
    assert isinstance(res, HeadEffectsPublic) and len(res.effect) == 6 and len(res.effect[0]) == 12
    assert res.top[0].effect == max((e for row in res.effect for e in row), key=abs)
    assert res.rank_agreement.n == 72 and res.importance_kind == "confidence"


def test_refused_interventions_raise_the_apis_message(client, run):
    with pytest.raises(ApiError, match="out of range") as exc:
        client.intervene(run.id, {"interventions": [{"kind": "ablate", "heads": [[9, 0]]}]})
    assert exc.value.status == 422
