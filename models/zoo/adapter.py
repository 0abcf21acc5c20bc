"""Adapters that make a trained zoo model look like any other model: ``encode(input)`` then the one
verb ``run(encoded) -> (AttentionMaps [layer, head, query, key], output)``.

Text: SST-2 word vocabulary, ``[CLS]`` + words, at most ``max_len`` positions.
Vision: a ``[28, 28]`` grayscale image (see ``attnscope.models.inputs.prepare_digit``) -> tokens named
``r{row}c{col}`` on the model's grid (``[CLS]`` first for ViTs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.zoo import data

DIGIT_LABELS = [str(i) for i in range(10)]
SENTIMENT_LABELS = ["negative", "positive"]


@dataclass
class Encoded:
    """Model-ready input: ``tensor`` (batch of one) and one label per position."""

    tensor: torch.Tensor
    tokens: tuple[str, ...]
    special: tuple[int, ...]
    grid: tuple[int, int] | None = None


def classification(logits: torch.Tensor, labels: list[str]) -> dict:
    probs = torch.softmax(logits.float(), dim=-1)[0].cpu().numpy()
    return {
        "kind": "classification",
        "labels": labels,
        "probs": probs.tolist(),
        "predicted": labels[int(probs.argmax())],
    }


class ZooAdapter:
    """One trained zoo model (torch module in eval mode) plus how to encode its inputs."""

    def __init__(self, name: str, model: torch.nn.Module, manifest: dict, device: torch.device):
        self.name, self.model, self.manifest, self.device = name, model.to(device).eval(), manifest, device
        self.arch = manifest["arch"]
        self.modality = self.arch["kind"]
        self.labels = SENTIMENT_LABELS if self.modality == "text" else DIGIT_LABELS
        if self.modality == "text":
            self.vocab = data.load_vocab()
            self.index = {w: i for i, w in enumerate(self.vocab)}
            self.max_tokens = int(self.arch["max_len"])
        else:
            self.grid = tuple(model.grid)
            self.max_tokens = self.grid[0] * self.grid[1] + len(model.special)
            # models whose maps cover a zero-padded grid (conv-as-attention) show a padded image
            self.pad = int(getattr(model, "display_pad", 0))

    @property
    def text_tokenizer(self):
        """The word vocabulary behind a tokenizer's interface (text models; explainers use it)."""
        from attnscope.models.zoo.text_facade import WordTokenizer

        if self.modality != "text":
            return None
        if getattr(self, "_word_tokenizer", None) is None:
            self._word_tokenizer = WordTokenizer(self.vocab)
        return self._word_tokenizer

    @property
    def text_classifier(self):
        """The model called like a Hugging Face sequence classifier (text models; explainers use it)."""
        from attnscope.models.zoo.text_facade import TextClassifier

        if self.modality != "text":
            return None
        if getattr(self, "_text_classifier", None) is None:
            self._text_classifier = TextClassifier(self.model).eval()
        return self._text_classifier

    @property
    def n_layers(self) -> int:
        return int(self.arch["depth"])

    @property
    def n_heads(self) -> int:
        return int(self.arch["heads"])

    # ------------------------------------------------------------------ encode
    def encode_text(self, text: str, truncate: bool = False) -> Encoded:
        """``[CLS]`` + the words; longer than ``max_tokens`` is an error unless ``truncate`` (keep the head)."""
        from attnscope.models.capture import EmptyInputError, TooManyTokensError

        if not isinstance(text, str) or not text.strip():
            raise EmptyInputError("the text is empty; type a sentence to analyse")
        words = data.words(text)
        if truncate:
            words = words[: self.max_tokens - 1]
        if len(words) + 1 > self.max_tokens:
            raise TooManyTokensError(len(words) + 1, self.max_tokens, self.name)
        ids = data.encode_words(words, self.index, self.max_tokens)
        return Encoded(torch.tensor([ids], device=self.device), (data.CLS, *words), (0,))

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        """Any accepted image -> what this model takes (MNIST form: ``[28, 28]`` white on black)."""
        from attnscope.models.inputs import prepare_digit

        digit = prepare_digit(image)
        return np.pad(digit, self.pad) if self.pad else digit

    def encode_image(self, image: np.ndarray) -> Encoded:
        """``image``: ``[28, 28]`` grayscale, uint8 (0..255) or float in ``[0, 1]``, white digit on black."""
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
        return Encoded(x, ("[CLS]",) * len(special) + cells, special, self.grid)

    # ------------------------------------------------------------------ run
    @torch.inference_mode()
    def run(self, enc: Encoded) -> tuple[AttentionMaps, dict]:
        """One forward pass: maps ``[layer, head, query, key]`` and the class probabilities."""
        logits, maps = self.model(enc.tensor)
        w = maps[0].float().cpu().numpy()
        w = w / w.sum(axis=-1, keepdims=True)
        out = AttentionMaps(
            weights=np.ascontiguousarray(w), tokens=enc.tokens, grid=enc.grid, special=enc.special, model=self.name
        )
        return out, classification(logits, self.labels)

    def hidden(self) -> np.ndarray | None:
        """Hidden states of the last run, ``[layer + 1, token, dim]`` (the encoder's input and the
        output of every block), or None for models without a transformer encoder."""
        encoder = getattr(self.model, "encoder", None)
        states = getattr(encoder, "last_states", None)
        return None if states is None else states[0].float().cpu().numpy()

    def extras(self) -> dict:
        """Model-specific arrays of the last run: conv-as-attention keeps its first layer's conv and
        attention outputs side by side, ``conv_vs_attention [2, position, channel]``."""
        kept = getattr(self.model, "last_first_layer", None)
        if kept is None:
            return {}
        return {"conv_vs_attention": kept[0].flatten(2).transpose(1, 2).float().cpu().numpy()}

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
