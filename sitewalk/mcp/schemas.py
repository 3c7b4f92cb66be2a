"""The tools' JSON schemas as a model reads them: without what only repeats the names and types."""

from __future__ import annotations

from typing import Any

__all__ = ["listed_input", "output_schema"]

_NULL = {"type": "null"}


def listed_input(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema without pydantic's titles (``Max Pages`` for max_pages); a parameter
    that is null unless given is listed as the type a model gives it (the tool still takes null)."""
    listed = {key: value for key, value in schema.items() if key != "title"}
    properties = {}
    for name, field in schema["properties"].items():
        field = {key: value for key, value in field.items() if key != "title"}
        arms = field.get("anyOf", [])
        if field.get("default", ...) is None and len(arms) == 2 and _NULL in arms:
            del field["anyOf"], field["default"]
            field = {**next(arm for arm in arms if arm != _NULL), **field}
        properties[name] = field
    listed["properties"] = properties
    return listed


def output_schema(schema: dict[str, Any]) -> None:
    """A result model's schema (pydantic's ``json_schema_extra``), changed in place: no titles, no
    required list (every field is always there), a record as an object without the types of its
    values, and a nullable field as ``"type": [T, "null"]``."""
    schema.pop("title", None)
    schema.pop("required", None)
    for name, field in schema["properties"].items():
        field.pop("title", None)
        schema["properties"][name] = _nullable(field)


def _nullable(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_nullable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _nullable(value) for key, value in schema.items() if key != "additionalProperties"}
    arms = schema.get("anyOf", [])
    if len(arms) == 2 and _NULL in arms:
        arm = next(arm for arm in arms if arm != _NULL)
        if isinstance(arm.get("type"), str):
            del schema["anyOf"]
            schema = {**arm, **schema, "type": [arm["type"], "null"]}
    return schema
