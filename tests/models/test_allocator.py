"""glibc's mmap threshold fixed at model load (``attnscope.models.allocator``): big tensors are mapped
(glibc's own count says so) and go back to the OS when freed, and ``ATTNSCOPE_MALLOC_MMAP_THRESHOLD`` is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from attnscope.models.allocator import DEFAULT_MMAP_THRESHOLD, MAX_MMAP_THRESHOLD, _glibc
from attnscope.models.settings import model_settings

# Run in a fresh process (the threshold is process-wide): load a model (which applies the setting), then
# free a 16 MiB tensor (under glibc's *dynamic* threshold this raises the threshold to 16 MiB, so 8 MiB
# blocks would come from the heap), allocate 64 MiB in 8 MiB blocks and read back glibc's own count of
# mapped bytes (``mallinfo2().hblkhd``: the setting in force) and the resident size once they are freed.
PROBE = """
import ctypes, json, os, torch
from attnscope.models.loading import load_model
load_model("minilm", device="cpu")

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                     "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Mallinfo2
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
warm = torch.ones((16 << 20) // 4)
del warm
base, mapped = rss(), libc.mallinfo2().hblkhd
blocks = [torch.ones((8 << 20) // 4) for _ in range(8)]
held, mapped_held = rss(), libc.mallinfo2().hblkhd
del blocks
print(json.dumps({"held": held - base, "mapped": mapped_held - mapped, "kept": rss() - base}))
"""

glibc_only = pytest.mark.skipif(_glibc() is None, reason="the mmap threshold is a glibc setting")


def _probe(threshold: str) -> dict:
    env = {**os.environ, "ATTNSCOPE_MALLOC_MMAP_THRESHOLD": threshold, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@glibc_only
def test_a_freed_64_mib_tensor_returns_to_the_os_after_model_load():
    fixed = _probe(str(DEFAULT_MMAP_THRESHOLD))
    assert fixed["held"] > 60 << 20  # the 64 MiB were resident
    assert fixed["mapped"] >= 64 << 20  # each block was mapped on its own (the fixed threshold is in force)
    assert fixed["kept"] < 8 << 20  # and went back on free


@glibc_only
def test_under_glibcs_default_the_blocks_come_from_the_heap():
    """The control: with the setting at 0 (glibc's dynamic threshold, raised by the freed 16 MiB) the
    same blocks come from the heap, so the test above measures the setting, not glibc's defaults."""
    default = _probe("0")
    assert default["held"] > 60 << 20
    assert default["mapped"] < 8 << 20


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, DEFAULT_MMAP_THRESHOLD), ("", DEFAULT_MMAP_THRESHOLD), ("0", 0), ("65536", 65536)],
)
def test_the_setting_parses(monkeypatch, value, expected):
    monkeypatch.delenv("ATTNSCOPE_MALLOC_MMAP_THRESHOLD", raising=False)
    if value is not None:
        monkeypatch.setenv("ATTNSCOPE_MALLOC_MMAP_THRESHOLD", value)
    assert model_settings().malloc_mmap_threshold == expected


@pytest.mark.parametrize("value", ["-1", "lots", str(MAX_MMAP_THRESHOLD + 1)])
def test_a_malformed_threshold_names_its_field(monkeypatch, value):
    monkeypatch.setenv("ATTNSCOPE_MALLOC_MMAP_THRESHOLD", value)
    with pytest.raises(ValidationError, match="malloc_mmap_threshold"):
        model_settings()
