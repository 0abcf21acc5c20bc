"""The zoo's typed architectures: every catalog entry parses, parts are composed as the papers' models
use them, bad configs are refused naming what is wrong, and build_model takes a typed value too."""

from __future__ import annotations

import pytest
import torch

from attnscope.models.zoo.arch import (
    ConvAttentionArch,
    GaussianPosition,
    Learned2DPosition,
    SANArch,
    ShiftPosition,
    TextArch,
    VisionArch,
    parse,
)
from attnscope.models.zoo.attention import EAConfig
from attnscope.models.zoo.build import build_model
from attnscope.models.zoo.configs import ZOO


def _arch(name: str) -> dict:
    arch = dict(ZOO[name]["arch"])
    return {**arch, "vocab_size": 50} if arch["kind"] == "text" else arch


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_catalog_entry_parses_and_builds_the_same_module_from_dict_and_typed_value(name):
    typed = parse(_arch(name))
    assert parse(typed) is typed
    torch.manual_seed(0)
    a = build_model(_arch(name))
    torch.manual_seed(0)
    b = build_model(typed)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert a.arch == typed


def test_attention_kinds_are_composed_of_parts():
    g = parse(ZOO["gauss9-full"]["arch"]).attention
    assert g.position == GaussianPosition(full=True) and not g.content and g.head_dim == 4
    no_head_dim = {k: v for k, v in ZOO["gauss16-iso"]["arch"].items() if k != "head_dim"}
    assert parse(no_head_dim).attention.head_dim == 32  # Cordonnier's d = D when not given
    lc = parse(ZOO["learned2d-content"]["arch"]).attention
    assert lc.position == Learned2DPosition(32) and lc.content and lc.head_dim == 8
    ea = parse(ZOO["ea-vit"]["arch"]).attention
    assert ea.evolving == EAConfig(0.5, 0.3) and ea.content and ea.position is None
    ha = parse(ZOO["ha-learned2d-content"]["arch"]).attention
    assert ha.hierarchical and ha.position == Learned2DPosition(32)
    shift = parse({**ZOO["text-shift"]["arch"], "vocab_size": 9})
    assert isinstance(shift, TextArch) and shift.attention.position == ShiftPosition(2, None)
    assert not shift.learned_positions and parse(_arch("text-vanilla")).learned_positions
    san = parse(ZOO["ha-san-pairwise"]["arch"])
    assert isinstance(san, SANArch) and san.mode == "pairwise" and san.hierarchical and san.sites_family == "zoo-san"
    conv = parse(ZOO["conv-attention"]["arch"])
    assert isinstance(conv, ConvAttentionArch) and conv.channels == (16, 32) and conv.alpha == 30.0
    assert isinstance(parse(ZOO["vit"]["arch"]), VisionArch)


def test_a_content_free_shift_head_keeps_its_tap_init_and_a_content_one_drops_it():
    base = {**ZOO["text-shift"]["arch"], "vocab_size": 9, "tap_init": 3.0}
    assert parse({**base, "content": False}).attention.position == ShiftPosition(2, 3.0)
    assert parse(base).attention.position == ShiftPosition(2, None)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"kind": "audio"}, "unknown model kind 'audio'"),
        ({"attention": "sparse"}, "unknown attention 'sparse'"),
        ({"pachs": 4}, "unknown keys ['pachs']"),
        ({"vocab_size": 10}, "unknown keys ['vocab_size']"),
    ],
)
def test_a_bad_config_is_refused_naming_what_is_wrong(change, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse({**ZOO["vit"]["arch"], **change})


def test_a_missing_field_is_named_and_a_text_model_without_vocabulary_is_refused_at_build():
    arch = dict(ZOO["vit"]["arch"])
    del arch["dim"]
    with pytest.raises(ValueError, match="lacks 'dim'"):
        parse(arch)
    with pytest.raises(ValueError, match="vocab_size"):
        build_model(ZOO["text-vanilla"]["arch"])
