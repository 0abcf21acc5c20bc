"""The REST reference rendered from the OpenAPI document: every route, status and schema of the live
application is in it, and the type/constraint rendering is right on small closed-form schemas."""

from __future__ import annotations

import re

import pytest
from _docs_hooks import load

md = load("openapi_md")


@pytest.fixture(scope="module")
def spec():
    from attnscope.server.main import create_app

    return create_app().openapi()


@pytest.fixture(scope="module")
def routes(spec):
    return md.render_routes(spec)


@pytest.fixture(scope="module")
def schemas(spec):
    return md.render_schemas(spec)


def _sections(text: str) -> dict[str, str]:
    """``anchor -> text of its section`` for the ``### ... { #anchor }`` headings."""
    parts = re.split(r"^### .*\{ #([a-z0-9-]+) \}$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_route_and_every_status_it_declares_is_rendered(spec, routes):
    sections = _sections(routes)
    operations = [(m, p, op) for p, item in spec["paths"].items() for m, op in item.items()]
    assert len(operations) >= 25
    for method, path, op in operations:
        anchor = md.route_anchor(method, path)
        assert anchor in sections, f"{method.upper()} {path} is missing from the REST reference"
        body = sections[anchor]
        for status in op["responses"]:
            assert re.search(rf"^\| {status} \|", body, re.M), f"{method.upper()} {path}: status {status} missing"
        for param in op.get("parameters", []):
            assert f"`{param['name']}`" in body


def test_every_schema_is_rendered_with_every_field(spec, schemas):
    sections = _sections(schemas)
    for name, schema in spec["components"]["schemas"].items():
        anchor = md.schema_anchor(name)
        assert anchor in sections, f"schema {name} is missing"
        for field in schema.get("properties", {}):
            assert f"| `{field}` |" in sections[anchor], f"{name}.{field} missing"


def test_every_schema_link_points_at_a_rendered_schema(routes, schemas):
    targets = set(_sections(schemas))
    links = set(re.findall(r"\]\(#(schema-[a-z0-9-]+)\)", routes + schemas))
    assert links and links <= targets, sorted(links - targets)


def test_error_bodies_are_linked_from_the_routes_that_return_them(routes):
    section = _sections(routes)[md.route_anchor("post", "/api/v1/runs")]
    assert re.search(r"^\| 404 \|.*\[ErrorBody\]\(#schema-errorbody\)", section, re.M)


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        ({"type": "integer"}, "integer"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer or null"),
        ({"type": "array", "items": {"$ref": "#/components/schemas/RunPublic"}}, "array of RunPublic"),
        ({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}, "array of array of number"),
        ({"enum": ["json", "float16"]}, '`"json"` or `"float16"`'),
        ({"const": 3}, "`3`"),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]}, "[integer, integer]"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "object of number"),
        ({"type": "string", "format": "binary"}, "file"),
        ({}, "any"),
    ],
)
def test_type_text(schema, text):
    assert md.type_text(schema, link=False) == text


def test_constraints_and_defaults():
    assert md.constraints({"type": "integer", "minimum": 1, "maximum": 64}) == "≥ 1, ≤ 64"
    assert md.constraints({"anyOf": [{"type": "string", "minLength": 1, "maxLength": 5000}, {"type": "null"}]}) == (
        "1 to 5000 characters"
    )
    assert md.constraints({"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}}) == "each > 0"
    assert md.default_text({"default": None}) == "`null`"
    assert md.default_text({"default": "minilm"}) == '`"minilm"`'
    assert md.default_text({"default": "x" * 200}).endswith("…`")


def test_prose_and_cells_escape_outside_code_spans_only():
    assert md.prose("coords [layer + 1][token] in `[a][b]`") == "coords \\[layer + 1\\]\\[token\\] in `[a][b]`"
    assert md.cell("json | csv, `a|b`\nnext") == "json \\| csv, `a|b` next"
