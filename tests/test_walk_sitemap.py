"""sitemap=true: the site's sitemaps seed the walk at depth 1, over real HTTP."""

from __future__ import annotations

import json

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
