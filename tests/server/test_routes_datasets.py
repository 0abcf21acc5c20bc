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


def test_an_example_by_id_or_index_with_its_text_label_and_words(client):
    from attnscope.pipelines.datasets import load_dataset
    from attnscope.server.schemas import DataSetExamplePublic

    dev = load_dataset("sst2", "dev")
    by_index = client.get(f"{API}/datasets/sst2/examples/3")
    assert by_index.status_code == 200, by_index.text
    ex = DataSetExamplePublic.model_validate(by_index.json())
    assert (ex.id, ex.index, ex.split, ex.total) == (dev[3].id, 3, "dev", len(dev))
    assert ex.words == list(dev[3].words) and ex.text == " ".join(dev[3].words)
    assert ex.label == dev[3].label and ex.label_name == ("negative", "positive")[dev[3].label]
    assert client.get(f"{API}/datasets/sst2/examples/{dev[3].id}").json() == by_index.json()
    # an id finds its split by itself; an index is in the split asked (default: rationales)
    fold10 = load_dataset("movies", "fold10")
    found = client.get(f"{API}/datasets/movies/examples/{fold10[1].id}").json()
    assert (found["split"], found["index"], found["rationale"]) == ("fold10", 1, None)
    rationales = load_dataset("movies")
    first = client.get(f"{API}/datasets/movies/examples/0").json()
    assert first["id"] == rationales[0].id and first["rationale"] == list(rationales[0].rationale)
    assert client.get(f"{API}/datasets/movies/examples/0", params={"split": "fold10"}).json()["id"] == fold10[0].id


def test_unknown_examples_splits_and_sets_get_a_4xx_that_says_what_to_give(client):
    from attnscope.pipelines.datasets import load_dataset

    n = len(load_dataset("sst2", "dev"))
    r = client.get(f"{API}/datasets/sst2/examples/{n}")
    assert r.status_code == 404 and f"indices 0..{n - 1}" in r.json()["detail"], r.text
    r = client.get(f"{API}/datasets/sst2/examples/sst2-dev-nope")
    assert r.status_code == 404 and "sst2-dev-0" in r.json()["detail"], r.text
    assert client.get(f"{API}/datasets/sst2/examples/0", params={"split": "test"}).status_code == 422
    r = client.get(f"{API}/datasets/imdb/examples/0")
    assert r.status_code == 422 and "sst2" in r.json()["detail"], r.text
    assert client.get(f"{API}/datasets/sst2/examples/{'x' * 201}").status_code == 422  # the key is bounded
    hate = client.get(f"{API}/datasets/hatexplain/examples/0")
    assert hate.status_code == 403 and "allow_offensive=true" in hate.json()["detail"], hate.text
    opted = client.get(f"{API}/datasets/hatexplain/examples/0", params={"allow_offensive": True})
    assert opted.status_code == 200 and opted.json()["id"].startswith("hatexplain-")


def test_a_missing_data_set_says_what_to_run(client, monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    r = client.get(f"{API}/datasets/sst2/examples/0")
    assert r.status_code == 503 and "`attnscope data fetch sst2`" in r.json()["detail"], r.text
