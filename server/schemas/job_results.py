"""Schemas of a finished job's result (``GET /jobs/{id}/result``): one ``*ResultPublic`` model per
job kind, each with ``kind`` as its discriminator, and ``JOB_RESULTS`` mapping a kind's name to it.

The route validates the stored result with its kind's model and answers it as stored (same fields,
same order; the CSV download is its ``rows``). The models forbid fields they do not name, so a
pipeline that adds a field to its result fails the route's tests until the model names it too. A job
kind without a model here (a test's kind) answers its result unvalidated.

A new job kind adds its result model in three steps:

1. a ``<Name>ResultPublic`` model below (plain-noun models for its nested parts, e.g. ``<Name>Row``
   for the CSV rows), with ``kind: Literal["<kind>"] = "<kind>"`` and every field typed to its leaves
   (``tests/server/test_schemas.py`` refuses a bare ``list``/``dict``/``Any``);
2. an entry ``"<kind>": <Name>ResultPublic`` in ``JOB_RESULTS`` (``JobResultPublic``, the route's
   documented answer, is built from that registry, so the OpenAPI document lists it by itself);
3. a re-export in ``attnscope.server.schemas`` (the package's ``__init__``).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """A part of a job's result: no field the model does not name."""

    model_config = ConfigDict(extra="forbid")


class MeanInterval(Strict):
    """A mean over ``n`` examples and its interval ``[low, high]`` (``None``: no interval, e.g. one example);
    the level and method are the table's ``interval``."""

    mean: float | None = None
    low: float | None = None
    high: float | None = None
    n: int


class IntervalMethod(Strict):
    """How a result's intervals were made (``docs/methods/statistics.md``)."""

    level: float = Field(..., description="coverage, 0.95")
    method: Literal["BCa", "percentile", "t", "wilson"] = Field(
        ..., description="bootstrap BCa/percentile, Student t, or Wilson's interval of a proportion"
    )
    over: Literal["examples", "seeds", "folds"] = Field(..., description="what the values vary over")
    resamples: int | None = Field(None, description="bootstrap resamples")
    seed: int | None = Field(None, description="the bootstrap's random seed")


class HeadStats(Strict):
    """One census metric per head over the examples: ``mean`` and ``std`` (population), each
    ``[layer][head]``, and the 95 % t interval of the mean ``[low, high]`` with its count ``n``."""

    mean: list[list[float]]
    std: list[list[float]]
    low: list[list[float | None]] | None = None
    high: list[list[float | None]] | None = None
    n: list[list[int]] | None = Field(None, description="examples where the metric is defined")


class CensusRow(Strict):
    """One head of the census table (a CSV row): each metric's mean and std (population) over the examples,
    the 95 % t interval of the mean ``[low, high]`` (None: fewer than two values) and ``n``, the examples where
    the metric is defined."""

    head: str = Field(..., description="LxHy")
    layer: int
    head_index: int
    shift_score_mean: float
    shift_score_std: float
    shift_score_low: float | None = None
    shift_score_high: float | None = None
    shift_score_n: int | None = None
    best_mass_mean: float
    best_mass_std: float
    best_mass_low: float | None = None
    best_mass_high: float | None = None
    best_mass_n: int | None = None
    previous_mean: float
    previous_std: float
    previous_low: float | None = None
    previous_high: float | None = None
    previous_n: int | None = None
    next_mean: float
    next_std: float
    next_low: float | None = None
    next_high: float | None = None
    next_n: int | None = None
    norm_entropy_mean: float
    norm_entropy_std: float
    norm_entropy_low: float | None = None
    norm_entropy_high: float | None = None
    norm_entropy_n: int | None = None
    top1_mean: float
    top1_std: float
    top1_low: float | None = None
    top1_high: float | None = None
    top1_n: int | None = None
    distance_mean: float
    distance_std: float
    distance_low: float | None = None
    distance_high: float | None = None
    distance_n: int | None = None
    cls_sink_mean: float
    cls_sink_std: float
    cls_sink_low: float | None = None
    cls_sink_high: float | None = None
    cls_sink_n: int | None = None
    sep_sink_mean: float
    sep_sink_std: float
    sep_sink_low: float | None = None
    sep_sink_high: float | None = None
    sep_sink_n: int | None = None
    sink_mean: float
    sink_std: float
    sink_low: float | None = None
    sink_high: float | None = None
    sink_n: int | None = None


