"""Census and probe jobs on the zoo's text models (their own tokenizer, 64 positions): long inputs
such as movie reviews are cut to the model's limit instead of failing."""

import pytest

from attnscope.models.capture import TooManyTokensError, capture, capture_truncated
from attnscope.models.loading import load_model
from attnscope.models.zoo.manifest import read_manifest
from attnscope.pipelines.dataset_runs import run_census, run_probe
from attnscope.pipelines.datasets import data_dir

pytestmark = [
    pytest.mark.skipif(read_manifest("text-ea") is None, reason="zoo not trained"),
    pytest.mark.skipif(not (data_dir() / "sst2").is_dir(), reason="data folder not found; set ATTNSCOPE_DATA_DIR"),
]


@pytest.fixture(scope="module")
def text_ea():
    return load_model("text-ea", device="cpu")


def test_truncated_capture_keeps_the_head_of_a_long_text(text_ea):
    long = " ".join(f"word{i}" for i in range(200))
    with pytest.raises(TooManyTokensError):
        capture(text_ea, long)
    cap = capture_truncated(text_ea, long)
    assert cap.maps.n_tokens == text_ea.max_tokens == 64
    assert cap.maps.tokens[1] == "word0" or cap.maps.tokens[1] == "[UNK]"


def test_probe_and_census_run_on_a_zoo_text_model(text_ea):
    probe = run_probe(text_ea, "sst2", 24, folds=2, size=8, classifier="cnn")
    assert probe["model"] == "text-ea" and len(probe["rows"]) == text_ea.n_layers
    census = run_census(text_ea, "movies", 2)
    assert census["n"] == 2 and len(census["rows"]) == text_ea.n_layers * text_ea.n_heads
