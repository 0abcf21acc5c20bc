"""Pure helpers behind the pages' states: which model an address gets, the census form's N, a
malformed upload, the head a new grid selects, the compare page's figures."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from attnscope.frontend.compare_figures import diff_map_figure, diff_thumbnail_src, js_grid_figure
from attnscope.frontend.pages.census_callbacks import check_n
from attnscope.frontend.pages.explore_callbacks import initial_head
from attnscope.frontend.pages.vision_callbacks import decode_upload
from attnscope.frontend.run_controls import pick_model

NAMES = ["minilm", "minilm-sst2"]


def test_pick_model_prefers_the_address_then_the_session_and_says_when_it_cannot():
    assert pick_model(NAMES, "minilm-sst2", "minilm", "minilm") == ("minilm-sst2", "")
    assert pick_model(NAMES, None, "minilm-sst2", "minilm") == ("minilm-sst2", "")
    model, note = pick_model(NAMES, "nope", None, "minilm")
    assert model == "minilm" and "'nope' is not served" in note and "minilm-sst2" in note


@pytest.mark.parametrize(
    ("choice", "n", "ok"),
    [
        ("census", 1, True),
        ("census", 0, False),
        ("probe", 9, False),
        ("probe", 10, True),
        ("census", 5001, False),
        ("census", 2.5, False),
        ("census", None, False),
    ],
)
def test_check_n_names_the_allowed_range(choice, n, ok):
    message = check_n(choice, n)
    assert (message == "") is ok
    if not ok:
        assert "N must be a whole number from" in message and "5000" in message


def test_decode_upload_reads_a_data_url_and_refuses_the_rest_with_a_sentence():
    assert decode_upload("data:image/png;base64," + base64.b64encode(b"\x89PNG").decode()) == b"\x89PNG"
    for bad, phrase in [
        (None, "not a file"),
        ("garbage", "not a file"),
        ("data:image/png,raw", "not base64"),
        ("data:image/png;base64,@@@", "damaged"),
    ]:
        with pytest.raises(ValueError, match=phrase):
            decode_upload(bad)


def test_initial_head_keeps_the_runs_selection_else_the_address_else_l0h0():
    assert initial_head({"head": "L2H3"}, None, 6, 12, "r1") == (2, 3)
    assert initial_head({"head": "L2H3"}, {"layer": 4, "head": 1, "run": "r1"}, 6, 12, "r1") == (4, 1)
    assert initial_head({"head": "L9H0"}, {"layer": 4, "head": 1, "run": "old"}, 6, 12, "r1") == (0, 0)


def _pixels(src: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))))


def test_difference_thumbnails_share_a_symmetric_diverging_scale():
    diff = np.array([[0.5, 0.0], [0.0, -0.5]], np.float32)
    px = _pixels(diff_thumbnail_src(diff, scale=0.5)).astype(int)
    red, white, blue = px[0, 0], px[0, 1], px[1, 1]
    assert red[0] > red[2] and blue[2] > blue[0] and white.min() > 230  # + red, 0 white, - blue
    faint = _pixels(diff_thumbnail_src(diff, scale=5.0)).astype(int)[0, 0]  # a larger shared scale: paler
    assert faint.min() > red.min()
    fig = diff_map_figure(diff, ["a", "b"], "A − B")
    assert fig.data[0].zmin == -0.5 and fig.data[0].zmax == 0.5
    grid = js_grid_figure([[0.0, 0.25], [0.5, 0.125]])
    assert list(grid.data[0].y) == ["L0", "L1"] and grid.data[0].zmax == 0.5 and grid.data[0].zmin == 0
