"""The dataset-level job kinds the API offers: census, probe, faithfulness, head-effects, dla and circuit.

Their ``params`` models live in ``attnscope.server.schemas.jobs`` (pure pydantic: shapes and
bounds); each kind adds the checks that need the registries (``check``), and ``register_job_kinds``
puts them in ``JOB_KINDS`` (``create_app`` calls it). ``run_shard`` and ``merge`` are module-level
functions, so a worker process can import them by name.
"""

from __future__ import annotations

from functools import lru_cache

from attnscope.models import data_registry
from attnscope.models.registry import get_spec, require_text_model
from attnscope.pipelines.dataset_runs import census_shard, merge_census, pick_examples, run_probe
from attnscope.pipelines.datasets import check_split
from attnscope.pipelines.explainers import check_explainers
from attnscope.pipelines.faithfulness_eval import METRICS, check_metrics
from attnscope.server.jobs.kinds import ParamsError, register_job_kind, register_sharded_job_kind
from attnscope.server.schemas.jobs import (
    JOB_PARAMS,
    CensusParams,
    CircuitParams,
    DlaParams,
    FaithfulnessParams,
    HeadEffectsParams,
    ProbeParams,
)


def _field(name: str, check, *args):
    """Run one registry check (its result returned); its ValueError becomes a ``ParamsError`` naming
    the parameter."""
    try:
        return check(*args)
    except ValueError as exc:
        raise ParamsError(f"params.{name}: {exc}") from None


def check_census(params: CensusParams) -> None:
    """A text model and a split of the chosen data set."""
    _field("model", require_text_model, params.model)
    _field("split", check_split, params.dataset, params.split)


@lru_cache(maxsize=8)
def _cached_examples(folder: str, dataset: str, n: int, split: str | None, seed: int) -> tuple:
    return tuple(pick_examples(dataset, n, split, seed))


def _examples(dataset: str, n: int, split: str | None, seed: int) -> tuple:
    """The census' seeded sample, cached per data folder: a sample read from one folder is never served
    once ``ATTNSCOPE_DATA_DIR`` names another (a job on a folder without the set must fail, not reuse it)."""
    return _cached_examples(str(data_registry.data_dir()), dataset, n, split, seed)


def census_size(params: CensusParams) -> int:
    """Examples a census covers (``n``, or the whole split when it is smaller)."""
    return len(_examples(params.dataset, params.n, params.split, params.seed))


def census_run_shard(params: CensusParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)`` of the census' seeded sample: per-head running statistics."""
    everything = _examples(params.dataset, params.n, params.split, params.seed)
    return census_shard(models.get(params.model), list(everything[start:stop]), progress, total=len(everything))


def census_merge(params: CensusParams, partials: list[dict]) -> dict:
    return merge_census(partials, get_spec(params.model).name, params.dataset, params.split, params.seed)


def _probe(params: ProbeParams, service, progress) -> dict:
    loaded = service.models.get(params.model)
    return run_probe(
        loaded,
        params.dataset,
        params.n,
        params.split,
        params.seed,
        params.size,
        params.folds,
        progress,
        params.classifier,
    )


def check_faithfulness(params: FaithfulnessParams) -> None:
    """A text classifier, a split of the data set, known explainers and metrics."""
    _field("model", require_text_model, params.model, True)
    _field("split", check_split, params.dataset, params.split)
    _field("explainers", check_explainers, params.explainers)
    if params.metrics is not None:
        _field("metrics", check_metrics, params.metrics)


def _job_metrics(params: FaithfulnessParams) -> list[str]:
    return list(METRICS) if params.metrics is None else check_metrics(params.metrics)


def _job_examples(params: FaithfulnessParams) -> list:
    from attnscope.pipelines.datasets import load_dataset

    return load_dataset(params.dataset, params.split, allow_offensive=params.allow_offensive)[
        params.start : params.start + params.n
    ]


def faithfulness_size(params: FaithfulnessParams) -> int:
    n = len(_job_examples(params))
    if n == 0:
        raise ValueError(f"no examples in {params.dataset!r} from index {params.start}")
    return n


def _job_k(params: FaithfulnessParams) -> float:
    from attnscope.pipelines.datasets import K_FRACTION

    return K_FRACTION[params.dataset] if params.k is None else params.k


def faithfulness_run_shard(params: FaithfulnessParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)``: each explainer's scores and metrics, one record per example."""
    from attnscope.pipelines.faithfulness_shards import faithfulness_shard

    return faithfulness_shard(
        models.get(params.model),
        params.dataset,
        _job_examples(params)[start:stop],
        params.explainers,
        k=_job_k(params),
        convention=params.convention,
        removal=params.removal,
        count=params.count,
        metrics=_job_metrics(params),
        max_tokens=params.max_tokens,
        options=params.options.as_dict(),
        progress=progress,
    )


