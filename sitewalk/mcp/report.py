"""The structured result of web_crawl and web_grep: the walk's report, its lists cut short."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from sitewalk.items import Report
from sitewalk.mcp.cursors import size
from sitewalk.mcp.schemas import output_schema

__all__ = ["LISTED", "WalkReport", "bounded_report"]

# The most entries each list of the structured report holds (fewer when the output cap needs
# the room); its ``<list>_total`` counts them all.
LISTED = 20
_TYPES = typing.get_type_hints(Report)
# The report's fields the structured report leaves out: the tools take no check_links and no
# JOBDIR, and what changed (since) is said in the text, so that the schema a model reads first
# stays as short.
_NEVER_FILLED = frozenset({"unchecked_links", "refetched", "changes"})
_FIELDS = tuple(spec.name for spec in dataclasses.fields(Report) if spec.name not in _NEVER_FILLED)
# The report's lists, each cut short and counted in <list>_total.
_LISTS = tuple(name for name in _FIELDS if typing.get_origin(_TYPES[name]) is list)
# What the model needs told of the report's fields; the others say it by their name.
_DESCRIPTIONS = {
    "stopped": "null, or what stopped the walk with pages left: max-pages, deadline, max-bytes, callback "
    "(max_matches) or interrupted.",
}


def _model() -> type[BaseModel]:
    """The report's fields as the core :class:`~sitewalk.items.Report` types them, each list
    followed by its ``<list>_total``: a field added to the report is in the schema too (but for
    those no tool call can fill, :data:`_NEVER_FILLED`). Every
    field is required: the structured content always holds them all (the listed schema does not
    say so again, :func:`~sitewalk.mcp.schemas.output_schema`)."""
    fields: dict[str, Any] = {}
    for name in _FIELDS:
        fields[name] = (_TYPES[name], Field(description=_DESCRIPTIONS.get(name)))
        if name in _LISTS:
            fields[f"{name}_total"] = (int, ...)
    return create_model(
        "WalkReport", __config__=ConfigDict(json_schema_extra=output_schema),
        __doc__=f"The walk's report. A list holds at most {LISTED} entries; <list>_total counts all.",
        **fields,
    )


WalkReport = _model()


def bounded_report(report: Report, cap: int) -> dict[str, Any]:
    """The report as structured content: each list cut to :data:`LISTED` entries (fewer if it would
    take more than half of ``cap``), with ``<list>_total`` counting them all."""
    whole = {name: value for name, value in report.to_dict().items() if name not in _NEVER_FILLED}
    totals = {f"{name}_total": len(whole[name]) for name in _LISTS}
    shown = LISTED
    while True:
        bounded = {**whole, **totals, **{name: whole[name][:shown] for name in _LISTS}}
        if shown == 0 or size(bounded) <= cap // 2:
            return bounded
        shown //= 2
