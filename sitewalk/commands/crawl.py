"""`scrapy crawl` for sitewalk: one clear line, no traceback, for bad arguments and a failed seed."""

from __future__ import annotations

import gc
import logging
import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from sitewalk.config import WalkConfig
from sitewalk.exceptions import SitewalkError

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger(__name__)


class Command(ScrapyCrawlCommand):
    """Validates the walk's ``-a`` arguments before anything starts and exits non-zero when the
    seed could not be fetched (exit status 2 for bad input, 1 for a failed seed)."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args != ["sitewalk"]:
            super().run(args, opts)
            return
        try:
            WalkConfig.from_mapping(opts.spargs)
        except SitewalkError as exc:
            print(f"sitewalk: error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        assert self.crawler_process is not None
        crawler = self._create_crawler("sitewalk")
        self.crawler_process.crawl(crawler, **opts.spargs)
        # One walk per process: what start-up built lives until the end, so the garbage collector
        # need not walk it again on every full collection.
        gc.freeze()
        self.crawler_process.start()
        spider = getattr(crawler, "spider", None)
        if spider is None or self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif spider.seed_error is not None:
            if crawler.settings.get("LOG_FILE"):
                # A log file (scrapyd's job log) would not show the line printed to stderr.
                logger.error("sitewalk: error: %s", spider.seed_error)
            print(f"sitewalk: error: {spider.seed_error}", file=sys.stderr)
            self.exitcode = 1
