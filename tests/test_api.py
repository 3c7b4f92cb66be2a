"""The Python API: repeated walks in one process, concurrent async walks, callbacks, errors."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys

import pytest

from sitewalk import Page, Report, SeedError, SitewalkError, extract, extract_async, grep, grep_async, walk, walk_async
from tests.conftest import LOOPBACK

SITE = {"/": {"title": "Home", "links": ["/a", "/b"]}, "/a": {"links": ["/a1"]}, "/b": {}, "/a1": {}}


def test_walk_many_times_in_one_process(make_site):
    site = make_site(SITE)
    reports = [walk(site("/"), max_depth=2, delay=0, settings=LOOPBACK) for _ in range(3)]
    assert [r.fetched for r in reports] == [4, 4, 4]
    assert site.paths() == ["/", "/a", "/b", "/a1"] * 3


def test_concurrent_async_walks(make_site):
    first, second = make_site(SITE), make_site({"/": {"links": ["/x"]}, "/x": {}})

    async def main() -> list[Report]:
        return list(await asyncio.gather(
            walk_async(first("/"), max_depth=2, delay=0.05, settings=LOOPBACK),
            walk_async(second("/"), max_depth=2, delay=0.05, settings=LOOPBACK),
        ))

    one, two = asyncio.run(main())
    assert (one.origin, one.fetched) == (first.url, 4)
    assert (two.origin, two.fetched) == (second.url, 2)
    assert first.paths() == ["/", "/a", "/b", "/a1"] and second.paths() == ["/", "/x"]
    # Both ran at once: their requests interleave in time.
    first_times = [e["time"] for e in first.requests() if e["path"] != "/robots.txt"]
    second_times = [e["time"] for e in second.requests() if e["path"] != "/robots.txt"]
    assert min(second_times) < max(first_times) and min(first_times) < max(second_times)


def test_async_callback_can_stop_the_walk(make_site):
    site = make_site(SITE)
    seen: list[str] = []

    async def on_page(page: Page) -> bool:
        await asyncio.sleep(0)
        seen.append(page.url)
        return page.url != site("/a")

    report = asyncio.run(walk_async(site("/"), max_depth=2, delay=0, on_page=on_page, settings=LOOPBACK))
    assert seen == [site("/"), site("/a")]
    assert site.paths() == ["/", "/a"]
    assert report.stopped == "callback" and report.unvisited == [site("/b"), site("/a1")]


@pytest.mark.parametrize("stops", [True, False])
def test_a_callback_that_never_stops_lets_pages_download_meanwhile(make_site, stops):
    pages = [f"/p{n}" for n in range(6)]
    site = make_site({"/": {"links": pages}, **{path: {} for path in pages}})
    served: list[int] = []

    async def slow(page: Page) -> bool:
        await asyncio.sleep(0.3)
        served.append(len(site.paths()))
        return True

    report = asyncio.run(walk_async(site("/"), delay=0, on_page=slow, on_page_stops=stops, settings=LOOPBACK))
    assert report.fetched == 7 and site.paths() == ["/", *pages]
    ahead = [count - consumed for consumed, count in enumerate(served, start=1)]
    if stops:
        assert max(ahead) == 0  # each page waited for the callback's verdict
    else:
        assert max(ahead) > 0  # the next pages downloaded while the callback ran


def test_bad_argument_raises_before_any_request(make_site):
    site = make_site(SITE)
    with pytest.raises(SitewalkError, match="max_pages must be >= 1, got 0"):
        walk(site("/"), max_pages=0, settings=LOOPBACK)
    assert site.requests() == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda seed: walk(seed, grep="x"), "walk() returns no grep results: use grep(seed, pattern, ...)"),
        (lambda seed: walk(seed, config={"grep": "x"}), "walk() returns no grep results: use grep(seed, pattern, ...)"),
        (lambda seed: walk(seed, css="h1"), "walk() returns no extract results: use extract(seed, css=... or xpath=...)"),
        (lambda seed: asyncio.run(walk_async(seed, xpath="//h1")),
         "walk_async() returns no extract results: use extract_async(seed, css=... or xpath=...)"),
        (lambda seed: extract(seed), "extract() needs css=... or xpath=... (what to extract); walk() lists the pages"),
        (lambda seed: extract(seed, regex="x"), "regex filters css/xpath values"),
        (lambda seed: asyncio.run(extract_async(seed)), "extract_async() needs css=... or xpath=... (what to extract); walk_async()"),
        (lambda seed: grep(seed), "grep() needs a pattern; walk() lists the pages"),
        (lambda seed: asyncio.run(grep_async(seed)), "grep_async() needs a pattern; walk_async() lists the pages"),
        (lambda seed: grep(seed, ""), "grep is empty"),
        (lambda seed: walk(seed, context=1), "context is an option of grep: give a grep pattern too, or leave context out"),
    ],
)
def test_a_call_that_would_ignore_an_argument_raises_before_any_request(make_site, call, message):
    site = make_site(SITE)
    with pytest.raises(SitewalkError) as raised:
        call(site("/"))
    assert str(raised.value).startswith(message)
    assert site.requests() == []


def test_seed_error_is_raised(unused_port):
    with pytest.raises(SeedError):
        walk(f"http://127.0.0.1:{unused_port}/", delay=0, settings={**LOOPBACK, "ROBOTSTXT_OBEY": False})


def test_walk_from_a_config_mapping(make_site):
    site = make_site(SITE)
    report = walk(config={"seed": site("/"), "max_depth": 0, "delay": 0}, settings=LOOPBACK)
    assert report.fetched == 1 and site.paths() == ["/"]


def test_walk_async_shares_the_callers_loop_in_a_fresh_process(make_site, tmp_path):
    """No reactor yet: walk_async installs it on the running asyncio loop (no thread, no hang)."""
    site = make_site(SITE)
    script = tmp_path / "program.py"
    script.write_text(
        "import asyncio, json, sys\n"
        "from sitewalk import walk_async\n"
        "async def main():\n"
        f"    settings = {LOOPBACK!r}\n"
        "    reports = await asyncio.gather(*(walk_async(sys.argv[1], max_depth=2, delay=0, settings=settings)"
        " for _ in range(2)))\n"
        "    again = await walk_async(sys.argv[1], max_depth=0, delay=0, settings=settings)\n"
        "    from sitewalk._compat import reactor_event_loop\n"
        "    print(json.dumps([[r.fetched for r in reports], again.fetched,"
        " reactor_event_loop() is asyncio.get_running_loop()]))\n"
        "asyncio.run(main())\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, str(script), site("/")], capture_output=True, text=True, timeout=60, check=True
    )
    fetched, again, same_loop = json.loads(result.stdout.splitlines()[-1])
    assert fetched == [4, 4] and again == 1 and same_loop is True
    assert sorted(site.paths()) == sorted(["/", "/a", "/b", "/a1"] * 2 + ["/"])


def test_extract_and_grep_return_their_items(make_site):
    from sitewalk import Extract, Match, extract, grep

    site = make_site({"/": {"title": "Home", "body": "<p>needle one</p>", "links": ["/a"]},
                      "/a": {"title": "Page A", "body": "<p>no match</p>"}})
    items, report = extract(site("/"), css="h1::text", delay=0, settings=LOOPBACK)
    assert items == [Extract(url=site("/"), depth=0, values=["Home"]), Extract(url=site("/a"), depth=1, values=["Page A"])]
    assert report.fetched == 2
    matches, report = grep(site("/"), "needle", delay=0, settings=LOOPBACK)
    assert matches == [Match(url=site("/"), line=2, text="needle one", before=["Home"], after=["/a"], depth=0)]
    assert report.fetched == 2


@pytest.mark.parametrize(
    ("arguments", "settings", "message"),
    [
        ({"seed": "http://127.0.0.1:99999/"}, {},
         "seed 'http://127.0.0.1:99999/' is not a valid URL: port out of range 0-65535 "
         "(give e.g. seed=\"https://docs.example.com/\")"),
        ({"seed": "http://host :80/"}, {}, "seed 'http://host :80/' is not a valid URL: its host has a space in it"),
        ({"seed": "http://[::1/"}, {}, "seed 'http://[::1/' is not a valid URL: invalid IPv6 URL"),
        ({"report": "/no/such/dir/r.json"}, {},
         "report '/no/such/dir/r.json' is in a directory that does not exist ('/no/such/dir'): "
         "give a file path in an existing directory, e.g. report=\"report.json\""),
        ({}, {"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/33"},
         "settings={\"SITEWALK_GUARD_ALLOW_NETWORKS\": \"127.0.0.1/33\"}: '127.0.0.1/33' is not an IP network"),
        ({}, {"SITEWALK_PROGRESS_INTERVAL": "abc"},
         "settings={\"SITEWALK_PROGRESS_INTERVAL\": \"abc\"} is not a number of seconds "
         "(give e.g. settings={\"SITEWALK_PROGRESS_INTERVAL\": 10}; 0 = a progress line at each new depth only)"),
        ({"regex": "x"}, {}, "regex filters css/xpath values: give css=\"...\" or xpath=\"...\" too"),
    ],
    ids=["port", "space", "bracket", "report", "networks", "interval", "regex"],
)
def test_bad_input_raises_in_the_words_of_python_before_any_request(make_site, arguments, settings, message):
    site = make_site(SITE)
    with pytest.raises(SitewalkError) as raised:
        walk(**{"seed": site("/"), **arguments}, delay=0, settings={**LOOPBACK, **settings})
    assert str(raised.value).startswith(message)
    assert "-a " not in str(raised.value) and "-s " not in str(raised.value)
    assert site.requests() == []


# Settings a component checks as Scrapy builds it (from_crawler), and what the error says.
COMPONENT_SETTINGS = [
    ({}, {"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/33"},
     "settings={\"SITEWALK_GUARD_ALLOW_NETWORKS\": \"127.0.0.1/33\"}: '127.0.0.1/33' is not an IP network "
     "(use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"),
    ({}, {"SITEWALK_PROGRESS_INTERVAL": "abc"},
     "settings={\"SITEWALK_PROGRESS_INTERVAL\": \"abc\"} is not a number of seconds "
     "(give e.g. settings={\"SITEWALK_PROGRESS_INTERVAL\": 10}; 0 = a progress line at each new depth only)"),
    ({"render": "always"}, {"SITEWALK_RENDER_CHROMIUM": "no-such-chromium"},
     "render needs Chromium, and 'no-such-chromium' is not an executable: install Debian's (apt-get install chromium) "
     "or point settings={\"SITEWALK_RENDER_CHROMIUM\": \"/path/to/chromium\"} at one"),
]


@pytest.mark.parametrize(("arguments", "settings", "message"), COMPONENT_SETTINGS, ids=["networks", "interval", "chromium"])
def test_a_component_refusing_its_setting_raises_before_any_request(make_site, tmp_path, caplog, arguments, settings, message):
    site = make_site(SITE)
    feed = tmp_path / "out.jsonl"
    earlier = b'{"url": "http://old.test/"}\n\xff and no newline at the end'
    feed.write_bytes(earlier)
    feeds = {"FEEDS": {str(feed): {"format": "jsonlines", "overwrite": True}}}
    with pytest.raises(SitewalkError) as raised:
        walk(site("/"), delay=0, **arguments, settings={**LOOPBACK, **feeds, **settings})
    assert str(raised.value) == message
    assert feed.read_bytes() == earlier
    assert site.requests() == []
    # Raised, not also logged (asyncio's "Task exception was never retrieved" is an error record).
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


def test_a_bad_pattern_names_the_keyword_argument(make_site):
    site = make_site(SITE)
    with pytest.raises(SitewalkError, match=r"\(use fixed_strings=True to search for it literally\)$"):
        grep(site("/"), "a.b(", settings=LOOPBACK)
    assert site.requests() == []


def test_a_seed_error_carries_its_kind_and_names_the_setting_to_pass(make_site):
    site = make_site({"/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /\n"}, "/": {}})
    with pytest.raises(SeedError) as raised:
        walk(site("/"), delay=0, settings=LOOPBACK)
    assert str(raised.value) == (
        f"seed {site('/')} could not be fetched: disallowed by the site's robots.txt; "
        "set settings={\"ROBOTSTXT_OBEY\": False} to fetch it anyway"
    )
    assert (raised.value.url, raised.value.kind) == (site("/"), "robots")
    assert site.paths() == []


def test_the_async_functions_check_input_the_same_way(make_site):
    site = make_site(SITE)

    async def main() -> None:
        with pytest.raises(SitewalkError, match=r"^seed 'http://\[::1/' is not a valid URL"):
            await walk_async("http://[::1/", settings=LOOPBACK)
        with pytest.raises(SitewalkError, match=r"^report '/no/such/dir/r.json' is in a directory that does not exist"):
            await walk_async(site("/"), report="/no/such/dir/r.json", settings=LOOPBACK)

    asyncio.run(main())
    assert site.requests() == []
