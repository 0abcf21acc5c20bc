"""EAP over every edge of SmolLM2's head-level graph for one 32-token induction pair, and exact path
patching of one edge, on CPU. Prints seconds, ratios to the issue's targets (EAP <= 10 s, one exact
edge <= 1 s), the graph size and peak memory.

    python bench/circuits.py
"""

from __future__ import annotations

import resource
import time

import numpy as np
import torch

from attnscope.models.loading import load_model
from attnscope.pipelines.circuits.attribution import eap
from attnscope.pipelines.circuits.extract import ranked_edges
from attnscope.pipelines.circuits.patching import patch_edge, prepare
from attnscope.pipelines.circuits.tasks import induction_pairs


def main() -> None:
    backend = load_model("smollm2", device="cpu")
    pairs = induction_pairs(backend.model.config.vocab_size, n=1, half=15, seed=0, bos=0, low=1000)
    t0 = time.perf_counter()
    prep = prepare(backend.model, backend.sites, pairs.clean, pairs.corrupted, pairs.metric)
    t1 = time.perf_counter()
    scores = eap(prep)
    t2 = time.perf_counter()
    s, r = ranked_edges(scores)[0]
    t3 = time.perf_counter()
    exact = patch_edge(prep, s, r)
    t4 = time.perf_counter()
    g = prep.graph
    print(
        f"tokens {pairs.clean.shape[1]}, senders {g.n_senders}, receivers {g.n_receivers}, edges {int(g.valid().sum())}"
    )
    print(f"prepare (clean + corrupted passes, checked) {t1 - t0:.2f} s")
    print(f"EAP over every edge {t2 - t1:.2f} s  (ratio to the 10 s target {(t2 - t1) / 10:.2f})")
    print(f"EAP + prepare {t2 - t0:.2f} s  (ratio {(t2 - t0) / 10:.2f})")
    print(
        f"exact patch of {g.sender_names()[s]} -> {g.receiver_names()[r]} {t4 - t3:.2f} s "
        f"(ratio to the 1 s target {(t4 - t3) / 1:.2f}); effect {exact:.4f}, EAP {scores[s, r]:.4f}"
    )
    print(
        f"metric clean {prep.m_clean:.3f} corrupted {prep.m_corrupted:.3f}; max |score| {np.nanmax(np.abs(scores)):.4f}"
    )
    print(
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; torch threads "
        f"{torch.get_num_threads()}"
    )


if __name__ == "__main__":
    main()
