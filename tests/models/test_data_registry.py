"""The data registry: one data folder, every set with files, checksums, source and licence; the committed
fixtures are small cuts of the registered files, read by the same readers."""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from attnscope.models import data_registry
from attnscope.models.data_registry import DATASETS, MOVIES, DataSetMissingError
from attnscope.models.zoo import data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "data"


def test_every_set_names_its_files_source_licence_and_use():
    assert set(DATASETS) == {"sst2", MOVIES, "hatexplain", "mnist-test"}
    for d in DATASETS.values():
        assert d.files and all(f.size > 0 and re.fullmatch(r"[0-9a-f]{64}", f.sha256) for f in d.files)
        assert re.fullmatch(r"[0-9a-f]{40}", d.commit) and d.licence and d.origin and d.used_for and d.version
        assert all(d.url(f).startswith(f"https://raw.githubusercontent.com/{d.mirror}/{d.commit}/") for f in d.files)
    assert len(DATASETS[MOVIES].files) == 2000 and DATASETS["hatexplain"].offensive
    # HateXplain's mirror names its JSON Lines files .json: the registry maps each file to its mirror path
    hx = DATASETS["hatexplain"]
    assert hx.url(hx.files[0]).endswith("/data/raw/hatexplain_test.json")
    assert DATASETS["sst2"].url(DATASETS["sst2"].files[0]).endswith("/data/SST2/dev.tsv")
    assert 15e6 < sum(d.size for d in DATASETS.values()) < 16e6


def test_one_data_folder_from_the_setting_or_the_users_data_home(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path / "mine"))
    assert data_registry.data_dir() == (tmp_path / "mine").resolve()
    monkeypatch.delenv("ATTNSCOPE_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home"))
    assert data_registry.data_dir() == tmp_path / "home" / "attnscope" / "data"
    assert data_registry.configured_data_dir() is None
    # both readers see the same folder: nothing is found, and both say how to fetch it
    assert data_registry.present() == dict.fromkeys(DATASETS, False)
    with pytest.raises(DataSetMissingError, match="`attnscope data fetch mnist-test`"):
        data.data_dir()
    with pytest.raises(DataSetMissingError, match="`attnscope data fetch sst2`"):
        data_registry.require("sst2", "dev.tsv")
    with pytest.raises(LookupError, match="unknown data set 'imdb'"):
        data_registry.require("imdb")


def test_the_fixtures_are_present_cuts_under_200_kB():
    sizes = [p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file()]
    assert sum(sizes) < 200_000
    for d in DATASETS.values():
        assert d.present(FIXTURES) and not d.complete(FIXTURES), d.name


def test_the_mnist_cut_splits_80_20_and_the_full_split_is_unchanged(monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(FIXTURES))
    data.mnist_all.cache_clear()
    try:
        x, y = data.mnist_all()
        assert x.shape == (100, 28, 28) and y.shape == (100,) and set(y.tolist()) == set(range(10))
        assert len(data.mnist("train").y) == 80 and len(data.mnist("eval").y) == 20
    finally:
        data.mnist_all.cache_clear()
    train, ev = data.mnist_split_indices()
    assert len(train) == 8000 and len(ev) == 2000 and np.array_equal(np.sort(np.r_[train, ev]), np.arange(10_000))
    # the split the committed checkpoints were trained on (their manifests fingerprint it): unchanged
    assert train[:3].tolist() == [3577, 8925, 1634] and ev[:5].tolist() == [3545, 8124, 8713, 31, 9368]


@pytest.mark.skipif(not all(d.complete() for d in DATASETS.values()), reason="the full data sets: make data")
def test_the_fixtures_are_prefixes_of_the_full_files():
    full = data_registry.data_dir()
    for name in ("sst2/train.tsv", "sst2/dev.tsv", "sst2/test.tsv", "hatexplain/test.jsonl"):
        assert (full / name).read_bytes().startswith((FIXTURES / name).read_bytes()), name
    for p in (FIXTURES / MOVIES).rglob("*.txt"):
        assert p.read_bytes() == (full / p.relative_to(FIXTURES)).read_bytes()
    for name, header, record in (("t10k-images-idx3-ubyte.gz", 16, 784), ("t10k-labels-idx1-ubyte.gz", 8, 1)):
        cut = gzip.decompress((FIXTURES / "mnist-test" / name).read_bytes())
        whole = gzip.decompress((full / "mnist-test" / name).read_bytes())
        assert cut[header:] == whole[header : header + 100 * record] and int.from_bytes(cut[4:8], "big") == 100
