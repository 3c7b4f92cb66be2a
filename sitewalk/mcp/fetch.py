"""web_fetch: one page as Markdown (or as its text), paged by start_index."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from sitewalk.api import walk_async
from sitewalk.config import WalkConfig
from sitewalk.mcp.cursors import size
from sitewalk.mcp.options import ServerOptions
from sitewalk.mcp.parameters import FETCH, tool, walk_arguments
from sitewalk.mcp.schemas import output_schema
from sitewalk.mcp.walk import ToolWalk

__all__ = ["FetchResult", "fetch_tool", "page_text"]


class FetchResult(BaseModel):
    # No docstring: pydantic would make it the schema's description, which the fields say.
    model_config = ConfigDict(json_schema_extra=output_schema)

    url: str
    final_url: str
    status: int
    content_type: str | None
    title: str | None
    bytes: int
    length: int | None = Field(description="Characters of content; null if the page is not text.")
    start_index: int
    next_start_index: int | None = Field(description="null: the text reaches the content's end.")


def fetch_tool(options: ServerOptions) -> Callable[..., Awaitable[CallToolResult]]:
    """The web_fetch tool of a server with ``options``."""
    cap = options.max_output_chars

    async def web_fetch(ctx: Context, arguments: dict[str, Any]) -> CallToolResult:
        url, start_index, main_content = arguments["url"], arguments["start_index"], arguments["main_content"]
        walk = ToolWalk(ctx, options, 1, read=lambda page: (page, page.content("markdown", main_content=main_content)))
        await walk.run(walk_async, {
            **walk_arguments(FETCH, arguments), "max_depth": 0, "max_pages": 1, "content": "markdown",
            "deadline": min(WalkConfig.deadline, options.max_deadline), "max_bytes": options.max_bytes,
        })
        page, content = walk.pages[0]
        text = content if content is not None else ""
        if start_index and start_index >= len(text):
            raise ToolError(
                f"start_index={start_index} is past the end of the page's content ({len(text)} characters)"
            )
        notes = []
        if page.final_url != url:
            notes.append(f"Note: {url} redirected to {page.final_url}.")
        if not 200 <= page.status < 300:
            notes.append(f"Note: the server answered HTTP {page.status}: the content is that answer's.")
        if content is None:
            notes.append(
                f"Note: the page is {page.content_type or 'of no declared type'} ({len(page.body)} bytes), not text: "
                "there is no content to show."
            )
        elif not content.strip():
            notes.append("Note: the page has no text content.")
        if page.canonical is not None and page.canonical not in (url, page.final_url):
            notes.append(f"Note: the page names {page.canonical} as its original (rel=canonical).")
        if page.noindex:
            notes.append("Note: the page asks not to be indexed (noindex).")
        structured = FetchResult(
            url=url, final_url=page.final_url, status=page.status, content_type=page.content_type, title=page.title,
            bytes=page.byte_count, length=None if content is None else len(content), start_index=start_index,
            next_start_index=len(text),
        ).model_dump()
        # Sized with the largest next_start_index it can have.
        budget = cap - size(structured)
        part, end = page_text(text, start_index, arguments["max_length"], budget, notes, page.final_url)
        structured["next_start_index"] = end if end < len(text) else None
        return CallToolResult(content=[TextContent(type="text", text=part)], structured_content=structured)

    return tool(FETCH, options, web_fetch, FetchResult,
                "Read one web page: HTML as Markdown, a PDF as its text, text (plain, JSON, XML) as it is. Content longer than "
                "max_length is cut; a notice names the start_index that continues it.")


def page_text(content: str, start: int, length: int, budget: int, notes: list[str], url: str) -> tuple[str, int]:
    """Up to ``length`` characters of ``content`` from ``start`` and the notices ``notes``, in
    ``budget`` characters; and where the part ends. A part that ends before the content does
    ends with a notice naming the ``start_index`` that continues."""

    def cut(end: int) -> str:
        return (f"Note: the content is cut at character {end} of {len(content)}. For the next part, call "
                f"web_fetch with url={json.dumps(url)} and start_index={end}.")

    tail = "".join(f"\n{note}" for note in notes)
    if len(content) - start <= length and len(content) - start + len(tail) + 1 <= budget:
        end = len(content)
    else:
        end = start + max(1, min(length, budget - len(tail) - len(cut(len(content))) - 2))
        tail = f"{tail}\n{cut(end)}"
    part = content[start:end]
    text = f"{part}\n{tail}" if part and tail else part or tail.lstrip("\n")
    return text[:budget], end
