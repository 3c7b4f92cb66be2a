"""One tool call's walk: what it keeps of each page, its progress, and its errors in the tools' words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from sitewalk.config import WalkConfig
from sitewalk.exceptions import SeedError, SitewalkError
from sitewalk.items import Page
from sitewalk.mcp.errors import seed_error
from sitewalk.mcp.options import MCP, ServerOptions

__all__ = ["ToolWalk"]

_T = TypeVar("_T")


def _index_entry(page: Page) -> tuple[str, int, int, str | None]:
    return page.final_url, page.status, page.byte_count, page.title


class ToolWalk:
    """One call's walk: its ``on_page`` keeps what the call needs of each page (``read``: by
    default what the index lists) and reports one progress step per page (a no-op unless the
    client sent a progress token).

    A call the client cancels ends its walk gracefully after the page in flight (the API stops
    the crawl when its caller is cancelled).
    """

    def __init__(self, ctx: Context, options: ServerOptions, total: int,
                 read: Callable[[Page], Any] = _index_entry) -> None:
        self.ctx = ctx
        self.options = options
        self.total = total
        self.read = read
        self.pages: list[Any] = []

    async def run(self, walk: Callable[..., Awaitable[_T]], arguments: dict[str, Any]) -> _T:
        """The result of ``walk`` (a function of :mod:`sitewalk.api`) called with the walk
        arguments ``arguments`` and this server's settings and delay; a walk that cannot be made
        is an error the model can read, naming the tools' parameters."""
        options = self.options
        try:
            # The API checks them too, in the words of Python callers.
            WalkConfig.from_mapping(arguments, MCP)
            return await walk(on_page=self.on_page, on_page_stops=False, settings=options.settings(),
                              delay=options.delay, **arguments)
        except SeedError as exc:
            raise ToolError(seed_error(exc)) from None
        except SitewalkError as exc:
            raise ToolError(str(exc)) from None

    async def on_page(self, page: Page) -> bool:
        self.pages.append(self.read(page))
        await self.ctx.report_progress(len(self.pages), self.total, message=page.final_url)
        return True
