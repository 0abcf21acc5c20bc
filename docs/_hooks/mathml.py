"""Formulas as MathML, at build time: no JavaScript, no fonts, nothing fetched by the browser.

``pymdownx.arithmatex`` (generic mode) finds ``$...$`` / ``$$...$$`` in the Markdown and leaves them
in the page as ``<span class="arithmatex">\\(...\\)</span>`` and ``<div class="arithmatex">\\[...\\]</div>``
with the TeX HTML-escaped; ``render`` replaces each with the MathML that ``latex2mathml`` writes.
Browsers draw MathML natively (Chromium since 109, Firefox, Safari). A formula that does not parse,
or that uses a command latex2mathml does not know (it would be shown as the raw ``\\name``), is
reported, and the hook turns the report into a warning, which fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert

INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)
UNKNOWN = re.compile(r">(\\[A-Za-z]+)<")


def to_mathml(tex: str, display: bool) -> str:
    """One formula (plain TeX, not escaped) as a ``<math>`` element; ``ValueError`` if it does not render."""
    try:
        out = convert(tex, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises its own exception types for bad input
        raise ValueError(f"formula does not parse ({type(exc).__name__}): {tex!r}") from exc
    unknown = UNKNOWN.findall(out)
    if unknown:
        raise ValueError(f"unknown command {', '.join(sorted(set(unknown)))} in formula {tex!r}")
    return out


def render(page_html: str) -> tuple[str, list[str]]:
    """Every arithmatex span/div of a page as MathML. Returns ``(html, errors)``."""
    errors: list[str] = []

    def sub(display: bool):
        def repl(m: re.Match) -> str:
            tex = html.unescape(m.group(1))
            try:
                math = to_mathml(tex, display)
            except ValueError as exc:
                errors.append(str(exc))
                return m.group(0)
            return f'<div class="math-block">{math}</div>' if display else math

        return repl

    page_html = BLOCK.sub(sub(True), page_html)
    page_html = INLINE.sub(sub(False), page_html)
    return page_html, errors
