"""What the walk reads of each page it fetched (:class:`PageReading`), beside the walk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitewalk.failures import Failed
from sitewalk.links import UTF8_CHARSETS
from sitewalk.pagereader import ReaderPool
from sitewalk.spidermiddlewares import GrepMiddleware
from sitewalk.tickets import Dropped

if TYPE_CHECKING:
    import logging

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from sitewalk.config import WalkConfig
    from sitewalk.items import Page
    from sitewalk.tickets import Ticket

__all__ = ["PageReading"]


class PageReading:
    """Reads each HTML page the walk fetched (:class:`sitewalk.pagereader.ReaderPool`) for what
    the walk and its consumers need: its title; its links, from every 2xx page, at max_depth too
    (the link report counts their inlinks, JOBDIR's journal and a state keep them, index items
    list them with ``links``: each the same whatever outputs a walk asks for); for grep, the visible lines of the pages grep still needs; the content asked
    for. A page that cannot be read is that page's failure (kind ``read``), not the walk's."""

    def __init__(self, config: WalkConfig, logger: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        self._config = config
        self._logger = logger
        self._pool = ReaderPool(lines=config.consumer == "grep", content=config.read_content, main=config.main_content)
        self._grep: GrepMiddleware | None = None

    def start(self, crawler: Crawler) -> None:
        """The walk starts: grep's middleware, once built, tells which pages' lines it needs."""
        self._grep = crawler.get_spider_middleware(GrepMiddleware)

    async def links(self, ticket: Ticket, response: Response, page: Page) -> tuple[list[str], Failed | None]:
        """Read ``page`` (unless the walk lets go of ``ticket`` meanwhile: :class:`Dropped`); its
        links, and the failure when it could not be read (then no links)."""
        try:
            return await ticket.unless_dropped(self._read(response, page)), None
        except Dropped:
            raise
        except Exception as exc:  # noqa: BLE001 - any fault of the reading is the page's failure
            self._logger.warning("%s could not be read (%s: %s): a failure of kind read, its links not followed",
                                 page.final_url, type(exc).__name__, exc)
            self._logger.debug("reading %s failed", page.final_url, exc_info=True)
            return [], Failed("read", f"the page could not be read ({type(exc).__name__}: {exc}); its links are not followed")

    async def _read(self, response: Response, page: Page) -> list[str]:
        successful = 200 <= page.status < 300
        config, grep = self._config, self._grep
        lines = successful and config.consumer == "grep" and (grep is None or grep.needs_lines(page))
        if not response.body or not (page.is_html or successful) or not self._pool.reads(page.content_type, lines=lines):
            return []
        utf8 = not page.is_html or page.encoding in UTF8_CHARSETS
        markup = response.body if utf8 else response.text
        read, tree = await self._pool.read(
            markup, response.url,
            links=successful,
            lines=lines, content=successful, encoding=None if utf8 else page.encoding,
            headers=page.headers, media_type=page.content_type,
        )
        content = (config.read_content or "", config.main_content, read.content) if read.content is not None else None
        page.add_reading(read.title, read.lines, tree, read.links, content, (read.canonical, read.noindex))
        return read.links

    async def close(self) -> None:
        await self._pool.close()
