"""One batched forward pass of any supported backend with per-request edits.

``Runner(backend)`` holds what one request needs (a per-request module shell where hooks must sit on
modules) and ``forward(inputs, hooks, residual, want_maps, positions, targets, answers)`` runs a
padded batch:

- Hugging Face encoders and causal LMs loaded with ``attnscope_qk`` (lazy capture): the attention
  hooks go through ``attention_context`` (a ``ContextVar``: this request only); residual patches
  are forward hooks on a ``module_shell`` of the model (new module objects sharing every tensor);
- zoo models whose attention is ``MultiHeadAttention``: a shell whose attention modules' ``logits``
  and output projection are wrapped on the shell only.

A per-head grid reuses the clean prefix (``start=Start(layer, hidden, rows)``, Hugging Face models):
an edit at layer ``l`` leaves blocks ``0..l-1`` as in the clean pass, so the shell's blocks before
``l`` hand their input on untouched, block ``l`` takes the clean residual stream entering it
(``[1, token, dim]``, recorded once) repeated to ``rows`` rows, and only blocks ``l..L-1`` run, on a
batch of one input whose masks and position embeddings broadcast over the rows.

Nothing is set on the shared model; the shell is dropped with the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.models.attention_fn import attention_context
from attnscope.models.backends.base import Backend, ModelInput
from attnscope.models.shell import module_shell
from attnscope.pipelines.interventions.spec import InterventionError

# residual edits: {layer: [(row, positions, value [n_positions, dim]), ...]}; a recorder dict gets
# {layer: [batch, token, dim]}
Residual = dict[int, list[tuple[int, Sequence[int], torch.Tensor]]]


@dataclass(frozen=True)
class Start:
    """Run from block ``layer`` on: its input is ``hidden [1, token, dim]`` (the clean residual stream
    entering it; ``None`` for block 0: the embeddings) repeated to ``rows`` rows."""

    layer: int
    hidden: torch.Tensor | None
    rows: int


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


def backend_kind(backend: Backend) -> str:
    """``hf-encoder``, ``hf-causal`` or ``zoo``; anything else is refused (422)."""
    from attnscope.models.backends.hf import HFBackend
    from attnscope.models.backends.zoo import ZooBackend

    if isinstance(backend, HFBackend):
        if backend.capture != "lazy":
            raise InterventionError(
                f"model {backend.spec.name!r} runs eager attention capture"
                + (f" ({backend.capture_refusal})" if backend.capture_refusal else "")
                + "; interventions act inside the attnscope_qk attention function: load it with capture='lazy'"
            )
        return "hf-causal" if backend.attention.causal and backend.spec.task == "causal-lm" else "hf-encoder"
    if isinstance(backend, ZooBackend):
        from attnscope.models.zoo.attention import MultiHeadAttention

        if not all(isinstance(m, MultiHeadAttention) for m in backend.attention_modules()):
            raise InterventionError(
                f"zoo model {backend.spec.name!r} ({backend.spec.family}) has no per-head attention output "
                "to ablate or patch; interventions support the zoo's multi-head attention models "
                "(e.g. vit, text-vanilla, gauss9-iso)"
            )
        return "zoo"
    raise InterventionError(
        f"model {backend.spec.name!r}: interventions support Hugging Face encoders and causal LMs and the zoo's "
        "multi-head attention models"
    )


def head_dim(backend: Backend) -> int:
    if backend.attention.head_dim:
        return int(backend.attention.head_dim)
    return int(backend.attention_modules()[0].head_dim)


class Runner:
    """Batched forward passes of one backend for one request (see the module docstring)."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.kind = backend_kind(backend)
        self._shell: torch.nn.Module | None = None
        self._blocks: list[torch.nn.Module] | None = None
        self._hooks: tuple = ()
        self._residual: Residual | None = None
        self._record: dict | None = None
        self._start: Start | None = None
        self._calls = 0
        if self.kind == "zoo":
            self._wrap_zoo()

    # ------------------------------------------------------------------ shells
    def _hf_shell(self) -> tuple[torch.nn.Module, list[torch.nn.Module]]:
        if self._shell is None:
            from attnscope.models.backends.hf import _layer_list

            self._shell = module_shell(self.backend.model)
            self._blocks = _layer_list(self._shell, self.backend.n_layers)
            for i, block in enumerate(self._blocks):
                block.register_forward_hook(self._block_hook(i))
                block.forward = self._gate(i, block.forward)  # on the shell's block only
        return self._shell, self._blocks

    def _gate(self, layer: int, forward):
        """Block ``layer``'s forward under ``self._start``: before the start block, hand the input
        on; at it, run on the start's rows; after it (or with no start), run as usual."""

        def gated(*args, **kwargs):
            start = self._start
            if start is None or layer > start.layer:
                return forward(*args, **kwargs)
            hidden = args[0] if args else kwargs["hidden_states"]
            if layer < start.layer:
                return hidden
            new = hidden if start.hidden is None else start.hidden.to(hidden.dtype).to(hidden.device)
            new = new.repeat(start.rows, 1, 1)  # [rows, token, dim]
            if args:
                return forward(new, *args[1:], **kwargs)
            return forward(**{**kwargs, "hidden_states": new})

        return gated

    def _block_hook(self, layer_of):
        def hook(module, args, output):
            layer = layer_of if isinstance(layer_of, int) else layer_of()
            hidden = output[0] if isinstance(output, tuple) else output
            if self._record is not None:
                self._record[layer] = hidden.detach().clone()
            edits = (self._residual or {}).get(layer)
            if not edits:
                return output
            hidden = hidden.clone()
            for row, positions, value in edits:
                hidden[row, list(positions)] = value.to(hidden.dtype).to(hidden.device)
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

        return hook

    def _wrap_zoo(self) -> None:
        """A shell of the zoo model whose attention modules apply this runner's hooks."""
        model = self.backend.model
        self._shell = module_shell(model)
        encoder = self._shell.encoder
        shared = bool(encoder.shared)
        for i in range(1 if shared else encoder.depth):
            block = encoder.blocks[i]
            attn = block.attn
            layer_of = (lambda: self._calls - 1) if shared else i
            if self._hooks_edit_logits_unsupported(attn):
                attn._attnscope_no_logits = True
            attn.logits = self._zoo_logits(attn, layer_of)
            attn.out.register_forward_pre_hook(self._zoo_out(attn, layer_of))
            block.register_forward_hook(self._block_hook(layer_of))

    @staticmethod
    def _hooks_edit_logits_unsupported(attn) -> bool:
        return attn.ea is not None

    def _zoo_logits(self, attn, layer_of):
        original = type(attn).logits.__get__(attn)

        def logits(x, state):
            if not isinstance(layer_of, int):
                self._calls += 1
            layer = layer_of if isinstance(layer_of, int) else layer_of()
            s = original(x, state)
            if any(hasattr(h, "edit_logits") for h in self._hooks):
                s = s.expand(x.shape[0], -1, -1, -1)
                for h in self._hooks:
                    if hasattr(h, "edit_logits"):
                        s = h.edit_logits(layer, s)
            return s

        return logits

    def _zoo_out(self, attn, layer_of):
        def pre_hook(module, args):
            (y,) = args
            layer = layer_of if isinstance(layer_of, int) else layer_of()
            if not any(hasattr(h, "edit_output") for h in self._hooks):
                return None
            b, n, _ = y.shape
            out = y.reshape(b, n, attn.heads, attn.head_dim)
            for h in self._hooks:
                if hasattr(h, "edit_output"):
                    out = h.edit_output(layer, out)
            return (out.reshape(b, n, -1),)

        return pre_hook

    def check_logit_edits(self) -> None:
        """Zoo Evolving-Attention layers pass logits between layers: their logits are not edited."""
        if self.kind == "zoo" and any(getattr(m, "_attnscope_no_logits", False) for m in self._shell.modules()):
            raise InterventionError(
                f"model {self.backend.spec.name!r} is an Evolving Attention model: its logits flow into the "
                "next layer's convolution, so uniform ablation and edge knockout are not defined on it; "
                "use zero or mean ablation or patching"
            )

    # ------------------------------------------------------------------ forward
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
    ) -> Outputs:
        """Run ``inputs`` (one padded batch) with ``hooks`` (attention hooks), ``residual`` patches
        and an optional ``record_residual`` dict; causal LMs read ``positions`` (their next-token
        log-probabilities of ``targets`` and the logits of the two ``answers``). With ``start``
        (Hugging Face models, one input, no residual edits or maps), only the blocks from
        ``start.layer`` on run, on ``start.rows`` rows."""
        if start is not None and (self.kind == "zoo" or len(inputs) != 1 or residual or want_maps):
            raise ValueError("start runs one input of a Hugging Face model, without residual edits or maps")
        self._hooks, self._residual, self._record, self._calls = tuple(hooks), residual, record_residual, 0
        self._start = start
        try:
            if self.kind == "zoo":
                return self._zoo(inputs, want_maps)
            return self._hf(inputs, want_maps, positions, targets, answers)
        finally:
            self._hooks, self._residual, self._record, self._start = (), None, None, None

    def _hf(self, inputs, want_maps, positions, targets, answers) -> Outputs:
        backend = self.backend
        enc = backend.model_inputs(inputs)
        model = backend.model
        if self._residual or self._record is not None or self._start is not None:
            model, _ = self._hf_shell()
        lengths = enc["attention_mask"].sum(1).tolist()
        if self._start is not None:
            lengths = lengths * self._start.rows
        with attention_context(hooks=self._hooks):
            if self.kind == "hf-encoder":
                out = model(**enc, output_attentions=want_maps)
            else:
                keep = sorted(set(positions or ()) | {n - 1 for n in lengths})
                out = model(
                    **enc,
                    output_attentions=want_maps,
                    use_cache=False,
                    logits_to_keep=torch.tensor(keep, device=enc["input_ids"].device),
                )
        res = Outputs()
        if want_maps:
            att = torch.stack(out.attentions, dim=1).float().cpu().numpy()  # [B, L, H, N, N]
            res.maps = []
            for b, n in enumerate(lengths):
                w = att[b, :, :, :n, :n]
                if n != att.shape[-1]:
                    w = w / np.maximum(w.sum(-1, keepdims=True), 1e-30)
                res.maps.append(np.ascontiguousarray(w))
        if self.kind == "hf-encoder":
            if backend.spec.task == "classification":
                res.logits = out.logits.float().cpu().numpy()
            else:
                hidden = out.last_hidden_state.float()
                m = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1)
                res.embedding = torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy()
            return res
        logp = torch.log_softmax(out.logits.float(), dim=-1)  # [B, len(keep), V]
        col = {p: i for i, p in enumerate(keep)}
        res.last_logprobs = torch.stack([logp[b, col[n - 1]] for b, n in enumerate(lengths)]).cpu().numpy()
        if positions:
            idx = torch.tensor([col[p] for p in positions])
            sel = logp[:, idx]  # [B, P, V]
            if targets is not None:
                t = torch.tensor(list(targets), dtype=torch.long)[None, :, None].expand(sel.shape[0], -1, 1)
                res.target_logprob = sel.gather(-1, t)[..., 0].cpu().numpy()
            if answers is not None:
                raw = out.logits.float()[:, idx]
                res.answer_logits = raw[..., list(answers)].cpu().numpy()
        return res

    def _zoo(self, inputs, want_maps) -> Outputs:
        if inputs[0].pixels is not None:
            x = torch.cat([i.pixels for i in inputs]).to(self.backend.device)
        else:
            n = max(len(i.token_ids) for i in inputs)
            x = torch.zeros(len(inputs), n, dtype=torch.long)
            for row, i in enumerate(inputs):
                x[row, : len(i.token_ids)] = torch.tensor(i.token_ids)
            x = x.to(self.backend.device)
        logits, maps = self._shell(x)
        res = Outputs(logits=logits.float().cpu().numpy())
        if want_maps:
            res.maps = []
            for row, inp in enumerate(inputs):
                n = len(inp)
                w = maps[row, :, :, :n, :n].float().cpu().numpy()
                res.maps.append(np.ascontiguousarray(w / np.maximum(w.sum(-1, keepdims=True), 1e-30)))
        return res
