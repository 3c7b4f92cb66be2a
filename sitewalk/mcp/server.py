"""The MCP server: web_fetch, web_crawl and web_grep, typed and bounded, over the same walk as the CLI."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool, ToolAnnotations
from pydantic import ValidationError

from sitewalk import __version__
from sitewalk.mcp.crawl import crawl_tool, grep_tool
from sitewalk.mcp.cursors import Cursors
from sitewalk.mcp.errors import argument_errors, unknown_parameter
from sitewalk.mcp.fetch import fetch_tool
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.schemas import listed_input

__all__ = ["build_server"]


class _ToolServer(MCPServer):
    """An MCP server whose argument errors are one line for the model: each parameter as it was
    given, the server option behind a maximum (not pydantic's validation report); an argument the
    tool does not take is an error too, not silently dropped."""

    def __init__(self, options: ServerOptions, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options = options
        self.parameters: dict[str, list[str]] = {}

    def add_read_only_tool(self, fn: Callable[..., Any], name: str, title: str) -> None:
        """Add the tool ``fn`` (its context parameter named ``ctx``), read-only."""
        self.parameters[name] = [parameter for parameter in inspect.signature(fn).parameters if parameter != "ctx"]
        # openWorldHint is left out: its default, true, is what these tools are (they fetch from the web).
        self.add_tool(fn, name=name, title=title, description=inspect.cleandoc(fn.__doc__ or ""),
                      annotations=ToolAnnotations(read_only_hint=True))

    async def list_tools(self) -> list[Tool]:
        """The tools, their input schemas as :func:`~sitewalk.mcp.schemas.listed_input` lists them:
        a model reads every character of a tool list before it asks anything."""
        return [tool.model_copy(update={"input_schema": listed_input(tool.input_schema)})
                for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = self.parameters.get(name)
        unknown = sorted(set(arguments) - set(known)) if known is not None else []
        if unknown:
            raise ToolError(f"Error executing tool {name}: {unknown_parameter(name, unknown[0], known or [])}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK validates the arguments against the tool's schema before the tool runs, and
            # raises its ToolError from pydantic's error: read it here, where the SDK hands it on.
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(
                    f"Error executing tool {name}: {argument_errors(exc.__cause__, self.options)}"
                ) from exc.__cause__
            raise


def build_server(options: ServerOptions) -> MCPServer:
    """The MCP server with the three tools, their bounds taken from ``options``."""
    server = _ToolServer(
        options,
        name="sitewalk",
        version=__version__,
        instructions=(
            "web_crawl lists the pages of one web site (same origin as the URL, breadth first); "
            "web_grep searches their visible text line by line; web_fetch reads one page as Markdown. "
            "All fetch only what the budgets allow and say in notices what was skipped or cut and "
            "which parameter changes it; a cut listing names a cursor that continues it."
        ),
    )
    cursors = Cursors(options.cursor_memory)
    server.add_read_only_tool(fetch_tool(options), "web_fetch", "Read a web page")
    server.add_read_only_tool(crawl_tool(options, cursors), "web_crawl", "Crawl a web site")
    server.add_read_only_tool(grep_tool(options, cursors), "web_grep", "Search a web site's text")
    return server
