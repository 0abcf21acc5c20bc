"""The circuits' metric, differentiable (EAP needs its gradient): the causal-LM metrics of the
interventions (``attnscope.analysis.interventions.CAUSAL_METRICS``: ``loss``, ``answer_logit_diff``)
plus ``answer_prob``, computed from ``logits [batch, pos, vocab]`` and averaged over the batch.

``loss``: the mean next-token loss at ``positions`` (default: every position with a next token);
``answer_logit_diff``: ``logit[correct] - logit[wrong]`` at ``positions`` (default the last);
``answer_prob``: ``softmax(logits)[correct]`` there. ``answers``: one ``(correct, wrong)`` per row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from attnscope.analysis.interventions import CAUSAL_METRICS
from attnscope.pipelines.circuits.graph import CircuitInputError

METRICS = (*CAUSAL_METRICS, "answer_prob")


@dataclass(frozen=True)
class CircuitMetric:
    kind: str = "answer_logit_diff"
    positions: tuple[int, ...] | None = None
    answers: tuple[tuple[int, int], ...] | None = None

    def check(self, n_rows: int, n_tokens: int) -> None:
        if self.kind not in METRICS:
            raise CircuitInputError(f"metric {self.kind!r} is not one of {', '.join(METRICS)}")
        if self.kind != "loss" and (self.answers is None or len(self.answers) != n_rows):
            raise CircuitInputError(f"metric {self.kind} needs one (correct, wrong) answer pair per clean input")
        hi = n_tokens - 2 if self.kind == "loss" else n_tokens - 1
        for p in self.positions or ():
            if not -n_tokens <= p <= hi:
                raise CircuitInputError(f"position {p} is out of range for {n_tokens} tokens (use 0..{hi})")

    def rows(self, rows: slice) -> CircuitMetric:
        """The metric of batch rows ``rows`` alone (their answers)."""
        return replace(self, answers=None if self.answers is None else self.answers[rows])

    def __call__(self, logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Scalar: the metric of ``logits [batch, pos, vocab]`` on inputs ``ids [batch, pos]``."""
        n = logits.shape[1]
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        if self.kind == "loss":
            pos = torch.as_tensor(self.positions or range(n - 1), device=logits.device) % n
            logp = torch.log_softmax(logits[:, pos], -1)
            target = ids[:, (pos + 1) % n]
            return -logp.gather(-1, target[..., None]).mean()
        pos = torch.as_tensor(self.positions or (n - 1,), device=logits.device) % n
        ans = torch.as_tensor(self.answers, device=logits.device)  # [batch, 2]
        at = logits[:, pos]  # [b, P, vocab]
        if self.kind == "answer_prob":
            at = torch.softmax(at, -1)
            return at.gather(-1, ans[:, None, :1].expand(-1, len(pos), 1)).mean()
        got = at.gather(-1, ans[:, None, :].expand(-1, len(pos), 2))
        return (got[..., 0] - got[..., 1]).mean()
