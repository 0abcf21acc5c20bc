"""A lazy causal-LM run that keeps the stream entering each block (``attnscope.models.stream_qk``)
instead of its queries and keys: every tiny decoder family and SmolLM2 pass the load check, their maps
equal those of a run that kept the queries and keys (``ATTNSCOPE_LAZY_RECORD=qk``) to 1e-6, the run
holds ``layers x tokens x d_model`` numbers (three quarters of SmolLM2's queries and keys, half of
GPT-2's), generation keeps the stream too, a wrong anatomy is refused at load, and threads reading
different layers of one run each get their own layer's maps."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnscope.models.loading import load_model
from attnscope.models.sites import Norm

TEXT = "The capital of France is Paris. The cat sat on the mat, and then it slept on the mat."
ARCHS = ["gpt2", "llama", "qwen2", "mistral", "gemma2", "phi"]


def _worst(a, b) -> float:
    assert a.shape == b.shape
    return max(float(np.abs(a.layer(i) - b.layer(i)).max()) for i in range(a.n_layers))


def _both(name: str, monkeypatch):
    """The model loaded twice: keeping the stream (the default) and keeping queries and keys."""
    stream = load_model(name, device="cpu")
    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "qk")
    qk = load_model(name, device="cpu")
    monkeypatch.delenv("ATTNSCOPE_LAZY_RECORD")
    return stream, qk


@pytest.mark.parametrize("arch", ARCHS)
def test_every_tiny_family_keeps_the_stream_and_its_maps_equal_the_recorded_ones(arch, tiny_causal_lms, monkeypatch):
    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    stream, qk = _both(f"local:{arch}", monkeypatch)
    assert stream.stream_refusal is None and qk.stream_refusal == "ATTNSCOPE_LAZY_RECORD=qk"
    a, b = stream.run(stream.encode_text(TEXT)).maps, qk.run(qk.encode_text(TEXT)).maps
    assert all(lay.stream is not None and lay.query is None for lay in a.source.layers)
    assert all(lay.stream is None and lay.query is not None for lay in b.source.layers)
    sites, n = stream.sites, a.n_tokens
    storages = {
        lay.mask.untyped_storage().data_ptr(): lay.mask.untyped_storage().nbytes()
        for lay in a.source.layers
        if lay.mask is not None
    }
    masks = sum(storages.values())  # a mask the layers share counts once
    assert a.nbytes == sites.n_layers * n * sites.d_model * 4 + masks  # float32 stream, masks as before
    qk_numbers = sites.n_layers * n * (sites.n_heads + sites.n_kv_heads) * sites.d_head
    assert b.nbytes - masks == qk_numbers * 4
    if arch == "gpt2":  # as many key heads as query heads: the stream is half the queries and keys
        assert 2 * (a.nbytes - masks) == b.nbytes - masks
    held = a.nbytes
    assert _worst(a, b) <= 1e-6
    layer_qk = n * (sites.n_heads + sites.n_kv_heads) * sites.d_head * 4
    assert a.nbytes == held + layer_qk  # the last rebuilt layer is kept, and counted


def test_smollm2_keeps_three_quarters_of_the_bytes_and_the_same_maps(smollm2, monkeypatch):
    assert smollm2.stream_refusal is None
    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "qk")
    qk = load_model("smollm2", device="cpu")
    inp = smollm2.encode_text(TEXT)
    a, b = smollm2.run(inp, hidden_states=False), qk.run(inp, hidden_states=False)
    n = a.maps.n_tokens
    assert a.maps.nbytes == 30 * n * 576 * 4 and b.maps.nbytes == 30 * n * (9 + 3) * 64 * 4
    assert _worst(a.maps, b.maps) <= 1e-6
    np.testing.assert_array_equal(a.output["loss"], b.output["loss"])  # the prediction is the same pass's
    # a block of a few heads and rows, and the top keys, read from the rebuilt layer as from the recorded one
    np.testing.assert_allclose(a.maps.block(7, [1, 8], slice(3, 9)), b.maps.block(7, [1, 8], slice(3, 9)), atol=1e-6)


def test_generation_keeps_the_stream_and_its_maps_equal_the_recorded_ones(smollm2, monkeypatch):
    from attnscope.models.backends.generation import GenerateOptions

    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "qk")
    qk = load_model("smollm2", device="cpu")
    inp = smollm2.encode_text("The capital of France is")
    a = smollm2.generate(inp, GenerateOptions(4), hidden_states=False)
    b = qk.generate(inp, GenerateOptions(4), hidden_states=False)
    assert a.maps.source.layers[0].stream is not None and b.maps.source.layers[0].stream is None
    assert a.maps.tokens == b.maps.tokens and a.maps.n_tokens == len(inp) + 4
    assert _worst(a.maps, b.maps) <= 1e-6


def test_a_wrong_anatomy_is_refused_at_load_and_the_run_keeps_queries_and_keys(smollm2):
    """The check would pass vacuously if it compared nothing: a Sites whose attention norm is left
    out (the stream used as it enters the block) must be refused, naming the layer and the size."""
    from attnscope.models.stream_qk import refusal

    sites = smollm2.sites
    unnormed = Norm("rmsnorm", None, None, 1e30)  # x / sqrt(1e30): nothing like the model's norm
    wrong = replace(sites, blocks=tuple(replace(b, ln_attn=unnormed) for b in sites.blocks))
    reason = refusal(smollm2.model, wrong)
    assert reason is not None and reason.startswith("layer 0: queries rebuilt from the stream differ by")
    assert refusal(smollm2.model, None) == "the model's family has no Sites entry"
    assert refusal(smollm2.model, sites) is None


def test_a_bad_setting_is_refused_naming_the_variable(monkeypatch):
    from pydantic import ValidationError

    from attnscope.models.settings import model_settings

    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "everything")
    with pytest.raises(ValidationError, match="lazy_record"):
        model_settings()


def test_threads_reading_different_layers_of_one_run_each_get_their_layer(smollm2, monkeypatch):
    """A stream run keeps the last rebuilt layer; threads asking for other layers at once must never
    see each other's queries and keys."""
    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "qk")
    qk = load_model("smollm2", device="cpu")
    inp = smollm2.encode_text(TEXT)
    maps = smollm2.run(inp, hidden_states=False).maps
    ref = qk.run(inp, hidden_states=False).maps
    want = {layer: ref.layer(layer) for layer in range(maps.n_layers)}
    errors: list[str] = []
    barrier = threading.Barrier(4)

    def worker(offset: int) -> None:
        barrier.wait()
        for step in range(12):
            layer = (offset * 7 + step * 5) % maps.n_layers
            got = maps.head(layer, step % maps.n_heads)
            if float(np.abs(got - want[layer][step % maps.n_heads]).max()) > 1e-6:
                errors.append(f"thread {offset}: layer {layer}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert torch.is_tensor(maps.source.queries_keys(3)[0])


def test_a_threaded_pass_rebuilds_each_layer_once_and_reads_the_same_numbers(smollm2, monkeypatch):
    """``reduce_maps`` reads each layer in bands of rows from several threads at once: holding the
    layer it reads, each layer's queries and keys are rebuilt once, not at each band."""
    from attnscope.analysis import passes
    from attnscope.models import stream_qk

    monkeypatch.setenv("ATTNSCOPE_LAZY_RECORD", "qk")
    qk = load_model("smollm2", device="cpu")
    monkeypatch.delenv("ATTNSCOPE_LAZY_RECORD")
    inp = smollm2.encode_text(TEXT * 3)
    maps, ref = smollm2.run(inp, hidden_states=False).maps, qk.run(inp, hidden_states=False).maps
    n = maps.n_tokens
    monkeypatch.setattr(passes, "LAZY_BAND_BYTES", 4 * maps.n_heads * n * 8)  # bands of 8 rows
    rebuilds = []
    real = stream_qk.StreamQK.rebuild
    monkeypatch.setattr(stream_qk.StreamQK, "rebuild", lambda self: rebuilds.append(1) or real(self))
    got = passes.reduce_maps(maps, {"entropy"}, workers=3)
    want = passes.reduce_maps(ref, {"entropy"}, workers=3)
    assert n > 3 * 8  # several bands a layer
    assert len(rebuilds) == maps.n_layers
    np.testing.assert_allclose(got.entropy, want.entropy, atol=1e-5)
    assert maps.source._held == {}  # nothing held after the pass
