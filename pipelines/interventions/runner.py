"""One batched forward pass of any backend with per-request edits, on ``Sites`` and the session.

``Runner(backend)`` checks once that the model's attention takes per-request edits
(``backend.attention_edit_refusal``) and that its family has ``Sites`` (``backend.sites``), and
``forward(inputs, hooks, residual, want_maps, positions, targets, answers)`` runs a padded batch
through ``backend.forward_batch`` inside one request session (``attnscope.models.session``):

- attention hooks (``RowEdits``, ``HeadRecorder``) go to ``session(hooks=...)``: ``attnscope_qk``
  and the zoo's ``MultiHeadAttention`` apply them through the same edit functions;
- residual patches and the recording of the residual stream are site hooks on ``resid_post``;
- a per-head grid reuses the clean prefix (``start=Start(layer, hidden, rows)``, families whose
  ``Sites.startable``): an edit at layer ``l`` leaves blocks ``0..l-1`` as in the clean pass, so a
  ``start_shell`` of the model hands their input on, block ``l`` takes the clean residual stream
  entering it (``[1, token, dim]``, recorded once) repeated to ``rows`` rows, and only blocks
  ``l..L-1`` run, on a batch of one input whose masks and position embeddings broadcast over the rows.

The runner never asks which kind of model it holds: what it reads of the output is
``BatchOutput.kind``. Nothing is set on the shared model; the shell is dropped with the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.models.interface import Backend, ModelInput
from attnscope.models.outputs import BatchOutput
from attnscope.models.session import SiteRecorder, Start, session, start_shell
from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.interventions.spec import InterventionError

__all__ = ["Outputs", "ResidualEdits", "Runner", "Start", "head_dim"]

# residual edits: {layer: [(row, positions, value [n_positions, dim]), ...]}; a recorder dict gets
# {layer: [batch, token, dim]}
Residual = dict[int, list[tuple[int, Sequence[int], torch.Tensor]]]


@dataclass
class Outputs:
    """What a batched forward gives, ``B`` rows.

    ``logits [B, C]`` (classifiers), ``embedding [B, D]`` (embedding models, L2-normalised mean
    pooling), ``target_logprob [B, P]`` and ``answer_logits [B, P, 2]`` (causal LMs, at the chosen
    positions), ``last_logprobs [B, V]`` (causal LMs: the next-token distribution after the last
    position), ``maps``: per row ``[layer, head, query, key]`` float32 (when asked).
    """

    logits: np.ndarray | None = None
    embedding: np.ndarray | None = None
    target_logprob: np.ndarray | None = None
    answer_logits: np.ndarray | None = None
    last_logprobs: np.ndarray | None = None
    maps: list[np.ndarray] | None = None


@dataclass
class ResidualEdits:
    """A site hook: at ``resid_post[layer]`` (the stream leaving block ``layer``), row ``row``'s
    ``positions`` get ``value [n_positions, dim]``."""

    edits: Residual

    def wants(self, site: str, layer: int) -> bool:
        return site == "resid_post" and bool(self.edits.get(layer))

    def edit_site(self, site: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        value = value.clone()
        for row, positions, patch in self.edits[layer]:
            value[row, list(positions)] = patch.to(value.dtype).to(value.device)
        return value


def head_dim(backend: Backend) -> int:
    """The model's ``d_head`` (from its ``Sites``)."""
    return int(backend.sites.d_head)


