"""Formulas become MathML at build time; a formula that would show raw TeX is reported."""

from __future__ import annotations

import pytest
from _docs_hooks import load

mathml = load("mathml")


def test_inline_and_block_spans_become_math_elements():
    page = (
        '<p>Let <span class="arithmatex">\\(x &lt; \\lVert A \\rVert_2\\)</span>.</p>'
        '<div class="arithmatex">\\[L = \\sum_h e^{2\\kappa_h}\\]</div>'
    )
    out, errors = mathml.render(page)
    assert errors == []
    assert "arithmatex" not in out
    assert out.count("<math") == 2
    assert 'display="inline"' in out and 'display="block"' in out
    assert "&#x0003C;" in out or "&lt;" in out  # the unescaped "<" is a MathML operator again
    assert '<div class="math-block">' in out


@pytest.mark.parametrize("tex", [r"\notacommand x", r"\frac{1}{"])
def test_unknown_commands_and_broken_formulas_are_reported_and_left_in_place(tex):
    page = f'<span class="arithmatex">\\({tex}\\)</span>'
    out, errors = mathml.render(page)
    assert len(errors) == 1 and tex in errors[0]
    assert out == page


def test_the_commands_the_methods_pages_use_render():
    for tex in [
        r"\operatorname{Cov}_{K_\mu(x, \cdot)}(y)\, A^\top",
        r"\operatorname*{argmax}_{p \in \Delta_n} H(p) + \langle p, s \rangle",
        r"\Phi(\mu) = (F_\mu)_\# \mu",
        r"\mathcal{P}(B_R)",
        r"\mathrm{KL}\big(m(\tilde x) \,\Vert\, m(x)\big)",
        r"\tfrac12 W^\ell + \tfrac12 I",
        r"\begin{cases} 1 & k = q + \delta \\ 0 & \text{otherwise} \end{cases}",
    ]:
        assert mathml.to_mathml(tex, display=True).startswith("<math")