class CensusPerExample(Strict):
    """Every example's value of every census metric: ``values[metric][i][layer][head]`` for the example
    ``id[i]`` (``None``: undefined there)."""

    id: list[str]
    values: dict[str, list[list[list[float | None]]]]


class CensusResultPublic(Strict):
    """Result of a ``census`` job: per-head statistics over a seeded sample of a data set."""

    kind: Literal["census"] = "census"
    model: str
    dataset: str
    split: str | None = None
    n: int = Field(..., description="examples measured")
    seed: int
    metrics: dict[str, HeadStats] = Field(..., description="per metric name (shift_score, ..., sink)")
    interval: IntervalMethod | None = None
    rows: list[CensusRow] = Field(..., description="one per head (the CSV download)")
    per_example: CensusPerExample | None = Field(
        None,
        description="every example's values (long-format CSV: format=csv&table=examples); None when the job held "
        "more than 2,000,000 of them (examples x layers x heads x metrics)",
    )
    example_ids: list[str] | None = Field(
        None,
        description="every example's id, in order (GET /datasets/{dataset}/examples/{id} has its text); None in "
        "results made before the ids were kept",
    )


class ProbeRow(Strict):
    """One layer of the probe table (a CSV row)."""

    layer: int
    accuracy: float = Field(..., description="cross-validated accuracy of the label from this layer's maps")
    accuracy_std: float = Field(..., description="std over the folds")
    chance: float = Field(..., description="accuracy of always answering the majority class")
    accuracy_low: float | None = Field(None, description="95 % Wilson interval of the accuracy over the n examples")
    accuracy_high: float | None = None
    n: int | None = Field(None, description="examples predicted (each once, in its held-out fold)")


class ProbePerExample(Strict):
    """Each example's held-out outcome: ``correct[layer_position][i]`` for the example ``id[i]`` of ``label[i]``
    (layers in the order of ``rows``)."""

    id: list[str]
    label: list[int]
    correct: list[list[bool]]


class ProbeResultPublic(Strict):
    """Result of a ``probe`` job: the label predicted from each layer's attention maps alone."""

    kind: Literal["probe"] = "probe"
    model: str
    dataset: str
    n: int
    folds: int
    size: int = Field(..., description="maps cropped/padded to size x size")
    classifier: Literal["logistic", "cnn"]
    chance: float
    interval: IntervalMethod | None = None
    rows: list[ProbeRow] = Field(..., description="one per layer (the CSV download)")
    per_example: ProbePerExample | None = Field(
        None, description="each example's held-out outcome per layer (long-format CSV: format=csv&table=examples)"
    )


class FaithfulnessRow(Strict):
    """One explainer of the faithfulness table (a CSV row): the mean of each asked metric over the
    examples (``None``: not measurable, e.g. plausibility without human rationales). Only the asked
    metrics are present in the answer."""

    explainer: str
    n: int = Field(..., description="examples the explainer ran on")
    comprehensiveness: float | None = None
    sufficiency: float | None = None
    aopc_comprehensiveness: float | None = None
    aopc_sufficiency: float | None = None
    comprehensiveness_entropy: float | None = None
    comprehensiveness_kl: float | None = None
    sufficiency_entropy: float | None = None
    sufficiency_kl: float | None = None
    token_f1: float | None = None
    iou_f1: float | None = None
    auprc: float | None = None
    iou_precision: float | None = Field(None, description="with iou_f1: mean precision (tables merge)")
    iou_recall: float | None = Field(None, description="with iou_f1: mean recall")
    seconds_per_example: float | None = None


