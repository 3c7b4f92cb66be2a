"""The benchmark's plain-Scrapy baseline: a breadth-first CrawlSpider, written as a user would.

    scrapy runspider benchmarks/baseline.py -a url=http://127.0.0.1:8080/index.html -O pages.jsonl

Run it outside any Scrapy project (no scrapy.cfg above the working directory, no
SCRAPY_SETTINGS_MODULE), so that only Scrapy's defaults and the settings below apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BaselineSpider(CrawlSpider):
    """Follows every link on 127.0.0.1, breadth-first, one request at a time; one item per page."""

    name = "baseline"
    allowed_domains = ["127.0.0.1"]
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)
    custom_settings = {
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "CONCURRENT_REQUESTS": 1,
        "ROBOTSTXT_OBEY": False,
    }

    def __init__(self, url: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = [url]

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[dict[str, Any]]:
        return self.parse_page(response)

    def parse_page(self, response: Response) -> Iterator[dict[str, Any]]:
        title = response.css("title::text").get() if isinstance(response, HtmlResponse) else None
        yield {"url": response.url, "status": response.status, "title": title}
