"""The consumers: each is an item pipeline over the walk's pages, chosen by the walk's config."""

from __future__ import annotations

import inspect
import logging
import re
from typing import TYPE_CHECKING, Any

from parsel import Selector
from scrapy.exceptions import DropItem, NotConfigured

from sitewalk.items import Extract, IndexEntry, Match, Page
from sitewalk.text import page_lines

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self

    from sitewalk.extensions import WalkBudget

logger = logging.getLogger(__name__)

__all__ = ["CallbackPipeline", "ExtractPipeline", "GrepPipeline", "IndexPipeline"]


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
        on_page = getattr(crawler.spider, "on_page", None)
        if on_page is None:
            raise NotConfigured
        self.on_page: Callable[[Page], Any] = on_page
        # Any page may be the one on_page stops at: the next request waits for its verdict,
        # unless its caller said it never stops (the API's on_page_stops=False).
        if getattr(on_page, "stops", True):
            crawler.spider.stop_checks.append(lambda pages, byte_count: True)  # type: ignore[union-attr]

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


class GrepPipeline(_Consumer):
    """The grep consumer: one :class:`Match` per line of a page's text that matches ``grep``.

    The lines are those of :func:`sitewalk.text.page_lines` (the visible text of HTML, the
    decoded body of other text types; binary pages are skipped), of successful (2xx) pages only:
    an error page shows the site's error template, not its content. ``ignore_case`` and
    ``fixed_strings`` (search the pattern literally) change the matching; ``context`` lines
    before and after go with each match. Matches reach the feed; pages do not.

    ``max_matches`` is a budget for the whole walk: once that many matches have been emitted the
    walk stops (``stopped == "callback"``) and no further page is requested.

    Stats: ``sitewalk/grep/pages``, ``sitewalk/grep/skipped`` (not text, or not 2xx),
    ``sitewalk/grep/matches``.
    """

    consumer = "grep"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        pattern: str = self.config.grep
        if self.config.fixed_strings:
            pattern = re.escape(pattern)
        self.pattern = re.compile(pattern, re.IGNORECASE if self.config.ignore_case else 0)
        self.max_matches: int = self.config.max_matches
        self.context: int = self.config.context
        # Kept on the spider so a resumed walk (JOBDIR) goes on counting from where it stopped.
        self._state: dict[str, int] = crawler.spider.consumer_state  # type: ignore[union-attr]
        self._state.setdefault("grep_matches", 0)
        crawler.spider.stop_checks.append(self.may_stop)  # type: ignore[union-attr]
        crawler.spider.wants_lines = True  # type: ignore[union-attr]

    def may_stop(self, pages: int, byte_count: int) -> bool:
        """Whether ``pages`` pages of ``byte_count`` body bytes could reach ``max_matches``.

        A page has at most one match per line, and at most ``bytes + 1`` lines (each visible line
        of HTML holds a character of the body, a text file has one line more than newlines), so
        while the budget left exceeds that bound the walk need not wait for this consumer.
        """
        return self.matches + byte_count + pages >= self.max_matches

    @property
    def matches(self) -> int:
        return self._state["grep_matches"]

    @matches.setter
    def matches(self, value: int) -> None:
        self._state["grep_matches"] = value

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        lines = page_lines(item) if 200 <= item.status < 300 else None
        stats = self.crawler.stats
        if lines is None:
            stats.inc_value("sitewalk/grep/skipped")
            raise drop_page(item)
        stats.inc_value("sitewalk/grep/pages")
        search = self.pattern.search
        scraper = self.crawler.engine.scraper
        # The matching lines first, in one comprehension: most lines of most pages do not match.
        hits = [index for index, line in enumerate(lines) if search(line) is not None]
        for index in hits:
            if self.matches >= self.max_matches:
                break
            line = lines[index]
            match = Match(
                url=item.final_url,
                line=index + 1,
                text=line,
                before=lines[max(index - self.context, 0) : index],
                after=lines[index + 1 : index + 1 + self.context],
                depth=item.depth,
            )
            self.matches += 1
            stats.inc_value("sitewalk/grep/matches")
            await scraper.start_itemproc_async(match, response=None)
            if self.matches >= self.max_matches:
                logger.info("max_matches=%d reached on %s: stopping the walk", self.max_matches, item.final_url)
                self.budget.stop("callback")
        raise drop_page(item)


class ExtractPipeline(_Consumer):
    """The extract consumer: the values of a ``css`` or ``xpath`` selector on each HTML page.

    Values are what parsel's ``getall()`` yields: text or attribute values for ``::text``,
    ``::attr(name)``, ``text()`` and ``@name``; the outer HTML for elements. With ``regex``,
    values are filtered as by parsel's ``re()``: each match in each value, or its groups when
    the pattern has any. One :class:`Extract` per successful (2xx) HTML page with at least one
    value; other pages leave nothing in the feed.

    Stats: ``sitewalk/extract/pages`` (pages with values), ``sitewalk/extract/values``.
    """

    consumer = "extract"

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.css: str | None = self.config.css
        self.xpath: str | None = self.config.xpath
        self.regex = re.compile(self.config.regex) if self.config.regex is not None else None

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        if not item.is_html or not 200 <= item.status < 300:
            raise drop_page(item)
        selector = Selector(text=item.text, type="html")
        if self.css is not None:
            selected = selector.css(self.css)
        else:
            assert self.xpath is not None  # the config's consumer is "extract"
            selected = selector.xpath(self.xpath)
        values = selected.re(self.regex) if self.regex is not None else selected.getall()
        if not values:
            raise drop_page(item)
        self.crawler.stats.inc_value("sitewalk/extract/pages")
        self.crawler.stats.inc_value("sitewalk/extract/values", len(values))
        return Extract(url=item.final_url, depth=item.depth, values=values)


def drop_page(page: Page) -> DropItem:
    """The exception a consumer raises to keep a page out of the feed, quietly."""
    return DropItem(f"page {page.final_url} consumed", log_level="DEBUG")
