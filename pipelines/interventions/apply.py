"""Apply interventions: one set on one input (``intervene``) or one per head, batched (``head_effects``).

Both compare against the clean forward pass of the same input, with the same runner. Mean ablation
reads ``HeadMeans`` (the mean head outputs of a reference set, computed once per model and set).
Residual patches and head patches read a *source* input: the corrupted input patched into the clean
one (``direction="noising"``), or the clean into the corrupted (``"denoising"``: then the corrupted
input is run and the clean one is the source).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.interface import Backend, Classification, Embedding, ModelInput, ModelOutput, NextToken
from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.interventions.edits import EditContext, HeadRecorder, build_edits
from attnscope.pipelines.interventions.metrics import MetricSpec, all_effects, effect, resolve, targets_of
from attnscope.pipelines.interventions.runner import Outputs, Runner, Start, head_dim
from attnscope.pipelines.interventions.spec import HeadAblation, HeadPatch, InterventionSet, validate
from attnscope.pipelines.writes.recorded import value_norm_tables

log = logging.getLogger(__name__)
MEAN_REFERENCE = 16  # inputs of the default reference set of a mean ablation
MAX_GRID_CHUNK = 64
DEFAULT_METRIC = MetricSpec()  # the task's default metric


def default_reference(backend: Backend) -> list[ModelInput]:
    """The default reference set of a mean ablation: the first ``MEAN_REFERENCE`` SST-2 dev
    sentences (text models, truncated to the model's limit) or the model's first data-set samples."""
    if backend.spec.modality == "text":
        from attnscope.pipelines.datasets import load_sst2

        return [backend.encode_text(ex.text, truncate=True) for ex in load_sst2("dev")[:MEAN_REFERENCE]]
    from attnscope.models.zoo import samples

    name = next(iter(samples.datasets()))
    return [backend.encode_image(backend.prepare_image(samples.sample(name, i)[0])) for i in range(MEAN_REFERENCE)]


class HeadMeans:
    """Mean head outputs ``[layer, head, dim]`` per model (over every real position of the reference
    inputs), computed once and kept (bounded LRU, thread-safe)."""

    def __init__(self, max_models: int = 8):
        self._cache: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()
        self.max_models = max_models

    def get(self, backend: Backend, runner: Runner) -> torch.Tensor:
        key = backend.spec.name
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        means = compute_means(runner, default_reference(backend))
        with self._lock:
            self._cache[key] = means
            while len(self._cache) > self.max_models:
                self._cache.popitem(last=False)
        return means


def compute_means(runner: Runner, inputs: list[ModelInput]) -> torch.Tensor:
    """``[layer, head, dim]`` mean head output over every real position of ``inputs``."""
    rec = HeadRecorder()
    runner.forward(inputs, hooks=[rec])
    lengths = torch.tensor([len(i) for i in inputs])
    means = []
    for layer in range(runner.backend.n_layers):
        out = rec.outputs[layer].float()  # [B, T, H, d]
        valid = (torch.arange(out.shape[1])[None, :] < lengths[:, None]).to(out.dtype)[..., None, None]
        means.append((out * valid).sum((0, 1)) / valid.sum())
    return torch.stack(means)


@dataclass
class Prepared:
    """One request's runner, metric, clean outputs and edit context."""

    runner: Runner
    target: ModelInput
    metric: MetricSpec
    targets: tuple[int, ...] | None
    clean: Outputs
    ctx: EditContext
    source_residual: dict | None = None
    clean_residual: dict | None = None  # {layer: [1, token, dim]} after each block (``record=True``)

    def forward(
        self,
        sets: list[InterventionSet],
        want_maps: bool = False,
        start: int | None = None,
        record_pre: dict | None = None,
    ) -> Outputs:
        """Row ``b`` applies ``sets[b]``. With ``start`` (every set edits layer ``start`` or later,
        no residual patches; needs ``record=True``), the clean prefix is reused: only blocks
        ``start..L-1`` run, on ``len(sets)`` rows of the clean residual stream entering ``start``.
        ``record_pre``: filled with the stream entering each block (``Runner.forward``)."""
        edits = build_edits(sets, self.ctx)
        if start is not None:
            hidden = None if start == 0 else self.clean_residual[start - 1]
            m = self.metric
            return self.runner.forward(
                [self.target],
                hooks=[edits],
                positions=m.positions,
                targets=self.targets,
                answers=m.answers,
                start=Start(start, hidden, len(sets)),
            )
        residual: dict = {}
        for row, iset in enumerate(sets):
            for rp in iset.residual:
                value = self.source_residual[rp.layer][0, list(rp.positions)]
                residual.setdefault(rp.layer, []).append((row, rp.positions, value))
        m = self.metric
        return self.runner.forward(
            [self.target] * len(sets),
            hooks=[edits],
            residual=residual or None,
            want_maps=want_maps,
            positions=m.positions,
            targets=self.targets,
            answers=m.answers,
            record_pre=record_pre,
        )


def prepare(
    backend: Backend,
    inp: ModelInput,
    sets: Sequence[InterventionSet],
    metric: MetricSpec = DEFAULT_METRIC,
    source: ModelInput | None = None,
    direction: str = "noising",
    means: HeadMeans | None = None,
    want_maps: bool = False,
    record: bool = False,
) -> Prepared:
    """Check every set, pick the target and source inputs, run the clean (and source) passes; with
    ``record`` the clean pass keeps the residual stream after every block (``clean_residual``)."""
    runner = Runner(backend)
    if direction not in ("noising", "denoising"):
        raise ValueError(f"direction {direction!r}: use noising or denoising")
    target, src = (inp, source) if direction == "noising" or source is None else (source, inp)
    causal = backend.attention.causal
    for iset in sets:
        validate(iset, backend.n_layers, backend.n_heads, len(target), causal, None if src is None else len(src))
        if iset.edits_logits:
            runner.check_logit_edits()
    metric = resolve(backend, metric, len(target), target.token_ids)
    targets = targets_of(metric, target.token_ids)
    kw = dict(positions=metric.positions, targets=targets, answers=metric.answers)
    clean_residual: dict | None = {} if record else None
    clean = runner.forward([target], want_maps=want_maps, record_residual=clean_residual, **kw)
    ctx = EditContext(n_heads=backend.n_heads, head_dim=head_dim(backend), n_tokens=len(target))
    if any(s.needs_means for s in sets):
        ctx.means = (means or HeadMeans()).get(backend, runner)
    source_residual = None
    if any(s.needs_source for s in sets):
        rec, residual = HeadRecorder(), {}
        runner.forward([src], hooks=[rec], record_residual=residual)
        ctx.source = {layer: out[0] for layer, out in rec.outputs.items()}
        source_residual = residual
    return Prepared(runner, target, metric, targets, clean, ctx, source_residual, clean_residual)


def _maps(backend: Backend, inp: ModelInput, weights: np.ndarray) -> AttentionMaps:
    return AttentionMaps(
        weights=weights,
        tokens=inp.tokens,
        grid=inp.grid,
        special=inp.special,
        model=backend.spec.name,
        causal=backend.attention.causal,
    )


def prediction(backend: Backend, out: Outputs, top: int = 5) -> ModelOutput:
    """A readable prediction of row 0: class probabilities, the embedding, or the ``top`` next tokens
    after the last position (``top_k``: one row of ``{token_id, token, text, prob}``)."""
    if out.logits is not None:
        from attnscope.analysis.interventions import softmax

        probs = softmax(out.logits[0])
        labels = backend.labels or [str(i) for i in range(probs.size)]
        predicted = labels[int(probs.argmax())]
        return Classification(labels, probs.tolist(), predicted)
    if out.embedding is not None:
        return Embedding(int(out.embedding.shape[1]), out.embedding[0].tolist())
    lp = out.last_logprobs[0]
    order = [int(i) for i in np.argsort(-lp)[:top]]
    gen = backend.generator  # next-token outputs come from causal LMs, which have one
    labels = gen.labels_of(order) if gen is not None else [str(i) for i in order]
    text = gen.text_of if gen is not None else str
    tops = [{"token_id": i, "token": t, "text": text(i), "prob": float(np.exp(lp[i]))} for i, t in zip(order, labels)]
    best = tops[0]
    return NextToken(best["text"], best["token_id"], best["token"], [tops])  # top_k: one row, after the last position


def intervene(
    backend: Backend,
    inp: ModelInput,
    iset: InterventionSet,
    metric: MetricSpec = DEFAULT_METRIC,
    source: ModelInput | None = None,
    direction: str = "noising",
    means: HeadMeans | None = None,
    want_maps: bool = True,
) -> dict:
    """One intervention set on one input: ``clean`` and ``altered`` predictions, ``effects`` (every
    metric the task allows; causal LMs the chosen one), ``metric``, and with ``want_maps`` the
    altered maps ``[layer, head, query, key]`` (``altered_maps``) beside the clean ones, and the
    altered forward's value norms (``altered_value_norms``: per layer ``[head, key]``
    ``||v'_j W_O[h]||``, the values recomputed from the stream that forward fed each block, so an
    edit upstream shows in later layers' value-weighted maps; ``value_norm_tables``)."""
    prep = prepare(backend, inp, [iset], metric, source, direction, means, want_maps)
    pre: dict | None = {} if want_maps else None
    altered = prep.forward([iset], want_maps=want_maps, record_pre=pre)
    out = {
        "metric": prep.metric,
        "effects": all_effects(prep.metric, prep.clean, altered),
        "clean": prediction(backend, prep.clean),
        "altered": prediction(backend, altered),
        "target": prep.target,
    }
    if want_maps:
        out["clean_maps"] = _maps(backend, prep.target, prep.clean.maps[0])
        out["altered_maps"] = _maps(backend, prep.target, altered.maps[0])
        n = out["altered_maps"].shape[-1]
        streams = [pre[layer][0, :n] for layer in range(backend.sites.n_layers)]
        out["altered_value_norms"] = value_norm_tables(backend.sites, streams)
    return out


def grid_sets(n_layers: int, n_heads: int, method: str) -> list[InterventionSet]:
    """One set per head in ``(layer, head)`` order: ablate it (``zero``/``mean``/``uniform``) or
    patch it (``patch``)."""
    sets = []
    for layer in range(n_layers):
        for head in range(n_heads):
            item = HeadPatch(((layer, head),)) if method == "patch" else HeadAblation(((layer, head),), method)
            sets.append(InterventionSet((item,)))
    return sets


def head_effects(
    backend: Backend,
    inp: ModelInput,
    method: str = "zero",
    metric: MetricSpec = DEFAULT_METRIC,
    source: ModelInput | None = None,
    direction: str = "noising",
    means: HeadMeans | None = None,
    chunk: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The per-head effect grid: ``effect [layer, head]`` (metric change when that head alone is
    ablated or patched), with the clean prediction; ``grids`` adds classifiers' ``flip [layer, head]``.

    Startable families (``Sites.startable``: the Hugging Face ones) reuse the clean prefix: the heads
    of layer ``l`` run together (batches of at most ``chunk`` rows, row ``h`` editing head ``h``) through
    blocks ``l..L-1`` only, from the clean residual stream entering block ``l`` (recorded once), so the
    grid costs about half of ``L * H`` full forward passes. Zoo models run batches of ``chunk`` full
    passes, each row with its own edit."""
    sets = grid_sets(backend.n_layers, backend.n_heads, method)
    try:
        prefix = backend.sites.startable
    except SitesUnavailableError:
        prefix = False  # prepare refuses the model with the reason
    prep = prepare(backend, inp, sets[:1], metric, source, direction, means, record=prefix)
    if any(s.needs_means for s in sets) and prep.ctx.means is None:  # pragma: no cover - prepare saw sets[0]
        prep.ctx.means = (means or HeadMeans()).get(backend, prep.runner)
    chunk = max(1, min(int(chunk), MAX_GRID_CHUNK))
    kinds = [prep.metric.kind] + [k for k in ("flip",) if prep.clean.logits is not None and k != prep.metric.kind]
    values: dict[str, list[np.ndarray]] = {k: [] for k in kinds}
    n_l, n_h = backend.n_layers, backend.n_heads
    if prefix:  # (first set, rows, start layer): heads of one layer, run from that layer on
        batches = [(lay * n_h + h, min(chunk, n_h - h), lay) for lay in range(n_l) for h in range(0, n_h, chunk)]
    else:
        batches = [(i, min(chunk, len(sets) - i), None) for i in range(0, len(sets), chunk)]
    for first, size, layer in batches:
        altered = prep.forward(sets[first : first + size], start=layer)
        for k in kinds:
            values[k].append(effect(replace(prep.metric, kind=k), prep.clean, altered))
        if progress is not None:
            progress(first + size, len(sets))
    shape = (n_l, n_h)
    grids = {k: np.concatenate(v).reshape(shape) for k, v in values.items()}
    return {
        "effect": grids[prep.metric.kind],
        "grids": grids,
        "metric": prep.metric,
        "clean": prediction(backend, prep.clean),
        "target": prep.target,
    }
