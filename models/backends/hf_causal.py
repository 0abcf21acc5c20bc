"""Hugging Face causal LMs (GPT-2, Llama, Qwen2, Mistral, Gemma, Phi; SmolLM2 from its GGUF): maps
of every layer and head (lower-triangular), and per position the next-token distribution (top-k with
probabilities) and the loss of the token that follows; a short greedy continuation; generation with
the attention of every generated token; an optional chat template.

Explainers see the model as a classifier of the token after the input's last position
(``attnscope.models.backends.next_token.NextTokenClassifier``): its "classes" are the vocabulary.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models import stream_qk
from attnscope.models.attention_fn import QKRecorder
from attnscope.models.backends.base import Capture, ModelInput
from attnscope.models.backends.generation import (
    CONTINUATION_TOKENS,
    Decoded,
    GenerateOptions,
    decode,
    next_token_summary,
    summary_by_chunks,
)
from attnscope.models.backends.hf import HFBackend, lazy_capture
from attnscope.models.backends.next_token import NextTokenClassifier
from attnscope.models.errors import NotAGeneratorError, TooManyTokensError
from attnscope.models.lazy_maps import QKMapSource
from attnscope.models.outputs import BatchOutput, NextToken, cut_maps
from attnscope.models.session import SiteRecorder, session
from attnscope.models.settings import model_settings

log = logging.getLogger(__name__)


class HFCausalLMBackend(HFBackend):
    """A Hugging Face causal LM with its tokenizer, eager attention, float32."""

    def __init__(
        self,
        spec,
        model,
        tokenizer,
        device: torch.device,
        context: int,
        max_tokens: int,
        capture: str = "eager",
        capture_refusal: str | None = None,
    ):
        super().__init__(spec, model, tokenizer, device, max_tokens, True, capture, capture_refusal)
        self.context = int(context)
        self.labels = None
        self.classifier = NextTokenClassifier(model)
        self.generator = self  # the typed capability (``Generator``): chat, continuation, generate, token texts
        eos = getattr(model.generation_config, "eos_token_id", None) if hasattr(model, "generation_config") else None
        eos = eos if eos is not None else tokenizer.eos_token_id
        self.eos_ids = {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos]) if e is not None}
        self._texts: dict[int, str] = {}
        # a lazy run keeps the stream entering each block where it rebuilds the queries and keys
        # (``attnscope.models.stream_qk``: the keys' bytes go), else the queries and keys themselves
        if capture != "lazy":
            self.stream_refusal: str | None = "eager capture"
        elif model_settings().lazy_record != "stream":
            self.stream_refusal = "ATTNSCOPE_LAZY_RECORD=qk"
        else:
            self.stream_refusal = stream_qk.refusal(model, self._sites, device)
            if self.stream_refusal is not None:
                log.info("model %s: lazy runs record queries and keys (%s)", spec.name, self.stream_refusal)

    # ------------------------------------------------------------------ encode
    def check_length(self, n_tokens: int, what: str = "the text") -> None:
        if n_tokens > self.max_tokens:
            raise TooManyTokensError(
                n_tokens,
                self.max_tokens,
                self.spec.name,
                what=what,
                hint=f"the model's context is {self.context} tokens and this server takes at most {self.max_tokens} "
                "positions a run (prompt + generated tokens; ATTNSCOPE_MAX_CAUSAL_TOKENS): "
                f"shorten it by {n_tokens - self.max_tokens} tokens",
            )

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def encode_chat(self, text: str) -> ModelInput:
        """The text as one user message in the model's chat template, ready for the answer."""
        self.check_text(text)
        if not self.has_chat_template:
            raise NotAGeneratorError(
                f"model {self.spec.name!r} has no chat template (its tokenizer defines none); send chat: false"
            )
        ids = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        if hasattr(ids, "keys"):  # a BatchEncoding
            ids = ids["input_ids"]
        ids = list(ids[0] if ids and isinstance(ids[0], (list, tuple)) else ids)
        self.check_length(len(ids), "the chat prompt")
        return self.make_input(ids)

    def text_of(self, token_id: int) -> str:
        """The decoded text of one token (``" Paris"``), cached."""
        text = self._texts.get(token_id)
        if text is None:
            text = self._texts[token_id] = self.tokenizer.decode([token_id])
        return text

    # ------------------------------------------------------------------ run
    def _prediction(self, ids: list[int], logits: torch.Tensor | None, n_prompt: int, normed=None) -> NextToken:
        """Per position the top-k next tokens and the next token's loss, from ``logits [pos, vocab]`` or ``normed``."""
        summary = (
            next_token_summary(logits, ids) if normed is None else summary_by_chunks(self.sites.unembed, ids, normed)
        )
        top_ids, top_probs, loss = summary
        uniq = np.unique(top_ids).tolist()
        label = dict(zip(uniq, self.labels_of(uniq)))
        top_k = [
            [
                {"token_id": int(i), "token": label[int(i)], "text": self.text_of(int(i)), "prob": float(p)}
                for i, p in zip(row_ids, row_probs)
            ]
            for row_ids, row_probs in zip(top_ids, top_probs)
        ]
        finite = loss[np.isfinite(loss)]
        best = top_k[n_prompt - 1][0]
        return NextToken(
            predicted=best["text"],
            predicted_id=best["token_id"],
            predicted_token=best["token"],
            top_k=top_k,
            loss=[None if not np.isfinite(v) else float(v) for v in loss],
            mean_loss=float(finite.mean()) if finite.size else None,
            prompt_tokens=n_prompt,
        )

    def _maps(self, ids: list[int], weights: np.ndarray) -> tuple[AttentionMaps, ModelInput]:
        inp = self.make_input(ids)
        maps = AttentionMaps(
            weights=np.ascontiguousarray(weights),
            tokens=inp.tokens,
            special=inp.special,
            model=self.spec.name,
            causal=True,
        )
        return maps, inp

    @torch.inference_mode()
    def hidden_states_of(self, token_ids) -> np.ndarray:
        """float32 ``[layer + 1, token, dim]`` of one forward pass over ``token_ids`` (the
        transformer body only: no logits). Outside a recording context an ``attnscope_qk`` layer is
        the same SDPA call as inside one, so these equal a lazy run's own hidden states."""
        ids = torch.tensor([list(token_ids)], dtype=torch.long, device=self.device)
        out = self.model.base_model(input_ids=ids, output_hidden_states=True, use_cache=False)
        return torch.stack(out.hidden_states, dim=1)[0].float().cpu().numpy()

    @torch.inference_mode()
    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture:
        """One forward pass over the input: maps ``[layer, head, query, key]`` and the next-token
        prediction at every position.

        A lazy run keeps no hidden states (float32 ``[layer + 1, token, dim]``: at 4,096 SmolLM2
        tokens 0.29 GB, more than three quarters of its queries and keys); with ``hidden_states``
        its capture recomputes them on request (``Capture.hidden()``, one forward pass)."""
        self.check_modality("text")
        ids = inp.ids_tensor(self.device)
        recompute = None
        if self.capture == "lazy":
            maps, body = self._lazy_body(inp)  # the body only: the head runs by chunks below
            if hidden_states:
                token_ids = tuple(inp.token_ids)
                recompute = lambda: self.hidden_states_of(token_ids)  # noqa: E731
            output = self._prediction(list(inp.token_ids), None, len(inp), normed=body.last_hidden_state[0])
            return Capture(
                maps, output, None, token_ids=inp.token_ids, attention=self.attention, recompute_hidden=recompute
            )
        out = self.model(input_ids=ids, output_attentions=True, output_hidden_states=hidden_states, use_cache=False)
        weights = torch.stack(out.attentions, dim=1)[0].float().cpu().numpy()
        maps, _ = self._maps(list(inp.token_ids), weights)
        hs = torch.stack(out.hidden_states, dim=1)[0].float().cpu().numpy() if hidden_states else None
        output = self._prediction(list(inp.token_ids), out.logits[0].float().cpu(), len(inp))
        return Capture(maps, output, hs, token_ids=inp.token_ids, attention=self.attention, recompute_hidden=recompute)

    def _lazy_body(self, inp: ModelInput) -> tuple[AttentionMaps, object]:
        """The transformer body over ``inp`` with queries and keys recorded (no head): the lazy maps
        and the body's output (``last_hidden_state [1, token, dim]``, the final norm applied)."""
        with self._recording() as recorded:
            body = self.model.base_model(input_ids=inp.ids_tensor(self.device), use_cache=False)
        return self._recorded_maps(recorded, self.make_input(inp.token_ids)), body

    @contextmanager
    def _recording(self):
        """``with self._recording() as recorded:`` one forward of a single example records, per
        layer, the mask inputs and either its queries and keys or the stream entering the block
        (``stream_refusal`` None); ``_recorded_maps`` makes the lazy maps of it."""
        if self.stream_refusal is not None:
            with lazy_capture() as recorder:
                yield recorder, None
            return
        recorder, site = QKRecorder(keep_qk=False), SiteRecorder({"resid_pre"})
        with session(site, recorder=recorder):
            yield recorder, site

    def _recorded_maps(self, recorded, inp: ModelInput) -> AttentionMaps:
        recorder, site = recorded
        n = len(inp)
        streams = None if site is None else stream_qk.streams_of(self.sites, site.values["resid_pre"], 0, n)
        source = QKMapSource.from_records(recorder.ordered(), 0, n, streams=streams)
        return AttentionMaps.lazy(
            source, inp.tokens, special=inp.special, model=self.spec.name, causal=self.attention.causal
        )

    @torch.inference_mode()
    def run_maps(self, inp: ModelInput) -> AttentionMaps:
        """The maps of one forward pass without the prediction: a lazy run is the body alone (the
        unembedding of every position, its top-k and loss are most of a short run's head work and a
        recording reads none of them); an eager run is ``run``'s."""
        self.check_modality("text")
        if self.capture != "lazy":
            return super().run_maps(inp)
        return self._lazy_body(inp)[0]

    def forward_batch(
        self,
        inputs: list[ModelInput],
        want_maps: bool = False,
        keep: list[int] | None = None,
        model: torch.nn.Module | None = None,
        rows: int = 1,
    ) -> BatchOutput:
        """One padded forward pass of ``inputs`` (inside the caller's session): the logits at the
        positions ``keep`` (default: each row's last) as ``BatchOutput`` ``[B, P, vocab]`` float32.
        ``model``: a shell of this model (``start_shell``) whose forward may run ``rows`` rows."""
        enc = self.model_inputs(inputs)
        lengths = enc["attention_mask"].sum(1).tolist() * rows
        keep = sorted(set(keep or ()) | {n - 1 for n in lengths})
        out = (model or self.model)(
            **enc,
            output_attentions=want_maps,
            use_cache=False,
            logits_to_keep=torch.tensor(keep, device=enc["input_ids"].device),
        )
        maps = cut_maps(torch.stack(out.attentions, dim=1).float().cpu().numpy(), lengths) if want_maps else None
        return BatchOutput("next-token", lengths, logits=out.logits.float(), positions=tuple(keep), maps=maps)

    def continuation(self, inp: ModelInput, n_tokens: int = CONTINUATION_TOKENS) -> str:
        """The greedy continuation of the input (at most ``n_tokens``; no maps kept)."""
        n = min(n_tokens, self.context - len(inp))
        if n < 1:
            return ""
        dec = decode(self.model, inp.ids_tensor(self.device), GenerateOptions(n), self.eos_ids, record=False)
        return self.tokenizer.decode(dec.generated)

    def generate(self, inp: ModelInput, options: GenerateOptions, hidden_states: bool = True) -> Capture:
        """Generate after the input; the maps cover prompt + generated tokens, and the output holds
        ``generation``: the text, and per step the token, its probability and the query position
        whose attention row chose it (``query = position - 1``, keys = prompt + generated prefix).

        Lazy capture decodes with the fused attention and nothing recorded, then records queries
        and keys in one forward over prompt + generated tokens: causal attention makes its row
        ``p`` what step ``p`` computed through the cache (equal to float rounding), for the cost of
        one more forward instead of materialising every step's probabilities."""
        self.check_modality("text")
        self.check_length(len(inp) + options.max_new_tokens, f"the prompt ({len(inp)} tokens) plus max_new_tokens")
        lazy = self.capture == "lazy"
        dec: Decoded = decode(
            self.model,
            inp.ids_tensor(self.device),
            options,
            self.eos_ids,
            record=not lazy,
            hidden_states=hidden_states and not lazy,
        )
        hidden, recompute = dec.hidden, None
        if lazy:  # one recorded forward over prompt + generated tokens: its rows are the steps' rows
            full = self.make_input(dec.ids)
            with torch.inference_mode(), self._recording() as recorded:
                self.model.base_model(input_ids=full.ids_tensor(self.device), use_cache=False)
            maps = self._recorded_maps(recorded, full)
            if hidden_states:
                token_ids = tuple(dec.ids)
                recompute = lambda: self.hidden_states_of(token_ids)  # noqa: E731
        else:
            maps, full = self._maps(dec.ids, dec.weights)
        output = self._prediction(dec.ids, torch.cat(dec.logits), dec.n_prompt)
        n = dec.n_prompt
        steps = []
        for i, token in enumerate(dec.generated):
            loss = output.loss[n + i - 1]
            steps.append(
                {
                    "position": n + i,
                    "query": n + i - 1,
                    "token_id": int(token),
                    "token": full.tokens[n + i],
                    "text": self.text_of(int(token)),
                    "prob": float(np.exp(-loss)) if loss is not None else None,
                }
            )
        generation = {
            "text": self.tokenizer.decode(dec.generated),
            "token_ids": [int(t) for t in dec.generated],
            "stopped": dec.stopped,
            "options": options.as_dict(),
            "steps": steps,
        }
        output = replace(output, generation=generation)
        return Capture(
            maps, output, hidden, token_ids=tuple(dec.ids), attention=self.attention, recompute_hidden=recompute
        )
