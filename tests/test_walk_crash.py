"""A walk killed with SIGKILL loses nothing: its feed holds every page consumed before the kill,
and with JOBDIR the same command goes on, fetching again at most the page in flight."""

from __future__ import annotations

import csv
import json
import signal
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import allow_loopback, run_cli, start_cli, wait_for_pages

# A walk killed with SIGKILL is a process of its own, started, killed and resumed: the tests that
# kill are slow (the README's test command leaves them to CI: -m slow).
SLOW = pytest.mark.slow

PAGES = 10
SITE = {
    "/": {"links": [f"/p{i}" for i in range(PAGES)]},
    **{f"/p{i}": {"title": f"P{i}", "links": [f"/p{i}/child"]} for i in range(PAGES)},
    **{f"/p{i}/child": {"title": f"C{i}"} for i in range(PAGES)},
}
ORDER = ["/"] + [f"/p{i}" for i in range(PAGES)] + [f"/p{i}/child" for i in range(PAGES)]


def walk_args(site: Any, *extra: str, feed: str = "pages.jsonl") -> list[str]:
    return ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "max_pages=100", "-a", "delay=0.1",
            "-a", "report=r.json", "-O", feed, "-s", "JOBDIR=job", *allow_loopback(), *extra]


def kill_after(pages: int, site: Any, args: list[str], cwd: Path) -> None:
    """Start the walk and SIGKILL it once the site has received ``pages`` page requests in all."""
    process = start_cli(*args, cwd=cwd, own_process=True)  # killed at the very moment
    wait_for_pages(site, pages, process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL


def feed_urls(path: Path) -> list[str]:
    """The URLs of a feed's items; every line must be a whole JSON object."""
    return [json.loads(line)["url"] for line in path.read_text().splitlines()]


def read_feed(path: Path) -> list[str]:
    """The URLs of the items of a feed in any format, read as a reader of that format reads it:
    the file must be one valid document (CSV: one header row)."""
    if path.suffix == ".json":
        return [item["url"] for item in json.loads(path.read_text())]
    if path.suffix == ".csv":
        with path.open(newline="") as file:
            rows = list(csv.reader(file))
        assert rows[0][0] == "url" and all(row[0] != "url" for row in rows[1:])
        return [row[0] for row in rows[1:]]
    if path.suffix == ".xml":
        root = ET.parse(path).getroot()
        assert root.tag == "items"
        return [item.findtext("url") or "" for item in root]
    return feed_urls(path)


def assert_whole_walk(site: Any, cwd: Path, refetched_at_most: int) -> None:
    """The finished walk's feed and report hold every page once, in breadth-first order, and the
    site received each page once, except at most ``refetched_at_most`` pages in flight at a kill."""
    urls = feed_urls(cwd / "pages.jsonl")
    assert urls == [site(path) for path in ORDER]
    received = Counter(site.paths())
    assert set(received) == set(ORDER)
    assert sum(received.values()) - len(ORDER) <= refetched_at_most, received
    report = json.loads((cwd / "r.json").read_text())
    assert report["fetched"] == len(ORDER) and report["stopped"] is None and report["unvisited"] == []


@SLOW
def test_a_walk_killed_between_pages_goes_on_and_its_feed_is_whole(make_site, tmp_path):
    site = make_site(SITE)
    args = walk_args(site)
    kill_after(6, site, args, tmp_path)
    # The feed is valid up to the kill: each line whole, each page consumed before it there.
    killed = feed_urls(tmp_path / "pages.jsonl")
    assert len(killed) >= 4 and killed == [site(path) for path in ORDER[: len(killed)]]
    first = len(site.paths())

    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resuming the walk in JOBDIR" in again.stderr
    assert_whole_walk(site, tmp_path, refetched_at_most=1)
    assert len(site.paths()) - first <= len(ORDER) - len(killed)


@SLOW
def test_a_walk_killed_during_a_page_fetches_only_that_page_again(make_site, tmp_path):
    site = make_site({**SITE, "/p3": {"title": "P3", "links": ["/p3/child"], "sleep": 2}})
    args = walk_args(site)
    # /p3 is the fifth request: killed while its answer is awaited.
    kill_after(5, site, args, tmp_path)
    assert site.paths()[-1] == "/p3"
    assert feed_urls(tmp_path / "pages.jsonl") == [site(path) for path in ORDER[:4]]
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert Counter(site.paths())["/p3"] == 2
    assert_whole_walk(site, tmp_path, refetched_at_most=1)


@SLOW
def test_a_resumed_walk_killed_again_still_loses_nothing(make_site, tmp_path):
    site = make_site(SITE)
    args = walk_args(site)
    kill_after(5, site, args, tmp_path)
    kill_after(12, site, args, tmp_path)
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert_whole_walk(site, tmp_path, refetched_at_most=2)


def test_a_finished_walk_goes_on_with_a_larger_max_depth_or_max_pages(make_site, tmp_path):
    site = make_site(SITE)
    first = run_cli(*walk_args(site, "-a", "max_depth=1", "-a", "max_pages=5"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert site.paths() == ORDER[:5]
    more_pages = run_cli(*walk_args(site, "-a", "max_depth=1"), cwd=tmp_path)
    assert more_pages.returncode == 0, more_pages.stderr
    assert site.paths() == ORDER[: 1 + PAGES]
    # The pages at depth 1 are not fetched again: their links were kept.
    deeper = run_cli(*walk_args(site), cwd=tmp_path)
    assert deeper.returncode == 0, deeper.stderr
    assert_whole_walk(site, tmp_path, refetched_at_most=0)


@SLOW
@pytest.mark.parametrize("feed", ["pages.jsonl", "pages.json", "pages.csv", "pages.xml"])
def test_every_feed_format_killed_twice_and_resumed_is_one_valid_file_with_each_page_once(make_site, tmp_path, feed):
    site = make_site(SITE)
    args = walk_args(site, feed=feed)
    kill_after(5, site, args, tmp_path)
    kill_after(12, site, args, tmp_path)
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert read_feed(tmp_path / feed) == [site(path) for path in ORDER]


@pytest.mark.parametrize("feed", ["pages.jsonl", "pages.json", "pages.csv", "pages.xml"])
def test_every_feed_format_of_a_finished_walk_goes_on_as_one_valid_file(make_site, tmp_path, feed):
    site = make_site(SITE)
    for max_pages in ("3", "8", "8", "100"):
        result = run_cli(*walk_args(site, "-a", f"max_pages={max_pages}", feed=feed), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert read_feed(tmp_path / feed) == [site(path) for path in ORDER[: int(max_pages)]]
    assert site.paths() == ORDER


def test_a_jobdir_of_another_seed_is_refused_and_nothing_is_touched(make_site, tmp_path):
    site, other = make_site(SITE), make_site(SITE)
    assert run_cli(*walk_args(site, "-a", "max_pages=3"), cwd=tmp_path).returncode == 0
    feed = (tmp_path / "pages.jsonl").read_bytes()
    journal = (tmp_path / "job" / "sitewalk.journal").read_bytes()
    refused = run_cli(*walk_args(other), cwd=tmp_path)
    assert refused.returncode == 2
    errors = [line for line in refused.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert errors == [f"sitewalk: error: JOBDIR job holds the walk of {site('/')}, not of {other('/')}: "
                      "give the walk another JOBDIR (or delete that one to start over)"]
    assert "Traceback" not in refused.stderr
    assert other.paths() == []
    assert (tmp_path / "pages.jsonl").read_bytes() == feed
    assert (tmp_path / "job" / "sitewalk.journal").read_bytes() == journal


# A setting the address guard refuses as Scrapy builds it, after the walk's extensions are built.
REFUSED = ("-s", "SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33")
REFUSAL = ("sitewalk: error: -s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/33: '127.0.0.1/33' is not an IP network "
           "(use CIDRs such as 127.0.0.1/32,10.0.0.0/8)")


def test_a_walk_a_component_refuses_leaves_no_journal_and_its_jobdir_free_for_another_walk(make_site, tmp_path):
    site, other = make_site(SITE), make_site(SITE)
    refused = run_cli(*walk_args(site, *REFUSED), cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [REFUSAL]
    assert site.requests() == []
    assert not (tmp_path / "job" / "sitewalk.journal").exists()
    assert not (tmp_path / "pages.jsonl").exists()
    # The refused walk never started: the JOBDIR is not its, and a walk of another seed may use it.
    walked = run_cli(*walk_args(other), cwd=tmp_path)
    assert walked.returncode == 0, walked.stderr
    assert "resuming" not in walked.stderr
    assert feed_urls(tmp_path / "pages.jsonl") == [other(path) for path in ORDER]
    assert site.requests() == []


def test_a_resumed_walk_a_component_refuses_changes_neither_its_journal_nor_its_feed(make_site, tmp_path):
    site = make_site(SITE)
    assert run_cli(*walk_args(site, "-a", "max_pages=3"), cwd=tmp_path).returncode == 0
    # What a walk killed as it wrote an item leaves: the resumed walk cuts it off, a refused one must not.
    with (tmp_path / "pages.jsonl").open("ab") as file:
        file.write(b'{"url": "' + site("/p2").encode())
    feed = (tmp_path / "pages.jsonl").read_bytes()
    journal = (tmp_path / "job" / "sitewalk.journal").read_bytes()
    fetched = site.requests()
    refused = run_cli(*walk_args(site, *REFUSED), cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [REFUSAL]
    assert site.requests() == fetched
    assert (tmp_path / "pages.jsonl").read_bytes() == feed
    assert (tmp_path / "job" / "sitewalk.journal").read_bytes() == journal
    again = run_cli(*walk_args(site), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resuming the walk in JOBDIR" in again.stderr
    assert_whole_walk(site, tmp_path, refetched_at_most=0)


@SLOW
def test_without_jobdir_a_killed_walks_feed_holds_every_page_consumed_before_the_kill(make_site, tmp_path):
    site = make_site(SITE)
    args = walk_args(site)
    jobdir = args.index("JOBDIR=job")
    process = start_cli(*args[: jobdir - 1], *args[jobdir + 1:], cwd=tmp_path, own_process=True)
    wait_for_pages(site, 6, process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    # With Scrapy's own (buffered) file storage, the feed was empty here.
    urls = feed_urls(tmp_path / "pages.jsonl")
    assert len(urls) >= 4 and urls == [site(path) for path in ORDER[: len(urls)]]
    assert not (tmp_path / "job").exists()
