"""The address guard over real connections: refused loopback forms never reach the server.

Only loopback is ever contacted. 127.0.0.1/32 is allowed (the suite's sites live there); a second
server listens on 127.0.0.2, which stays refused — Linux answers on all of 127/8, so a broken
guard would show up in that server's log. Every other range is covered by tests/test_guard.py
with stubbed DNS answers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.spider import DefaultSpider
from scrapy.utils.test import get_crawler

from sitewalk import SeedError, SitewalkError, walk
from sitewalk.downloadermiddlewares import AddressGuardMiddleware
from sitewalk.hints import API, CLI, SCRAPYD
from tests.conftest import LOOPBACK, allow_loopback, run_cli, start_cli, wait_for_pages, walk_for

REFUSED = "refused address 127.0.0.2 (not a public address)"
# What the API tells its caller to pass to fetch it anyway: its own parameter, not -s syntax.
API_HINT = 'set settings={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.2"} to fetch it anyway'

# Spellings of 127.0.0.2 a URL can use.
FORMS = ["127.0.0.2", "2130706434", "0x7f000002", "0177.0.0.2", "127.2", "0x7f.0.0.2", "127.0.2"]


@pytest.fixture
def private(make_site):
    return make_site({"/": {"title": "private"}, "/secret": {"title": "secret"}}, host="127.0.0.2")


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize("form", FORMS)
def test_refused_seed_in_every_spelling(private, form):
    with pytest.raises(SeedError) as caught:
        walk(f"http://{form}:{port_of(private.url)}/secret", delay=0, settings=LOOPBACK)
    assert str(caught.value).endswith(f"could not be fetched: {REFUSED}; {API_HINT}")
    assert caught.value.kind == "guard"
    assert private.requests() == []


@pytest.mark.parametrize("form", FORMS + ["[::ffff:127.0.0.2]", "[::ffff:7f00:2]"])
def test_refused_seed_redirect_target(make_site, private, form):
    site = make_site({"/": {"status": 302, "headers": {"Location": f"http://{form}:{port_of(private.url)}/secret"}}})
    with pytest.raises(SeedError, match="refused address"):
        walk(site("/"), delay=0, settings=LOOPBACK)
    assert site.paths() == ["/"]
    assert private.requests() == []


def test_refused_link_and_page_redirect(make_site, private):
    target = f"http://127.2:{port_of(private.url)}/secret"
    site = make_site({
        "/": {"links": [target, "/hop"]},
        "/hop": {"status": 301, "headers": {"Location": target}},
    })
    report = walk(site("/"), delay=0, settings=LOOPBACK)
    assert private.requests() == []
    assert site.paths() == ["/", "/hop"]
    # A link to another origin is not followed; a redirect there is a failure.
    assert report.failures == [{"url": site("/hop"), "kind": "guard", "reason": REFUSED, "found_on": site("/")}]


def test_allowed_address_in_another_spelling_still_works(make_site):
    site = make_site({"/": {"title": "home"}})
    report = walk(f"http://2130706433:{port_of(site.url)}/", delay=0, settings=LOOPBACK)
    assert report.fetched == 1
    assert site.paths() == ["/"]


def test_host_name_resolving_to_loopback_is_refused_unless_allowed(make_site):
    site = make_site({"/": {"title": "home"}})
    with pytest.raises(SeedError, match=r"refused address (127\.0\.0\.1|::1) "):
        walk(f"http://localhost:{port_of(site.url)}/", delay=0)
    assert site.requests() == []
    report = walk(f"http://localhost:{port_of(site.url)}/", delay=0, settings=LOOPBACK)
    assert report.fetched == 1 and site.paths() == ["/"]


@pytest.mark.parametrize(
    ("surface", "given"),
    [(CLI, "-s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32,intranet"),
     (SCRAPYD, "setting=SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1/32,intranet"),
     (API, 'settings={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32,intranet"}')],
    ids=["cli", "scrapyd", "api"],
)
def test_bad_allow_networks_refuse_the_middleware_in_the_walks_words(surface, given):
    crawler = walk_for(settings={"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32,intranet"}, surface=surface)
    with pytest.raises(SitewalkError) as raised:
        build_from_crawler(AddressGuardMiddleware, crawler)
    assert str(raised.value) == f"{given}: 'intranet' is not an IP network (use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"


def test_bad_allow_networks_refuse_the_middleware_for_any_spider():
    crawler = get_crawler(settings_dict={"SITEWALK_GUARD_ALLOW_NETWORKS": "intranet"})
    crawler.spider = DefaultSpider.from_crawler(crawler)
    with pytest.raises(SitewalkError, match=r"^-s SITEWALK_GUARD_ALLOW_NETWORKS=intranet: 'intranet' is not"):
        build_from_crawler(AddressGuardMiddleware, crawler)


def test_a_walk_that_refused_to_start_leaves_no_network_allowed(make_site):
    # The render middleware, built after the guard, refuses a Chromium that is not there.
    site = make_site({"/": {"title": "home"}})
    with pytest.raises(SitewalkError, match="not an executable"):
        walk(site("/"), delay=0, render="always", settings={**LOOPBACK, "SITEWALK_RENDER_CHROMIUM": "no-such-chromium"})
    with pytest.raises(SeedError, match=r"refused address (127\.0\.0\.1|::1) "):
        walk(f"http://localhost:{port_of(site.url)}/", delay=0)
    assert site.requests() == []


def test_cli_refuses_by_default_with_one_line(make_site, tmp_path):
    site = make_site({"/": {"title": "home"}})
    result = run_cli("-a", f"seed={site('/')}", "-O", "p.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: seed {site('/')} could not be fetched: refused address 127.0.0.1 "
        "(not a public address); set -s SITEWALK_GUARD_ALLOW_NETWORKS=127.0.0.1 to fetch it anyway"
    )
    assert site.requests() == []


def test_proxy_from_the_environment_does_not_bypass(make_site, private, tmp_path):
    proxy = make_site({})
    result = run_cli(
        "-a", f"seed=http://127.0.0.2:{port_of(private.url)}/", "-O", "p.jsonl", *allow_loopback(),
        cwd=tmp_path, env={"http_proxy": proxy.url, "HTTP_PROXY": proxy.url},
    )
    assert result.returncode == 1 and "refused address 127.0.0.2" in result.stderr
    assert proxy.requests() == [] and private.requests() == []


def listening_sockets(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[9]) in inodes:  # state LISTEN
                listening.add(int(fields[9]))
    return listening


def test_a_walk_opens_no_listening_socket(make_site, tmp_path):
    """No telnet console, no remote-control endpoint: nothing listens while a walk runs."""
    site = make_site({"/": {"links": ["/slow"]}, "/slow": {"sleep": 3}})
    process = start_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path,
                        own_process=True)  # its sockets are its pid's
    try:
        wait_for_pages(site, 2, process)  # the walk is mid-way, waiting for /slow
        assert listening_sockets(process.pid) == set()
    finally:
        process.wait(timeout=30)
    items = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [item["url"] for item in items] == [site("/"), site("/slow")]
