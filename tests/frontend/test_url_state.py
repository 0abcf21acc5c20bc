"""Page state in the address: parsing (bad values -> a message, never an exception) and writing."""

from urllib.parse import parse_qs

from attnscope.frontend.url_state import Param, parse_query, query_string

PARAMS = {
    "run": Param(str, max_len=8),
    "k": Param(int, default=8, lo=1, hi=64),
    "t": Param(float, default=0.5, lo=0, hi=1),
    "scaling": Param(str, default="global", choices=("global", "row", "log")),
    "probe": Param(bool, default=True),
}


def test_parse_reads_every_declared_value():
    values, problems = parse_query({"run": "ab12", "k": "16", "t": "0.25", "scaling": "log", "probe": "false"}, PARAMS)
    assert values == {"run": "ab12", "k": 16, "t": 0.25, "scaling": "log", "probe": False}
    assert problems == []


def test_defaults_when_absent_or_empty_and_reserved_keys_ignored():
    values, problems = parse_query({"k": "", "pathname_": "/x", "search_": "?k="}, PARAMS)
    assert values == {"run": None, "k": 8, "t": 0.5, "scaling": "global", "probe": True}
    assert problems == []


def test_bad_values_keep_the_default_and_say_what_to_change():
    values, problems = parse_query(
        {"k": "many", "t": "2", "scaling": "cubic", "probe": "maybe", "run": "x" * 9, "nope": "1"}, PARAMS
    )
    assert values == {"run": None, "k": 8, "t": 0.5, "scaling": "global", "probe": True}
    text = "\n".join(problems)
    assert "k='many' must be a whole number; ignored (using 8)" in text
    assert "t='2' must be at most 1" in text
    assert "scaling='cubic' must be one of global, row, log" in text
    assert "probe='maybe' must be true or false" in text
    assert "run=" in text and "longer than 8 characters" in text
    assert "Unknown address parameter 'nope'" in text and "this page reads: run, k, t, scaling, probe" in text
    assert len(problems) == 6


def test_nan_is_not_a_number_and_repeated_keys_take_the_last():
    values, problems = parse_query({"t": "nan", "k": ["2", "3"]}, PARAMS)
    assert values["t"] == 0.5 and values["k"] == 3 and len(problems) == 1


def test_query_string_leaves_defaults_out_and_round_trips():
    assert query_string({"run": None, "k": 8, "t": 0.5, "scaling": "global", "probe": True}, PARAMS) == ""
    q = query_string({"run": "r1 &x", "k": 3, "t": 0.5, "scaling": "row", "probe": False}, PARAMS)
    assert q.startswith("?")
    back = {k: v[-1] for k, v in parse_qs(q[1:]).items()}
    assert back == {"run": "r1 &x", "k": "3", "scaling": "row", "probe": "false"}
    values, problems = parse_query(back, PARAMS)
    assert values == {"run": "r1 &x", "k": 3, "t": 0.5, "scaling": "row", "probe": False} and problems == []


def test_a_text_longer_than_the_limit_is_not_written():
    assert query_string({"run": "x" * 20}, PARAMS) == ""


def test_an_example_link_carries_its_text_or_when_too_long_its_name():
    """The examples table's Explore link: the text when it fits an address, else ``example=DATASET:ID``
    (Explore reads the text from the API); both parse back as Explore's run parameters."""
    from urllib.parse import parse_qs, urlparse

    from attnscope.frontend.example_table import explore_href
    from attnscope.frontend.run_state import RUN_PARAMS
    from attnscope.frontend.url_state import MAX_TEXT_IN_URL, parse_query
    from attnscope.server.schemas import DataSetExamplePublic

    def example(text):
        return DataSetExamplePublic(
            dataset="movies", split="rationales", index=0, total=8, id="movies-posR_000", text=text,
            words=text.split(), label=1, label_name="positive", labels=["negative", "positive"],
        )  # fmt: skip

    short = explore_href("minilm", example("a fine film ."))
    assert short.startswith("/?") and parse_qs(urlparse(short).query) == {
        "model": ["minilm"],
        "text": ["a fine film ."],
    }
    long = explore_href("minilm", example("word " * MAX_TEXT_IN_URL))
    query = {k: v[0] for k, v in parse_qs(urlparse(long).query).items()}
    assert query == {"model": "minilm", "example": "movies:movies-posR_000"}
    assert parse_query(query, RUN_PARAMS) == ({"run": None, "model": "minilm", "text": None, **query}, [])
