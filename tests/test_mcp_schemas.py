"""The tools' schemas as listed: what only repeats a name or a type is left out."""

from __future__ import annotations

from sitewalk.mcp.fetch import FetchResult
from sitewalk.mcp.schemas import listed_input


def test_listed_input_leaves_out_titles_and_the_null_a_left_out_parameter_has() -> None:
    schema = {
        "type": "object", "title": "web_grepArguments",
        "properties": {
            "pattern": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "default": None,
                        "description": "d", "title": "Pattern"},
            "max_pages": {"type": "integer", "default": 20, "maximum": 30, "description": "d", "title": "Max Pages"},
        },
    }
    assert listed_input(schema) == {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "d"},
            "max_pages": {"type": "integer", "default": 20, "maximum": 30, "description": "d"},
        },
    }
    # The tool's own schema is left as it is.
    assert schema["properties"]["pattern"]["title"] == "Pattern"


def test_a_result_schema_has_no_titles_and_nullable_types() -> None:
    schema = FetchResult.model_json_schema()
    assert "title" not in schema and "required" not in schema
    assert schema["properties"]["title"] == {"type": ["string", "null"]}
    assert schema["properties"]["next_start_index"]["type"] == ["integer", "null"]
    assert all("title" not in spec for spec in schema["properties"].values())
