"""429 and 503 answers: the whole walk pauses, then the page is asked again."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from sitewalk.kinds import DEPTH, STARTED
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

__all__ = ["RetryAfterMiddleware"]


class RetryAfterMiddleware(WalkComponent):
    """A page answered 429 (Too Many Requests) or 503 (Service Unavailable) pauses the whole
    walk, then is asked again.

    The pause is the answer's ``Retry-After`` (seconds, or an HTTP date; 0 or a value that cannot
    be read counts as absent), else 1 second, doubled for each pause in a row (an answer with
    another status ends the row); at most ``SITEWALK_RETRY_AFTER_MAX`` seconds (default 120). No
    request starts meanwhile, a page's or robots.txt's (:meth:`sitewalk.gate.Gate.pause`). One
    clock for the walk: the answers to requests that were in flight when a pause began belong to
    it and start no other. Each page is asked at most ``SITEWALK_RETRY_TIMES`` times more
    (default 3), still one page in max_pages; its last answer is the page (429 or 503 status, in
    the feed and the report). A pause that would outlast the deadline is not waited for: the
    answer is the page.

    Meta: ``sitewalk_retries``. Stats: ``sitewalk/retry/pauses``, ``sitewalk/retry/requests``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._times = crawler.settings.getint("SITEWALK_RETRY_TIMES")
        self._most = crawler.settings.getfloat("SITEWALK_RETRY_AFTER_MAX")
        self._in_a_row = 0

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if request.meta.get(DEPTH) is None:
            return response  # robots.txt, a sitemap: not a page of the walk
        if response.status not in (429, 503):
            self._in_a_row = 0
            return response
        retries = request.meta.get("sitewalk_retries", 0)
        if retries >= self._times:
            return response
        asked = _retry_after(response.headers.get(b"Retry-After"))
        wait = min(asked if asked is not None else 2.0 ** self._in_a_row, self._most)
        if wait >= self.walk.ledger.seconds_left():
            return response
        if self.walk.gate.pause(wait, request.meta.get(STARTED, float("-inf"))):
            self._in_a_row += 1
            self.crawler.stats.inc_value("sitewalk/retry/pauses")
            logger.info("%s answered %d: pausing the walk for %gs, then asking again", request.url, response.status, wait)
        self.crawler.stats.inc_value("sitewalk/retry/requests")
        retry = request.replace(dont_filter=True)
        retry.meta["sitewalk_retries"] = retries + 1
        return retry


def _retry_after(value: bytes | None) -> float | None:
    """The seconds a Retry-After header asks for; None when absent, 0 or unreadable (RFC 9110 10.2.3)."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - datetime.now(UTC)).total_seconds()
    return seconds if seconds > 0 else None
