"""Issue 29 part 2 (the run-creation peak): a lazy SmolLM2 run puts its last stream through the LM head
a chunk of positions at a time (``generation.summary_by_chunks``) instead of holding ``[position,
vocab]`` float32 logits; its prediction (per position top-k and loss) equals the model's own head over
every position, across chunk boundaries."""

import numpy as np
import torch

from attnscope.models.backends.generation import HEAD_CHUNK, next_token_summary
from attnscope.models.capture import capture


def test_a_lazy_runs_prediction_equals_the_full_head(smollm2):
    assert smollm2.capture == "lazy"
    text = " ".join(f"Line {i}: the river bends past mill number {i * 7 % 13}." for i in range(40))
    cap = capture(smollm2, text, hidden_states=False)
    ids = list(cap.token_ids)
    assert len(ids) > 2 * HEAD_CHUNK  # at least three chunks, so two boundaries
    with torch.inference_mode():  # independent: the model's own forward, head over every position
        logits = smollm2.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
    top_ids, top_probs, loss = next_token_summary(logits, ids)
    out = cap.output
    got_ids = np.array([[e["token_id"] for e in row] for row in out["top_k"]])
    got_probs = np.array([[e["prob"] for e in row] for row in out["top_k"]])
    assert got_ids.shape == top_ids.shape
    assert (got_ids[:, 0] == top_ids[:, 0]).mean() == 1.0
    np.testing.assert_allclose(got_probs, top_probs, atol=1e-4)
    got_loss = np.array([np.nan if v is None else v for v in out["loss"]])
    assert np.isnan(got_loss[-1]) and np.isfinite(got_loss[:-1]).all()
    np.testing.assert_allclose(got_loss, loss, atol=1e-3, equal_nan=True)
    assert out["predicted_id"] == int(top_ids[-1, 0])
