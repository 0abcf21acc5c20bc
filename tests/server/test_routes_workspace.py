"""The workspace of runs over HTTP, on SQLite and on a real PostgreSQL server: runs listed (pinned
first, newest first, filtered, paged) across a restart of the API, named, pinned and deleted; bad
requests answered with a 4xx that says what to change."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

CAT, DOG = "The cat sat on the mat.", "A dog ran in the park."


def _app(database: dict):
    return TestClient(create_app(Settings(preload=[], max_runs=8, **database)))


def _ids(c, **params) -> list[str]:
    r = c.get("/api/v1/runs", params=params)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


def test_runs_are_listed_named_pinned_and_deleted_across_a_restart(database):
    with _app(database) as c:
        cat = c.post("/api/v1/runs", json={"model": "minilm", "text": CAT}).json()
        dog = c.post("/api/v1/runs", json={"model": "minilm", "text": DOG}).json()
        page = c.get("/api/v1/runs").json()
        assert page["total"] == 2 and [s["id"] for s in page["items"]] == [dog["id"], cat["id"]]  # newest first
        first = page["items"][1]
        assert first["n_tokens"] == len(cat["tokens"]) and first["text"] == CAT and first["model"] == "minilm"
        assert first["name"] is None and first["pinned"] is False and first["source_kind"] == "text"

        r = c.patch(f"/api/v1/runs/{cat['id']}", json={"name": "  cats on mats  ", "pinned": True})
        assert r.status_code == 200 and r.json()["name"] == "cats on mats" and r.json()["pinned"] is True
        assert _ids(c) == [cat["id"], dog["id"]]  # pinned first
        assert _ids(c, pinned=True) == [cat["id"]] and _ids(c, pinned=False) == [dog["id"]]
        assert _ids(c, q="MATS") == [cat["id"]] and _ids(c, q="park") == [dog["id"]]  # name or text, any case
        assert _ids(c, q="%") == [] and _ids(c, model="vit") == []  # % is a character, not a wildcard
        paged = c.get("/api/v1/runs", params={"limit": 1, "offset": 1}).json()
        assert [s["id"] for s in paged["items"]] == [dog["id"]] and paged["total"] == 2 and paged["limit"] == 1

    with _app(database) as c:  # a new process: the workspace is in the database
        page = c.get("/api/v1/runs").json()
        assert [(s["id"], s["name"], s["pinned"]) for s in page["items"]] == [
            (cat["id"], "cats on mats", True),
            (dog["id"], None, False),
        ]
        assert c.get(f"/api/v1/runs/{dog['id']}").json()["tokens"] == dog["tokens"]  # opened: computed again
        assert c.delete(f"/api/v1/runs/{dog['id']}").status_code == 204
        gone = c.get(f"/api/v1/runs/{dog['id']}")
        assert gone.status_code == 404 and "never existed" in gone.json()["detail"]
        assert c.delete(f"/api/v1/runs/{dog['id']}").status_code == 404
        assert _ids(c) == [cat["id"]]
        r = c.patch(f"/api/v1/runs/{cat['id']}", json={"name": ""})
        assert r.json()["name"] is None and r.json()["pinned"] is True  # the pin stays
        assert c.patch(f"/api/v1/runs/{cat['id']}", json={"pinned": False}).json()["pinned"] is False


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    with _app({"state_dir": str(tmp_path_factory.mktemp("ws"))}) as c:
        run = c.post("/api/v1/runs", json={"model": "minilm", "text": CAT}).json()
        yield c, run["id"]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": 10**7}, "offset"),
        ({"pinned": "maybe"}, "pinned"),
        ({"q": ""}, "q"),
        ({"q": "x" * 201}, "q"),
        ({"model": "m" * 201}, "model"),
    ],
)
def test_a_bad_listing_is_a_422_naming_the_parameter(plain, params, field):
    c, _ = plain
    r = c.get("/api/v1/runs", params=params)
    assert r.status_code == 422 and field in r.json()["detail"], r.text


@pytest.mark.parametrize(
    "body, says",
    [
        ({}, "an empty body changes nothing"),
        ({"name": 5}, "name"),
        ({"name": "a\nb"}, "control character"),
        ({"name": "x" * 201}, "name"),
        ({"pinned": None}, "pinned"),
        ({"pinned": "yes"}, "pinned"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_update_is_a_422_saying_what_to_send(plain, body, says):
    c, run_id = plain
    r = c.patch(f"/api/v1/runs/{run_id}", json=body)
    assert r.status_code == 422 and says in r.json()["detail"], r.text


def test_unknown_or_malformed_run_ids_are_404_and_422(plain):
    c, _ = plain
    for r in (c.patch("/api/v1/runs/nope", json={"pinned": True}), c.delete("/api/v1/runs/nope")):
        assert r.status_code == 404 and "GET /api/v1/runs lists the runs" in r.json()["detail"]
    assert c.delete("/api/v1/runs/bad id!").status_code == 422
    assert c.patch("/api/v1/runs/" + "a" * 65, json={"pinned": True}).status_code == 422