class Runner:
    """Batched forward passes of one backend for one request (see the module docstring)."""

    def __init__(self, backend: Backend):
        self.backend = backend
        refusal = backend.attention_edit_refusal
        if refusal is not None:
            raise InterventionError(refusal)
        try:
            self.sites = backend.sites
        except SitesUnavailableError as exc:
            raise InterventionError(
                f"{exc}; the model has no per-head attention output to ablate or patch that interventions can reach"
            ) from None
        self._shell: torch.nn.Module | None = None

    @property
    def startable(self) -> bool:
        """Whether a forward may start at a block from a recorded residual (the grid's prefix reuse)."""
        return self.sites.startable

    def check_logit_edits(self) -> None:
        """Layers whose logits flow into the next layer (Evolving Attention) take no logit edits."""
        if not self.sites.logit_edits:
            raise InterventionError(
                f"model {self.backend.spec.name!r} is an Evolving Attention model: its logits flow into the "
                "next layer's convolution, so uniform ablation and edge knockout are not defined on it; "
                "use zero or mean ablation or patching"
            )

    @torch.inference_mode()
    def forward(
        self,
        inputs: list[ModelInput],
        hooks: Sequence = (),
        residual: Residual | None = None,
        record_residual: dict | None = None,
        want_maps: bool = False,
        positions: Sequence[int] | None = None,
        targets: Sequence[int] | None = None,
        answers: tuple[int, int] | None = None,
        start: Start | None = None,
        record_pre: dict | None = None,
    ) -> Outputs:
        """Run ``inputs`` (one padded batch) with ``hooks`` (attention hooks), ``residual`` patches
        and an optional ``record_residual`` dict (filled with ``{layer: [batch, token, dim]}``, the
        stream leaving each block before any patch); causal LMs read ``positions`` (their next-token
        log-probabilities of ``targets`` and the logits of the two ``answers``). With ``start`` (a
        startable family, one input, no residual edits or maps), only the blocks from
        ``start.layer`` on run, on ``start.rows`` rows. ``record_pre`` (a dict) gets ``{layer: [batch,
        token, dim]}``, the stream entering each block as this forward computed it (after every edit
        upstream): what the blocks' values are computed from."""
        if start is not None and (not self.startable or len(inputs) != 1 or residual or want_maps):
            raise ValueError("start runs one input of a startable model, without residual edits or maps")
        site_hooks: list = []
        recorder = SiteRecorder({"resid_post"}) if record_residual is not None else None
        if recorder is not None:
            site_hooks.append(recorder)
        pre = SiteRecorder({"resid_pre"}) if record_pre is not None else None
        if pre is not None:
            site_hooks.append(pre)
        if residual:
            site_hooks.append(ResidualEdits(residual))
        model = None
        if start is not None:
            if self._shell is None:
                self._shell = start_shell(self.backend.model, self.sites)
            model = self._shell
        with session(*site_hooks, hooks=tuple(hooks), start=start):
            out = self.backend.forward_batch(
                inputs,
                want_maps=want_maps,
                keep=list(positions or ()),
                model=model,
                rows=1 if start is None else start.rows,
            )
        if recorder is not None:
            record_residual.update(recorder.values.get("resid_post", {}))
        if pre is not None:
            record_pre.update(pre.values.get("resid_pre", {}))
        return outputs_of(out, positions, targets, answers)


def outputs_of(out: BatchOutput, positions, targets, answers) -> Outputs:
    """The metrics' view of a ``BatchOutput`` (numpy, on the CPU)."""
    res = Outputs(maps=out.maps)
    if out.kind == "classification":
        res.logits = out.logits.cpu().numpy()
        return res
    if out.kind == "embedding":
        res.embedding = out.embedding.cpu().numpy()
        return res
    logp = torch.log_softmax(out.logits, dim=-1)  # [B, len(keep), V]
    col = {p: i for i, p in enumerate(out.positions)}
    res.last_logprobs = torch.stack([logp[b, col[n - 1]] for b, n in enumerate(out.lengths)]).cpu().numpy()
    if positions:
        idx = torch.tensor([col[p] for p in positions])
        sel = logp[:, idx]  # [B, P, V]
        if targets is not None:
            t = torch.tensor(list(targets), dtype=torch.long)[None, :, None].expand(sel.shape[0], -1, 1)
            res.target_logprob = sel.gather(-1, t)[..., 0].cpu().numpy()
        if answers is not None:
            res.answer_logits = out.logits[:, idx][..., list(answers)].cpu().numpy()
    return res