class Truncation(Strict):
    """What truncating the inputs to the model's limit cut."""

    max_tokens: int
    examples_truncated: int
    tokens_cut: int
    human_tokens: int
    human_tokens_lost: int
    human_fraction_lost: float | None = Field(None, description="None when the data set has no human rationales")


class FaithfulnessCurves(Strict):
    """Mean comprehensiveness and sufficiency per bin (fraction of tokens removed or kept)."""

    bins: list[float]
    comp_curve: list[float | None]
    suff_curve: list[float | None]


class FaithfulnessPerExample(Strict):
    """Each example's value of every metric: ``values[explainer][metric][i]`` for the example at data-set
    index ``index[i]`` (``None``: not measured; IOU F1 is kept as its precision and recall)."""

    index: list[int]
    values: dict[str, dict[str, list[float | None]]]


class FaithfulnessResultPublic(Strict):
    """Result of a ``faithfulness`` job: the explainer x metric table over a data set."""

    kind: Literal["faithfulness"] = "faithfulness"
    model: str
    dataset: str
    start: int
    n: int
    convention: str
    removal: str
    count: str
    k: float
    metrics: list[str]
    accuracy: float = Field(..., description="the classifier's accuracy on these examples")
    truncation: Truncation
    skipped: dict[str, int] = Field(..., description="per explainer: examples skipped by its token cap")
    curves: dict[str, FaithfulnessCurves] = Field(..., description="per explainer that ran")
    wall_time_s: float
    rows: list[FaithfulnessRow] = Field(..., description="one per explainer (the CSV download)")
    interval: IntervalMethod | None = None
    intervals: dict[str, dict[str, MeanInterval | None]] | None = Field(
        None, description="per explainer and metric: the row's mean with its interval over the examples and n"
    )
    vs_random: dict[str, dict[str, MeanInterval | None]] | None = Field(
        None,
        description="per explainer and metric: the paired difference explainer - random on the examples both ran "
        "on (a difference only when its interval excludes 0); None without the random explainer",
    )
    per_example: FaithfulnessPerExample | None = Field(
        None, description="every example's value (long-format CSV: format=csv&table=examples)"
    )


class HeadEffectRow(Strict):
    """One head of the head-effects table (a CSV row): its ablation effect's mean and std over the
    examples, and for classifiers how often the ablation flipped the prediction."""

    head: str = Field(..., description="LxHy")
    layer: int
    head_index: int
    mean_effect: float
    std_effect: float
    n: int | None = Field(None, description="examples the effect was measured on")
    flip_rate: float | None = None
    mean_importance: float | None = Field(
        None, description="the head's attention-based importance (confidence: mean max weight), averaged"
    )
    effect_low: float | None = Field(None, description="95 % t interval of mean_effect over the examples")
    effect_high: float | None = None
    p: float | None = Field(None, description="two-sided p of mean effect 0 (t test; None: a constant effect)")
    p_holm: float | None = Field(None, description="p adjusted by Holm across all the heads")
    p_bh: float | None = Field(None, description="p adjusted by Benjamini-Hochberg across all the heads")


class TopHead(Strict):
    """A head of large mean |effect|."""

    layer: int
    head: int
    mean_effect: float


class HeadEffectExample(Strict):
    """One example the grid was measured on: its id, its length after cutting, the clean prediction,
    and the Spearman rank correlation of its |effect| grid with its heads' attention-based importance."""

    id: str | int
    tokens: int
    predicted: int | str | None = None
    rank_rho: float | None = Field(None, description="Spearman rho over the heads (None: a constant grid)")
    rank_p: float | None = Field(None, description="two-sided p of rank_rho")
    effect: list[list[float]] | None = Field(None, description="[layer][head] this example's effect grid")


class RankSpread(Strict):
    """The examples' rank correlations: ``n`` defined ones, their mean, std, median and range."""

    n: int
    mean: float | None = None
    std: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None


class RankOfMeans(Strict):
    """Spearman correlation of the mean |effect| grid with the mean importance (``n`` heads)."""

    rho: float | None = None
    p: float | None = None
    n: int


class HeadEffectsRankAgreement(Strict):
    """Causal effect against attention-based importance: per example, then of the means."""

    per_example: RankSpread
    of_means: RankOfMeans


