"""Same origin: the walk stays on the origin of the seed's final URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitewalk.failures import OffOrigin
from sitewalk.kinds import RULES, SEED, kind_of
from sitewalk.state import WalkComponent

if TYPE_CHECKING:
    from scrapy.http import Request

__all__ = ["SameOriginMiddleware"]


class SameOriginMiddleware(WalkComponent):
    """Keeps the walk on the origin of the seed's final URL (after its redirects).

    The seed and its redirect hops (meta ``sitewalk_seed``) pass: a seed that redirects to
    another host walks that host. So do the kinds that may go anywhere
    (:data:`sitewalk.kinds.RULES`: robots.txt, link checks, the requests a browser makes for a
    page it renders, as a browser's do — the guard and each host's robots.txt still decide).
    Any other request off that origin, which can only be a redirect since the frontier admits
    same-origin links only, is refused with the reason ``redirected off-origin to <url>``.
    """

    def process_request(self, request: Request) -> None:
        if request.meta.get(SEED) or RULES[kind_of(request.meta)].any_origin:
            return
        if self.walk.frontier.same_origin(request.url):
            return
        self.crawler.stats.inc_value("sitewalk/origin/refused")
        raise OffOrigin(f"redirected off-origin to {request.url}")
