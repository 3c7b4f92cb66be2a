"""sitemap=true: the site's sitemaps seed the walk at depth 1, over real HTTP."""

from __future__ import annotations

import json

import pytest

from tests.conftest import allow_loopback, run_cli


def urlset(*urls: str) -> str:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'


def index(*urls: str) -> str:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return (f'<?xml version="1.0" encoding="UTF-8"?>'
            f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>')


def site_spec(other: str) -> dict:
    return {
        "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nAllow: /\nSitemap: {origin}/sitemap_index.xml\n"},
        "/": {"title": "Home", "links": ["/a.html", "/b.html"]},
        "/a.html": {"title": "A"},
        "/b.html": {"title": "B"},
        "/orphan.html": {"title": "Linked from nowhere"},
        "/sitemap_index.xml": {"content_type": "application/xml",
                               "body": index("{origin}/pages.xml.gz", f"{other}/theirs.xml")},
        "/pages.xml.gz": {"content_type": "application/gzip", "gzip_file": True,
                          "body": urlset("{origin}/a.html", "{origin}/orphan.html", f"{other}/page.html")},
    }


def walk(site, tmp_path, *args: str):
    result = run_cli("-a", f"seed={site('/')}", "-a", "sitemap=true", "-a", "delay=0", "-a", "report=r.json",
                     "-O", "pages.jsonl", *allow_loopback(), *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    return items, json.loads((tmp_path / "r.json").read_text())


def test_an_orphan_page_in_a_gzipped_sitemap_behind_an_index_named_in_robots_txt_is_walked(make_site, tmp_path):
    other = make_site({"/theirs.xml": {"body": urlset()}, "/page.html": {"title": "theirs"}})
    site = make_site(site_spec(other("").rstrip("/")))
    items, report = walk(site, tmp_path)
    # The sitemaps after the seed; their URLs after the seed's own links, at depth 1, each once.
    assert site.paths() == ["/", "/sitemap_index.xml", "/pages.xml.gz", "/a.html", "/b.html", "/orphan.html"]
    assert [(item["url"], item["depth"]) for item in items] == [
        (site("/"), 0), (site("/a.html"), 1), (site("/b.html"), 1), (site("/orphan.html"), 1)]
    assert items[-1]["found_on"] == site("/pages.xml.gz")
    # Sitemap files are not pages, and off-origin sitemaps and URLs are not fetched.
    assert report["fetched"] == 4 and report["sitemaps"] == [site("/sitemap_index.xml"), site("/pages.xml.gz")]
    assert report["bytes"] > sum(item["byte_count"] for item in items)
    assert other.paths() == [] and report["failures"] == []


def test_without_sitemap_lines_the_walk_reads_sitemap_xml(make_site, tmp_path):
    site = make_site({
        "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow:\n"},
        "/": {"title": "Home"},
        "/sitemap.xml": {"content_type": "application/xml", "body": urlset("{origin}/orphan.html")},
        "/orphan.html": {"title": "Orphan"},
    })
    items, report = walk(site, tmp_path, "-s", "ROBOTSTXT_OBEY=false")
    # robots.txt is read for its Sitemap: lines even when it is not obeyed.
    assert [entry["path"] for entry in site.requests()] == ["/", "/robots.txt", "/sitemap.xml", "/orphan.html"]
    assert [item["url"] for item in items] == [site("/"), site("/orphan.html")]
    assert report["sitemaps"] == [site("/sitemap.xml")]


def test_at_most_sitewalk_sitemap_max_files_are_read(make_site, tmp_path):
    other = make_site({})
    site = make_site(site_spec(other("").rstrip("/")))
    items, report = walk(site, tmp_path, "-s", "SITEWALK_SITEMAP_MAX_FILES=1")
    assert site.paths() == ["/", "/sitemap_index.xml", "/a.html", "/b.html"]
    assert report["sitemaps"] == [site("/sitemap_index.xml")]


def test_without_sitemap_true_no_sitemap_is_read(make_site, tmp_path):
    site = make_site(site_spec("http://127.0.0.1:9"))
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/a.html", "/b.html"]


def one_sitemap(sitemap: dict, **more: dict) -> dict:
    """A site whose robots.txt names one sitemap, /sitemap.xml.gz, served as ``sitemap``."""
    return {
        "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nSitemap: {origin}/sitemap.xml.gz\n"},
        "/": {"title": "Home", "links": ["/a.html"]},
        "/a.html": {"title": "A"},
        "/orphan.html": {"title": "Orphan"},
        "/sitemap.xml.gz": {"content_type": "application/gzip", **sitemap},
        **more,
    }


def sent(site, path: str) -> int:
    return sum(entry["bytes_sent"] for entry in site.log() if entry.get("sent") == path)


def sitemap_lines(stderr: str, url: str) -> list[str]:
    return [line for line in stderr.splitlines() if url in line]


def test_a_gzipped_sitemap_counts_in_max_bytes_as_it_was_sent_not_as_it_is_unpacked(make_site, tmp_path):
    # 200 kB of XML (a long comment) that travels as a few hundred bytes.
    xml = urlset("{origin}/orphan.html").replace("<url>", "<!--" + " " * 200_000 + "--><url>", 1)
    site = make_site(one_sitemap({"gzip_file": True, "body": xml}))
    items, report = walk(site, tmp_path)
    assert [item["url"] for item in items] == [site("/"), site("/a.html"), site("/orphan.html")]
    assert sent(site, "/sitemap.xml.gz") < 2_000
    # Besides the pages: the sitemap file and robots.txt as they were sent, headers included.
    besides = report["bytes"] - sum(item["byte_count"] for item in items)
    assert sent(site, "/sitemap.xml.gz") + sent(site, "/robots.txt") < besides < sent(site, "/sitemap.xml.gz") + sent(site, "/robots.txt") + 800
    assert report["sitemaps"] == [site("/sitemap.xml.gz")] and report["sitemaps_not_read"] == []