class StandoutHeads(Strict):
    """Heads whose mean effect differs from 0 after one correction: how many, and which (most certain first)."""

    count: int
    heads: list[str]


class HeadEffectsStandouts(Strict):
    """The heads that stand out at ``alpha`` among the ``tested`` ones, after Holm and after BH."""

    alpha: float
    tested: int = Field(..., description="heads with a test (an effect constant over the examples has none)")
    holm: StandoutHeads
    bh: StandoutHeads


class HeadEffectsResultPublic(Strict):
    """Result of a ``head-effects`` job: one ablation per head on every example, the effect's mean and
    spread per head (``[layer][head]``), the heads of largest mean |effect| and one CSV row per head."""

    kind: Literal["head-effects"] = "head-effects"
    model: str
    dataset: str
    method: str = Field(..., description="ablation: zero, mean or uniform")
    metric: str
    n: int = Field(..., description="examples measured")
    mean_effect: list[list[float]]
    std_effect: list[list[float]]
    flip_rate: list[list[float]] | None = None
    layer_mean_abs_effect: list[float]
    top: list[TopHead]
    mean_importance: list[list[float]] | None = Field(
        None, description="[layer][head] attention-based importance (confidence), mean over the examples"
    )
    rank_agreement: HeadEffectsRankAgreement | None = Field(
        None, description="Spearman correlation of |effect| with importance: per example (spread) and of the means"
    )
    interval: IntervalMethod | None = None
    effect_low: list[list[float | None]] | None = Field(None, description="[layer][head] 95 % interval, low end")
    effect_high: list[list[float | None]] | None = Field(None, description="[layer][head] 95 % interval, high end")
    standouts: HeadEffectsStandouts | None = Field(
        None, description="heads whose mean effect differs from 0 after Holm and after Benjamini-Hochberg"
    )
    rows: list[HeadEffectRow] = Field(..., description="one per head (the CSV download)")
    examples: list[HeadEffectExample]


class PartInterval(Strict):
    """One scalar part of the logit over the examples: its mean, 95 % t interval and n."""

    mean: float | None = None
    low: float | None = None
    high: float | None = None
    n: int


class CircuitEdgeRow(Strict):
    """One edge of the circuit table (a CSV row): its score's mean over the pairs, the sample sd, the
    95 % t interval of the mean, the two-sided p of mean 0 and n (pairs)."""

    rank: int = Field(..., description="by decreasing |mean|")
    sender: str
    receiver: str = Field(..., description="k/v receivers are key/value heads (grouped-query attention)")
    mean: float | None = None
    sd: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    n: int


class CircuitCurvePoint(Strict):
    """The faithfulness of each pair's own top-k circuit: mean over the pairs, 95 % t interval and n."""

    k: int
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    n: int


class LayerParts(Strict):
    """One part per layer (``[layer]``): mean, 95 % t interval and n."""

    mean: list[float | None]
    low: list[float | None]
    high: list[float | None]
    n: list[int]


class HeadParts(Strict):
    """Each head's part (``[layer][head]``): mean, 95 % t interval and n."""

    mean: list[list[float | None]]
    low: list[list[float | None]]
    high: list[list[float | None]]
    n: list[list[int]]


class DlaRow(Strict):
    """One head of the DLA table (a CSV row): its mean part of the logit over the examples, the 95 % t
    interval (None: fewer than two examples) and n."""

    head: str = Field(..., description="LxHy")
    layer: int
    head_index: int
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    n: int


class DlaTopHead(Strict):
    """A head of large mean |part|."""

    layer: int
    head: int
    mean: float


class DlaExample(Strict):
    """One example attributed: its id, length, target token, logit, the parts' rounding error and its
    heads' parts ``[layer][head]``."""

    id: str | int
    tokens: int
    target_id: int
    target: str
    logit: float
    residual_error: float = Field(..., description="logit minus the sum of its parts (float rounding)")
    heads: list[list[float]]


