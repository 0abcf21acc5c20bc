"""The shared plot policy: no cloud button, SVG export, colour scales and map scalings."""

import numpy as np
import pytest

from attnscope.frontend.plot_config import (
    DIVERGING,
    GRAPH_CONFIG,
    LOG_FLOOR,
    SEQUENTIAL,
    diverging_range,
    graph,
    graph_config,
    scale_map,
)


def test_modebar_has_no_cloud_and_exports_svg():
    assert GRAPH_CONFIG["showSendToCloud"] is False and GRAPH_CONFIG["showEditInChartStudio"] is False
    assert "sendDataToCloud" in GRAPH_CONFIG["modeBarButtonsToRemove"]
    cfg = graph_config("attnscope-x")
    assert cfg["toImageButtonOptions"] == {"format": "svg", "filename": "attnscope-x", "scale": 1}
    assert GRAPH_CONFIG["toImageButtonOptions"]["filename"] == "attnscope"  # not mutated


def test_graph_carries_an_export_bar_for_every_format():
    box = graph("g1")
    ids = [c.id for c in box.children[1].children if hasattr(c, "id") and isinstance(c.id, dict)]
    fmts = [i["fmt"] for i in ids if i["type"] == "fig-export"]
    assert fmts == ["svg", "png", "csv", "json", "npy"] and all(i["graph"] == "g1" for i in ids)


def test_global_scaling_is_zero_to_max():
    w = np.array([[0.2, 0.8], [0.5, 0.5]])
    z, kw = scale_map(w, "global")
    assert np.array_equal(z, w) and kw == {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": 0.8}


def test_row_scaling_divides_each_row_by_its_max_and_keeps_zero_rows():
    w = np.array([[0.2, 0.8], [0.5, 0.5], [0.0, 0.0]])
    z, kw = scale_map(w, "row")
    assert np.allclose(z, [[0.25, 1.0], [1.0, 1.0], [0.0, 0.0]]) and (kw["zmin"], kw["zmax"]) == (0.0, 1.0)


def test_log_scaling_floors_small_weights():
    z, kw = scale_map(np.array([[1.0, 0.01, 0.0]]), "log")
    assert np.allclose(z, [[0.0, -2.0, np.log10(LOG_FLOOR)]]) and kw["zmin"] == pytest.approx(-4.0)


def test_unknown_scaling_is_refused():
    with pytest.raises(ValueError, match="global, row, log"):
        scale_map(np.ones((2, 2)), "cubic")


def test_diverging_range_is_symmetric_around_zero():
    kw = diverging_range([[-0.3, 0.1], [0.2, 0.0]])
    assert kw == {"colorscale": DIVERGING, "zmin": -0.3, "zmax": 0.3}
    assert diverging_range(np.zeros((2, 2)))["zmax"] > 0  # a valid range when A == B


def _graphs(component):
    from dash import dcc

    if isinstance(component, dcc.Graph):
        yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if hasattr(child, "to_plotly_json"):
            yield from _graphs(child)


def test_every_graph_on_every_page_uses_the_shared_config_without_cloud():
    """plotly.js 3 shows "Share chart" (upload to Plotly Cloud) by default: every ``dcc.Graph`` of
    every page layout carries ``GRAPH_CONFIG``. Builds the app (no request: it takes no callbacks)."""
    import dash

    from attnscope.frontend.app import create_dash_app

    if not dash.page_registry:
        create_dash_app("http://127.0.0.1:9")
    seen = 0
    for page in dash.page_registry.values():
        layout = page["layout"]() if callable(page["layout"]) else page["layout"]
        for g in _graphs(layout):
            seen += 1
            cfg = g.config or {}
            assert cfg.get("showSendToCloud") is False and cfg.get("showEditInChartStudio") is False, g.id
            assert {"sendDataToCloud", "sendChartToCloud"} <= set(cfg.get("modeBarButtonsToRemove", [])), g.id
    assert seen >= 20  # every page was walked (30 graphs today)
