"""The JOBDIR journal extension: opened, and a resumed walk's feeds cut, when the walk starts."""

from __future__ import annotations

from scrapy import signals
from scrapy.utils.misc import build_from_crawler

from sitewalk import jobs
from sitewalk.extensions import WalkFeedExporter
from sitewalk.journal import WalkJournal
from tests.conftest import walk_for

EARLIER = b'{"url": "http://site.test/"}\n{"url": "http://si'


def test_the_journal_is_opened_and_the_feed_cut_at_spider_opened_not_when_built(tmp_path):
    feed = tmp_path / "pages.jsonl"
    feed.write_bytes(EARLIER)
    crawler = walk_for(settings={"JOBDIR": str(tmp_path / "job"), "FEEDS": {str(feed): {"format": "jsonlines"}}})
    crawler.spider.walk.resumed = jobs.JobState(origin="http://site.test", feeds={str(feed): 29})
    build_from_crawler(WalkJournal, crawler)
    assert not (tmp_path / "job" / jobs.JOURNAL).exists()
    assert feed.read_bytes() == EARLIER
    crawler.signals.send_catch_log(signals.spider_opened, spider=crawler.spider)
    assert (tmp_path / "job" / jobs.JOURNAL).exists()
    assert feed.read_bytes() == EARLIER[:29]


def test_the_feed_exporter_opens_no_feed_at_spider_opened(tmp_path):
    """Why the journal may cut the feeds at spider_opened whatever order its handlers run in:
    Scrapy's feed exporter opens a feed's file at its first item (or at the end), not then."""
    earlier, new = tmp_path / "earlier.jsonl", tmp_path / "new.jsonl"
    earlier.write_bytes(EARLIER)
    feeds = {str(earlier): {"format": "jsonlines", "overwrite": True}, str(new): {"format": "jsonlines"}}
    crawler = walk_for(settings={"FEEDS": feeds, "FEED_STORAGES": {"": "sitewalk.extensions.FileFeedStorage"}})
    build_from_crawler(WalkFeedExporter, crawler)
    crawler.signals.send_catch_log(signals.spider_opened, spider=crawler.spider)
    assert earlier.read_bytes() == EARLIER
    assert not new.exists()
