"""check_links over real HTTP: links to another origin (a second loopback server) and the
resources pages embed, checked once each with HEAD (GET where HEAD is refused), fragments of
same-origin links, the address guard, the checks' budget, and the JUnit file."""

from __future__ import annotations

import json
import re
import signal
from collections import Counter

import pytest
from junitparser import Failure, JUnitXml

from sitewalk import walk
from sitewalk.linkcheck import fragment_found, read_targets
from tests.conftest import LOOPBACK, allow_loopback, run_cli, run_sitewalk, start_cli, wait_for_pages

# The other origin: a page, a 404, a HEAD refused (405, then GET), a redirect, a dead
# connection, a stylesheet; its pages link on (never followed).
OTHER = {
    "/ok": {"title": "Other", "links": ["/never-followed"]},
    # Its whole body would take 100 s to arrive: longer than the walk's deadline.
    "/no-head": {"methods": ["GET"], "size": 100_000, "trickle": 1, "content_type": "text/plain"},
    "/moved": {"status": 301, "headers": {"Location": "/ok"}},
    "/dead": {"close": True},
    "/style.css": {"body": "body{}", "content_type": "text/css"},
}


def site_spec(other: str) -> dict:
    head = f'<link rel="stylesheet" href="{other}/style.css"><script src="/app.js"></script>'
    return {
        "/": {"title": "Home", "head": head, "links": [
            "/a", f"{other}/ok", f"{other}/gone", f"{other}/no-head", "/a#intro", "/a#missing", "#top",
        ], "body": '<img src="/logo.png"><img src="/missing.png">'},
        "/a": {"title": "A", "head": head, "body": '<h2 id="intro">Intro</h2><a name="legacy"></a>',
               "links": [f"{other}/ok", f"{other}/moved", f"{other}/dead", "/#nowhere", "/a#legacy"]},
        "/app.js": {"body": "1", "content_type": "text/javascript"},
        "/logo.png": {"body": "png", "content_type": "image/png"},
    }


def requests_of(site) -> Counter:
    return Counter((entry["method"], entry["path"]) for entry in site.requests())


@pytest.fixture
def sites(make_site):
    other = make_site(OTHER)
    return make_site(site_spec(other.url)), other


def test_each_link_and_resource_is_checked_once(sites, tmp_path):
    site, other = sites
    junit = tmp_path / "links.xml"
    report = walk(site("/"), delay=0, max_depth=2, check_links=True, settings=LOOPBACK, junit=str(junit),
                  report=str(tmp_path / "report.json"), deadline=30)
    # The walk's pages are GETs, in order; resources on its origin are one HEAD each.
    assert site.paths() == ["/", "/a", "/app.js", "/logo.png", "/missing.png"]
    assert requests_of(site) == Counter({
        ("GET", "/robots.txt"): 1, ("GET", "/"): 1, ("GET", "/a"): 1,
        ("HEAD", "/app.js"): 1, ("HEAD", "/logo.png"): 1, ("HEAD", "/missing.png"): 1,
    })
    # The other origin: one HEAD per URL, a GET where HEAD was refused, no robots.txt, nothing
    # followed (not /never-followed, not the redirect's target again); the dead connection is
    # asked again once by Twisted's HTTP client, as for a page.
    assert requests_of(other) == Counter({
        ("HEAD", "/ok"): 1, ("HEAD", "/gone"): 1, ("HEAD", "/no-head"): 1, ("GET", "/no-head"): 1,
        ("HEAD", "/moved"): 1, ("HEAD", "/dead"): 2, ("HEAD", "/style.css"): 1,
    })
    # The GET that checked /no-head stopped at its headers (else the deadline would have cut it).
    assert report.elapsed_s < 30
    broken = {row["url"]: (row["status"], row["kind"], row["inlinks"]) for row in report.broken_links}
    assert broken == {
        other("/gone"): (404, "http", 1),
        other("/dead"): (None, "network", 1),
        site("/missing.png"): (404, "http", 1),
        site("/a#missing"): (200, "fragment", 1),
        site("/#nowhere"): (200, "fragment", 1),
    }
    assert report.unchecked_links == []
    assert json.loads((tmp_path / "report.json").read_text())["broken_links"] == report.broken_links

    suites = {suite.name: {case.name: case for case in suite} for suite in JUnitXml.fromfile(str(junit))}
    assert list(suites) == [site("/"), site("/a")]
    home = suites[site("/")]
    assert set(home) == {
        site("/a"), other("/ok"), other("/gone"), other("/no-head"), site("/a#intro"), site("/a#missing"), site("/#top"),
        other("/style.css"), site("/app.js"), site("/logo.png"), site("/missing.png"),
    }
    assert home[other("/no-head")].is_passed and home[site("/a#intro")].is_passed and home[site("/#top")].is_passed
    missing = home[site("/a#missing")].result[0]
    assert isinstance(missing, Failure) and missing.type == "fragment"
    page_a = suites[site("/a")]
    assert page_a[other("/moved")].is_passed and page_a[site("/a#legacy")].is_passed
    assert page_a[other("/dead")].result[0].type == "network"