def faithfulness_merge(params: FaithfulnessParams, partials: list[dict]) -> dict:
    from attnscope.pipelines.faithfulness_shards import merge_faithfulness

    return merge_faithfulness(
        partials,
        model=get_spec(params.model).name,
        dataset=params.dataset,
        start=params.start,
        explainers=params.explainers,
        metrics=_job_metrics(params),
        convention=params.convention,
        removal=params.removal,
        count=params.count,
        k=_job_k(params),
        max_tokens=params.max_tokens,
    )


def head_effects_size(params: HeadEffectsParams) -> int:
    return len(_examples(params.dataset, params.n, params.split, params.seed))


def head_effects_run_shard(params: HeadEffectsParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)``: running statistics of every head's ablation effect."""
    from attnscope.pipelines.interventions import InterventionError
    from attnscope.pipelines.interventions.dataset import grid_shard

    examples = list(_examples(params.dataset, params.n, params.split, params.seed)[start:stop])
    backend = models.get(params.model)
    try:
        return grid_shard(
            backend, examples, params.method, params.metric, params.max_tokens, params.chunk, progress=progress
        )
    except InterventionError as exc:  # the job fails with the reason (a model or metric that does not fit)
        raise ValueError(str(exc)) from None


def head_effects_merge(params: HeadEffectsParams, partials: list[dict]) -> dict:
    from attnscope.pipelines.interventions.dataset import merge_grids

    return merge_grids(partials, get_spec(params.model).name, params.method, params.dataset)


def _attributable(name: str) -> str:
    """The task of a text model whose logits the dla job can attribute (a causal LM or a classifier)."""
    spec = require_text_model(name)
    if spec.task not in ("causal-lm", "classification"):
        raise ValueError(
            f"direct logit attribution reads a causal LM's next-token logits or a classifier's class logits; "
            f"{name!r} (task {spec.task}) outputs an embedding: it has no unembedding or classification head"
        )
    return spec.task


def _fits(task: str, target: str) -> None:
    if task == "classification" and target == "next":
        raise ValueError("target 'next' reads a causal LM's next token; a classifier takes 'predicted' or 'label'")
    if task == "causal-lm" and target == "label":
        raise ValueError("target 'label' is a classifier's gold class; a causal LM takes 'predicted' or 'next'")


def check_dla(params: DlaParams) -> None:
    """A causal LM or a text classifier, a target that fits it and a split of the chosen data set (a
    family the readout cannot read fails the job with the reason once the model is loaded)."""
    task = _field("model", _attributable, params.model)
    _field("target", _fits, task, params.target)
    _field("split", check_split, params.dataset, params.split)


def dla_size(params: DlaParams) -> int:
    return len(_examples(params.dataset, params.n, params.split, params.seed))


def dla_run_shard(params: DlaParams, models, start: int, stop: int, progress) -> dict:
    """Examples ``[start, stop)``: running statistics of every head's, MLP's and bias's part of the logit."""
    from attnscope.pipelines.writes.dla_dataset import dla_shard

    examples = list(_examples(params.dataset, params.n, params.split, params.seed)[start:stop])
    return dla_shard(models.get(params.model), examples, params.max_tokens, params.target, progress)


def dla_merge(params: DlaParams, partials: list[dict]) -> dict:
    from attnscope.pipelines.writes.dla_dataset import merge_dla

    name = get_spec(params.model).name
    return merge_dla(partials, name, params.dataset, params.split, params.seed, params.target, params.max_tokens)


def check_circuit(params: CircuitParams) -> None:
    """A causal LM (what needs the loaded model, token lengths and pairs the model fails, fails the job
    with the reason)."""
    _field("model", require_text_model, params.model)
    if get_spec(params.model).task != "causal-lm":
        raise ParamsError(f"params.model: circuits read a causal LM's next-token logits; {params.model!r} is not one")
    if params.ablation == "mean" and params.size < 2:
        raise ParamsError(
            "params.ablation: mean ablation needs two pairs at least (the mean over one pair is the pair)"
        )


def circuit_size(params: CircuitParams) -> int:
    return params.size


def circuit_resolve(params: CircuitParams, models) -> CircuitParams:
    """At submit, with the model loaded: tasks capitals and ioi become the pairs the model solves (their
    count of generated items in ``generated``; none solved is a 422), and ``edges`` and the curve's
    edge counts are checked against the model's graph (an unknown node or a count past its edges is a
    422 here, not a failed job)."""
    from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError
    from attnscope.pipelines.circuits.graph import Graph
    from attnscope.pipelines.circuits.task_sets import solved_pairs
    from attnscope.server.schemas.circuits import PairText

    if params.task in ("capitals", "ioi") and params.pairs is not None:
        raise ParamsError(
            f"params.pairs: task {params.task} builds its pairs from the model; post your own pairs with task pairs"
        )
    backend = models.get(params.model)
    try:
        graph = Graph.of(backend.sites)
    except (SitesUnavailableError, SiteOutOfRangeError) as exc:
        raise ParamsError(f"params.model: {exc}") from None
    n_edges = int(graph.valid().sum())
    for e in params.edges or ():
        sender, receiver = (part.strip() for part in e.split("->"))
        _field("edges", graph.edge, sender, receiver)
    if params.curve and max(params.curve) > n_edges:
        raise ParamsError(
            f"params.curve: {max(params.curve)} edges is more than the {n_edges} edges of {params.model}'s graph; "
            f"use counts up to {n_edges}"
        )
    if params.task not in ("capitals", "ioi"):
        return params
    try:
        found = solved_pairs(backend, params.task, params.n, params.seed)
    except ValueError as exc:
        raise ParamsError(f"params.task: {exc}") from None
    pairs = [PairText(clean=p.clean, corrupted=p.corrupted, answer=p.answer, wrong=p.wrong, label=p.label)
             for p in found.pairs]  # fmt: skip
    return params.model_copy(update={"pairs": pairs, "generated": found.candidates})


