"""The causal-LM backend below the API: generation options, seeded sampling, the next-token
classifier on padded batches, the run limit, and a tokenizer without a chat template."""

import json
import shutil

import numpy as np
import pytest
import torch

from attnscope.models.backends.generation import GenerateOptions, decode
from attnscope.models.backends.next_token import NextTokenClassifier
from attnscope.models.errors import NotAGeneratorError, TooManyTokensError
from attnscope.models.loading import load_model
from attnscope.models.registry import get_spec
from attnscope.models.shell import module_shell


@pytest.fixture
def roots(tiny_causal_lms, monkeypatch):
    root, folders = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    return root, folders


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": 257}, "max_new_tokens"),
        ({"max_new_tokens": 2.5}, "max_new_tokens"),
        ({"max_new_tokens": 4, "temperature": 0.0}, "temperature"),
        ({"max_new_tokens": 4, "temperature": float("nan")}, "temperature"),
        ({"max_new_tokens": 4, "temperature": float("inf")}, "temperature"),
        ({"max_new_tokens": 4, "temperature": 10.5}, "temperature"),
        ({"max_new_tokens": 4, "seed": -1}, "seed"),
    ],
)
def test_generate_options_refuse_bad_values(kwargs, words):
    with pytest.raises(ValueError, match=words):
        GenerateOptions(**kwargs)


def test_sampling_is_reproducible_per_seed_and_greedy_is_argmax(roots):
    lm = load_model("local:llama", device="cpu")
    ids = lm.encode_text("The cat sat").ids_tensor()
    a = decode(lm.model, ids, GenerateOptions(12, temperature=2.0, seed=1), eos_ids=set(), record=False)
    b = decode(lm.model, ids, GenerateOptions(12, temperature=2.0, seed=1), eos_ids=set(), record=False)
    c = decode(lm.model, ids, GenerateOptions(12, temperature=2.0, seed=2), eos_ids=set(), record=False)
    assert a.generated == b.generated and a.generated != c.generated
    g = decode(lm.model, ids, GenerateOptions(3), eos_ids=set(), record=True, hidden_states=True)
    with torch.no_grad():
        out = lm.model(input_ids=torch.tensor([g.ids]), output_hidden_states=True)
    assert g.generated == out.logits[0, ids.shape[1] - 1 : -1].argmax(-1).tolist()
    assert g.weights.shape == (2, 4, len(g.ids), len(g.ids))
    np.testing.assert_allclose(g.hidden, torch.stack(out.hidden_states, 1)[0].numpy(), atol=1e-4)


def _right_padded(lm, texts) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """``(token ids per text, ids [batch, longest], attention_mask [batch, longest])``, padded on the right."""
    seqs = [lm.encode_text(t).token_ids for t in texts]
    n = max(map(len, seqs))
    ids = torch.zeros(len(seqs), n, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)], mask[i, : len(s)] = torch.tensor(s), 1
    return seqs, ids, mask


def test_next_token_classifier_on_a_right_padded_batch(roots):
    lm = load_model("local:qwen2", device="cpu")
    seqs, ids, mask = _right_padded(lm, ("The cat", "The capital of France is", "a"))
    with torch.no_grad():
        batched = lm.classifier(input_ids=ids, attention_mask=mask).logits
        for i, s in enumerate(seqs):
            alone = lm.model(input_ids=torch.tensor([s])).logits[0, -1]
            np.testing.assert_allclose(batched[i].numpy(), alone.numpy(), atol=1e-4)
    assert lm.classifier.config.num_labels == lm.model.config.vocab_size


def test_the_next_token_classifier_unembeds_only_each_rows_last_position(roots):
    # the explainers call it under a gradient at every integrated-gradients step: unembedding every
    # position there was a quarter of the work; only the distinct last positions are kept
    lm = load_model("local:qwen2", device="cpu")
    seqs, ids, mask = _right_padded(lm, ("The cat sat", "The capital of France is", "The dog"))
    shell = module_shell(lm.model)  # the hook goes on a shell: the cached model stays unhooked
    seen = []
    shell.lm_head.register_forward_hook(lambda mod, args, out: seen.append(tuple(args[0].shape)))
    with torch.no_grad():
        NextTokenClassifier(shell)(input_ids=ids, attention_mask=mask)
    distinct = len({len(s) for s in seqs})
    assert seen == [(len(seqs), distinct, lm.model.config.hidden_size)]


def test_the_run_limit_follows_the_setting_and_names_the_context(roots, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "16")
    assert get_spec("local:llama").max_tokens == 16
    lm = load_model("local:llama", device="cpu")
    with pytest.raises(TooManyTokensError, match="context is 64 tokens.*at most 16 positions"):
        lm.encode_text("word " * 30)


def test_a_tokenizer_without_a_chat_template_refuses_chat(roots, tmp_path, monkeypatch):
    _, folders = roots
    folder = tmp_path / "plain"
    shutil.copytree(folders["llama"], folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(tmp_path))
    lm = load_model("local:plain", device="cpu")
    with pytest.raises(NotAGeneratorError, match="no chat template"):
        lm.encode_chat("hello")


def test_generation_is_a_typed_capability_of_causal_lms_only(roots, minilm):
    """``backend.generator`` (not a probe for a ``generate`` method): the causal LM's generates what its
    run predicts; an encoder has none, and ``capture_prompt`` refuses it generation options."""
    from attnscope.models.capture import capture_prompt

    lm = load_model("local:llama", device="cpu")
    assert lm.generator is not None and minilm.generator is None
    inp = lm.encode_text("The cat sat")
    cap = lm.generator.generate(inp, GenerateOptions(1))
    first = cap.output["generation"]["token_ids"][0]
    assert first == lm.run(inp).output["top_k"][-1][0]["token_id"]
    assert lm.generator.text_of(first) == lm.tokenizer.decode([first])
    with pytest.raises(NotAGeneratorError, match="causal LM"):
        capture_prompt(minilm, "The cat sat", generate=GenerateOptions(1))


@pytest.mark.parametrize("capture", ["lazy", "eager"])
def test_run_maps_are_the_runs_maps_without_its_prediction(roots, capture):
    """``run_maps`` (what a recording reads: the body alone on a lazy model) gives every map ``run`` gives,
    on both captures."""
    lm = load_model("local:llama", device="cpu", capture=capture)
    assert lm.capture == capture
    inp = lm.encode_text("The cat sat on the mat because it was tired")
    want = lm.run(inp, hidden_states=False).maps
    got = lm.run_maps(inp)
    assert got.shape == want.shape and got.causal and got.tokens == want.tokens
    for layer in range(want.n_layers):
        np.testing.assert_allclose(got.block(layer), want.block(layer), atol=1e-6)