def test_a_refused_address_is_never_connected_to(make_site, tmp_path):
    # Only 127.0.0.1 is allowed: the server on 127.0.0.2 must see no connection at all.
    refused = make_site({"/x": {"title": "X"}}, host="127.0.0.2")
    site = make_site({"/": {"links": [refused("/x")], "body": f'<img src="{refused("/i.png")}">'}})
    report = walk(site("/"), delay=0, check_links=True, settings={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32"})
    assert refused.log() == []
    assert {row["url"]: row["kind"] for row in report.broken_links} == {refused("/x"): "guard", refused("/i.png"): "guard"}


def test_the_checks_budget_lists_the_rest_as_unchecked(make_site, tmp_path):
    other = make_site({})
    site = make_site({"/": {"links": [other(f"/{n}") for n in range(5)]}})
    page = tmp_path / "walk.html"
    report = walk(site("/"), delay=0, check_links=True, settings={**LOOPBACK, "SITEWALK_LINKCHECK_MAX_CHECKS": 2},
                  html_report=str(page))
    assert requests_of(other) == Counter({("HEAD", "/0"): 1, ("HEAD", "/1"): 1})
    assert report.unchecked_links == [other(f"/{n}") for n in (2, 3, 4)]
    assert [row["url"] for row in report.broken_links] == [other("/0"), other("/1")]
    # The HTML report lists the broken ones, and the unchecked ones under "Not fetched".
    text = page.read_text(encoding="utf-8")
    assert f'<td><a href="{other("/0")}">{other("/0")}</a></td><td class="n" data-v="404">404</td>' in text
    unchecked = text.split('id="unchecked-table"')[1].split("</table>")[0]
    assert unchecked.count("<tr><td>") == 3 and other("/4") in unchecked


def test_checks_are_not_pages(make_site, tmp_path):
    # max_pages counts the walk's pages only; the checks do not change their order in the feed.
    other = make_site({"/x": {}})
    site = make_site({"/": {"links": ["/a", other("/x"), "/b"]}, "/a": {"links": [other("/x")]}, "/b": {}})
    pages: list[str] = []
    report = walk(site("/"), delay=0, max_pages=2, check_links=True, settings=LOOPBACK,
                  on_page=lambda page: pages.append(page.url))
    assert pages == [site("/"), site("/a")]
    assert (report.fetched, report.stopped) == (2, "max-pages")
    assert requests_of(other) == Counter({("HEAD", "/x"): 1})


def test_the_command_fails_on_a_broken_external_link(sites, tmp_path):
    site, _ = sites
    plain = run_sitewalk(site("/"), "--delay", "0", "--fail-on-broken", "-o", str(tmp_path / "a.jsonl"),
                         *allow_loopback(), cwd=tmp_path)
    # Without --check-links only the site's own pages are checked, and they are all there.
    assert plain.returncode == 0, plain.stderr
    checked = run_sitewalk(site("/"), "--delay", "0", "--check-links", "--fail-on-broken", "-o", str(tmp_path / "b.jsonl"),
                           *allow_loopback(), cwd=tmp_path)
    assert checked.returncode == 3, checked.stderr
    assert "5 broken links: exit status 3" in checked.stderr


@pytest.mark.parametrize(("fragment", "found"), [
    ("intro", True), ("legacy", True), ("caf%C3%A9", True), ("", True), ("TOP", True), ("missing", False), ("Intro", False),
])
def test_fragment_found(fragment, found):
    ids = read_targets('<h2 id="intro"></h2><a name="legacy"></a><p id="café">', "http://site.test/").ids
    assert fragment_found(fragment, ids) is found


def test_read_targets_resolves_against_base():
    targets = read_targets(
        '<base href="http://cdn.test/x/"><img src="i.png#z"><script src="/s.js"></script>'
        '<link rel="icon" href="f.ico"><link rel="Stylesheet" href="c.css"><img src="data:,x">'
        '<a href="p.html#top">p</a><a href="q.html">q</a>',
        "http://site.test/a/",
    )
    assert targets.resources == ["http://cdn.test/x/i.png", "http://cdn.test/s.js", "http://cdn.test/x/c.css"]
    assert targets.fragments == [("http://cdn.test/x/p.html", "top")]


def test_check_links_from_a_config_file_and_scrapy_crawl(make_site, tmp_path):
    other = make_site({"/x": {}})
    site = make_site({"/": {"links": [other("/x"), other("/y")]}})
    config = tmp_path / "walk.toml"
    config.write_text(f'seed = "{site("/")}"\ndelay = 0\ncheck_links = true\n', encoding="utf-8")
    result = run_cli("-a", f"config={config}", "-a", "fail_on_broken=true", "-O", str(tmp_path / "pages.jsonl"),
                     *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert requests_of(other) == Counter({("HEAD", "/x"): 1, ("HEAD", "/y"): 1})


def test_checks_on_another_host_are_paced_by_delay(make_site, tmp_path):
    other = make_site({})
    site = make_site({"/": {"links": [other(f"/{n}") for n in range(4)]}})
    walk(site("/"), delay=0.4, check_links=True, settings=LOOPBACK)
    times = [entry["time"] for entry in other.requests()]
    assert len(times) == 4
    # Arrival times at the server (unpaced, they would arrive together): 0.4 s apart, less the
    # grain of a loaded machine; the first, on a new connection (a new server thread), may be late.
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert all(gap >= 0.3 for gap in gaps[1:]) and times[-1] - times[0] >= 1.0, times


def test_the_deadline_leaves_checks_unchecked(make_site, tmp_path):
    other = make_site({"/slow": {"sleep": 20}})
    site = make_site({"/": {"links": [other("/slow"), other("/later")]}})
    report = walk(site("/"), delay=0, deadline=2, check_links=True, settings=LOOPBACK)
    # Cut off at the deadline: not broken, not checked; the walk itself had ended.
    assert report.elapsed_s < 10
    assert report.broken_links == []
    assert report.unchecked_links == [other("/slow"), other("/later")]
    assert [entry["path"] for entry in other.requests()] == ["/slow"]


def test_a_link_to_a_port_nothing_listens_on_is_refused(make_site, unused_port):
    dead = f"http://127.0.0.1:{unused_port}/x"
    site = make_site({"/": {"links": [dead]}})
    report = walk(site("/"), delay=0, check_links=True, settings=LOOPBACK)
    assert [(row["url"], row["status"], row["kind"]) for row in report.broken_links] == [(dead, None, "refused")]


def test_the_walks_robots_txt_applies_to_its_own_resources_only(make_site):
    robots = {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /private/\n"}
    other = make_site({"/robots.txt": robots})
    site = make_site({"/robots.txt": robots,
                      "/": {"body": f'<img src="/private/i.png"><img src="{other("/private/i.png")}">'}})
    report = walk(site("/"), delay=0, check_links=True, settings=LOOPBACK)
    # Not asked on the walk's site (listed as unchecked); on the other site, one request, no robots.txt.
    assert report.unchecked_links == [site("/private/i.png")]
    assert site.paths() == ["/"]
    assert requests_of(other) == Counter({("HEAD", "/private/i.png"): 1})


def test_ctrl_c_while_links_are_checked_ends_the_walk(make_site, tmp_path):
    # The pages are done at once (max_pages=1: a stop); the checks of the other site take 0.5 s each.
    other = make_site({f"/{n}": {"sleep": 0.5} for n in range(20)})
    site = make_site({"/": {"links": ["/a", *(other(f"/{n}") for n in range(20))]}, "/a": {}})
    process = start_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "max_pages=1", "-a", "check_links=true",
                        "-a", "report=r.json", *allow_loopback(), cwd=tmp_path)
    wait_for_pages(other, 2, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    report = json.loads((tmp_path / "r.json").read_text())
    checked = len(other.requests())
    # The checks that had not started are listed; none started after the interruption.
    assert 2 <= checked < 20 and len(report["unchecked_links"]) >= 20 - checked
    assert report["unchecked_links"][-1] == other("/19")


def test_the_checks_budget_is_shared_between_hosts(make_site, tmp_path):
    # One page links 30 URLs of host A, then 5 of host B: first come, A would take the whole budget.
    host_a, host_b = make_site({}), make_site({})
    links = [*(host_a(f"/{n}") for n in range(30)), *(host_b(f"/{n}") for n in range(5))]
    site = make_site({"/": {"links": links}})
    junit = tmp_path / "links.xml"
    report = walk(site("/"), delay=0, check_links=True, junit=str(junit),
                  settings={**LOOPBACK, "SITEWALK_LINKCHECK_MAX_CHECKS": 10})
    assert requests_of(host_b) == Counter({("HEAD", f"/{n}"): 1 for n in range(5)})
    assert requests_of(host_a) == Counter({("HEAD", f"/{n}"): 1 for n in range(5)})
    assert report.unchecked_links == [host_a(f"/{n}") for n in range(5, 30)]
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    skipped = [case.name for case in suite if case.is_skipped]
    assert skipped == report.unchecked_links
    assert all("SITEWALK_LINKCHECK_MAX_CHECKS=10" in case.result[0].message for case in suite if case.is_skipped)


def test_the_summary_counts_the_checks(make_site, tmp_path):
    host_a, host_b = make_site({"/0": {}}), make_site({})
    site = make_site({"/": {"links": [host_a("/0"), host_a("/1"), host_a("/2"), host_b("/0")]}})
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "-s", "SITEWALK_LINKCHECK_MAX_CHECKS=2",
                          "-o", str(tmp_path / "p.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # One each: host A's 200, host B's 404; host A's other two unchecked.
    assert requests_of(host_a) == Counter({("HEAD", "/0"): 1}) and requests_of(host_b) == Counter({("HEAD", "/0"): 1})
    assert "link checks: 2 made, 1 broken, 2 unchecked" in result.stderr


def test_progress_while_links_are_checked(make_site, tmp_path):
    # The page is done at once; the other host answers each of its 4 checks after 0.4 s.
    other = make_site({f"/{n}": {"sleep": 0.4} for n in range(4)})
    site = make_site({"/": {"links": [other(f"/{n}") for n in range(4)]}})
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "-s", "SITEWALK_PROGRESS_INTERVAL=0.1",
                          "-o", str(tmp_path / "p.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(other.requests()) == 4
    lines = [line.split("link checks: ")[1] for line in result.stderr.splitlines()
             if "INFO: progress: pages 1/" in line and "link checks: " in line]
    counts = [tuple(int(number) for number in re.findall(r"\d+", line.split(" (")[0])) for line in lines]
    # Every line: done, left and in flight (one at a time on one host) make the 4 links.
    assert counts and all(sum(count) == 4 and count[2] <= 1 for count in counts), result.stderr
    # The host with checks to do is named with its own (here all of them).
    host = other.url.removeprefix("http://")
    assert all(line.endswith(f" ({host}: {left} left, {flying} in flight)") for line, (_, left, flying) in
               zip(lines, counts, strict=True) if left or flying), lines
    # While a check was in flight with others left, and later with fewer left.
    assert (0, 3, 1) in counts or (1, 2, 1) in counts, counts
    assert counts == sorted(counts, key=lambda count: count[0]), counts
    assert "link checks: 4 made, 0 broken, 0 unchecked" in result.stderr


def test_progress_names_the_hosts_with_the_most_checks_left(make_site, tmp_path):
    # Four hosts, each answering its checks after 0.3 s: 3, 2, 1 and 1 links.
    hosts = [make_site({f"/{n}": {"sleep": 0.3} for n in range(count)}) for count in (3, 2, 1, 1)]
    links = [host(f"/{n}") for host, count in zip(hosts, (3, 2, 1, 1), strict=True) for n in range(count)]
    site = make_site({"/": {"links": links}})
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "-s", "SITEWALK_PROGRESS_INTERVAL=0.1",
                          "-o", str(tmp_path / "p.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [len(host.requests()) for host in hosts] == [3, 2, 1, 1]
    names = [host.url.removeprefix("http://") for host in hosts]
    lines = [line.split("link checks: ")[1] for line in result.stderr.splitlines()
             if "INFO: progress: pages 1/" in line and "link checks: " in line]
    # While all four hosts had work: the three with the most left are named, busiest first.
    first = next(line for line in lines if "more hosts" in line)
    named = re.findall(r"(\S+): (\d+) left, (\d+) in flight", first.split(" (", 1)[1])
    # (the last two have as much to do: one of them third, by name)
    assert [name for name, _, _ in named][:2] == names[:2] and named[2][0] in names[2:], first
    assert first.endswith("; 1 more hosts)"), first
    totals = [int(number) for number in re.findall(r"\d+", first.split(" (")[0])]
    # done + left + in flight make the 7 links; the hosts named account for at most what is left and in flight.
    assert sum(totals) == 7
    assert sum(int(left) + int(flying) for _, left, flying in named) <= totals[1] + totals[2]


NOFOLLOW_SITE = {
    "/": {"title": "Home", "links": ["/a", "/b", {"href": "/gone", "rel": "nofollow"}, {"href": "/a", "rel": "nofollow"}]},
    # Its robots meta says nofollow: all its links are checked, none walked (the seed is a page already).
    "/a": {"title": "A", "head": '<meta name="robots" content="noarchive, nofollow">', "links": ["/", "/gone-a", "/ok"]},
    # Its X-Robots-Tag says nofollow.
    "/b": {"title": "B", "headers": {"X-Robots-Tag": "nofollow"}, "links": ["/gone-b", "/gone"]},
    "/ok": {"title": "OK"},
}


def test_links_the_walk_does_not_follow_are_checked_once(make_site, tmp_path):
    site = make_site(NOFOLLOW_SITE)
    feed = tmp_path / "pages.jsonl"
    result = run_sitewalk(site("/"), "--delay", "0", "--check-links", "--report", str(tmp_path / "r.json"),
                          "-o", str(feed), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Pages are walked with GET; links not followed are one HEAD each, never a GET.
    assert requests_of(site) == Counter({
        ("GET", "/robots.txt"): 1, ("GET", "/"): 1, ("GET", "/a"): 1, ("GET", "/b"): 1,
        ("HEAD", "/gone"): 1, ("HEAD", "/gone-a"): 1, ("HEAD", "/ok"): 1, ("HEAD", "/gone-b"): 1,
    })
    assert [json.loads(line)["url"] for line in feed.read_text().splitlines()] == [site("/"), site("/a"), site("/b")]
    report = json.loads((tmp_path / "r.json").read_text())
    broken = {row["url"]: (row["status"], row["inlinks"]) for row in report["broken_links"]}
    assert broken == {site("/gone"): (404, 2), site("/gone-a"): (404, 1), site("/gone-b"): (404, 1)}
    assert report["unchecked_links"] == []


def test_read_targets_lists_the_links_not_followed():
    markup = '<a href="/a" rel="nofollow">a</a><a href="/b#x" rel="external NoFollow">b</a><a href="/c">c</a>'
    assert read_targets(markup, "http://site.test/").unfollowed == ["http://site.test/a", "http://site.test/b"]
    meta = f'<meta name="robots" content="none">{markup}'
    assert read_targets(meta, "http://site.test/").unfollowed == [f"http://site.test/{name}" for name in "abc"]
    header = read_targets(markup, "http://site.test/", {"X-Robots-Tag": "nofollow"})
    assert header.unfollowed == [f"http://site.test/{name}" for name in "abc"]
