"""The layer x position patching sweep on MiniLM-SST2: each cell against one intervention at a time,
``full`` against the plain run of the source, a planted zero (patching from the same input), and
the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from attnscope.pipelines.interventions import InterventionError, InterventionSet, ResidualPatch, intervene
from attnscope.pipelines.interventions.sweep import residual_patching, sweep_sets

TEXT = "a gorgeous, witty, seductive movie."
CORRUPT = "a boring, witty, seductive movie."  # same number of tokens


@pytest.fixture(scope="module")
def sst2():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


def test_sweep_sets_cover_every_layer_and_position_once():
    sets = sweep_sets(3, 4)
    cells = [(s.items[0].layer, s.items[0].positions) for s in sets]
    assert cells == [(layer, (p,)) for layer in range(3) for p in range(4)]


def test_every_cell_equals_one_residual_patch_at_a_time(sst2):
    inp, src = sst2.encode_text(TEXT), sst2.encode_text(CORRUPT)
    res = residual_patching(sst2, inp, src, chunk=7)  # chunk not dividing the cells: the tail batch counts
    assert res["effect"].shape == (sst2.n_layers, len(inp))
    for layer, p in ((0, 2), (3, 0), (sst2.n_layers - 1, len(inp) - 1), (2, 2)):
        one = intervene(sst2, inp, InterventionSet((ResidualPatch(layer, (p,)),)), source=src, want_maps=False)
        assert res["effect"][layer, p] == pytest.approx(one["effects"]["prob"], abs=1e-5)
    # the swapped word (position 2) carries the difference at layer 0; untouched words carry none there
    assert abs(res["effect"][0, 2]) > 10 * abs(res["effect"][0, 5])


def test_full_is_the_source_run_minus_the_clean_run(sst2):
    inp, src = sst2.encode_text(TEXT), sst2.encode_text(CORRUPT)
    res = residual_patching(sst2, inp, src)
    clean = np.asarray(sst2.run(inp).output["probs"], float)
    corrupt = np.asarray(sst2.run(src).output["probs"], float)
    top = int(clean.argmax())
    assert res["full"] == pytest.approx(corrupt[top] - clean[top], abs=1e-5)


def test_patching_from_the_same_input_changes_nothing(sst2):
    inp = sst2.encode_text(TEXT)
    res = residual_patching(sst2, inp, inp)
    assert np.abs(res["effect"]).max() < 1e-6


def test_the_sweep_refuses_no_source_and_a_source_of_another_length(sst2):
    inp = sst2.encode_text(TEXT)
    with pytest.raises(InterventionError, match="source"):
        residual_patching(sst2, inp, None)
    with pytest.raises(InterventionError, match="same number"):
        residual_patching(sst2, inp, sst2.encode_text("a boring movie"))
