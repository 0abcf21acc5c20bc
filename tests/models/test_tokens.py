"""Readable token labels: byte-level BPE and SentencePiece markers become text with visible whitespace;
WordPiece, word vocabularies and special tokens stay as the vocabulary writes them."""

import pytest

from attnscope.models.tokens import (
    byte_level_token,
    readable_tokens,
    sentencepiece_token,
    show_bytes,
    token_convention,
)

GLYPHS = {"␣": " ", "↵": "\n", "⇥": "\t", "␍": "\r"}


def unglyph(label: str) -> str:
    return "".join(GLYPHS.get(c, c) for c in label)


def test_byte_level_labels_spell_the_text(tiny_tokenizer):
    tok = tiny_tokenizer
    assert token_convention(tok) == "byte-level"
    text = "The capital\n\tof France, 12 cats"
    ids = tok(text)["input_ids"]
    labels = readable_tokens(tok, ids)
    assert len(labels) == len(ids)
    assert not any(c in "".join(labels) for c in "ĠĊĉ")
    assert unglyph("".join(labels)) == text
    # every vocabulary entry of whole, printable UTF-8 reads as its decoded text
    for i in range(len(tok)):
        decoded = tok.decode([i])
        printable = all(c.isprintable() or c in " \n\t\r" for c in decoded)
        if i not in tok.all_special_ids and "\ufffd" not in decoded and printable:
            assert unglyph(readable_tokens(tok, [i])[0]) == decoded, i


def test_byte_level_markers_and_split_characters():
    assert byte_level_token("Ġcapital") == "␣capital"
    assert byte_level_token("Ċ") == "↵" and byte_level_token("ĉ") == "⇥"
    assert byte_level_token("Ã©") == "é"
    assert byte_level_token("Ã") == "<0xC3>"  # half of a two-byte character


def test_special_tokens_are_kept(tiny_tokenizer):
    ids = tiny_tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    labels = readable_tokens(tiny_tokenizer, ids)
    assert labels[0] == "<|user|>" and labels[-1] == "<|assistant|>"


@pytest.fixture(scope="module")
def sentencepiece():
    """A SentencePiece-style tokenizer (Metaspace + byte fallback, as Llama 2 and Gemma write tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
    merges = []
    for word in ("▁the", "▁cat", "▁sat"):
        for ch in word:
            vocab.setdefault(ch, len(vocab))
        for end in range(2, len(word) + 1):  # ▁ t -> ▁t, ▁t h -> ▁th, ...
            if (word[: end - 1], word[end - 1]) not in merges:
                merges.append((word[: end - 1], word[end - 1]))
            vocab.setdefault(word[:end], len(vocab))
    model = models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>")
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def test_sentencepiece_labels(sentencepiece):
    tok = sentencepiece
    assert token_convention(tok) == "sentencepiece"
    ids = tok("the cat\nsat", add_special_tokens=False)["input_ids"]
    labels = readable_tokens(tok, ids)
    assert labels[:2] == ("␣the", "␣cat") and "↵" in labels
    assert sentencepiece_token("<0x0A>") == "↵" and sentencepiece_token("<0xE2>") == "<0xE2>"
    assert readable_tokens(tok, [1, 2]) == ("<s>", "</s>")


def test_wordpiece_and_control_bytes(minilm):
    tok = minilm.tokenizer
    assert token_convention(tok) == "plain"
    ids = tok("an unbelievable film")["input_ids"]
    assert readable_tokens(tok, ids) == tuple(tok.convert_ids_to_tokens(ids))
    assert show_bytes(b"a\x07b\x7f") == "a<0x07>b<0x7F>"
