"""Render an OpenAPI 3.1 document (as FastAPI produces it) into Markdown for the docs site.

Pure functions of the document (a dict): ``render_routes(spec)`` gives one section per tag and one
subsection per route (parameters, request body, every response status with its content types and
schema), ``render_schemas(spec)`` one subsection per component schema (fields, types, constraints,
defaults, which routes use it). The docs hook calls them on ``create_app().openapi()`` at build
time, so the reference cannot drift from the code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


def anchor(text: str) -> str:
    """A stable HTML id: lowercase, runs of other characters as one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def route_anchor(method: str, path: str) -> str:
    return anchor(f"{method} {path}")


def schema_anchor(name: str) -> str:
    return "schema-" + anchor(name)


def cell(text: object) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    parts = re.split(r"(`[^`]*`)", re.sub(r"\s+", " ", str(text)).strip())
    return "".join(p if p.startswith("`") else p.replace("|", "\\|") for p in parts)  # code spans keep pipes


def prose(text: object) -> str:
    """Free text from the document (descriptions, summaries), with Markdown's link brackets escaped:
    ``[layer][token]`` in a description is a shape, not a reference link."""
    parts = re.split(r"(`[^`]*`)", str(text or ""))  # code spans stay as they are
    return "".join(p if p.startswith("`") else p.replace("[", "\\[").replace("]", "\\]") for p in parts)


def ref_name(schema: dict) -> str | None:
    ref = schema.get("$ref", "")
    return ref[len(REF_PREFIX) :] if ref.startswith(REF_PREFIX) else None


def _literal(value: object) -> str:
    return f'`"{value}"`' if isinstance(value, str) else f"`{value}`"


