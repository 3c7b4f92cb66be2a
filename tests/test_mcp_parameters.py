"""The tools' parameters come from one table: a new walk argument for the tools is one line there."""

from __future__ import annotations

from typing import Any

import pytest

from sitewalk.items import Report
from sitewalk.mcp import ServerOptions, build_server, crawl, parameters
from sitewalk.mcp.parameters import CRAWL, FETCH, GREP, PARAMETERS, walk_arguments

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _schemas(options: ServerOptions) -> dict[str, dict[str, Any]]:
    return {tool.name: tool.input_schema for tool in await build_server(options).list_tools()}


async def test_each_tool_takes_the_parameters_the_table_gives_it() -> None:
    options = ServerOptions(max_pages=30, max_output_chars=5000)
    schemas = await _schemas(options)
    for tool in (FETCH, CRAWL, GREP):
        assert list(schemas[tool]["properties"]) == [p.name for p in PARAMETERS if tool in p.tools and p.offered(options)]
    # since only with a state directory.
    assert "since" not in schemas[CRAWL]["properties"]
    assert "since" in (await _schemas(ServerOptions(state_dir="states")))[CRAWL]["properties"]
    # Each maximum is the server's option that caps the parameter, the default kept under it.
    assert schemas[CRAWL]["properties"]["max_pages"]["maximum"] == 30
    assert schemas[FETCH]["properties"]["max_length"] | {"description": ""} == {
        "type": "integer", "default": 5000, "minimum": 1, "maximum": 5000, "description": "",
    }
    assert schemas[GREP]["properties"]["context"]["maximum"] == 10
    # Listed as the type a model gives (a string), bounded like the walk bounds a pattern.
    assert schemas[CRAWL]["properties"]["include"] | {"description": ""} == {
        "type": "string", "maxLength": 1000, "description": "",
    }


def test_walk_arguments_are_named_as_the_walk_names_them() -> None:
    given = {"url": "https://site.test/", "pattern": "x", "cursor": None, "context": 0}
    arguments = walk_arguments(GREP, {p.name: given.get(p.name) for p in PARAMETERS if GREP in p.tools})
    assert arguments["seed"] == "https://site.test/" and arguments["grep"] == "x" and arguments["context"] == 0
    assert "cursor" not in arguments and "url" not in arguments


async def test_a_walk_argument_added_to_the_table_reaches_every_tool_and_the_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As a new walk argument would be added: one line in PARAMETERS ("links" stands in for it).
    monkeypatch.setattr(parameters, "PARAMETERS", (*PARAMETERS, parameters._walk("links", (FETCH, CRAWL, GREP))))
    schemas = await _schemas(ServerOptions())
    for tool in (FETCH, CRAWL, GREP):
        assert schemas[tool]["properties"]["links"]["type"] == "boolean"
        assert schemas[tool]["properties"]["links"]["default"] is False

    walked: dict[str, Any] = {}

    async def walk_async(**arguments: Any) -> Report:
        walked.update(arguments)
        return Report(seed=arguments["seed"], origin="https://site.test")

    monkeypatch.setattr(crawl, "walk_async", walk_async)
    # A parameter listed as a string still takes null, as the tool did when its schema said so.
    arguments = {"url": "https://site.test/", "links": True, "include": None}
    result = await build_server(ServerOptions()).call_tool(CRAWL, arguments)
    assert not result.is_error
    assert walked["links"] is True and walked["seed"] == "https://site.test/" and walked["max_pages"] == 20
