"""The structured report of web_crawl and web_grep is generated from the core Report: it cannot drift."""

from __future__ import annotations

import dataclasses

from sitewalk.items import Report
from sitewalk.mcp.report import _DESCRIPTIONS, _NEVER_FILLED, LISTED, WalkReport, bounded_report


def test_the_model_has_the_reports_fields_and_a_total_per_list() -> None:
    # Every field of the report, but those no tool call can fill (no tool takes check_links or
    # JOBDIR) and what changed (since), which the text says.
    assert set(_NEVER_FILLED) == {"unchecked_links", "refetched", "changes"}
    names = [spec.name for spec in dataclasses.fields(Report) if spec.name not in _NEVER_FILLED]
    lists = [name for name, value in Report(seed="https://site.test/", origin=None).to_dict().items()
             if isinstance(value, list)]
    assert {"failures", "unvisited", "broken_links"} <= set(lists)
    assert list(WalkReport.model_fields) == [
        part for name in names for part in ([name, f"{name}_total"] if name in lists else [name])
    ]
    # A description names a field the report has.
    assert set(_DESCRIPTIONS) <= set(names)


def test_a_bounded_report_is_valid_structured_content_with_its_lists_cut() -> None:
    report = Report(
        seed="https://site.test/", origin="https://site.test", fetched=3, stopped="max-pages",
        failures=[{"url": "https://site.test/x", "kind": "refused", "reason": "connection refused", "found_on": None}],
        unvisited=[f"https://site.test/{n}" for n in range(50)],
        broken_links=[{"url": "https://site.test/gone", "status": 404, "kind": "http", "reason": "HTTP 404 Not Found",
                       "inlinks": 1, "linked_from": ["https://site.test/"]}],
    )
    bounded = bounded_report(report, cap=100_000)
    assert WalkReport.model_validate(bounded).model_dump() == bounded
    assert "unchecked_links" not in bounded
    assert bounded["unvisited"] == report.unvisited[:LISTED] and bounded["unvisited_total"] == 50
    assert bounded["failures_total"] == bounded["broken_links_total"] == 1
    # A small cap halves the lists until they take at most half of it.
    small = bounded_report(report, cap=1000)
    assert len(small["unvisited"]) < LISTED and small["unvisited_total"] == 50