def type_text(schema: dict | bool | None, link: bool = True) -> str:
    """A readable type: ``integer``, ``array of number``, ``RunCreate`` (linked), ``"a" or "b"``."""
    if schema is None or schema is True or schema == {}:
        return "any"
    if schema is False:
        return "nothing"
    name = ref_name(schema)
    if name is not None:
        return f"[{name}](#{schema_anchor(name)})" if link else name
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return " or ".join(_literal(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [type_text(s, link) for s in schema[key]]
            return " or ".join(dict.fromkeys(parts))  # keep order, drop repeats
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_text(schema["allOf"][0], link)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(type_text({**schema, "type": k}, link) for k in kind)
    if kind == "array":
        if "prefixItems" in schema:
            return "[" + ", ".join(type_text(s, link) for s in schema["prefixItems"]) + "]"
        return f"array of {type_text(schema.get('items'), link)}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"object of {type_text(extra, link)}"
        return "object"
    if kind == "string" and schema.get("format") == "binary":
        return "file"
    if kind == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    return str(kind or "any")


def _bounds(schema: dict) -> list[str]:
    out = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema:
            out.append(f"{sign} {schema[key]}")
    for low, high, unit in (("minLength", "maxLength", "characters"), ("minItems", "maxItems", "items")):
        if low in schema and high in schema:
            out.append(f"{schema[low]} to {schema[high]} {unit}")
        elif low in schema:
            out.append(f"at least {schema[low]} {unit}")
        elif high in schema:
            out.append(f"at most {schema[high]} {unit}")
    if "pattern" in schema:
        out.append(f"matches `{schema['pattern']}`")
    return out


def constraints(schema: dict) -> str:
    """Bounds of a value (``≥ 1``, ``at most 5000 characters``), looking inside ``anyOf``."""
    found = _bounds(schema)
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, []):
            found += _bounds(sub)
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        found += [f"each {b}" for b in _bounds(schema["items"])]
    return ", ".join(dict.fromkeys(found))


def default_text(schema: dict, limit: int = 80) -> str:
    """The default as JSON in a code span; long ones (notes) cut at ``limit`` characters."""
    if "default" not in schema:
        return ""
    text = json.dumps(schema["default"]).replace("`", "'")
    return f"`{text[: limit - 1]}…`" if len(text) > limit else f"`{text}`"


def _table(header: Iterable[str], rows: list[list[str]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _schema_link(schema: dict) -> str:
    return type_text(schema) if schema else "none"


def _operations(spec: dict):
    for path, item in spec.get("paths", {}).items():
        for method in HTTP_METHODS:
            if method in item:
                yield method, path, item[method]


def render_routes(spec: dict, schemas_page: str = "") -> str:
    """One ``##`` section per tag (in order of first use), one ``###`` per route."""
    by_tag: dict[str, list] = {}
    for method, path, op in _operations(spec):
        by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    out = []
    # summary table first: every route on one screen
    rows = [
        [f"[`{m.upper()} {p}`](#{route_anchor(m, p)})", prose(op.get("summary"))]
        for ops in by_tag.values()
        for m, p, op in ops
    ]
    out += _table(["route", "what"], rows)
    for tag, ops in by_tag.items():
        out += [f"## {tag}", ""]
        for method, path, op in ops:
            out += _render_operation(method, path, op, schemas_page)
    return "\n".join(out)


def _link(schema: dict, schemas_page: str) -> str:
    text = _schema_link(schema)
    return text.replace("](#", f"]({schemas_page}#") if schemas_page else text


def _render_operation(method: str, path: str, op: dict, schemas_page: str) -> list[str]:
    out = [f"### `{method.upper()} {path}` {{ #{route_anchor(method, path)} }}", ""]
    if op.get("summary"):
        out += [f"**{prose(op['summary'])}**", ""]
    if op.get("description"):
        out += [prose(op["description"]).strip(), ""]
    params = op.get("parameters", [])
    if params:
        rows = []
        for p in params:
            s = p.get("schema", {})
            rows.append(
                [
                    f"`{p['name']}`",
                    p.get("in", ""),
                    _link(s, schemas_page),
                    "yes" if p.get("required") else "no",
                    default_text(s),
                    constraints(s),
                    prose(p.get("description") or s.get("description")),
                ]
            )
        out += ["Parameters:", ""]
        out += _table(["name", "in", "type", "required", "default", "bounds", "description"], rows)
    body = op.get("requestBody")
    if body:
        parts = []
        for ctype, media in body.get("content", {}).items():
            parts.append(f"`{ctype}`: {_link(media.get('schema', {}), schemas_page)}")
        required = " (required)" if body.get("required") else ""
        out += [f"Request body{required}: " + "; ".join(parts), ""]
    rows = []
    for status, resp in sorted(op.get("responses", {}).items()):
        content = resp.get("content", {})
        kinds = ", ".join(f"`{c}`" for c in content) or "—"
        schemas = [_link(m.get("schema", {}), schemas_page) for m in content.values() if m.get("schema")]
        rows.append([status, prose(resp.get("description")), kinds, "; ".join(dict.fromkeys(schemas)) or "—"])
    out += ["Responses:", ""]
    out += _table(["status", "when", "content", "body"], rows)
    return out


def schema_users(spec: dict) -> dict[str, list[str]]:
    """Which routes use each component schema, directly or nested: name -> ``["POST /x", ...]``."""
    components = spec.get("components", {}).get("schemas", {})

    def refs(node, seen: set[str]) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            name = ref_name(node)
            if name is not None and name not in seen:
                seen.add(name)
                found.add(name)
                found |= refs(components.get(name, {}), seen)
            for value in node.values():
                found |= refs(value, seen)
        elif isinstance(node, list):
            for value in node:
                found |= refs(value, seen)
        return found

    users: dict[str, list[str]] = {}
    for method, path, op in _operations(spec):
        for name in sorted(refs(op, set())):
            users.setdefault(name, []).append(f"{method.upper()} {path}")
    return users


def render_schemas(spec: dict, routes_page: str = "") -> str:
    """One ``###`` section per component schema, alphabetical."""
    components = spec.get("components", {}).get("schemas", {})
    users = schema_users(spec)
    out = []
    for name in sorted(components, key=str.lower):
        s = components[name]
        out += [f"### {name} {{ #{schema_anchor(name)} }}", ""]
        if s.get("description"):
            out += [prose(s["description"]).strip(), ""]
        used = users.get(name, [])
        if used:
            links = [f"[`{u}`]({routes_page}#{route_anchor(*u.lower().split(' ', 1))})" for u in used]
            out += ["Used by " + ", ".join(links) + ".", ""]
        if s.get("additionalProperties") is False:
            out += ["Unknown fields are refused (422).", ""]
        props = s.get("properties", {})
        if props:
            required = set(s.get("required", []))
            rows = [
                [
                    f"`{field}`",
                    type_text(fs),
                    "yes" if field in required else "no",
                    default_text(fs),
                    constraints(fs),
                    prose(fs.get("description")),
                ]
                for field, fs in props.items()
            ]
            out += _table(["field", "type", "required", "default", "bounds", "description"], rows)
        elif "enum" in s or "type" in s:
            out += [f"Type: {type_text(s)}", ""]
    return "\n".join(out)
