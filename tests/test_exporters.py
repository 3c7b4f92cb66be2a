"""Feeds a reader can take back: missing values empty in CSV and XML, CSV lists as JSON arrays, a
feed appended to continued as one document."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest

from sitewalk.exporters import CsvItemExporter, JsonItemExporter, XmlItemExporter
from sitewalk.items import Extract, IndexEntry
from tests.conftest import allow_loopback, run_sitewalk

SITE = {
    "/": {"title": "Home", "links": ["/a"]},
    "/a": {"title": "A", "body": "<h2>Paris, France</h2><h2>Oslo</h2>"},
}


def export(exporter_class, items, output=None):
    output = output or io.BytesIO()
    output.seek(0, io.SEEK_END)
    # As a feed builds them: FEED_EXPORT_INDENT is 0.
    exporter = exporter_class(output, indent=0)
    exporter.start_exporting()
    for item in items:
        exporter.export_item(item)
    exporter.finish_exporting()
    return output.getvalue().decode()


def entry(found_on):
    return IndexEntry(url="u", final_url="u", status=200, byte_count=1, depth=0, content_type=None, title=None,
                      found_on=found_on)


def test_csv_lists_are_json_arrays_and_missing_values_empty():
    text = export(CsvItemExporter, [Extract(url="u", depth=1, values=["Paris, France", "Oslo"]), Extract("v", 2, [])])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [json.loads(row["values"]) for row in rows] == [["Paris, France", "Oslo"], []]
    row = next(csv.DictReader(io.StringIO(export(CsvItemExporter, [entry(None)]))))
    assert row["found_on"] == "" and row["title"] == "" and row["content_type"] == ""


def test_xml_missing_values_are_empty_elements():
    (item,) = ET.fromstring(export(XmlItemExporter, [entry(None)]))
    assert item.find("found_on") is not None and item.findtext("found_on") == ""
    assert item.findtext("title") == ""
    (item,) = ET.fromstring(export(XmlItemExporter, [entry("http://x/")]))
    assert item.findtext("found_on") == "http://x/"


def read(exporter_class, text):
    if exporter_class is JsonItemExporter:
        return [item["url"] for item in json.loads(text)]
    if exporter_class is CsvItemExporter:
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][0] == "url" and all(row[0] != "url" for row in rows[1:])
        return [row[0] for row in rows[1:]]
    return [item.findtext("url") for item in ET.fromstring(text)]


def page(url):
    return IndexEntry(url=url, final_url=url, status=200, byte_count=1, depth=0, content_type=None, title="t", found_on=None)


@pytest.mark.parametrize("exporter_class", [JsonItemExporter, CsvItemExporter, XmlItemExporter])
@pytest.mark.parametrize("before", [[], ["a"], ["a", "b"]])
@pytest.mark.parametrize("closed", [True, False])
def test_a_feed_appended_to_is_continued_as_one_document(exporter_class, before, closed):
    output = io.BytesIO(export(exporter_class, [page(url) for url in before]).encode())
    if not closed and before:
        # Killed before the closing was written (and, as the next item began, after JSON's comma).
        text = output.getvalue()
        text = text[: text.rfind(b"\n]")] + b",\n" if exporter_class is JsonItemExporter else text.replace(b"</items>", b"<item><u")
        output = io.BytesIO(text)
    for more in (["c"], [], ["d", "e"]):
        export(exporter_class, [page(url) for url in more], output)
        before = before + more
        assert read(exporter_class, output.getvalue().decode()) == before


def test_feeds_of_a_walk_use_them(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(site("/"), "--delay", "0", "-o", "pages.xml", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = ET.parse(tmp_path / "pages.xml").getroot()
    assert [(item.findtext("url"), item.findtext("found_on")) for item in items] == [(site("/"), ""), (site("/a"), site("/"))]
    assert "None" not in (tmp_path / "pages.xml").read_text()

    result = run_sitewalk(site("/"), "--css", "h2::text", "--delay", "0", "-o", "values.csv", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with (tmp_path / "values.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["url"], json.loads(row["values"])) for row in rows] == [(site("/a"), ["Paris, France", "Oslo"])]


def test_a_project_s_own_exporter_wins(make_site, tmp_path):
    site = make_site(SITE)
    result = run_sitewalk(
        site("/"), "--delay", "0", "-o", "pages.xml", "-s", 'FEED_EXPORTERS={"xml": "scrapy.exporters.XmlItemExporter"}',
        *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "<found_on>None</found_on>" in (tmp_path / "pages.xml").read_text()
