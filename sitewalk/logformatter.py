"""Scrapy's log lines of the walk: an exception in a component is said once, in the walk's words."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter

from sitewalk.pipelines import HaltedItem

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure

__all__ = ["WalkLogFormatter"]


class WalkLogFormatter(LogFormatter):
    """Scrapy's log formatter, except that an exception in a pipeline or a spider callback or
    middleware is logged at DEBUG (with its traceback): the walk records it as the page's failure
    (kind ``read`` or ``consumer``) and says so in one WARNING line of its own. An item dropped
    because the walk was halted is logged at DEBUG too: the report lists its page as unvisited."""

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return {**super().item_error(item, exception, response, spider), "level": logging.DEBUG}

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        if isinstance(exception, HaltedItem):
            return {**result, "level": logging.DEBUG}
        return result

    def spider_error(
        self, failure: Failure, request: Request, response: Response | Failure, spider: Spider
    ) -> LogFormatterResult:
        return {**super().spider_error(failure, request, response, spider), "level": logging.DEBUG}
