"""Data-set readers over the data folder: the counts of the READMEs on the full sets (after `make data`),
the same readers on the committed cuts (tests/fixtures/data) otherwise."""

import pytest

from attnscope.models.data_registry import DATASETS, MOVIES, DataSetMissingError
from attnscope.pipelines.datasets import (
    OffensiveContentError,
    data_dir,
    load_dataset,
    load_hatexplain,
    load_movies,
    load_sst2,
    parse_movie_review,
)


def full(name: str):
    return pytest.mark.skipif(not DATASETS[name].complete(), reason=f"{name} is the fixture cut; run make data")


@full("sst2")
def test_sst2_dev_counts_match_the_readme():
    dev = load_sst2("dev")
    assert len(dev) == 872
    assert sum(e.label for e in dev) == 444
    assert dev[0].rationale is None and dev[0].labels == ("negative", "positive")
    with pytest.raises(ValueError, match="no labels"):
        load_sst2("test")


def test_movie_review_tags_become_word_marks():
    words, marks = parse_movie_review("the film is <POS> a great ride </POS> , but <POS>fun</POS> .")
    assert words == ("the", "film", "is", "a", "great", "ride", ",", "but", "fun", ".")
    assert marks == (0, 0, 0, 1, 1, 1, 0, 0, 1, 0)


@full(MOVIES)
def test_movies_counts_match_the_readme_and_alternate_labels():
    movies = load_movies()
    assert len(movies) == 1800
    assert sum(1 for e in movies if e.rationale and any(e.rationale)) == 1799
    assert [e.label for e in movies[:4]] == [1, 0, 1, 0]
    share = sum(sum(e.rationale) for e in movies) / sum(len(e.words) for e in movies)
    assert 0.05 < share < 0.10  # README: rationales cover about 7.5% of tokens
    assert len(load_movies("fold10")) == 200


def test_hatexplain_needs_the_explicit_opt_in():
    with pytest.raises(OffensiveContentError, match="opt-in"):
        load_hatexplain("test")
    with pytest.raises(OffensiveContentError):
        load_dataset("hatexplain")
    test = load_hatexplain("test", allow_offensive=True)
    assert all(e.labels[e.label] in ("hatespeech", "normal", "offensive") for e in test)
    assert any(e.rationale is not None and len(e.rationale) == len(e.words) for e in test)


@full("hatexplain")
def test_hatexplain_counts_match_the_readme():
    test = load_hatexplain("test", allow_offensive=True)
    assert len(test) == 1924
    assert sum(1 for e in test if e.rationale is not None) > 1000


def test_every_reader_reads_the_data_folder_in_its_format():
    # the full sets or the fixture cuts: same formats, same readers, labelled and (movies) annotated
    dev = load_sst2("dev")
    assert len(dev) >= 300 and {e.label for e in dev} == {0, 1} and dev[0].words[0] == "it"
    movies = load_movies()
    assert [e.label for e in movies[:4]] == [1, 0, 1, 0] and all(any(e.rationale) for e in movies[:4])
    assert movies[0].id == "movies-posR_000" and len(load_movies("fold10")) >= 2
    assert len(load_sst2("train")) >= 200


def test_data_dir_follows_the_environment(monkeypatch, tmp_path):
    assert (data_dir() / "sst2").is_dir()
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path.resolve()
    with pytest.raises(DataSetMissingError, match="ATTNSCOPE_DATA_DIR") as err:
        load_sst2("dev")
    assert "`attnscope data fetch sst2`" in str(err.value) and str(tmp_path) not in str(err.value)
    with pytest.raises(FileNotFoundError, match="attnscope data fetch movie-rationales-zaidan"):
        load_movies()
    with pytest.raises(ValueError, match="unknown data set"):
        load_dataset("imdb")
