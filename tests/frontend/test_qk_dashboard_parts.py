"""The dashboard's QK calls against a real API server (MiniLM) and the pure QK figure builders: the
response models back, equal to the JSON sent; the heatmap shows the condensed matrix, which sums to the
score; the key-part bars are the largest shares; a bad pair is the API's 422."""

import httpx
import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.pages.explore_address import PARAMS, address_values
from attnscope.frontend.pages.explore_qk import clicked_pair
from attnscope.frontend.qk_figures import (
    head_composition_figure,
    key_parts_figure,
    layer_pair_composition_figure,
    qk_matrix_figure,
    qk_product_figure,
)
from attnscope.frontend.url_state import parse_query, query_string
from attnscope.server.schemas import CompositionPublic, QKPublic


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def qk(client):
    run = client.create_run("minilm", "the cat sat on the mat")
    return run, client.qk(run.id, layer=3, head=2, query=4, key=1, parts=6, terms=5)


def test_qk_gives_the_qk_model_and_its_figures(qk, api_url):
    run, res = qk
    assert isinstance(res, QKPublic) and res.run_id == run.id
    raw = httpx.get(
        f"{api_url}/api/v1/runs/{run.id}/qk",
        params=dict(layer=3, head=2, query=4, key=1, parts=6, terms=5),
        timeout=120,
    ).json()
    assert res.view.score == pytest.approx(raw["view"]["score"], abs=1e-12)
    att = res.attribution
    assert len(att.query_parts) == len(att.key_parts) == 7 and att.key_parts[-1] == "other"
    assert sum(map(sum, att.matrix)) == pytest.approx(res.view.score, abs=1e-4)
    fig = qk_matrix_figure(res)
    heat = fig.data[0]
    assert list(heat.x) == [f"{p} -> key" for p in att.key_parts] and heat.zmin == -heat.zmax
    assert "score" in fig.layout.title.text
    bars = key_parts_figure(res, top=4).data[0]
    biggest = sorted(att.key_totals.items(), key=lambda kv: -abs(kv[1]))[:4]
    assert list(bars.y) == [k for k, _ in biggest]
    prod = qk_product_figure(res).data[0]
    assert sum(prod.y) * res.scale == pytest.approx(res.view.score, abs=1e-4)


def test_composition_and_a_bad_pair(client, qk):
    run, _ = qk
    post = client.composition("minilm", "v")  # post-norm: read through the norms in between
    assert isinstance(post, CompositionPublic) and post.n_layers == 6 and post.n_heads == 12
    comp = client.composition("text-vanilla", "v")
    assert isinstance(comp, CompositionPublic) and comp.n_layers >= 2
    fig = head_composition_figure(comp, 1, 2)
    heat = fig.data[0]
    assert [list(r) for r in heat.z] == [[comp.scores[0][h][1][2] for h in range(comp.n_heads)]]
    assert heat.zmin == 0 and "random" in fig.layout.title.text and "V-composition into L1H2" in fig.layout.title.text
    assert "no earlier head" in head_composition_figure(comp, 0, 2).layout.title.text
    with pytest.raises(ApiError) as err:
        client.qk(run.id, layer=6, head=0, query=0, key=0)
    assert err.value.status == 422 and "0..5" in err.value.detail


def test_the_layer_pair_matrix_is_the_largest_score_over_head_pairs(client):
    """MiniLM's K-composition between layers: each cell ``[src][dst]`` (``dst > src``) the largest score
    over the head pairs, recomputed here from the served per-head scores; the rest empty; the title
    names the strongest pair and the colour bar the random baseline; the selected layer outlined."""
    comp = client.composition("minilm", "k")
    fig = layer_pair_composition_figure(comp, layer=3)
    heat = fig.data[0]
    n, h = comp.n_layers, comp.n_heads
    for src in range(n):
        for dst in range(n):
            cell = heat.z[src][dst]
            if dst <= src:
                assert cell is None
            else:
                best = max(comp.scores[src][a][dst][b] for a in range(h) for b in range(h))
                assert cell == pytest.approx(best, abs=1e-12)
    cells = [(s, d) for s in range(n) for d in range(s + 1, n)]
    s, d = max(cells, key=lambda sd: heat.z[sd[0]][sd[1]])
    title = fig.layout.title.text
    assert f"strongest L{s} -> L{d}" in title and "K-composition between layers" in title
    assert list(heat.colorbar.ticktext)[1] == "random" and heat.colorbar.tickvals[1] == comp.baseline_mean
    assert heat.zmin == 0 and len(fig.layout.shapes) == 1 and fig.layout.shapes[0].x0 == 2.5
    assert len(layer_pair_composition_figure(comp, layer=0).layout.shapes) == 0  # layer 0 reads no earlier layer


def test_a_click_on_the_head_detail_is_a_pair_in_range():
    assert clicked_pair({"points": [{"x": 3, "y": 7}]}, 10, causal=False) == (7, 3)
    assert clicked_pair({"points": [{"x": 7.5, "y": 3.5}]}, 10, causal=True) == (4, 4)  # a pooled cell: key <= query
    assert clicked_pair({"points": [{"x": 40.0, "y": 40.0}]}, 10, causal=False) == (9, 9)
    assert clicked_pair(None, 10, causal=False) is None and clicked_pair({"points": []}, 10, causal=True) is None


def test_the_qk_view_lives_in_the_address(qk):
    run, _ = qk
    from attnscope.frontend.run_record import RunRecord

    record = RunRecord.from_run(run)
    values = address_values(record, {"layer": 3, "head": 2}, 3, "global", "none", None, None, None, (4, None, "v"))
    state, problems = parse_query(dict(p.split("=") for p in query_string(values, PARAMS)[1:].split("&")), PARAMS)
    assert problems == [] and state["qk_query"] == 4 and state["qk_mode"] == "v" and state.get("qk_key") is None


def test_the_strongest_key_reads_one_row_and_leaves_hidden_keys_out(client, qk):
    from attnscope.frontend.pages.explore_qk import strongest_key
    from attnscope.frontend.run_record import RunRecord

    run, _ = qk
    record = RunRecord.from_run(run)
    row = client.attention(run.id, 3, 2, encoding="json")[4]
    order = [int(k) for k in np.argsort(-row)]
    assert strongest_key(client, record, 3, 2, 4) == order[0]
    assert strongest_key(client, record, 3, 2, 4, hidden=[order[0]]) == order[1]
