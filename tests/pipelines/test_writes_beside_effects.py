"""What DLA is ranked against on the head-effects answer: the signed DLA against the effect oriented so
that removing a head's direct part predicts it (``-effect`` for a logit difference, ``+effect`` for the
loss); a head that writes the answer and whose ablation raises the difference counts against."""

import numpy as np
import pytest

from attnscope.pipelines.writes.beside_effects import dla_agreement


def test_a_purely_direct_effect_agrees_fully_in_both_metrics():
    dla = np.array([[2.0, -0.5, 0.1], [0.0, 1.0, -1.5]])
    agree, against = dla_agreement(dla, -dla, "answer_logit_diff")  # zero ablation removes d: Δ = -d
    assert against == "-effect" and agree.rho == pytest.approx(1.0) and agree.n == 6
    p = 0.3
    agree, against = dla_agreement(dla, dla * (1 - p), "loss")  # the loss rises by about d (1 - p)
    assert against == "effect" and agree.rho == pytest.approx(1.0)


def test_signs_count_where_magnitudes_would_agree():
    dla = np.array([[2.0, -0.5, 0.1], [0.0, 1.0, -1.5]])
    agree, _ = dla_agreement(dla, dla, "answer_logit_diff")  # every ablation moves the wrong way
    assert agree.rho == pytest.approx(-1.0)  # |effect| against |DLA| would say +1


def test_other_metrics_are_refused():
    with pytest.raises(ValueError, match="causal LM metrics"):
        dla_agreement(np.zeros((1, 3)), np.zeros((1, 3)), "prob")
