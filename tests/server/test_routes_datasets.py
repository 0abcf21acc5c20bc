"""``GET /datasets``: every registered data set, whether it is in the data folder, the command that fetches
it; a route or job that needs a missing one answers at once with that command."""

from attnscope.models.data_registry import DATASETS
from attnscope.server.schemas import DataSetList

API = "/api/v1"


def test_the_list_names_every_set_its_state_licence_and_fetch_command(client):
    r = client.get(f"{API}/datasets")
    assert r.status_code == 200, r.text
    listing = DataSetList.model_validate(r.json())
    assert [d.name for d in listing.items] == list(DATASETS) and listing.total == 4
    by_key = {d.key: d for d in listing.items}
    assert set(by_key) == {"sst2", "movies", "hatexplain", "mnist"}
    for d in listing.items:
        reg = DATASETS[d.name]
        assert d.present == reg.present() and d.complete == reg.complete() and d.files == len(reg.files)
        assert d.fetch == f"attnscope data fetch {d.name}" and d.licence == reg.licence and d.bytes == reg.size
    assert listing.present == sum(d.present for d in listing.items) == 4  # the full sets, or the fixtures
    assert by_key["hatexplain"].offensive and not by_key["sst2"].offensive


def test_with_no_data_nothing_is_present_and_the_samples_route_says_what_to_run(client, monkeypatch, tmp_path):
    from attnscope.models.zoo import data

    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    data.mnist_all.cache_clear()
    try:
        listing = client.get(f"{API}/datasets").json()
        assert listing["present"] == 0 and not any(d["present"] for d in listing["items"])
        r = client.get(f"{API}/datasets/mnist/samples")
        assert r.status_code == 503 and r.json()["code"] == "unavailable", r.text
        assert "`attnscope data fetch mnist-test`" in r.json()["detail"] and str(tmp_path) not in r.text
        assert client.get(f"{API}/datasets/mnist/samples/0/image").status_code == 503
        assert client.get(f"{API}/datasets/photos/samples").status_code == 200  # bundled with scikit-image
    finally:
        data.mnist_all.cache_clear()


def test_the_samples_route_reads_the_data_folder(client):
    body = client.get(f"{API}/datasets/mnist/samples", params={"limit": 5}).json()
    assert body["total"] == (2000 if DATASETS["mnist-test"].complete() else 20) and len(body["samples"]) == 5
    img = client.get(f"{API}/datasets/mnist/samples/{body['total'] - 1}/image")
    assert img.status_code == 200 and img.content.startswith(b"\x89PNG")
    assert client.get(f"{API}/datasets/mnist/samples/{body['total']}/image").status_code == 404
