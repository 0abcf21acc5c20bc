"""The per-request compute budget of interactive faithfulness (``ATTNSCOPE_COMPUTE_BUDGET``).

Each option is bounded in its schema (``attnscope.server.schemas.faithfulness``); their product is
bounded here. The cost of a request is counted in *token-steps*: for each explainer, the input's
tokens times the forward/backward passes it runs over them, plus the metrics' passes:

=====================================  ==================================
explainer                              passes over the ``n`` tokens
=====================================  ==================================
attention, rollout, random             1
attn_grad, saliency, input_x_gradient  2 (forward + backward)
deeplift                               2
integrated_gradients                   2 x (n_steps + 1)
occlusion                              n + 1 (one pass per token)
flow                                   n (one max-flow per token pair)
metrics (per explainer)                len(bins) x 2 + 1 (comprehensiveness and sufficiency)
=====================================  ==================================

A request over the budget gets **413** ``budget_exceeded`` saying what it costs and how to run it as
a job. A batch of steps (IG ``internal_batch_size``, occlusion ``perturbations_per_eval``) times the
tokens is a memory bound (:data:`MAX_BATCH_TOKENS`), checked here too.
"""

from __future__ import annotations

from attnscope.server.errors import ApiError

MAX_BATCH_TOKENS = 16_384  # token rows in one batched forward pass of an explainer
_PASSES = {"attention": 1, "rollout": 1, "random": 1, "attn_grad": 2, "saliency": 2, "input_x_gradient": 2}
_PASSES.update(deeplift=2)
_METRIC_PASSES = 2 * 5 + 1  # ERASER's five bins, comprehensiveness and sufficiency, plus the full input


def explainer_cost(name: str, n_tokens: int, options: dict) -> int:
    """Token-steps of explainer ``name`` on ``n_tokens`` tokens with ``options`` (its own dict)."""
    if name == "integrated_gradients":
        passes = 2 * (int(options.get("n_steps", 32)) + 1)
    elif name == "occlusion":
        passes = n_tokens + 1
    elif name == "flow":
        passes = n_tokens
    else:
        passes = _PASSES.get(name, 2)
    return n_tokens * passes


def request_cost(explainers: list[str], n_tokens: int, options: dict[str, dict], with_metrics: bool = True) -> int:
    """Token-steps of a whole faithfulness request (explainers plus, per explainer, the metrics)."""
    per_metric = n_tokens * _METRIC_PASSES if with_metrics else 0
    return sum(explainer_cost(e, n_tokens, options.get(e, {})) + per_metric for e in explainers)


def check_budget(
    explainers: list[str], n_tokens: int, options: dict[str, dict], budget: int, with_metrics: bool = True
) -> int:
    """The request's cost; ``ApiError`` 413 ``budget_exceeded`` when over ``budget`` or when a batch
    of steps times the tokens is over :data:`MAX_BATCH_TOKENS`."""
    for name, key in (("integrated_gradients", "internal_batch_size"), ("occlusion", "perturbations_per_eval")):
        batch = options.get(name, {}).get(key)
        if name in explainers and batch is not None and batch * n_tokens > MAX_BATCH_TOKENS:
            raise ApiError(
                413,
                f"options.{name}.{key}={batch} x {n_tokens} tokens = {batch * n_tokens} token rows in one forward "
                f"pass, over the limit of {MAX_BATCH_TOKENS}; use {key} <= {max(1, MAX_BATCH_TOKENS // n_tokens)} "
                "or omit it (the default fits)",
                code="budget_exceeded",
            )
    cost = request_cost(explainers, n_tokens, options, with_metrics)
    if cost > budget:
        parts = ", ".join(f"{e} {explainer_cost(e, n_tokens, options.get(e, {}))}" for e in explainers)
        raise ApiError(
            413,
            f"this request costs {cost} token-steps (tokens x steps x explainers: {n_tokens} tokens; {parts}; "
            f"plus the metrics), over this server's per-request budget of {budget} (ATTNSCOPE_COMPUTE_BUDGET). "
            "Lower options.integrated_gradients.n_steps, choose fewer explainers or shorten the text; or run it as a "
            'job, which has no per-request budget and reports progress: POST /api/v1/jobs {"kind": "faithfulness", '
            '"params": {...}} (GET /api/v1/jobs/kinds lists its parameters)',
            code="budget_exceeded",
        )
    return cost
