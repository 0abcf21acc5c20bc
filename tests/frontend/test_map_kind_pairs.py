"""The map kind of Compare and Interventions (``map_kind``, ``compare_pair.shown_pair``): the note under
the figure titles, and on MiniLM through the real API the runs and divergences a value-weighted
comparison reads; a run the API refuses keeps the weights and the note names the API's reason."""

import numpy as np

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.compare_pair import ComparePair, shown_pair
from attnscope.frontend.map_kind import VALUE_WEIGHTED_NOTE, kind_note, notes, shown_id
from attnscope.frontend.run_state import run_record


def test_the_note_states_the_kind_drawn():
    assert kind_note("attention") == "" and kind_note(None) == ""
    assert kind_note("value-weighted") == VALUE_WEIGHTED_NOTE
    refused = kind_note("value-weighted", "the model has no anatomy entry")
    assert refused == "attention weights (no value-weighted maps: the model has no anatomy entry)"
    assert notes("", VALUE_WEIGHTED_NOTE, "", "first token hidden") == f"{VALUE_WEIGHTED_NOTE}; first token hidden"
    assert notes("", "") == ""


def test_a_value_weighted_pair_reads_both_value_weighted_runs_and_their_divergences(api_url):
    api = ApiClient(api_url)
    a = run_record(api.create_run("minilm", "The cat sat on the mat because it was tired."))
    b = run_record(api.create_run("minilm", "The dog sat on the mat because it was tired."))
    cmp = api.compare_heads(a.id, b.id)
    pair = ComparePair(a=a, b=b, js=cmp.js, tv=cmp.tv, max_abs_diff=cmp.max_abs_diff)
    assert shown_pair(api, pair, "attention") is pair

    shown = shown_pair(api, pair, "value-weighted")
    vw_a, vw_b = api.value_weighted(a.id), api.value_weighted(b.id)
    assert (shown.a.id, shown.b.id) == (vw_a, vw_b) and shown.note == VALUE_WEIGHTED_NOTE
    assert shown.a.tokens == a.tokens and shown.b.text == b.text
    independent = api.compare_heads(vw_a, vw_b)
    np.testing.assert_allclose(shown.js, independent.js)
    assert np.abs(np.asarray(shown.js) - np.asarray(pair.js)).max() > 1e-4  # not the weights' divergences

    gone = pair.model_copy(update={"a": a.model_copy(update={"id": "0" * 32})})
    kept = shown_pair(api, gone, "value-weighted")
    assert (kept.a.id, kept.b.id, kept.js) == (gone.a.id, b.id, pair.js)
    assert kept.note.startswith("attention weights (no value-weighted maps: ") and "0" * 32 in kept.note
    assert shown_id(api, b.id, "attention") == (b.id, "")
    api.close()
