"""The structured result of web_crawl and web_grep: the walk's report, its lists cut short."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from sitewalk.items import Report
from sitewalk.mcp.cursors import size

__all__ = ["LISTED", "WalkReport", "bounded_report"]

# The most entries each list of the structured report holds (fewer when the output cap needs
# the room); its ``<list>_total`` counts them all.
LISTED = 20
_TYPES = typing.get_type_hints(Report)
# The report's lists, each cut short and counted in <list>_total.
_LISTS = tuple(spec.name for spec in dataclasses.fields(Report) if typing.get_origin(_TYPES[spec.name]) is list)
# What the model needs told of the report's fields; the others say it by their name.
_DESCRIPTIONS = {
    "origin": "scheme://host[:port] of the seed's final URL; only it was walked.",
    "fetched": "Pages fetched (any HTTP status), the seed included.",
    "stopped": "null when the walk ran out of pages; else what stopped it with pages left: max-pages, deadline, "
    "max-bytes, callback (web_grep: max_matches reached) or interrupted.",
    "error": "The start URL's failure (url, kind, reason); null when it was fetched.",
    "failures": "Pages that could not be fetched: url, kind, reason, found_on.",
    "robots_skipped": "Pages robots.txt disallows, not fetched.",
    "unvisited": "Known pages within max_depth that a stop left unfetched.",
    "out_of_scope": "Links on the origin that include, exclude or no_parent left out.",
    "sitemaps": "The sitemap files read (sitemap=true).",
    "broken_links": "Links that answered 4xx or 5xx or failed, most linked first: url, status, kind, reason, "
    "inlinks, linked_from (the first 10 pages linking to it).",
    "bytes": "Body bytes fetched.",
    "elapsed_s": "Seconds the walk took.",
}


def _model() -> type[BaseModel]:
    """The report's fields as the core :class:`~sitewalk.items.Report` declares them, each list
    followed by its ``<list>_total``: a field added to the report is in the schema too."""
    fields: dict[str, Any] = {}
    for spec in dataclasses.fields(Report):
        fields[spec.name] = (_TYPES[spec.name], Field(description=_DESCRIPTIONS.get(spec.name)))
        if spec.name in _LISTS:
            fields[f"{spec.name}_total"] = (int, ...)
    return create_model(
        "WalkReport",
        __config__=ConfigDict(title="Report", json_schema_extra={
            "description": f"The walk's report; each list holds at most {LISTED} entries (fewer when the output "
            "cap needs the room), its <list>_total counts them all.",
        }),
        **fields,
    )


WalkReport = _model()


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
