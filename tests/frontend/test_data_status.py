"""The line beside a data-set job's Start button, from ``GET /datasets``'s answer."""

from attnscope.frontend.data_status import status_text
from attnscope.server.schemas import DataSetList, DataSetPublic


def _item(key, present, complete):
    return DataSetPublic(
        name=f"{key}-folder",
        key=key,
        title="t",
        present=present,
        complete=complete,
        files=1,
        bytes=4_100_000,
        licence="l",
        origin="o",
        version="v",
        used_for="u",
        offensive=False,
        fetch=f"attnscope data fetch {key}-folder",
    )


def test_missing_names_the_command_present_says_so_and_unknown_says_nothing():
    listing = DataSetList(
        items=[_item("sst2", True, True), _item("movies", False, False), _item("hatexplain", True, False)],
        total=3,
        present=2,
    )
    text, ok = status_text(listing, "movies")
    assert not ok and "`attnscope data fetch movies-folder`" in text and "make data" in text
    assert status_text(listing, "sst2") == ("sst2: in the data folder (4.1 MB)", True)
    text, ok = status_text(listing, "hatexplain")
    assert ok and "small cut" in text
    assert status_text(listing, "imdb") == ("", True)
