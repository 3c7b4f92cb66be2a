"""The walk's request kinds, declared once: each kind's meta, its share of the budget, its pace and its origin rule."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUDGET_MAXSIZE", "DEPTH", "FETCHED_BYTES", "FOUND_ON", "KIND", "RULES", "SEED", "STARTED", "VALIDATED", "WIRE_BYTES", "Kind", "Pace",
    "Rules", "kind_of",
]

# The request meta key that carries a request's kind; a request without one is a page's.
KIND = "sitewalk_kind"
# The request meta key that counts the bytes the ledger charged for the request's current
# response, on the wire (sitewalk.ledger): a page's byte_count.
WIRE_BYTES = "sitewalk_wire_bytes"
# The request meta key naming the page of the state (sitewalk.memory) whose validators a page
# request sent (If-None-Match, If-Modified-Since): a 304 answer is that page, unchanged.
VALIDATED = "sitewalk_validated"
# The bytes fetched for a page when they are more than its response's (a rendered page: its
# document and every request its browser made, sitewalk.render).
FETCHED_BYTES = "sitewalk_fetched_bytes"
# A page request's meta keys (sitewalk.spiders.sitewalk): its depth, the page that linked to it,
# and whether it is the seed or one of the seed's redirect hops (which may leave the origin).
DEPTH = "sitewalk_depth"
FOUND_ON = "sitewalk_found_on"
SEED = "sitewalk_seed"
# When the gate let the request start, on the walk's clock (sitewalk.gate.Gate.start).
STARTED = "sitewalk_started"
# Set when the download's size bound is what was left of max_bytes (sitewalk.downloadermiddlewares.budget):
# a body cut at that bound is the budget's stop, not the page's failure.
BUDGET_MAXSIZE = "sitewalk_budget_maxsize"


class Kind(enum.Enum):
    """What a request of the walk is for."""

    #: A page of the walk (the seed, a link, a URL a sitemap lists) and its redirect hops.
    PAGE = "page"
    #: A host's robots.txt: the walk's set-up, fetched once per host before its first page.
    ROBOTS = "robots"
    #: A sitemap file (``sitemap=true``).
    SITEMAP = "sitemap"
    #: A link check on the walk's origin (``check_links``).
    CHECK = "check"
    #: A link check on another origin (``check_links``): robots.txt is not asked.
    CHECK_OTHER = "check-other"
    #: A request a browser makes for a page it renders (``render``).
    BROWSER = "browser"


class Pace(enum.Enum):
    """Which clock spaces a kind's starts."""

    #: ``delay`` after the previous start, and robots.txt's Crawl-delay after the previous
    #: request that is not set-up (:meth:`sitewalk.gate.Gate.start`).
    WALK = "walk"
    #: ``delay`` after the previous start only: Crawl-delay governs the walk, not its set-up.
    SETUP = "setup"
    #: Not the gate's: the link checker spaces its requests to each other host (:mod:`sitewalk.linkcheck`).
    HOST = "host"


@dataclass(frozen=True)
class Rules:
    """One kind's rules.

    ``holds_page``: it holds a place in max_pages from its start until its page takes its turn
    (:meth:`sitewalk.ledger.Ledger.hold`). Every kind's bytes count in max_bytes as they arrive
    (:meth:`sitewalk.ledger.Ledger.charge`). ``pace``: which clock spaces its starts.
    ``any_origin``: it may go off the walk's origin. A request sent again on a kept-alive
    connection that closed before any byte of an answer (:mod:`sitewalk.downloadhandlers`) keeps
    its kind, is paced again as its kind and holds nothing more.
    """

    holds_page: bool
    pace: Pace
    any_origin: bool


RULES: dict[Kind, Rules] = {
    Kind.PAGE: Rules(holds_page=True, pace=Pace.WALK, any_origin=False),
    Kind.ROBOTS: Rules(holds_page=False, pace=Pace.SETUP, any_origin=True),
    Kind.SITEMAP: Rules(holds_page=False, pace=Pace.WALK, any_origin=False),
    Kind.CHECK: Rules(holds_page=False, pace=Pace.WALK, any_origin=True),
    Kind.CHECK_OTHER: Rules(holds_page=False, pace=Pace.HOST, any_origin=True),
    Kind.BROWSER: Rules(holds_page=False, pace=Pace.WALK, any_origin=True),
}


def kind_of(meta: dict[str, Any]) -> Kind:
    """The kind of the request with ``meta``."""
    kind = meta.get(KIND, Kind.PAGE)
    return kind if isinstance(kind, Kind) else Kind.PAGE