class DlaResultPublic(Strict):
    """Result of a ``dla`` job: each example's next-token logit at its last position (a classifier: its
    class logit) split into the embedding, heads, MLPs and biases (norm scales frozen per example),
    averaged over the examples. The means conserve as the parts do: embed + heads + attn_bias + mlp
    (+ norm_bias) + bias = logit."""

    kind: Literal["dla"] = "dla"
    model: str
    dataset: str
    split: str | None = None
    seed: int
    target: Literal["predicted", "next", "label"]
    max_tokens: int
    n: int = Field(..., description="examples attributed")
    skipped: int = Field(..., description="examples without a next token (target 'next', one-token texts)")
    interval: IntervalMethod
    heads: HeadParts
    attn_bias: LayerParts = Field(..., description="[layer] the attention output bias's part (0 without one)")
    mlp: LayerParts
    norm_bias: LayerParts | None = Field(
        None, description="[layer] a post-norm classifier's block LayerNorm biases (None: pre-norm, none)"
    )
    embed: PartInterval
    bias: PartInterval = Field(
        ..., description="the final norm's bias and the unembedding bias (a classifier: its pooler's bias too)"
    )
    logit: PartInterval
    top: list[DlaTopHead] = Field(..., description="the 10 heads of largest mean |part|")
    rows: list[DlaRow] = Field(..., description="one per head (the CSV download)")
    examples: list[DlaExample] = Field(..., description="long-format CSV: format=csv&table=examples")


class CircuitPerExample(Strict):
    """Every pair's values, ``key[i]`` for pair ``index[i]``; ``curve[i]`` at the result's curve ks."""

    index: list[int]
    label: list[str]
    tokens: list[int]
    m_clean: list[float]
    m_corrupted: list[float]
    m_empty: list[float]
    faithfulness: list[float]
    edges: list[int] = Field(default_factory=list, description="edges in each pair's circuit")
    curve: list[list[float]]


class CircuitResultPublic(Strict):
    """Result of a ``circuit`` job: EAP / EAP-IG on every pair of a set, each edge's mean score over the
    pairs with its interval (``rows``), and the circuit's faithfulness with its interval."""

    kind: Literal["circuit"] = "circuit"
    model: str
    task: str
    method: str
    steps: int | None = None
    metric: str
    ablation: Literal["corrupted", "mean"]
    circuit: str = Field(
        ...,
        description="'own top k' (each pair's own top k edges), 'own threshold' (each pair's edges with |score| >= "
        "threshold) or 'given' (params.edges)",
    )
    k: int | None = None
    threshold: float | None = None
    n: int = Field(..., description="pairs measured")
    generated: int | None = Field(
        None, description="capitals, ioi: items generated, of which the n the model solves were kept"
    )
    n_layers: int
    n_heads: int
    n_kv_heads: int
    n_edges: int
    m_clean: MeanInterval
    m_corrupted: MeanInterval
    m_empty: MeanInterval = Field(..., description="the metric with every edge patched (the faithfulness's 0)")
    faithfulness: MeanInterval = Field(..., description="(M(circuit) - M(empty)) / (M(clean) - M(empty)), per pair")
    curve: list[CircuitCurvePoint]
    interval: IntervalMethod
    rows: list[CircuitEdgeRow] = Field(..., description="the top edges by |mean score| (the CSV download)")
    per_example: CircuitPerExample = Field(..., description="every pair's values (format=csv&table=examples)")


JOB_RESULTS: dict[str, type[BaseModel]] = {
    "census": CensusResultPublic,
    "probe": ProbeResultPublic,
    "faithfulness": FaithfulnessResultPublic,
    "head-effects": HeadEffectsResultPublic,
    "dla": DlaResultPublic,
    "circuit": CircuitResultPublic,
}
"""The result model of each job kind, by kind name (see the module docstring to add one)."""

JobResultPublic = Annotated[Union[tuple(JOB_RESULTS.values())], Field(discriminator="kind")]  # noqa: UP007
"""What ``GET /jobs/{id}/result`` answers (JSON): one of ``JOB_RESULTS``' models, told apart by ``kind``."""