def _circuit_args(params: CircuitParams) -> dict:
    from attnscope.pipelines.circuits.texts import TextPair

    pairs = tuple(TextPair(p.clean, p.corrupted, p.answer, p.wrong, p.label or "") for p in params.pairs or ())
    edges = None
    if params.edges is not None:
        edges = tuple(tuple(part.strip() for part in e.split("->")) for e in params.edges)
    return {
        "half": params.half, "seed": params.seed, "bos": params.bos, "metric": params.metric, "pairs": pairs,
        "method": params.method,
        "steps": params.steps, "k": params.k, "threshold": params.threshold, "edges": edges,
        "ablation": params.ablation,
        "curve_ks": tuple(params.curve),
    }  # fmt: skip


def circuit_run_shard(params: CircuitParams, models, start: int, stop: int, progress) -> dict:
    """Pairs ``[start, stop)``: running statistics of every edge's score and each pair's faithfulness."""
    from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError
    from attnscope.pipelines.circuits.dataset import circuit_shard

    try:
        return circuit_shard(
            models.get(params.model), params.task, params.size, start, stop, **_circuit_args(params), progress=progress
        )
    except (SitesUnavailableError, SiteOutOfRangeError) as exc:  # the job fails with the reason
        raise ValueError(str(exc)) from None


def circuit_merge(params: CircuitParams, partials: list[dict]) -> dict:
    from attnscope.pipelines.circuits.dataset import merge_circuit

    return merge_circuit(
        partials,
        top=params.top,
        curve_ks=tuple(params.curve),
        model=get_spec(params.model).name,
        task=params.task,
        method=params.method,
        steps=params.steps if params.method == "eap-ig" else None,
        metric="loss" if params.task == "induction" else params.metric,
        ablation=params.ablation,
        circuit="given" if params.edges is not None else "own top k" if params.threshold is None else "own threshold",
        k=None if params.edges is not None or params.threshold is not None else params.k,
        threshold=params.threshold,
        generated=params.generated,
    )


def register_job_kinds() -> None:
    """Register census, probe, faithfulness, head-effects, dla and circuit in ``JOB_KINDS`` (again: the same kinds,
    replaced)."""
    register_sharded_job_kind(
        "census",
        JOB_PARAMS["census"],
        size=census_size,
        run_shard=census_run_shard,
        merge=census_merge,
        check=check_census,
        description="per-head shift, entropy, distance and sink statistics over N examples (mean and std)",
        shard_size=25,
    )
    register_job_kind(
        "probe",
        JOB_PARAMS["probe"],
        _probe,
        "per-layer accuracy of predicting the label from that layer's attention maps alone",
        check=check_census,
    )
    register_sharded_job_kind(
        "faithfulness",
        JOB_PARAMS["faithfulness"],
        size=faithfulness_size,
        run_shard=faithfulness_run_shard,
        merge=faithfulness_merge,
        check=check_faithfulness,
        description="ERASER faithfulness + plausibility table (explainer x metric) over a data set",
        shard_size=10,
    )
    register_sharded_job_kind(
        "head-effects",
        JOB_PARAMS["head-effects"],
        size=head_effects_size,
        run_shard=head_effects_run_shard,
        merge=head_effects_merge,
        check=check_census,
        description="per-head ablation effect over N examples: mean and std of the metric change, classifiers' "
        "flip rate",
        shard_size=10,
    )
    register_sharded_job_kind(
        "dla",
        JOB_PARAMS["dla"],
        size=dla_size,
        run_shard=dla_run_shard,
        merge=dla_merge,
        check=check_dla,
        description="direct logit attribution of each example's next token over N examples: every head's (and "
        "MLP's) mean part of the logit with its 95 % t interval",
        shard_size=25,
    )
    register_sharded_job_kind(
        "circuit",
        JOB_PARAMS["circuit"],
        size=circuit_size,
        run_shard=circuit_run_shard,
        merge=circuit_merge,
        check=check_circuit,
        resolve=circuit_resolve,
        description="EAP / EAP-IG on every clean/corrupted pair of a set: each edge's mean score with its t interval "
        "over the pairs, and the circuit's faithfulness",
        shard_size=10,
    )
