"""MiniLM capture on real text: shapes, stochastic rows, parity with the model, a known head."""

import numpy as np
import pytest
import torch

from attnscope.models.capture import EmptyInputError, TooManyTokensError, capture, capture_batch

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Researchers want to see what attention heads actually do.",
    "She put the book on the table and walked out of the room.",
    "A previous-token head looks one step back at every position.",
]


def test_shape_tokens_and_rows(minilm):
    cap = capture(minilm, SENTENCES[0])
    maps = cap.maps
    n = len(maps.tokens)
    assert maps.shape == (6, 12, n, n)
    assert maps.tokens[0] == "[CLS]" and maps.tokens[-1] == "[SEP]"
    assert maps.special == (0, n - 1)
    np.testing.assert_allclose(maps.weights.sum(-1), 1.0, atol=1e-5)
    assert cap.hidden_states.shape == (7, n, 384)
    assert cap.output["kind"] == "embedding" and cap.output["dim"] == 384
    assert abs(np.linalg.norm(cap.output["embedding"]) - 1.0) < 1e-5


def test_weights_equal_the_models_own_attentions(minilm):
    """Eager capture gives the model's own probabilities bit for bit; lazy capture (the default,
    maps recomputed from recorded queries and keys) equals them to 1e-5."""
    from attnscope.models.loading import load_model

    text = SENTENCES[1]
    eager = load_model("minilm", device="cpu", capture="eager")
    enc = minilm.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = eager.model(**enc, output_attentions=True)
    ref = torch.stack(out.attentions, dim=1)[0].numpy()
    np.testing.assert_array_equal(capture(eager, text).maps.weights, ref)
    lazy = capture(minilm, text).maps
    assert minilm.capture == "lazy" and lazy.is_lazy
    np.testing.assert_allclose(lazy.weights, ref, atol=1e-5, rtol=0)


def test_weights_equal_softmax_qk_recomputed_from_hidden_states(minilm):
    """Independent check: softmax(QK^T / sqrt(d)) from each layer's input and its own Q/K weights."""
    cap = capture(minilm, SENTENCES[2])
    h, d = 12, 384 // 12
    for layer in range(6):
        x = torch.from_numpy(cap.hidden_states[layer])  # [token, dim]
        att = minilm.model.encoder.layer[layer].attention.self
        with torch.no_grad():
            q = att.query(x).view(-1, h, d).transpose(0, 1)  # [head, token, d]
            k = att.key(x).view(-1, h, d).transpose(0, 1)
            ref = torch.softmax(q @ k.transpose(1, 2) / d**0.5, dim=-1).numpy()
        np.testing.assert_allclose(cap.maps.weights[layer], ref, atol=1e-5)


def test_layer0_previous_token_head_is_visible(minilm):
    """On every sentence, L0H2 puts most of each row's mass on the previous token."""
    for text in SENTENCES:
        maps = capture(minilm, text).maps
        n = maps.n_tokens
        rows = np.arange(2, n - 1)  # skip the [CLS] row/column and the [SEP] row
        prev = maps.layer(0)[:, rows, rows - 1].mean(axis=1)  # [head]
        assert prev[2] > 0.8, (text, prev)
        assert int(prev.argmax()) == 2 and np.sort(prev)[-2] < 0.5


def test_batch_capture_matches_single_capture(minilm):
    batch = capture_batch(minilm, SENTENCES[:2])
    for text, cap in zip(SENTENCES[:2], batch):
        single = capture(minilm, text)
        assert cap.maps.tokens == single.maps.tokens
        np.testing.assert_allclose(cap.maps.weights, single.maps.weights, atol=2e-5)


def test_bad_texts_raise_clear_errors(minilm):
    with pytest.raises(EmptyInputError, match="empty"):
        capture(minilm, "  \n ")
    with pytest.raises(TooManyTokensError, match="at most 512"):
        capture(minilm, "word " * 600)
