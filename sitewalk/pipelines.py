"""The consumers: each is an item pipeline over the walk's pages, chosen by the walk's config."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem, NotConfigured

from sitewalk.items import IndexEntry, Page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self

    from sitewalk.extensions import WalkBudget

logger = logging.getLogger(__name__)

__all__ = ["CallbackPipeline", "IndexPipeline"]


class _Consumer:
    """A pipeline that sees :class:`Page` items only and can stop the walk."""

    consumer: str = ""

    def __init__(self, crawler: Crawler) -> None:
        config = getattr(crawler.spider, "config", None)
        if config is None or (self.consumer and config.consumer != self.consumer):
            raise NotConfigured
        self.crawler = crawler
        self.config = config

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def budget(self) -> WalkBudget:
        from sitewalk.extensions import WalkBudget

        budget = self.crawler.get_extension(WalkBudget)
        assert budget is not None
        return budget


class CallbackPipeline(_Consumer):
    """Calls the API's ``on_page(page)`` (a function or coroutine function) for every page.

    A return value of ``False`` stops the walk with ``stopped == "callback"``; nothing after this
    page is requested. The page then goes on to the other consumers.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.on_page = getattr(crawler.spider, "on_page", None)
        if self.on_page is None:
            raise NotConfigured

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            verdict = self.on_page(item)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is False:
                self.budget.stop("callback")
        return item


class IndexPipeline(_Consumer):
    """The index consumer: turns each page into an :class:`IndexEntry` for the feed."""

    consumer = "index"

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            return IndexEntry.from_page(item)
        return item


def drop_page(page: Page) -> DropItem:
    """The exception a consumer raises to keep a page out of the feed, quietly."""
    return DropItem(f"page {page.final_url} consumed", log_level="DEBUG")
