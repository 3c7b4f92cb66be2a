"""A walk with a state: conditional requests, each page new, changed or unchanged, and what was removed."""

from __future__ import annotations

import fcntl
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import allow_loopback, run_cli, start_cli, wait_for_pages

# A site of two levels whose pages answer validators (ETag, Last-Modified) with 304.
SITE: dict[str, Any] = {
    "/": {"title": "Home", "links": ["/a", "/b", "/c"], "validators": True},
    "/a": {"title": "A", "links": ["/a1", "/a2"], "validators": True},
    "/b": {"title": "B", "links": ["/b1"], "validators": True},
    "/c": {"title": "C", "validators": True},
    "/a1": {"title": "A1", "body": "<p>needle one</p>", "validators": True},
    "/a2": {"title": "A2", "validators": True},
    "/b1": {"title": "B1", "body": "<p>needle two</p>", "validators": True},
}
ORDER = ["/", "/a", "/b", "/c", "/a1", "/a2", "/b1"]
DEPTHS = {"/": 0, "/a": 1, "/b": 1, "/c": 1, "/a1": 2, "/a2": 2, "/b1": 2}


def walk(site: Any, cwd: Path, *more: str, feed: str = "pages.jsonl", status: int = 0) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One walk of ``site`` with the state in ``cwd/state`` (ending with exit ``status``): its items and its report."""
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "delay=0", "-a", "state=state",
            "-a", "report=r.json", "-O", feed, *allow_loopback(), *more]
    result = run_cli(*args, cwd=cwd)
    assert result.returncode == status, result.stderr
    items = [json.loads(line) for line in (cwd / feed).read_text().splitlines()]
    return items, json.loads((cwd / "r.json").read_text())


def change(site: Any, spec: dict[str, Any]) -> None:
    """The site serves ``spec`` from its next request on (mockserver.py --reload)."""
    spec_path = site.log_path.parent / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")


def since(site: Any, mark: int) -> list[dict[str, Any]]:
    """What the site logged after its first ``mark`` lines."""
    return site.log()[mark:]


def test_a_walk_again_asks_conditionally_and_the_304s_cost_no_body(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    first, report = walk(site, tmp_path)
    assert [item["url"] for item in first] == [site(p) for p in ORDER]
    assert {item["change"] for item in first} == {"new"}
    assert report["changes"]["new"] == 7 and report["changes"]["removed"] == []
    mark = len(site.log())

    second, report = walk(site, tmp_path)
    log = since(site, mark)
    requests = [entry for entry in log if "method" in entry and entry["path"] != "/robots.txt"]
    # The same pages, in the same order and at the same depths, each asked only if it changed.
    assert [entry["path"] for entry in requests] == ORDER
    assert all(entry["headers"].get("If-None-Match", "").startswith('"') for entry in requests)
    assert all(entry["headers"].get("If-Modified-Since") for entry in requests)
    sent = [entry for entry in log if "sent" in entry and entry["sent"] != "/robots.txt"]
    assert all(entry.get("not_modified") and entry["bytes_sent"] == 0 for entry in sent)
    assert [(item["url"], item["depth"], item["status"], item["change"]) for item in second] == [
        (site(p), DEPTHS[p], 304, "unchanged") for p in ORDER
    ]
    # Titles and links come from the state; the bytes are the 304s' status lines and headers.
    assert [item["title"] for item in second] == [item["title"] for item in first]
    assert all(item["byte_count"] < 300 for item in second)
    assert report["fetched"] == 7
    assert report["changes"] == {"new": 0, "changed": 0, "unchanged": 7, "removed": [], "unreached": None}


def test_changed_new_and_removed_pages_are_classified_exactly(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    spec = json.loads(json.dumps(SITE))
    spec["/a1"]["body"] = "<p>needle one, edited</p>"  # changed
    spec["/b"]["links"] = ["/b1", "/d"]  # changed: a new link
    spec["/d"] = {"title": "D", "validators": True}  # new
    spec["/a"]["links"] = ["/a1"]  # changed: /a2 no longer linked (unreached)
    del spec["/c"]  # 404 now
    change(site, spec)

    items, report = walk(site, tmp_path)
    changes = {item["url"]: item["change"] for item in items}
    assert changes == {
        site("/"): "unchanged", site("/a"): "changed", site("/b"): "changed", site("/c"): "changed",
        site("/a1"): "changed", site("/b1"): "unchanged", site("/d"): "new",
    }
    assert report["changes"]["new"] == 1 and report["changes"]["changed"] == 4 and report["changes"]["unchanged"] == 2
    assert report["changes"]["removed"] == [{"url": site("/c"), "why": "404"}, {"url": site("/a2"), "why": "unreached"}]
    assert report["changes"]["unreached"] is None

    # Removed once: the walk after says nothing of them again; /c, still gone, is unchanged.
    items, report = walk(site, tmp_path)
    assert report["changes"]["removed"] == []
    assert {item["url"]: item["change"] for item in items}[site("/c")] == "unchanged"
    # And /c, back, is new.
    spec["/c"] = SITE["/c"]
    change(site, spec)
    items, _ = walk(site, tmp_path)
    assert {item["url"]: item["change"] for item in items}[site("/c")] == "new"


def test_a_server_without_validators_is_asked_plainly_and_the_body_decides(make_site, tmp_path):
    plain = {path: {key: value for key, value in page.items() if key != "validators"} for path, page in SITE.items()}
    site = make_site(plain, options=("--reload",))
    walk(site, tmp_path)
    plain["/b1"]["body"] = "<p>needle two, edited</p>"
    change(site, plain)
    mark = len(site.log())
    items, report = walk(site, tmp_path)
    requests = [entry for entry in since(site, mark) if "method" in entry]
    assert not any("If-None-Match" in entry["headers"] or "If-Modified-Since" in entry["headers"] for entry in requests)
    assert [(item["url"], item["status"], item["change"]) for item in items] == [
        (site(p), 200, "changed" if p == "/b1" else "unchanged") for p in ORDER
    ]
    assert report["changes"]["changed"] == 1 and report["changes"]["unchanged"] == 6


def test_changed_only_hands_grep_the_new_and_changed_pages(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    matches, _ = walk(site, tmp_path, "-a", "grep=needle", "-a", "changed_only=true", feed="m.jsonl")
    assert [(match["url"], match["change"]) for match in matches] == [(site("/a1"), "new"), (site("/b1"), "new")]
    spec = json.loads(json.dumps(SITE))
    spec["/b1"]["body"] = "<p>needle two, edited</p>"
    change(site, spec)
    mark = len(site.log())
    matches, report = walk(site, tmp_path, "-a", "grep=needle", "-a", "changed_only=true", feed="m.jsonl")
    # Every page is walked (the unchanged ones' links followed), only /b1 is searched.
    assert [entry["path"] for entry in since(site, mark) if "method" in entry and entry["path"] != "/robots.txt"] == ORDER
    assert matches == [{"url": site("/b1"), "line": 2, "text": "needle two, edited", "before": ["B1"], "after": [],
                        "depth": 2, "change": "changed"}]
    assert report["fetched"] == 7 and report["changes"]["unchanged"] == 6


def test_budgets_are_exact_with_a_state(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    mark = len(site.log())
    items, report = walk(site, tmp_path, "-a", "max_pages=4")
    # Four page requests, 304s as much as fetches, and the first four in the walk's order.
    assert [entry["path"] for entry in since(site, mark) if "method" in entry and entry["path"] != "/robots.txt"] == ORDER[:4]
    assert [item["url"] for item in items] == [site(p) for p in ORDER[:4]]
    assert report["fetched"] == 4 and report["stopped"] == "max-pages"
    # Another max_pages than the previous walk's: the pages it did not reach are not called removed.
    assert report["changes"]["removed"] == []
    assert report["changes"]["unreached"].startswith("max_pages (4, was 20) differs")


def test_max_bytes_is_exact_with_a_state(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    # Each 304 costs its status line and headers: max_bytes cuts the walk there as it cuts bodies.
    items, report = walk(site, tmp_path, "-a", "max_bytes=700")
    assert report["stopped"] == "max-bytes"
    assert report["bytes"] == 700
    assert 0 < len(items) < 7 and all(item["status"] == 304 for item in items)
    assert sum(item["byte_count"] for item in items) < 700


def test_a_state_of_another_origin_is_refused(make_site, tmp_path):
    site = make_site(SITE)
    walk(site, tmp_path)
    other = make_site(SITE)
    result = run_cli("-a", f"seed={other('/')}", "-a", "state=state", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"sitewalk: error: state 'state' holds the state of {site.url}, not of {other.url}: give another state "
        "directory (e.g. -a state=state), or delete that one to start over"
    )
    assert other.paths() == []


def test_a_damaged_state_is_refused(make_site, tmp_path):
    site = make_site(SITE)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "sitewalk-state.sqlite").write_bytes(b"not a database, not at all" * 10)
    result = run_cli("-a", f"seed={site('/')}", "-a", "state=state", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "sitewalk: error: state 'state' holds a damaged state (file is not a database): give another state "
        "directory (e.g. -a state=state), or delete that one to start over"
    )
    assert site.paths() == []


def test_a_state_in_use_by_another_walk_is_refused(make_site, tmp_path):
    site = make_site(SITE)
    walk(site, tmp_path)
    mark = len(site.log())
    # Another walk holds the state's lock (here this test, as a walk would for its whole run).
    with (tmp_path / "state" / "sitewalk-state.lock").open("ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = run_cli("-a", f"seed={site('/')}", "-a", "state=state", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "sitewalk: error: state 'state' is in use by another walk: wait for it to end, or give this walk another "
        "state directory"
    )
    assert site.log()[mark:] == []
    # Once it is free, the next walk goes on from it.
    _, report = walk(site, tmp_path)
    assert report["changes"]["unchanged"] == 7


def test_changed_only_needs_a_state(tmp_path):
    result = run_cli("-a", "seed=http://127.0.0.1:9/", "-a", "changed_only=true", cwd=tmp_path)
    assert result.returncode == 2
    assert "changed_only tells pages from the previous walk's: give -a state=state too" in result.stderr


@pytest.mark.slow  # a walk killed with SIGKILL, in a process of its own
def test_a_state_survives_kill_9(make_site, tmp_path):
    slow = {path: {**page, "sleep": 0.2} for path, page in SITE.items()}
    site = make_site(slow)
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "delay=0", "-a", "state=state",
            "-a", "report=r.json", "-O", "pages.jsonl", *allow_loopback()]
    process = start_cli(*args, cwd=tmp_path, own_process=True)
    wait_for_pages(site, 5, process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    killed = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert 3 <= len(killed) < 7
    mark = len(site.log())

    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    requests = [entry for entry in since(site, mark) if "method" in entry and entry["path"] != "/robots.txt"]
    assert [entry["path"] for entry in requests] == ORDER
    # Every page the killed walk handed on was written to the state: asked for conditionally now.
    conditional = {entry["path"] for entry in requests if "If-None-Match" in entry["headers"]}
    assert {site.url + path for path in conditional} >= {item["url"] for item in killed}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["changes"]["unchanged"] >= len(killed) and report["changes"]["new"] == 7 - report["changes"]["unchanged"]


def test_save_dir_with_a_state_writes_only_what_changed_and_deletes_what_was_removed(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path, "-a", "save_dir=site")
    saved = tmp_path / "site"
    assert (saved / "a2.md").exists() and (saved / "c.md").exists()
    # A mark in an unchanged page's file: a walk that wrote it again would lose it.
    (saved / "b1.md").write_text("kept\n", encoding="utf-8")
    spec = json.loads(json.dumps(SITE))
    spec["/a1"]["body"] = "<p>needle one, edited</p>"
    spec["/a"]["links"] = ["/a1"]  # /a2 no longer reached
    del spec["/c"]  # 404
    change(site, spec)

    _, report = walk(site, tmp_path, "-a", "save_dir=site")
    assert [entry["why"] for entry in report["changes"]["removed"]] == ["404", "unreached"]
    assert (saved / "b1.md").read_text(encoding="utf-8") == "kept\n"
    assert "needle one, edited" in (saved / "a1.md").read_text(encoding="utf-8")
    assert not (saved / "c.md").exists() and not (saved / "a2.md").exists()
    llms = (saved / "llms.txt").read_text(encoding="utf-8")
    assert site("/b1") in llms and site("/a1") in llms
    assert site("/c") not in llms and site("/a2") not in llms


def test_order_and_depths_hold_with_requests_in_flight(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    first, _ = walk(site, tmp_path, "-a", "concurrency=4")
    items, report = walk(site, tmp_path, "-a", "concurrency=4")
    assert [(item["url"], item["depth"]) for item in items] == [(item["url"], item["depth"]) for item in first]
    assert report["changes"]["unchanged"] == 7


def test_a_redirect_hop_and_a_gzip_page_are_asked_conditionally(make_site, tmp_path):
    site = make_site({
        "/": {"title": "Home", "links": ["/old", "/zipped"], "validators": True},
        "/old": {"status": 301, "headers": {"Location": "/new"}},
        "/new": {"title": "New", "links": ["/leaf"], "validators": True},
        "/zipped": {"title": "Zipped", "gzip": True, "validators": True},
        "/leaf": {"title": "Leaf", "validators": True},
    }, options=("--reload",))
    first, _ = walk(site, tmp_path)
    mark = len(site.log())
    items, _ = walk(site, tmp_path)
    requests = {entry["path"]: entry["headers"] for entry in since(site, mark) if "method" in entry}
    # The redirecting URL is asked plainly (its answer was a 301); the hop to /new, conditionally.
    assert "If-None-Match" not in requests["/old"] and "If-None-Match" in requests["/new"]
    assert "If-None-Match" in requests["/zipped"]
    assert [(item["url"], item["final_url"], item["status"], item["change"]) for item in items] == [
        (site("/"), site("/"), 304, "unchanged"), (site("/old"), site("/new"), 304, "unchanged"),
        (site("/zipped"), site("/zipped"), 304, "unchanged"), (site("/leaf"), site("/leaf"), 304, "unchanged"),
    ]
    assert [item["title"] for item in items] == [item["title"] for item in first]


def test_a_walk_resumed_from_jobdir_is_one_walk_of_its_state(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "delay=0.15", "-a", "state=state",
            "-a", "report=r.json", "-O", "pages.jsonl", "-s", "JOBDIR=job", *allow_loopback()]
    mark = len(site.log())
    process = start_cli(*args, cwd=tmp_path)
    wait_for_pages(site, len(site.paths()) + 3, process)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    assert json.loads((tmp_path / "r.json").read_text())["stopped"] == "interrupted"
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Each page once across both runs, every one a 304; the report counts the whole walk.
    requests = [entry for entry in since(site, mark) if "method" in entry and entry["path"] != "/robots.txt"]
    assert [entry["path"] for entry in requests] == ORDER
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["changes"] == {"new": 0, "changed": 0, "unchanged": 7, "removed": [], "unreached": None}


def test_a_seed_that_fails_for_a_walk_does_not_remove_the_site(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    change(site, {**SITE, "/": {"status": 500, "body": "down"}})
    _, report = walk(site, tmp_path, status=1)  # a seed that answered 5xx: exit status 1
    assert report["changes"]["removed"] == []
    assert report["changes"]["unreached"] == "the seed answered 500: pages not reached are not compared"
    change(site, SITE)
    items, report = walk(site, tmp_path)
    # The seed changed twice; every other page is as the state knew it.
    assert [item["change"] for item in items] == ["changed"] + ["unchanged"] * 6


@pytest.mark.slow  # a walk killed with SIGKILL, in a process of its own, its pages slowed to be caught in flight
def test_changed_only_resumed_from_jobdir_hands_on_each_new_and_changed_page_once(make_site, tmp_path):
    site = make_site(SITE, options=("--reload",))
    walk(site, tmp_path)
    spec = {path: {**page, "sleep": 0.2} for path, page in json.loads(json.dumps(SITE)).items()}
    spec["/c"]["links"] = ["/c1"]
    spec["/c1"] = {"title": "C1", "validators": True, "sleep": 0.2}
    spec["/a1"]["body"] = "<p>needle one, edited</p>"
    spec["/b1"]["body"] = "<p>needle two, edited</p>"
    change(site, spec)
    args = ["-a", f"seed={site('/')}", "-a", "max_depth=2", "-a", "delay=0", "-a", "state=state",
            "-a", "changed_only=true", "-a", "report=r.json", "-O", "pages.jsonl", "-s", "JOBDIR=job",
            *allow_loopback()]
    mark = len(site.log())
    process = start_cli(*args, cwd=tmp_path, own_process=True)
    # Killed once /c (changed) is in the feed: /a1 and /b1 (changed) and /c1 (new) are still to come.
    feed = tmp_path / "pages.jsonl"
    deadline = time.monotonic() + 30
    while not (feed.exists() and site("/c") in feed.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, "the walk did not hand /c on"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    killed = [json.loads(line)["url"] for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert site("/c") in killed and site("/c1") not in killed

    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    # Only the new and changed pages, each once, in the walk's order, across both runs.
    assert [(item["url"], item["change"]) for item in items] == [
        (site("/c"), "changed"), (site("/a1"), "changed"), (site("/b1"), "changed"), (site("/c1"), "new"),
    ]
    requests = [entry["path"] for entry in since(site, mark) if "method" in entry and entry["path"] != "/robots.txt"]
    assert set(requests) == {*ORDER, "/c1"}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["changes"] == {"new": 1, "changed": 3, "unchanged": 4, "removed": [], "unreached": None}
