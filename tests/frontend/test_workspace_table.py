"""The workspace's links and rows (pure: summaries in, links and components out)."""

from urllib.parse import parse_qs, urlsplit

from attnscope.frontend.workspace_table import compare_href, created_label, describe, open_href, runs_table
from attnscope.server.schemas import RunSummaryPublic


def _run(run_id="r1", kind="text", text="The cat sat.", truncated=False, **kw) -> RunSummaryPublic:
    fields = dict(id=run_id, model="minilm", source_kind=kind, text=text, text_truncated=truncated)
    fields |= dict(pinned=False, n_tokens=6, created=1_764_700_000.0, last_used=1_764_700_000.0) | kw
    return RunSummaryPublic(**fields)


def _query(href: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}


def test_a_text_run_opens_in_explore_with_its_text_and_an_image_run_in_vision():
    assert urlsplit(open_href(_run())).path == "/"
    assert _query(open_href(_run())) == {"run": "r1", "model": "minilm", "text": "The cat sat."}
    assert _query(open_href(_run(truncated=True, text="x" * 2000))) == {"run": "r1", "model": "minilm"}
    image = _run(kind="sample", text="", model="vit", dataset="mnist", index=3)
    assert urlsplit(open_href(image)).path == "/vision" and _query(open_href(image)) == {"run": "r1", "model": "vit"}
    assert describe(image) == "mnist sample 3" and describe(_run(text="a\nb")) == "a b"


def test_compare_takes_two_text_runs_whose_texts_fit_the_address():
    href, why = compare_href(_run("a", text="The cat sat."), _run("b", text="The dog sat.", model="minilm-sst2"))
    assert why == "" and urlsplit(href).path == "/compare"
    assert _query(href) == {
        "model_a": "minilm",
        "text_a": "The cat sat.",
        "a": "a",
        "model_b": "minilm-sst2",
        "text_b": "The dog sat.",
        "b": "b",
    }
    assert compare_href(_run("a"), _run("b", kind="upload", text=""))[0] is None
    href, why = compare_href(_run("a"), _run("b", text="y" * 2000, truncated=True))
    assert href is None and "2,000 characters" in why


def test_rows_show_tokens_time_pin_and_selection():
    table = runs_table([_run("p", pinned=True, name="mine"), _run("q", n_tokens=None)], {"q"})
    pinned, plain = table.children[1].children
    assert pinned.className == "pinned" and plain.className == ""
    assert created_label(1_764_700_000.0) == "2025-12-02 18:26 UTC"
    cells = [c.children for c in plain.children]
    assert cells[4] == "—" and cells[5] == "2025-12-02 18:26 UTC"
    assert plain.children[0].children.value == ["q"] and pinned.children[0].children.value == []
    pin = pinned.children[6].children
    assert pin.children == "Pinned" and pin.to_plotly_json()["props"]["aria-label"] == "Pinned mine"
