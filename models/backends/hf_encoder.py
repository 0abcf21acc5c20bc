"""Hugging Face encoders (BERT-like; MiniLM and its fine-tuned deltas, local checkpoints): maps of
every layer and head, and the model's output, a mean-pooled L2-normalised sentence embedding or a
classifier's class probabilities."""

from __future__ import annotations

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.backends.base import Capture, ModelInput
from attnscope.models.backends.hf import HFBackend, lazy_capture, stack_attentions
from attnscope.models.outputs import BatchOutput, Classification, Embedding, cut_maps


class HFEncoderBackend(HFBackend):
    """A Hugging Face encoder (or sequence classifier) with its tokenizer, eager attention."""

    def __init__(
        self,
        spec,
        model,
        tokenizer,
        device: torch.device,
        max_tokens: int,
        labels: list[str] | None = None,
        capture: str = "eager",
        capture_refusal: str | None = None,
    ):
        causal = bool(spec.extra.get("causal", getattr(model.config, "is_decoder", False)))
        super().__init__(spec, model, tokenizer, device, max_tokens, causal, capture, capture_refusal)
        self.labels = labels
        # explainers call the sequence classifier itself (``.logits``, ``.attentions``, embeddings)
        self.classifier = model if spec.task == "classification" else None

    def _outputs(self, out, mask: torch.Tensor) -> list[Classification | Embedding]:
        """Per-example outputs: class probabilities, or the mean-pooled normalised embedding."""
        if self.spec.task == "classification":
            probs = torch.softmax(out.logits.float(), dim=-1).cpu().numpy()
            labels = self.labels or [str(i) for i in range(probs.shape[1])]
            return [Classification(labels, p.tolist(), labels[int(p.argmax())]) for p in probs]
        hidden = out.last_hidden_state.float()
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1)
        pooled = torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy()
        return [Embedding(int(v.shape[0]), v.tolist()) for v in pooled]

    @torch.inference_mode()
    def run_encoded(self, enc: dict[str, torch.Tensor], hidden_states: bool = True) -> list[Capture]:
        """Run an already tokenised, padded batch (``input_ids``, ``attention_mask``, ...) in one
        forward pass; each result is cut to its own length (padding keys removed, rows renormalised)."""
        enc = {k: v.to(self.device) for k, v in enc.items()}
        lazy = self.capture == "lazy"
        if lazy:
            with lazy_capture() as recorder:
                out = self.model(**enc, output_hidden_states=hidden_states)
            records = recorder.ordered()
        else:
            out = self.model(**enc, output_attentions=True, output_hidden_states=hidden_states)
            att = stack_attentions(out.attentions)  # (B, L, H, N, N)
        hs = None
        if hidden_states:
            hs = torch.stack(out.hidden_states, dim=1).float().cpu().numpy()  # (B, L+1, N, D)
        mask = enc["attention_mask"]
        outputs = self._outputs(out, mask)
        lengths = mask.sum(dim=1).tolist()
        ids_all = enc["input_ids"].tolist()
        results = []
        for b, n in enumerate(lengths):
            inp = self.make_input(ids_all[b][:n])
            if lazy:
                maps = self.lazy_maps(records, b, n, inp)
            else:
                w = att[b, :, :, :n, :n]
                if n != att.shape[-1]:  # padding removed: renormalise over the kept keys
                    w = w / w.sum(axis=-1, keepdims=True)
                maps = AttentionMaps(
                    weights=np.ascontiguousarray(w),
                    tokens=inp.tokens,
                    special=inp.special,
                    model=self.spec.name,
                    causal=self.attention.causal,
                )
            hidden = None if hs is None else hs[b, :, :n]
            results.append(Capture(maps, outputs[b], hidden, token_ids=inp.token_ids, attention=self.attention))
        return results

    def forward_batch(
        self,
        inputs: list[ModelInput],
        want_maps: bool = False,
        keep: list[int] | None = None,
        model: torch.nn.Module | None = None,
        rows: int = 1,
    ) -> BatchOutput:
        """One padded forward pass of ``inputs`` (inside the caller's session): class logits or the
        pooled embedding (``BatchOutput``). ``model``: a shell of this model (``start_shell``) whose
        forward may run ``rows`` rows per input; ``keep`` is for causal LMs."""
        enc = self.model_inputs(inputs)
        lengths = enc["attention_mask"].sum(1).tolist() * rows
        out = (model or self.model)(**enc, output_attentions=want_maps)
        maps = cut_maps(torch.stack(out.attentions, dim=1).float().cpu().numpy(), lengths) if want_maps else None
        if self.spec.task == "classification":
            return BatchOutput("classification", lengths, logits=out.logits.float(), maps=maps)
        hidden = out.last_hidden_state.float()
        m = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1)
        return BatchOutput("embedding", lengths, embedding=torch.nn.functional.normalize(pooled, dim=-1), maps=maps)

    def run_batch(self, inputs: list[ModelInput], hidden_states: bool = True) -> list[Capture]:
        """One padded forward pass for the whole batch."""
        return self.run_encoded(self.model_inputs(inputs), hidden_states)

    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture:
        return self.run_batch([inp], hidden_states)[0]