@pytest.mark.parametrize("sitemap", [
    # A .gz file, and a sitemap sent with Content-Encoding: gzip.
    {"gzip_file": True, "size": 5_000_000},
    {"gzip": True, "size": 5_000_000},
])
def test_a_zip_bomb_sitemap_is_cut_off_at_max_bytes_and_stops_the_walk(make_site, tmp_path, sitemap):
    site = make_site(one_sitemap(sitemap))
    result = run_cli("-a", f"seed={site('/')}", "-a", "sitemap=true", "-a", "delay=0", "-a", "report=r.json",
                     "-a", "max_bytes=1000000", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    # 5 MB unpacked from a few kB sent: cut at the bytes left, as a page would be; nothing after it.
    assert sent(site, "/sitemap.xml.gz") < 20_000
    assert site.paths() == ["/", "/sitemap.xml.gz"]
    assert report["stopped"] == "max-bytes" and report["unvisited"] == [site("/a.html")]
    assert report["fetched"] == 1 and report["bytes"] < 30_000
    # It would unpack past max_bytes.
    reason = "cut off at max_bytes (max_bytes=1000000, passed as it was unpacked)"
    assert report["sitemaps_not_read"] == [{"url": site("/sitemap.xml.gz"), "kind": "budget", "reason": reason}]
    assert report["sitemaps"] == [] and report["failures"] == []
    # Said once, in the walk's words (not Scrapy's warning as well).
    assert sitemap_lines(result.stderr, "/sitemap.xml.gz") == [
        f"{line.split(' [')[0]} [sitewalk.sitemaps] INFO: sitemap {site('/sitemap.xml.gz')} not read: {reason}: stopping the walk"
        for line in sitemap_lines(result.stderr, "/sitemap.xml.gz")]
    assert "WARNING" not in result.stderr


def test_a_sitemap_larger_than_max_bytes_is_cut_off_while_it_downloads(make_site, tmp_path):
    site = make_site(one_sitemap({"size": 3_000_000, "content_type": "application/xml", "chunked": True, "trickle": 0.0005}))
    items, report = walk(site, tmp_path, "-a", "max_bytes=100000")
    assert site.paths() == ["/", "/sitemap.xml.gz"]
    # What the server managed to send is the budget plus at most one network read (64 KiB).
    assert sent(site, "/sitemap.xml.gz") <= 100_000 + 65_536 + 16_384
    # Charged as it arrived, up to the last byte of the budget.
    assert report["stopped"] == "max-bytes" and report["bytes"] == 100_000
    assert [(entry["kind"], entry["reason"].split(" (")[0]) for entry in report["sitemaps_not_read"]] == [
        ("budget", "cut off at max_bytes")]


def test_a_sitemap_past_download_maxsize_is_not_read_and_the_walk_goes_on(make_site, tmp_path):
    site = make_site(one_sitemap({"gzip_file": True, "size": 5_000_000}))
    items, report = walk(site, tmp_path, "-s", "DOWNLOAD_MAXSIZE=1000000")
    assert site.paths() == ["/", "/sitemap.xml.gz", "/a.html"]
    assert report["stopped"] is None
    besides = report["bytes"] - sum(item["byte_count"] for item in items)
    assert sent(site, "/sitemap.xml.gz") < besides < sent(site, "/sitemap.xml.gz") + sent(site, "/robots.txt") + 800
    assert report["sitemaps_not_read"] == [{"url": site("/sitemap.xml.gz"), "kind": "too-large",
                                            "reason": "larger than the download size limit (DOWNLOAD_MAXSIZE=1000000)"}]


@pytest.mark.parametrize(("sitemap", "kind", "reason"), [
    ({"status": 404, "body": "gone"}, "http", "it answered HTTP 404 Not Found"),
    ({"body": "<html><body>not a sitemap</body></html>"}, "read", "not a sitemap (root element 'html')"),
    ({"body": ""}, "read", "not a sitemap (XMLSyntaxError: "),
    # The gzip header, then nothing: a file cut short.
    ({"body": "\u001f\u008b\u0008\u0000garbage", "encoding": "latin-1"}, "read", "not a whole gzip file ("),
])
def test_a_sitemap_that_cannot_be_read_is_in_the_report_and_the_walk_goes_on(make_site, tmp_path, sitemap, kind, reason):
    site = make_site(one_sitemap(sitemap))
    result = run_cli("-a", f"seed={site('/')}", "-a", "sitemap=true", "-a", "delay=0", "-a", "report=r.json",
                     "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path, timeout=30)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert site.paths() == ["/", "/sitemap.xml.gz", "/a.html"]
    assert report["stopped"] is None and report["fetched"] == 2 and report["failures"] == []
    [entry] = report["sitemaps_not_read"]
    assert (entry["url"], entry["kind"]) == (site("/sitemap.xml.gz"), kind) and entry["reason"].startswith(reason)
    assert len(sitemap_lines(result.stderr, "/sitemap.xml.gz")) == 1
    assert f"sitemap {site('/sitemap.xml.gz')} not read: {entry['reason']}" in result.stderr
