"""The structured result of web_crawl and web_grep: the walk's report, its lists cut short."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sitewalk.failures import KINDS
from sitewalk.items import Report
from sitewalk.mcp.cursors import size

__all__ = ["LISTED", "WalkReport", "bounded_report"]

# The most entries each list of the structured report holds (fewer when the output cap needs
# the room); its ``<list>_total`` counts them all.
LISTED = 20
_LISTS = ("failures", "robots_skipped", "unvisited", "sitemaps", "broken_links")
_LISTED = f"At most {LISTED} (fewer when the output cap needs the room)"


class WalkFailure(BaseModel):
    """A page that could not be fetched, what kind of failure and why, and the page that linked to it."""

    url: str
    kind: str = Field(description="What went wrong, one of: " + ", ".join(sorted(KINDS)) + ".")
    reason: str | None
    found_on: str | None


class SeedFailure(BaseModel):
    """Why the URL the walk started from could not be fetched."""

    url: str
    kind: str = Field(description="What went wrong, one of: " + ", ".join(sorted(KINDS)) + ".")
    reason: str


class BrokenLink(BaseModel):
    """A URL that pages of the site link to and that answered 4xx or 5xx, or could not be fetched."""

    url: str
    status: int | None = Field(description="The HTTP status; null when the URL could not be fetched.")
    kind: str = Field(description="http for a status, else why it could not be fetched (as failures' kind).")
    reason: str
    inlinks: int = Field(description="How many fetched pages link to it.")
    linked_from: list[str] = Field(description="The first 10 pages that link to it.")


class WalkReport(BaseModel):
    """The walk's report, as ``scrapy crawl sitewalk -a report=...`` writes it, its lists cut short."""

    seed: str = Field(description="The URL the walk started from.")
    origin: str | None = Field(description="scheme://host[:port] of the seed's final URL; only it was walked.")
    fetched: int = Field(description="Pages fetched (any HTTP status), the seed included.")
    stopped: str | None = Field(
        description="null when the walk ran out of pages; else what stopped it with pages left: "
        "max-pages, deadline, max-bytes, callback (web_grep: max_matches reached) or interrupted."
    )
    error: SeedFailure | None = Field(
        default=None, description="Why the start URL could not be fetched; null when it was."
    )
    failures: list[WalkFailure] = Field(
        description=f"Pages that could not be fetched, with the reason. {_LISTED}; failures_total counts them all."
    )
    failures_total: int = Field(description="How many pages could not be fetched.")
    robots_skipped: list[str] = Field(
        description=f"Pages not fetched because robots.txt disallows them. {_LISTED}; robots_skipped_total counts "
        "them all."
    )
    robots_skipped_total: int = Field(description="How many pages robots.txt kept out.")
    unvisited: list[str] = Field(
        description=f"Known pages within max_depth that a stop left unfetched. {_LISTED}; unvisited_total counts "
        "them all."
    )
    unvisited_total: int = Field(description="How many known pages a stop left unfetched.")
    out_of_scope: int = Field(description="Links on the origin that include, exclude or no_parent left out.")
    sitemaps: list[str] = Field(description=f"The sitemap files read (sitemap=true). {_LISTED}.")
    sitemaps_total: int = Field(description="How many sitemap files were read.")
    broken_links: list[BrokenLink] = Field(
        default_factory=list,
        description=f"Broken links (4xx, 5xx or a failure), most linked first, with the pages linking to them. {_LISTED}.",
    )
    broken_links_total: int = Field(default=0, description="How many broken URLs the walk found.")
    bytes: int = Field(description="Body bytes fetched.")
    elapsed_s: float = Field(description="Seconds the walk took.")


def bounded_report(report: Report, cap: int) -> dict[str, Any]:
    """The report as structured content: each list cut to :data:`LISTED` entries (fewer if it would
    take more than half of ``cap``), with ``<list>_total`` counting them all."""
    whole = report.to_dict()
    totals = {f"{name}_total": len(whole[name]) for name in _LISTS}
    shown = LISTED
    while True:
        bounded = {**whole, **totals, **{name: whole[name][:shown] for name in _LISTS}}
        if shown == 0 or size(bounded) <= cap // 2:
            return bounded
        shown //= 2
