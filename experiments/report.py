"""The seed tables: every arm's figures as mean ± sd over seeds, each claim's gap with its t-interval, the verdicts.

``write_all(seeds)`` measures every trained (arm, seed) that has no measurement yet (``measure.measure_arm``,
cached as ``results/experiments/measures/<arm>-seed<s>.json``), then writes, under ``results/experiments/``:

- ``arms.csv``: per arm, metric and layer, the mean and sample sd over seeds and the per-seed values;
- ``gaps.csv``: per comparison (EA - vanilla, HA - non-HA) and metric, the paired gap over the seeds both arms
  have, its 95 % t-interval (``df = n - 1``, ``attnscope.analysis.stats``) and the verdict;
- ``gaussian.csv``: per seed, layer and head of ``gauss9-iso``, the best offset, its mass and the centre;
  ``gaussian_layers.csv``: per layer, the convolution-likeness over seeds;
- ``claims.json``: all of it, with the verdict per claim and the command that reproduces it;
- ``tables.md``: the tables of docs/claims.md (``attnscope.experiments.tables``).

Verdict of a gap whose claim says "greater" (or "smaller"): ``reproduces`` when the interval lies wholly on the
claimed side of 0, ``reversed`` when it lies wholly on the other side, ``not resolved`` when it contains 0.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

import numpy as np

from attnscope.analysis.stats import paired_gap, summarise
from attnscope.experiments import measure, seeds, tables

log = logging.getLogger(__name__)

COMMAND = "make experiments"
# (claim id, arm, baseline, metric prefix, the sign the claim predicts for arm - baseline, the claim)
CLAIMS = (
    ("ea-probe", "text-ea", "text-vanilla", "probe_cnn", +1, "EA's maps carry more of the task (CNN probe)"),
    ("ea-probe", "text-ea", "text-vanilla", "probe_logistic", +1, "EA's maps carry more of the task (logistic)"),
    ("ea-sharper", "text-ea", "text-vanilla", "norm_entropy", -1, "EA's maps are sharper (lower entropy)"),
    ("ea-probe", "ea-vit", "vit", "probe_cnn", +1, "EA's maps carry more of the task (CNN probe)"),
    ("ea-probe", "ea-vit", "vit", "probe_logistic", +1, "EA's maps carry more of the task (logistic)"),
    ("ea-sharper", "ea-vit", "vit", "norm_entropy", -1, "EA's maps are sharper (lower entropy)"),
    ("ea-accuracy", "text-ea", "text-vanilla", "accuracy", +1, "EA is at least as accurate"),
    ("ea-accuracy", "ea-vit", "vit", "accuracy", +1, "EA is at least as accurate"),
    ("ha-accuracy", "text-ha", "text-vanilla", "accuracy", +1, "HA at equal depth, fewer parameters: accuracy"),
    ("ha-accuracy", "ha-vit", "vit", "accuracy", +1, "HA at equal depth, fewer parameters: accuracy"),
)


def measure_path(name: str, seed: int) -> Path:
    return seeds.RESULTS / "measures" / f"{name}-seed{seed}.json"


def measure_all(seed_list, arms, n_eval: int = measure.N_EVAL, probes=measure.PROBES) -> None:
    """Measure every trained (arm, seed) without a measurement yet (on ``n_eval`` examples, with ``probes``); a
    measurement made with fewer probes gets the missing ones added (``add_probe``: same examples, same protocol)."""
    for seed in seed_list:
        for name in arms:
            path = measure_path(name, seed)
            if not seeds.trained(name, seed):
                continue
            if path.is_file():
                have = json.loads(path.read_text()).get("probe")
                for classifier in probes if have is not None else ():  # None: an arm without map probes (Gaussian)
                    if classifier not in have:
                        log.info("adding the %s probe to %s seed %d", classifier, name, seed)
                        add_probe(name, seed, classifier, n_eval)
                continue
            log.info("measuring %s seed %d", name, seed)
            out = {**measure.measure_arm(name, seeds.arm_root(name, seed), n_eval, probes), "seed": seed}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def add_probe(name: str, seed: int, classifier: str, n_eval: int = measure.N_EVAL) -> None:
    """Add one probe classifier to an existing measurement of (arm, seed) (same evaluation set and protocol)."""
    path = measure_path(name, seed)
    out = json.loads(path.read_text())
    if classifier in out.get("probe", {}):
        return
    backend = measure.load_arm(name, seeds.arm_root(name, seed))
    modality = backend.arch.kind
    inputs, labels = measure.eval_set(modality, n_eval)
    items = measure.capture_maps(backend, inputs)
    out["probe"][classifier] = measure.probe(items, labels, "crop" if modality == "text" else "pool", classifier)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def arm_values(name: str, seed_list) -> dict[str, dict[int, float]]:
    """``{metric: {seed: value}}`` of one arm: ``accuracy``, ``params``, ``norm_entropy_L<l>``,
    ``probe_<classifier>_L<l>`` over the seeds that have a record and a measurement."""
    out: dict[str, dict[int, float]] = {}
    for seed in seed_list:
        rec_path, m_path = seeds.record_path(name, seed), measure_path(name, seed)
        if not rec_path.is_file():
            continue
        rec = json.loads(rec_path.read_text())
        out.setdefault("accuracy", {})[seed] = rec["eval_accuracy"]
        out.setdefault("params", {})[seed] = rec["params"]
        if not m_path.is_file():
            continue
        m = json.loads(m_path.read_text())
        for li, v in enumerate(m.get("norm_entropy", [])):
            out.setdefault(f"norm_entropy_L{li}", {})[seed] = v
        for clf, p in m.get("probe", {}).items():
            for li, v in enumerate(p["accuracy"]):
                out.setdefault(f"probe_{clf}_L{li}", {})[seed] = v
    return out


def arm_rows(arms, seed_list) -> list[dict]:
    rows = []
    for name in arms:
        for metric, by_seed in arm_values(name, seed_list).items():
            s = summarise(list(by_seed.values()))
            rows.append(
                {
                    "arm": name,
                    "metric": metric,
                    "n_seeds": s.n,
                    "mean": round(s.mean, 6),
                    "sd": None if s.n < 2 else round(s.sd, 6),
                    "seeds": " ".join(str(k) for k in by_seed),
                    "values": " ".join(f"{v:.6g}" for v in by_seed.values()),
                }
            )
    return rows


def verdict(low: float, high: float, sign: int) -> str:
    if low > 0 or high < 0:
        return "reproduces" if (low > 0) == (sign > 0) else "reversed"
    return "not resolved"


def gap_rows(seed_list) -> list[dict]:
    rows = []
    for claim, arm, base, prefix, sign, text in CLAIMS:
        a, b = arm_values(arm, seed_list), arm_values(base, seed_list)
        for metric in sorted(k for k in a if k == prefix or k.startswith(prefix + "_L")):
            common = sorted(set(a[metric]) & set(b.get(metric, {})))
            if len(common) < 2:
                continue
            g = paired_gap([a[metric][s] for s in common], [b[metric][s] for s in common])
            rows.append(
                {
                    "claim": claim,
                    "statement": text,
                    "arm": arm,
                    "baseline": base,
                    "metric": metric,
                    "n_seeds": g.n,
                    "arm_mean": round(float(np.mean([a[metric][s] for s in common])), 6),
                    "baseline_mean": round(float(np.mean([b[metric][s] for s in common])), 6),
                    "gap": round(g.mean, 6),
                    "gap_sd": round(g.sd, 6),
                    "df": g.df,
                    "t": round(g.t, 4),
                    "ci95_low": round(g.low, 6),
                    "ci95_high": round(g.high, 6),
                    "verdict": verdict(g.low, g.high, sign),
                }
            )
    return rows


def gaussian_rows(name: str, seed_list) -> tuple[list[dict], list[dict]]:
    """Per-head rows and per-layer rows (over seeds) of a Gaussian arm's convolution-likeness."""
    heads, per_layer = [], {}
    for seed in seed_list:
        path = measure_path(name, seed)
        if not path.is_file():
            continue
        for li, layer in enumerate(json.loads(path.read_text())["gaussian"]):
            per_layer.setdefault(li, []).append(layer)
            for h, (off, mass, c, d) in enumerate(
                zip(layer["best_offset"], layer["best_mass"], layer["centre"], layer["centre_distance"], strict=True)
            ):
                heads.append(
                    {
                        "arm": name,
                        "seed": seed,
                        "layer": li,
                        "head": h,
                        "best_offset": f"({off[0]}, {off[1]})",
                        "best_mass": mass,
                        "centre_row": c[0],
                        "centre_col": c[1],
                        "centre_distance": d,
                        "best_in_3x3": max(abs(off[0]), abs(off[1])) <= 1,
                    }
                )
    layers = []
    for li, items in sorted(per_layer.items()):
        row = {"arm": name, "layer": li, "n_seeds": len(items)}
        for key in (
            "distinct_offsets",
            "in_neighbourhood",
            "covered",
            "centres_in_neighbourhood",
            "neighbourhood_mass",
        ):
            s = summarise([it[key] for it in items])
            row[key], row[f"{key}_sd"] = round(s.mean, 4), None if s.n < 2 else round(s.sd, 4)
        masses = np.concatenate([it["best_mass"] for it in items])
        dists = np.concatenate([it["centre_distance"] for it in items])
        row.update(
            best_mass_mean=round(float(masses.mean()), 4),
            best_mass_min=round(float(masses.min()), 4),
            best_mass_max=round(float(masses.max()), 4),
            centre_distance_mean=round(float(dists.mean()), 4),
            centre_distance_min=round(float(dists.min()), 4),
            centre_distance_max=round(float(dists.max()), 4),
            heads=int(masses.size // len(items)),
        )
        layers.append(row)
    return heads, layers


def to_csv(rows: list[dict]) -> str:
    if not rows:
        return ""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_all(
    seed_list=seeds.SEEDS,
    arms=seeds.ARMS + seeds.GAUSS_ARMS,
    n_eval: int = measure.N_EVAL,
    probes=measure.PROBES,
    measure_missing: bool = True,
) -> dict:
    """Measure what is missing (on ``n_eval`` examples per modality, with ``probes``; skipped when not
    ``measure_missing``), then write the tables (module docstring) under ``seeds.RESULTS``
    (``results/experiments``) from every record and measurement there; returns the ``claims.json`` content."""
    seed_list = list(seed_list)
    if measure_missing:
        measure_all(seed_list, arms, n_eval, probes)
    out = seeds.RESULTS
    out.mkdir(parents=True, exist_ok=True)
    twins = [a for a in arms if a not in seeds.GAUSS_ARMS]
    gauss = [a for a in arms if a in seeds.GAUSS_ARMS]
    arms_t, gaps_t = arm_rows(twins + gauss, seed_list), gap_rows(seed_list)
    heads_t, layers_t = [], []
    for name in gauss:
        h, la = gaussian_rows(name, seed_list)
        heads_t += h
        layers_t += la
    files = {"arms.csv": arms_t, "gaps.csv": gaps_t, "gaussian.csv": heads_t, "gaussian_layers.csv": layers_t}
    for fname, rows in files.items():
        (out / fname).write_text(to_csv(rows))
    claims = {
        "command": COMMAND,
        "seeds": seed_list,
        "interval": "paired by seed, Student t with n - 1 degrees of freedom, 95 %",
        "eval_set": f"{n_eval} fixed examples per modality (attnscope.experiments.measure)",
        "arms": arms_t,
        "gaps": gaps_t,
        "gaussian_layers": layers_t,
    }
    (out / "claims.json").write_text(json.dumps(claims, indent=1) + "\n")
    tables.write_markdown(claims)
    log.info("wrote %s (%d arm rows, %d gaps)", out, len(arms_t), len(gaps_t))
    return claims
