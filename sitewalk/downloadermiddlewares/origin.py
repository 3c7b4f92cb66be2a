"""Same origin: the walk stays on the origin of the seed's final URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitewalk.downloadermiddlewares.robots import ROBOTS_META
from sitewalk.failures import OffOrigin
from sitewalk.linkcheck import CHECK_META
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.http import Request

__all__ = ["BROWSER_META", "SameOriginMiddleware"]

# Meta key of the requests a browser makes for a page it renders (sitewalk.render): the page's URL.
BROWSER_META = "sitewalk_browser"


class SameOriginMiddleware(WalkComponent):
    """Keeps the walk on the origin of the seed's final URL (after its redirects).

    The seed and its redirect hops (meta ``sitewalk_seed``) pass, and link checks (check_links): a
    seed that redirects to another host walks that host. Any later request off that origin, which
    can only be a redirect since the frontier admits same-origin links only, is refused with the
    reason ``redirected off-origin to <url>``. The requests a browser makes for a page it renders
    (meta ``sitewalk_browser``) may go to any origin, as a browser's do: the guard and each host's
    robots.txt still decide.
    """

    def process_request(self, request: Request) -> None:
        if (request.meta.get("sitewalk_seed") or request.meta.get(ROBOTS_META) or request.meta.get(CHECK_META)
                or request.meta.get(BROWSER_META)):
            return
        if self.walk.frontier.same_origin(request.url):
            return
        self.crawler.stats.inc_value("sitewalk/origin/refused")
        raise OffOrigin(f"redirected off-origin to {request.url}")
