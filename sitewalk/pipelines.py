"""The walk's consumers as item pipelines: one page in, one item out."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from parsel import Selector
from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.pipelines import ItemPipelineManager

from sitewalk import patterns
from sitewalk.documents import DOCUMENT_TYPES
from sitewalk.extensions import WalkMemory, stopped_reason
from sitewalk.items import Extract, IndexEntry, Page
from sitewalk.state import WalkComponent
from sitewalk.tickets import Dropped

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scrapy.crawler import Crawler

    from sitewalk.tickets import Ticket

logger = logging.getLogger(__name__)

__all__ = ["CallbackPipeline", "ExtractPipeline", "HaltedItem", "IndexPipeline", "SaveDirPipeline", "WalkPipelineManager"]


class HaltedItem(DropItem):
    """An item the pipelines still held when the walk was halted: its page is not done."""


class WalkPipelineManager(ItemPipelineManager):
    """Scrapy's item pipeline manager (``ITEM_PROCESSOR``), except that a halt of the walk
    (:meth:`sitewalk.gate.Gate.halt`) cuts an item's way through the pipelines: a pipeline that
    holds an item (an ``on_page`` coroutine that never returns, say) cannot hold the walk past
    its deadline or an interruption. The item is dropped (:class:`HaltedItem`) and its page
    listed as unvisited."""

    async def process_item_async(self, item: Any) -> Any:
        walk = getattr(self.crawler.spider, "walk", None) if self.crawler is not None else None
        work = super().process_item_async(item)
        # Pages go through the pipelines one at a time, in request order: this item's is the one.
        ticket = walk.gate.consuming() if walk is not None else None
        if ticket is None:
            return await work
        try:
            return await ticket.unless_dropped(work)
        except Dropped:
            raise HaltedItem("the walk was halted while the pipelines held this item") from None


class CallbackPipeline(WalkComponent):
    """Calls the API's ``on_page(page)`` (a function or coroutine function) for every page.

    A return value of ``False`` stops the walk with ``stopped == "callback"``; nothing after this
    page is requested, because the walk's gate waits for the verdict on each page — unless the
    caller said ``on_page`` never stops the walk (``on_page_stops=False``). An exception raised by
    ``on_page`` ends the walk too (``stopped == "error"``) and reaches the API's caller as it is.
    The page then goes on to the other consumers.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # The spider's arguments on_page and on_page_stops, which the API passes.
        on_page: Callable[[Page], Any] | None = getattr(crawler.spider, "on_page", None)
        if on_page is None:
            raise NotConfigured
        self._on_page = on_page
        # The exception on_page raised, if it did: the API raises it again to its caller.
        self.error: BaseException | None = None
        if getattr(crawler.spider, "on_page_stops", True):
            self.walk.gate.add_check(self.may_stop)

    def may_stop(self, in_hand: Sequence[Ticket]) -> bool:
        """Any page in hand may be the one ``on_page`` stops at."""
        return bool(in_hand)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            try:
                verdict = self._on_page(item)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
            except Exception as exc:  # noqa: BLE001 - the walk ends and the API raises it again
                logger.info("on_page raised %s on %s: stopping the walk", type(exc).__name__, item.final_url)
                self.error = exc
                self.walk.stop("error", left_unfetched=True)
            else:
                if verdict is False:
                    self.walk.stop("callback")
        return item


