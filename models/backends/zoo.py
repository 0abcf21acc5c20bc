"""The zoo backend: a trained zoo model behind the one interface, ``encode(input)`` then the one
verb ``run(inp) -> Capture`` (maps ``[layer, head, query, key]``, class probabilities, hidden states).

Text: SST-2 word vocabulary, ``[CLS]`` + words, at most ``max_len`` positions.
Vision: a ``[28, 28]`` grayscale image (see ``attnscope.models.inputs.prepare_digit``) -> tokens named
``r{row}c{col}`` on the model's grid (``[CLS]`` first for ViTs).
"""

from __future__ import annotations

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.backends.base import AttentionConfig, BackendBase, Capture, ModelInput
from attnscope.models.errors import TooManyTokensError
from attnscope.models.outputs import BatchOutput, Classification, cut_maps
from attnscope.models.spec import ModelSpec
from attnscope.models.zoo import data

DIGIT_LABELS = [str(i) for i in range(10)]
SENTIMENT_LABELS = ["negative", "positive"]


def classification(logits: torch.Tensor, labels: list[str]) -> Classification:
    probs = torch.softmax(logits.float(), dim=-1)[0].cpu().numpy()
    return Classification(labels, probs.tolist(), labels[int(probs.argmax())])


class ZooBackend(BackendBase):
    """One trained zoo model (torch module in eval mode) plus how to encode its inputs.

    Text models: the SST-2 word vocabulary (``tokenizer``, a ``WordTokenizer``) and the model called
    like a sequence classifier (``classifier``, a ``TextClassifier``); vision models have neither.
    """

    def __init__(self, spec: ModelSpec, model: torch.nn.Module, manifest: dict, device: torch.device):
        self.spec, self.model, self.manifest, self.device = spec, model.to(device).eval(), manifest, device
        self.name = spec.name
        self.arch = model.arch  # typed (attnscope.models.zoo.arch), parsed from manifest["arch"]
        self.labels = SENTIMENT_LABELS if self.arch.kind == "text" else DIGIT_LABELS
        self.attention = AttentionConfig(n_layers=self.arch.depth, n_heads=self.arch.heads)
        if self.arch.kind == "text":
            from attnscope.models.zoo.text_facade import TextClassifier, WordTokenizer

            self.vocab = data.load_vocab()
            self.index = {w: i for i, w in enumerate(self.vocab)}
            self.max_tokens = self.arch.max_len
            self.tokenizer = WordTokenizer(self.vocab)
            self.classifier = TextClassifier(self.model).eval()
        else:
            self.grid = tuple(model.grid)
            self.max_tokens = self.grid[0] * self.grid[1] + len(model.special)
            # models whose maps cover a zero-padded grid (conv-as-attention) show a padded image
            self.pad = int(getattr(model, "display_pad", 0))
        self._init_sites(self.arch.sites_family, self.arch)

    @property
    def attention_edit_refusal(self) -> str | None:
        """None for the zoo's multi-head attention (it applies the session's attention hooks)."""
        from attnscope.models.zoo.attention import MultiHeadAttention

        if all(isinstance(m, MultiHeadAttention) for m in self.attention_modules()):
            return None
        return (
            f"zoo model {self.spec.name!r} ({self.spec.family}) has no per-head attention output to ablate or "
            "patch; interventions support the zoo's multi-head attention models (e.g. vit, text-vanilla, gauss9-iso)"
        )

    def attention_modules(self) -> list[torch.nn.Module]:
        """``[layer]`` each block's attention (one shared block repeated for HA models; conv-attention's
        one constructed layer)."""
        encoder = getattr(self.model, "encoder", None)
        if encoder is None:
            return [self.model.attention]
        return [encoder.blocks[0 if encoder.shared else i].attn for i in range(encoder.depth)]

    # ------------------------------------------------------------------ encode
    def encode_text(self, text: str, truncate: bool = False) -> ModelInput:
        """``[CLS]`` + the words; longer than ``max_tokens`` is an error unless ``truncate`` (keep the head)."""
        self.check_modality("text")
        self.check_text(text)
        words = data.words(text)
        if truncate:
            words = words[: self.max_tokens - 1]
        if len(words) + 1 > self.max_tokens:
            raise TooManyTokensError(len(words) + 1, self.max_tokens, self.name)
        ids = data.encode_words(words, self.index, self.max_tokens)
        return ModelInput((data.CLS, *words), (0,), tuple(int(i) for i in ids))

    def encode_ids(self, ids) -> ModelInput:
        """Vocabulary ids as given (explainers perturb ids, never text)."""
        self.check_modality("text")
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        if len(ids) > self.max_tokens:
            raise TooManyTokensError(len(ids), self.max_tokens, self.name, what="the input")
        return ModelInput(tuple(self.tokenizer.convert_ids_to_tokens(ids)), (0,), tuple(ids))

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        """Any accepted image -> what this model takes (MNIST form: ``[28, 28]`` white on black)."""
        from attnscope.models.inputs import prepare_digit

        self.check_modality("vision")
        digit = prepare_digit(image)
        return np.pad(digit, self.pad) if self.pad else digit

    def encode_image(self, image: np.ndarray) -> ModelInput:
        """``image``: ``[28, 28]`` grayscale, uint8 (0..255) or float in ``[0, 1]``, white digit on black."""
        self.check_modality("vision")
        img = np.asarray(image)
        if self.pad and img.shape == (28 + 2 * self.pad,) * 2:
            img = img[self.pad : -self.pad, self.pad : -self.pad]
        if img.shape != (28, 28):
            raise ValueError(
                f"zoo vision models take a 28x28 grayscale image, got shape {img.shape}; "
                "use models.inputs.prepare_digit first"
            )
        u8 = img if img.dtype == np.uint8 else np.clip(np.round(img * 255), 0, 255).astype(np.uint8)
        x = torch.from_numpy(data.images_to_tensor_input(u8[None])).to(self.device)
        rows, cols = self.grid
        cells = tuple(f"r{r}c{c}" for r in range(rows) for c in range(cols))
        special = tuple(self.model.special)
        return ModelInput(("[CLS]",) * len(special) + cells, special, pixels=x, grid=self.grid)

    # ------------------------------------------------------------------ run
    @torch.inference_mode()
    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture:
        """One forward pass: maps ``[layer, head, query, key]``, the class probabilities, and what
        the model traced for this call only: hidden states ``[layer + 1, token, dim]`` (the
        encoder's input and every block's output; None without a transformer encoder) and, for
        conv-as-attention, its first layer's conv and attention outputs side by side
        (``extras["conv_vs_attention"] [2, position, channel]``)."""
        x = inp.pixels if inp.pixels is not None else inp.ids_tensor(self.device)
        trace: dict = {}
        logits, maps = self.model(x, trace=trace)
        w = maps[0].float().cpu().numpy()
        w = w / w.sum(axis=-1, keepdims=True)
        out = AttentionMaps(
            weights=np.ascontiguousarray(w), tokens=inp.tokens, grid=inp.grid, special=inp.special, model=self.name
        )
        states = trace.get("states")
        hidden = None if states is None or not hidden_states else states[0].float().cpu().numpy()
        extras = {}
        if trace.get("first_layer") is not None:
            extras["conv_vs_attention"] = trace["first_layer"][0].flatten(2).transpose(1, 2).float().cpu().numpy()
        output = classification(logits, self.labels)
        return Capture(out, output, hidden, extras, token_ids=inp.token_ids, attention=self.attention)

    def forward_batch(
        self,
        inputs: list[ModelInput],
        want_maps: bool = False,
        keep: list[int] | None = None,
        model: torch.nn.Module | None = None,
        rows: int = 1,
    ) -> BatchOutput:
        """One forward pass of ``inputs`` (images stacked, token ids zero-padded) inside the caller's
        session: the class logits (``BatchOutput``) and, when asked, each row's maps."""
        if inputs[0].pixels is not None:
            x = torch.cat([i.pixels for i in inputs]).to(self.device)
        else:
            n = max(len(i.token_ids) for i in inputs)
            x = torch.zeros(len(inputs), n, dtype=torch.long)
            for row, i in enumerate(inputs):
                x[row, : len(i.token_ids)] = torch.tensor(i.token_ids)
            x = x.to(self.device)
        logits, maps = (model or self.model)(x)
        lengths = [len(i) for i in inputs]
        cut = cut_maps(maps.float().cpu().numpy(), lengths, always=True) if want_maps else None
        return BatchOutput("classification", lengths, logits=logits.float(), maps=cut)

    # ------------------------------------------------------------------ structure
    def structure(self) -> dict | None:
        """Learned per-head geometry: Gaussian centres and covariances ``[layer][head]`` (grid units,
        ``delta = key - query`` as (row, col)), or None for other attention kinds."""
        from attnscope.models.zoo.conv_attention import QuadraticConvAttention
        from attnscope.models.zoo.positional import GaussianBias

        quad = getattr(self.model, "attention", None)
        if isinstance(quad, QuadraticConvAttention):  # -alpha ||d - c||^2 = Gaussian with covariance I / (2 alpha)
            cov = (np.eye(2) / (2 * quad.alpha)).tolist()
            heads = [{"center": c.tolist(), "cov": cov} for c in quad.centers.cpu().numpy()]
            return {"kind": "gaussian", "grid": list(self.grid), "layers": [heads]}
        if not hasattr(self.model, "encoder"):
            return None
        layers = []
        for block in self.model.encoder.blocks:
            bias = getattr(block.attn, "bias", None)
            if not isinstance(bias, GaussianBias):
                return None
            with torch.no_grad():
                mu, cov = bias.centers.cpu().numpy(), bias.covariance().cpu().numpy()
            layers.append([{"center": mu[h].tolist(), "cov": cov[h].tolist()} for h in range(len(mu))])
        return {"kind": "gaussian", "grid": list(self.grid), "layers": layers}
