"""The walk's scheduler: Scrapy's, kept in memory even with JOBDIR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.core.scheduler import Scheduler
from scrapy.utils.misc import build_from_crawler, load_object

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

__all__ = ["WalkScheduler"]


class WalkScheduler(Scheduler):
    """Scrapy's scheduler without its JOBDIR disk queue.

    The walk's gate hands the scheduler one request at a time, and a resumed walk goes on from
    the walk's own journal (:mod:`sitewalk.jobs`). Scrapy's disk queue would pickle each request
    and create and remove a directory for it (a quarter of the time of a walk of the Python docs),
    and on resuming it would send again a request that the journal queues anyway.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Scheduler.from_crawler, with no jobdir: the constructor is Scrapy's public way to say so.
        settings = crawler.settings
        return cls(
            dupefilter=build_from_crawler(load_object(settings["DUPEFILTER_CLASS"]), crawler),
            jobdir=None,
            dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
            mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
            logunser=settings.getbool("SCHEDULER_DEBUG"),
            stats=crawler.stats,
            pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
            crawler=crawler,
        )