class IndexPipeline(WalkComponent):
    """The index consumer: turns each page into an :class:`IndexEntry` for the feed (with its
    links when ``links=true``, its content when ``content`` is given)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = self.walk.config
        self._links, self._content, self._main = config.links, config.content, config.main_content

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            return IndexEntry.from_page(item, links=self._links, content=self._content, main_content=self._main)
        return item


class ExtractPipeline(WalkComponent):
    """The extract consumer: the values of a ``css`` or ``xpath`` selector on each HTML page.

    Values are what parsel's ``getall()`` yields: text or attribute values for ``::text``,
    ``::attr(name)``, ``text()`` and ``@name``; the outer HTML for elements. With ``regex``,
    values are filtered as by parsel's ``re()``: each match in each value, or its groups when
    the pattern has any. A successful (2xx) HTML page with at least one value becomes one
    :class:`Extract`; other pages pass on as they are (a feed of extracts leaves them out).

    Stats: ``sitewalk/extract/pages`` (pages with values), ``sitewalk/extract/values``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = self.walk.config
        if config.css is None and config.xpath is None:
            raise NotConfigured
        self.css = config.css
        self.xpath = config.xpath
        self.regex = patterns.compile(config.regex, name="regex") if config.regex is not None else None

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page) or not item.is_html or not 200 <= item.status < 300:
            return item
        selector = Selector(text=item.text, type="html")
        selected = selector.css(self.css) if self.css is not None else selector.xpath(self.xpath or "")
        # parsel's re() takes RE2's compiled pattern as it takes Python's: it calls search and findall.
        values = selected.re(self.regex.regex) if self.regex is not None else selected.getall()
        if not values:
            return item
        self.crawler.stats.inc_value("sitewalk/extract/pages")
        self.crawler.stats.inc_value("sitewalk/extract/values", len(values))
        return Extract(url=item.final_url, depth=item.depth, values=values, change=item.change)


class SaveDirPipeline(WalkComponent):
    """Saves each 2xx page's content in ``save_dir`` as the walk goes (:mod:`sitewalk.savedir`):
    Markdown unless ``content`` names text or HTML, the main part with ``main_content``; text
    pages as they are, binary pages not at all. A resumed walk (JOBDIR) rewrites no page it had
    saved. A page that asks not to be indexed (``noindex``) is not saved, unless
    ``index_noindex``. With a state (:mod:`sitewalk.memory`), only new and changed pages are
    written (an unchanged page's file stays as it was) and the files of the pages the walk found
    removed are deleted. At the end of the walk, ``llms.txt`` and ``llms-full.txt`` of every page
    saved, but one copy of pages that name another saved page as their original (``canonical``).

    Stats: ``sitewalk/save_dir/pages`` (files written), ``sitewalk/save_dir/noindex`` (pages left
    out), ``sitewalk/save_dir/removed`` (files deleted).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = self.walk.config
        if config.save_dir is None:
            raise NotConfigured
        self._mode = config.content or "markdown"
        self._main = config.main_content
        self._noindex = config.index_noindex
        # Imported only by a walk with save_dir: start-up time (benchmarks/startup.py).
        from sitewalk.savedir import SaveDir

        self._directory = SaveDir(config.save_dir)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def process_item(self, item: Any) -> Any:
        unchanged = isinstance(item, Page) and item.change == "unchanged" and item.final_url in self._directory.pages
        if isinstance(item, Page) and 200 <= item.status < 300 and not unchanged:
            if item.noindex and not self._noindex:
                self.crawler.stats.inc_value("sitewalk/save_dir/noindex")
                return item
            content = item.content(self._mode, main_content=self._main)
            if content is not None:
                converted = item.is_html or item.content_type in DOCUMENT_TYPES
                saved = self._directory.save(item.final_url, content, self._mode, html=converted,
                                             title=item.title, rewrite=self.walk.resumed is None,
                                             canonical=item.canonical)
                if saved is not None:
                    self.crawler.stats.inc_value("sitewalk/save_dir/pages")
        return item

    def spider_closed(self, reason: str) -> None:
        directory = self._directory
        memory = self.crawler.get_extension(WalkMemory)
        if memory is not None:
            changes = memory.memory.changes(stopped_reason(reason))
            removed = sum(directory.remove(url) for url in changes.removed_final_urls)
            if removed:
                self.crawler.stats.set_value("sitewalk/save_dir/removed", removed)
        directory.close()
        if directory.pages:
            directory.write_llms_txt(self.walk.config.seed)
