"""Data-set readers over the shared files (counts from the data READMEs), never copies."""

import pytest

from attnscope.pipelines.datasets import (
    OffensiveContentError,
    data_dir,
    load_dataset,
    load_hatexplain,
    load_movies,
    load_sst2,
    parse_movie_review,
)


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
    assert len(test) == 1924
    assert sum(1 for e in test if e.rationale is not None) > 1000


def test_data_dir_follows_the_environment(monkeypatch, tmp_path):
    assert (data_dir() / "sst2").is_dir()
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ATTNSCOPE_DATA_DIR"):
        load_sst2("dev")
    with pytest.raises(ValueError, match="unknown data set"):
        load_dataset("imdb")
