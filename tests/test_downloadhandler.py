"""The download handler over real HTTP: a connection the server closed never fails a page."""

from __future__ import annotations

from collections import Counter

import pytest

from sitewalk import walk
from sitewalk.example import serve
from tests.conftest import LOOPBACK

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "A", "links": ["/a1"]},
    "/b": {"title": "B"},
    "/a1": {"title": "A1"},
}
WALKS = 20


def answered(site) -> Counter[str]:
    return Counter(entry["sent"] for entry in site.log() if "sent" in entry)


@pytest.mark.parametrize(
    ("options", "delay", "walks"),
    [
        # Closes each connection on the request after its first: the race of an idle timeout
        # firing just as a request arrives, every time (walked again and again: it races).
        (("--requests-per-connection", "1"), 0, WALKS),
        # Closes connections idle for 0.2 s, while the walk waits 0.3 s between requests: the
        # close usually arrives before the next request; the case above is the one that races.
        (("--idle-timeout", "0.2"), 0.3, 5),
    ],
    ids=["closed-on-arrival", "idle-timeout"],
)
def test_connections_the_server_closes_never_fail_a_page(make_site, options, delay, walks):
    site = make_site(SITE, options=options)
    for _ in range(walks):
        report = walk(site("/"), delay=delay, max_depth=2, settings=LOOPBACK)
        assert report.failures == [] and report.fetched == 4
    # Each page was answered once per walk: a request is sent again only when it got no answer.
    assert answered(site) == {path: walks for path in ["/robots.txt", "/", "/a", "/b", "/a1"]}
    if options[0] == "--requests-per-connection":
        assert any("dropped" in entry for entry in site.log())


def test_the_in_process_example_site_walks_without_failures(capsys):
    server = serve()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for _ in range(WALKS):
            report = walk(url, delay=0, max_depth=2, settings=LOOPBACK)
            assert report.failures == [] and report.fetched == 7
    finally:
        server.shutdown()
    # The example site logs each answer: every page answered once per walk.
    served = Counter(line.split()[3] for line in capsys.readouterr().err.splitlines() if line.startswith("example site: GET"))
    assert set(served.values()) == {WALKS}, served


def test_a_request_a_closed_connection_lost_goes_again_after_the_pace(make_site):
    # Every connection answers one request and drops the next unanswered: each page after the
    # first is lost once on its kept-alive connection and sent again on a new one.
    site = make_site(SITE, options=("--requests-per-connection", "1"))
    report = walk(site("/"), delay=0.3, max_depth=2, settings=LOOPBACK)
    assert report.failures == [] and report.fetched == 4
    log = site.log()
    arrivals = [entry for entry in log if "method" in entry]
    dropped = [entry for entry in log if "dropped" in entry]
    assert dropped, "the server dropped no request: nothing was sent again"
    # Each path answered once, and every request the server saw, the ones sent again included,
    # started the delay after the one before: at least half of it as the server's clock reads
    # them on arrival, on a busy machine (Twisted's own re-send went within milliseconds).
    assert answered(site) == {path: 1 for path in ["/robots.txt", "/", "/a", "/b", "/a1"]}
    gaps = [later["time"] - earlier["time"] for earlier, later in zip(arrivals, arrivals[1:], strict=False)]
    assert len(arrivals) == 5 + len(dropped) and min(gaps) >= 0.15, (gaps, log)
