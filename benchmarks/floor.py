"""The benchmark's Scrapy floor: the pages a walk fetched, requested from a list, N at a time, read for nothing.

    scrapy runspider benchmarks/floor.py -a base=http://127.0.0.1:8080 -a paths=paths.txt \
        -s CONCURRENT_REQUESTS=8 -s CONCURRENT_REQUESTS_PER_DOMAIN=8 -O out.jsonl

No walker built on Scrapy can be faster than this: it knows every URL before it starts (no links
to read, no order to keep, no budget), and it does nothing with a page but one small item. Run
outside any Scrapy project, as benchmarks/baseline.py is, so only Scrapy's defaults and the
settings below apply; the difference between it and sitewalk at the same concurrency is what the
walk itself costs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.http import Response


class FloorSpider(Spider):
    """Requests each path of a file under ``base`` (CONCURRENT_REQUESTS at a time); one item per page."""

    name = "floor"
    custom_settings = {"ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False}

    def __init__(self, base: str, paths: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base = base.rstrip("/")
        self.paths = Path(paths).read_text(encoding="utf-8").split()

    async def start(self) -> AsyncIterator[Request]:
        for path in self.paths:
            yield Request(self.base + path, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "status": response.status}
