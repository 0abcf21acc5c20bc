"""MkDocs hooks of the attnscope docs (named in mkdocs.yml under ``hooks:``).

- ``on_config``: stage the installed package layout for mkdocstrings. The folders ``analysis/``,
  ``models/``, ... install as ``attnscope.analysis``, ``attnscope.models`` (setuptools ``package-dir``
  in pyproject.toml), a layout griffe cannot see from the source tree; ``build/docs-api/attnscope``
  rebuilds it from symbolic links, read from pyproject.toml so that a new package shows up by itself.
- ``on_files``: adds ``reference/openapi.json``, the application's OpenAPI document.
- ``on_page_markdown``: replaces ``<!-- openapi:routes -->`` and ``<!-- openapi:schemas -->`` with the
  Markdown rendered from ``create_app().openapi()`` (``openapi_md.py``).
- ``on_page_content``: formulas to MathML (``mathml.py``).

Every problem is logged as a warning under ``mkdocs.``, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import tomllib
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.attnscope")
HERE = Path(__file__).resolve().parent
ROUTES_MARK = "<!-- openapi:routes -->"
SCHEMAS_MARK = "<!-- openapi:schemas -->"
API_PAGE = "reference/rest-api.md"
API_TREE = Path("build") / "docs-api"


def _sibling(name: str):
    spec = importlib.util.spec_from_file_location(f"attnscope_docs_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


openapi_md = _sibling("openapi_md")
mathml = _sibling("mathml")
_spec: dict | None = None


def openapi_spec() -> dict:
    """``create_app().openapi()``, computed once per build (no lifespan: nothing is loaded)."""
    global _spec
    if _spec is None:
        from attnscope.server.main import create_app

        _spec = create_app().openapi()
    return _spec


def _clear(folder: Path) -> None:
    """Remove a staged tree: links are unlinked, never followed."""
    if not folder.exists():
        return
    for entry in folder.iterdir():
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
        else:
            _clear(entry)
    folder.rmdir()


def stage_api_tree(root: Path, target: Path) -> dict[str, Path]:
    """Lay out ``target/attnscope/...`` as installed, from pyproject's ``package-dir``; returns the mapping."""
    with open(root / "pyproject.toml", "rb") as fh:
        mapping = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    _clear(target)
    staged: dict[str, Path] = {}
    for name in sorted(mapping, key=lambda n: n.count(".")):
        source = (root / mapping[name]).resolve()
        dest = target.joinpath(*name.split("."))
        if "." not in name:  # the top package: a real folder with a link per entry, so children can join it
            dest.mkdir(parents=True)
            for entry in sorted(source.iterdir()):
                if entry.name != "__pycache__":
                    (dest / entry.name).symlink_to(entry)
        else:
            if dest.exists() or dest.is_symlink():
                dest.unlink()
            dest.symlink_to(source, target_is_directory=True)
        staged[name] = source
    return staged


@event_priority(100)
def on_config(config, **_):
    global _spec
    _spec = None
    root = Path(config.config_file_path).resolve().parent
    stage_api_tree(root, root / API_TREE)
    return config


def on_files(files, config, **_):
    files.append(File.generated(config, "reference/openapi.json", content=json.dumps(openapi_spec(), indent=2)))
    return files


def on_page_markdown(markdown: str, page, **_):
    if page.file.src_uri != API_PAGE:
        return markdown
    for mark in (ROUTES_MARK, SCHEMAS_MARK):
        if mark not in markdown:
            log.warning("%s lost its marker %s: the REST reference would be missing", API_PAGE, mark)
    spec = openapi_spec()
    markdown = markdown.replace(ROUTES_MARK, openapi_md.render_routes(spec))
    return markdown.replace(SCHEMAS_MARK, openapi_md.render_schemas(spec))


def on_page_content(html: str, page, **_):
    html, errors = mathml.render(html)
    for err in errors:
        log.warning("%s: %s", page.file.src_uri, err)
    return html
