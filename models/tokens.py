"""Readable token labels: what a tokenizer's vocabulary entries mean as text, whitespace made visible.

Byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM) stores each byte as a printable stand-in (``Ġ`` for a
space, ``Ċ`` for a newline, ``Ã©`` for the two bytes of ``é``); SentencePiece (Llama 2, Mistral,
Gemma) writes a space as ``▁`` and unknown bytes as ``<0x0A>``. ``readable_tokens`` turns both back
into text and shows whitespace and control bytes with visible glyphs:

====================  ==========  ==========================================
what                  glyph       example
====================  ==========  ==========================================
space                 ``␣``       ``Ġcapital`` -> ``␣capital``
newline               ``↵``       ``Ċ`` -> ``↵``
tab                   ``⇥``       ``ĉ`` -> ``⇥``
carriage return       ``␍``
other control byte    ``<0xNN>``  ``<0x07>``
incomplete UTF-8      ``<0xNN>``  a multi-byte character split over tokens
====================  ==========  ==========================================

WordPiece (BERT's ``##ing``), word vocabularies and special tokens (``<|im_start|>``, ``[CLS]``) are
kept as the vocabulary writes them. The raw ids stay available next to the labels (the API's
``token_ids``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

GLYPHS = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
SPIECE_SPACE = "▁"


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character -> the byte it stands for."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {ch: b for b, ch in bytes_to_unicode().items()}


def show_bytes(raw: bytes) -> str:
    """Bytes as text with visible whitespace; control bytes and incomplete UTF-8 as ``<0xNN>``."""
    text = raw.decode("utf-8", errors="surrogateescape")
    out = []
    for ch in text:
        code = ord(ch)
        if ch in GLYPHS:
            out.append(GLYPHS[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, escaped by surrogateescape
            out.append(f"<0x{code - 0xDC00:02X}>")
        elif code < 0x20 or code == 0x7F:
            out.append(f"<0x{code:02X}>")
        else:
            out.append(ch)
    return "".join(out)


def byte_level_token(token: str) -> str:
    """One byte-level BPE vocabulary entry (``Ġcapital``) as readable text (``␣capital``)."""
    table = _byte_decoder()
    if any(ch not in table for ch in token):  # an added token written as plain text
        return show_bytes(token.encode())
    return show_bytes(bytes(table[ch] for ch in token))


def sentencepiece_token(token: str) -> str:
    """One SentencePiece entry (``▁capital``, ``<0x0A>``) as readable text (``␣capital``, ``↵``)."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return show_bytes(bytes([int(token[3:5], 16)]))
        except ValueError:
            pass
    return show_bytes(token.replace(SPIECE_SPACE, " ").encode())


def _decoder_kinds(decoder: dict | None) -> set[str]:
    """The ``type`` names in a tokenizers decoder description (nested ``Sequence`` included)."""
    if not decoder:
        return set()
    kinds = {str(decoder.get("type"))}
    for sub in decoder.get("decoders") or []:
        kinds |= _decoder_kinds(sub)
    if decoder.get("type") == "Replace" and SPIECE_SPACE in json.dumps(decoder.get("pattern", "")):
        kinds.add("Metaspace")
    return kinds


def token_convention(tokenizer) -> str:
    """``"byte-level"``, ``"sentencepiece"`` or ``"plain"`` (WordPiece, word vocabularies, unknown)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return "plain"
    try:
        decoder = json.loads(backend.to_str()).get("decoder")
    except (ValueError, AttributeError, TypeError):
        return "plain"
    kinds = _decoder_kinds(decoder)
    if "ByteLevel" in kinds:
        return "byte-level"
    if kinds & {"Metaspace", "ByteFallback"}:
        return "sentencepiece"
    return "plain"


class TokenLabels:
    """Readable labels for one tokenizer: ``labels(ids) -> tuple[str, ...]`` (cached per id)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.convention = token_convention(tokenizer)
        self.special = set(getattr(tokenizer, "all_special_ids", ()) or ())
        self._cache: dict[int, str] = {}

    def label(self, token_id: int, raw: str) -> str:
        if self.convention == "plain" or token_id in self.special:
            return raw
        if self.convention == "byte-level":
            return byte_level_token(raw)
        return sentencepiece_token(raw)

    def labels(self, ids: Sequence[int]) -> tuple[str, ...]:
        ids = [int(i) for i in ids]
        missing = sorted({i for i in ids if i not in self._cache})
        if missing:
            for i, raw in zip(missing, self.tokenizer.convert_ids_to_tokens(missing)):
                self._cache[i] = self.label(i, str(raw))
        return tuple(self._cache[i] for i in ids)


def readable_tokens(tokenizer, ids: Sequence[int]) -> tuple[str, ...]:
    """Readable labels of ``ids`` (see the module docstring); one label per id."""
    return TokenLabels(tokenizer).labels(ids)
