"""Spider middlewares of the walk: grep (one page, many matches) and when a page has been consumed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary, WeakSet

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from sitewalk import patterns
from sitewalk.absence import Absence
from sitewalk.failures import Failed
from sitewalk.items import Match, Page
from sitewalk.kinds import FOUND_ON
from sitewalk.state import WalkComponent
from sitewalk.text import page_lines

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from sitewalk.tickets import Ticket

logger = logging.getLogger(__name__)

__all__ = ["MATCHES", "ConsumedMiddleware", "GrepMiddleware"]

# The journal's name for grep's match count (its "consumers" record).
MATCHES = "grep_matches"


class ConsumedMiddleware(WalkComponent):
    """Tells the walk's gate when a page, and every item made from it, went through the pipelines.

    It sees the spider's output last (the lowest order), so it counts the items that the other
    middlewares made of a page (grep's matches); the ``item_scraped``, ``item_dropped`` and
    ``item_error`` signals count them out of the pipelines. A page is consumed when the spider is
    done with it and each of its items is through: the next page then goes to the consumers.

    An exception a pipeline raises on an item (``item_error``), or a spider middleware on a page
    (``spider_error``), is that page's failure of kind ``consumer``, logged in one line; the
    page is still consumed and the walk goes on.

    Stats: ``sitewalk/failures/consumer``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._gate = self.walk.gate
        crawler.signals.connect(self.item_done, signal=signals.item_scraped)
        crawler.signals.connect(self.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        ticket = self._gate.ticket_of(response)
        try:
            async for output in result:
                if ticket is not None and not isinstance(output, Request):
                    self._gate.item_out(ticket)
                yield output
        finally:
            if ticket is not None:
                self._gate.output_done(ticket)

    def item_done(self, response: Response) -> None:
        """An item went through the pipelines (``item_scraped``), or was dropped or failed there."""
        ticket = self._gate.ticket_of(response)
        if ticket is not None:
            self._gate.item_done(ticket)

    def item_dropped(self, response: Response) -> None:
        # An item a halt dropped (HaltedItem) leaves its ticket dropped: the page is not done.
        self.item_done(response)

    def item_error(self, response: Response, failure: Failure) -> None:
        self._consumer_failed(response, failure, "a pipeline")
        self.item_done(response)

    def spider_error(self, response: Response, failure: Failure) -> None:
        self._consumer_failed(response, failure, "a spider middleware")

    def _consumer_failed(self, response: Response, failure: Failure, where: str) -> None:
        exc = failure.value
        url = response.meta.get("redirect_urls", [response.url])[0]
        logger.warning("%s raised %s on %s: a failure of kind consumer (the traceback is logged at DEBUG)",
                       where, type(exc).__name__, url)
        failed = Failed("consumer", f"{where} raised {type(exc).__name__}: {exc}")
        self.walk.page_failed(url, response.meta.get(FOUND_ON), failed, self.crawler.stats)


class GrepMiddleware(WalkComponent):
    """The grep consumer: one :class:`Match` per line of a page's text that matches ``grep``,
    ahead of the page itself (which a feed of matches leaves out).

    The lines are those of :func:`sitewalk.text.page_lines` (the visible text of HTML, the
    decoded body of other text types; binary pages are skipped), of successful (2xx) pages only:
    an error page shows the site's error template, not its content. ``ignore_case`` and
    ``fixed_strings`` (search the pattern literally) change the matching; ``context`` lines
    before and after go with each match.

    ``max_matches`` is a budget for the whole walk: once that many matches have been made the walk
    stops (``stopped == "callback"``) and no further page is requested. The walk's gate asks
    :meth:`may_stop` about the pages in hand: this consumer answers with the exact match count of
    those read, and for a plain-text pattern tells at once, from its source, a page that cannot
    match (:class:`sitewalk.absence.Absence`), so the next page downloads while it is read.

    Stats: ``sitewalk/grep/pages``, ``sitewalk/grep/skipped`` (not text, or not 2xx),
    ``sitewalk/grep/matches``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        walk = self.walk
        config = walk.config
        if config.grep is None:
            raise NotConfigured
        self._pattern = patterns.compile(
            config.grep, name="grep", ignore_case=config.ignore_case, literal=config.fixed_strings
        )
        # For a plain-text pattern: which pages cannot match, told from their source; they are
        # neither read for lines nor waited for by the gate.
        self._absence = Absence.of(config.grep, fixed_strings=config.fixed_strings, ignore_case=config.ignore_case)
        self.max_matches = config.max_matches
        self.context = config.context
        # The matches made, a resumed walk's (JOBDIR) included: the journal keeps the count.
        self.matches: int = walk.resumed.consumers.get(MATCHES, 0) if walk.resumed else 0
        # Pages searched before they reach this middleware (asked by the gate), and pages whose
        # matches are counted; both forget a page once it is gone.
        self._found: WeakKeyDictionary[Page, tuple[list[str] | None, list[int]]] = WeakKeyDictionary()
        self._counted: WeakSet[Page] = WeakSet()
        walk.gate.add_check(self.may_stop)

    def needs_lines(self, page: Page) -> bool:
        """Whether ``page``'s lines are to be read: not when its source shows it cannot match."""
        return self._absence is None or not self._absence.proven(page)

    def may_stop(self, in_hand: Sequence[Ticket]) -> bool:
        """Whether the matches of the pages in hand could reach ``max_matches``."""
        pending = 0
        for entry in in_hand:
            page = entry.page
            if page is None or page in self._counted:
                continue
            if entry.read or self._unmatchable(page):
                pending += len(self._lines_and_hits(page)[1])
            else:
                return True  # its matches are not known yet
        return bool(in_hand) and self.matches + pending >= self.max_matches

    def _unmatchable(self, page: Page) -> bool:
        """Known before reading: an error page is not searched; a plain-text pattern tells a page
        that cannot match from its source."""
        return not 200 <= page.status < 300 or (self._absence is not None and self._absence.proven(page))

    def _lines_and_hits(self, page: Page) -> tuple[list[str] | None, list[int]]:
        found = self._found.get(page)
        if found is not None:
            return found
        successful = 200 <= page.status < 300
        if successful and page.is_html and self._absence is not None and self._absence.proven(page):
            found = ([], [])  # searched from its source: not read for lines
        else:
            lines = page_lines(page) if successful else None
            hits = self._pattern.matching_lines(lines) if lines else []
            found = (lines, hits)
        self._found[page] = found
        return found

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for output in result:
            if isinstance(output, Page):
                for match in self._matches(output):
                    yield match
            yield output

    def _matches(self, page: Page) -> list[Match]:
        lines, hits = self._lines_and_hits(page)
        self._found.pop(page, None)
        self._counted.add(page)
        stats = self.crawler.stats
        if lines is None:
            stats.inc_value("sitewalk/grep/skipped")
            return []
        stats.inc_value("sitewalk/grep/pages")
        room = self.max_matches - self.matches
        matches = [
            Match(
                url=page.final_url,
                line=index + 1,
                text=lines[index],
                before=lines[max(index - self.context, 0) : index],
                after=lines[index + 1 : index + 1 + self.context],
                depth=page.depth,
                change=page.change,
            )
            for index in hits[: max(room, 0)]
        ]
        if matches:
            self.matches += len(matches)
            stats.inc_value("sitewalk/grep/matches", len(matches))
            if self.matches >= self.max_matches:
                logger.info("max_matches=%d reached on %s: stopping the walk", self.max_matches, page.final_url)
                self.walk.stop("callback")
        return matches
