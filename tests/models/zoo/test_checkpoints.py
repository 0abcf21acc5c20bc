"""CI checks of the committed zoo (no training): every checkpoint loads, re-measures its accuracy on
a small held-out slice within 2 points of its manifest, meets the floor; mismatches are refused."""

import json
import shutil

import pytest
import torch

from attnscope.models.zoo import data
from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import (
    ROOT,
    CheckpointMismatchError,
    CheckpointMissingError,
    load_checkpoint,
    read_manifest,
)
from attnscope.pipelines.train import CI_SLICE, FLOOR, evaluate, load_split

TRAINED = [n for n in ZOO if read_manifest(n) is not None]


def _arch(name):
    arch = dict(ZOO[name]["arch"])
    if ZOO[name]["modality"] == "text":
        arch["vocab_size"] = read_manifest(name)["arch"]["vocab_size"]
    return arch


def test_every_zoo_model_has_a_committed_checkpoint():
    assert sorted(TRAINED) == sorted(ZOO), f"untrained: {sorted(set(ZOO) - set(TRAINED))}; run make zoo"


@pytest.fixture(scope="module")
def eval_data():
    cache = {}

    def get(modality):
        if modality not in cache:
            x, y = load_split(modality, "eval")
            cache[modality] = (x[:CI_SLICE], y[:CI_SLICE])
        return cache[modality]

    return get


@pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR")
@pytest.mark.parametrize("name", TRAINED)
def test_checkpoint_reproduces_its_manifest_accuracy(name, eval_data):
    torch.set_num_threads(2)
    model, manifest = load_checkpoint(name, _arch(name))
    modality = ZOO[name]["modality"]
    x, y = eval_data(modality)
    acc = evaluate(model, x, y, modality)
    assert abs(acc - manifest["ci_slice_accuracy"]) <= 0.02, (acc, manifest["ci_slice_accuracy"])
    assert manifest["eval_accuracy"] >= FLOOR[modality], f"{name} below the floor: {manifest['eval_accuracy']}"
    assert manifest["steps"] > 0 and manifest["data"]["split_hash"] and manifest["wall_time_s"] > 0


def test_total_checkpoint_size_is_within_40_mb():
    total = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert total <= 40 * 2**20, f"checkpoints take {total / 2**20:.1f} MB"
    assert not [p for p in ROOT.rglob("*") if p.suffix in (".pt", ".pth", ".pkl", ".bin")]


@pytest.fixture
def copy_of(tmp_path):
    def make(name):
        shutil.copytree(ROOT / name, tmp_path / name)
        return tmp_path

    return make


def test_loading_refuses_a_manifest_for_another_architecture(copy_of):
    name = TRAINED[0]
    root = copy_of(name)
    path = root / name / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["arch"]["dim"] = manifest["arch"]["dim"] * 2
    path.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointMismatchError, match="retrain"):
        load_checkpoint(name, _arch(name), root=root)


def test_loading_refuses_tensors_of_the_wrong_shape(copy_of):
    from safetensors.torch import load_file, save_file

    name = TRAINED[0]
    root = copy_of(name)
    weights = root / name / "model.safetensors"
    state = load_file(str(weights))
    key = next(k for k, v in state.items() if v.ndim == 2)
    state[key] = torch.zeros(state[key].shape[0] + 1, state[key].shape[1])
    save_file(state, str(weights))
    with pytest.raises(CheckpointMismatchError, match=f"shape mismatch {key}"):
        load_checkpoint(name, _arch(name), root=root)


def test_loading_a_missing_checkpoint_says_how_to_train_it(tmp_path):
    with pytest.raises(CheckpointMissingError, match="make zoo"):
        load_checkpoint("vit", ZOO["vit"]["arch"], root=tmp_path)
