"""The walk's JOBDIR journal as an extension (WalkJournal): a line each time a request is done."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later

from sitewalk import jobs
from sitewalk.spidermiddlewares import MATCHES, GrepMiddleware
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from sitewalk.tickets import Ticket

__all__ = ["WalkJournal"]


class WalkJournal(WalkComponent):
    """With JOBDIR, keeps the walk's journal (:class:`sitewalk.jobs.Journal`) as it goes, so the
    same command resumes a walk that was stopped, killed or cut off by a power cut.

    A line is written at each event of the walk's ledger (:meth:`sitewalk.ledger.Ledger.listen`:
    a request settled — its page has gone through the consumers, its items in the feeds by then —
    or released — it ended without a page): what the frontier learnt, the pages done (popped, and
    not among the gate's pending requests: in flight, in hand or dropped), the failures and
    robots.txt refusals, what the ledger says was spent (pages settled, bytes less those of pages
    still held, time), the consumers' counts and the size of each local feed. A resumed walk first cuts its
    feeds back to those sizes, so an item of a page fetched again is never written twice.

    The journal is opened and the feeds cut at ``spider_opened``, not when Scrapy builds the
    extension: components built after it (the address guard, ``render``'s browser) may still
    refuse their settings, and a walk refused must leave its JOBDIR and its feeds as they were.
    ``spider_opened`` comes once every component is built and before any request; whatever order
    its handlers run in, the feeds are still closed then: Scrapy's feed exporter opens a feed's
    file at its first item (``item_scraped``), or at ``spider_closed`` for an empty feed
    (``FeedSlot.start_exporting``), tested in ``tests/test_extension_journal.py``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        path = jobs.journal_path(crawler.settings)
        if path is None:
            # Without a message: Scrapy logs NotConfigured's as a warning, on every walk without JOBDIR.
            raise NotConfigured
        walk = self.walk
        self._path = path
        self._feeds = jobs.local_feeds(crawler.settings)
        self._journal: jobs.Journal | None = None
        self._failures = len(walk.results.failures)
        self._skipped = len(walk.results.robots_skipped)
        # Popped, and pending at the last line: done once not.
        self._undone: list[str] = []
        self._due = False
        walk.ledger.listen(self._changed)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self) -> None:
        walk = self.walk
        if walk.resumed:
            jobs.cut_feeds(self._feeds, walk.resumed.feeds)
        self._journal = jobs.Journal(self._path, walk.config, resume=bool(walk.resumed))

    def _changed(self, _event: str, _ticket: Ticket) -> None:
        # Written once the current callback is over: a failure is recorded after its request
        # ends, and every feed has written a page's last item when the page is consumed.
        if not self._due:
            self._due = True
            call_later(0, self._write)

    def _write(self) -> None:
        self._due = False
        if self._journal is None or self._journal.closed:
            return
        walk = self.walk
        changes = walk.frontier.take_changes()
        # Requests sent and not done, and those the walk dropped: a resumed walk sends them again.
        pending = set(walk.gate.pending())
        popped = self._undone + changes.popped
        self._undone = [url for url in popped if url in pending]
        failures, skipped = walk.results.failures, walk.results.robots_skipped
        self._journal.append({
            "queued": changes.queued,
            "seen": changes.seen,
            "held": changes.held,
            "done": [url for url in popped if url not in pending],
            "origin": changes.origin,
            "failures": [failure.record() for failure in failures[self._failures:]],
            "robots_skipped": skipped[self._skipped:],
            "consumers": self._consumers(),
            "out_of_scope": walk.frontier.out_of_scope,
            # Pages still held (in flight, in hand) are fetched again by a resumed walk: they count then.
            "pages": walk.ledger.pages,
            "bytes": walk.ledger.settled_bytes(),
            "elapsed": round(walk.ledger.elapsed(), 3),
            "feeds": {uri: path.stat().st_size for uri, path in self._feeds.items() if path.exists()},
        })
        self._failures, self._skipped = len(failures), len(skipped)

    def _consumers(self) -> dict[str, int]:
        """What the consumers count across a resumed walk: grep's matches."""
        grep = self.crawler.get_spider_middleware(GrepMiddleware)
        return {MATCHES: grep.matches} if grep is not None else {}

    def spider_closed(self) -> None:
        # Without a journal when a component's open_spider failed: the walk never started.
        if self._journal is not None:
            self._write()
            self._journal.close()
