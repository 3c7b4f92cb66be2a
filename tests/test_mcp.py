"""sitewalk-mcp through the MCP SDK's own client: a server subprocess on stdio, walking the mock site."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.types import CallToolResult

from sitewalk.items import Match, Report
from sitewalk.mcp import ServerOptions
from sitewalk.mcp.listings import grep_lines, index_lines
from sitewalk.mcp.notices import report_notices
from tests import forkserver
from tests.conftest import LOOPBACK, ROOT
from tests.pdfs import pdf

pytestmark = pytest.mark.anyio

ALLOW = LOOPBACK["SITEWALK_GUARD_ALLOW_NETWORKS"]
MAX_PAGES = 30


class Server:
    """A running ``sitewalk-mcp`` and the client session talking to it."""

    def __init__(self, session: ClientSession, log_path: Path) -> None:
        self.session = session
        self.log_path = log_path

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        return await self.session.call_tool(tool, arguments)

    def log(self) -> str:
        """What the server wrote to stderr."""
        return self.log_path.read_text(encoding="utf-8")


@asynccontextmanager
async def serve(workdir: Path, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[Server]:
    log_path = workdir / "server.log"
    # The SDK starts the server in its default environment (HOME, PATH...) unless given one; the
    # fork server's address is added to either (the server's arguments are the same).
    environment = {**(env if env is not None else get_default_environment()),
                   forkserver.VARIABLE: os.environ.get(forkserver.VARIABLE, "off")}
    command, *arguments = forkserver.command([sys.executable, "-m", "sitewalk.mcp", *args], environment)
    params = StdioServerParameters(command=command, args=arguments, env=environment, cwd=str(workdir))
    with log_path.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield Server(session, log_path)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """One server for the module's tests: they are also its many calls, one after another."""
    workdir = tmp_path_factory.mktemp("mcp")
    options = ["--allow-networks", ALLOW, "--delay", "0", "--max-pages", str(MAX_PAGES), "--log-level", "INFO"]
    async with serve(workdir, *options) as running:
        yield running


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SITE = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "Page A", "links": ["/c"]},
    "/b": {"content_type": "text/plain", "body": "plain text"},
    "/c": {"title": "Too deep"},
}


# -- the tools' schemas -------------------------------------------------------------------------


async def test_tools_are_listed_with_typed_bounded_described_parameters(server: Server) -> None:
    tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    assert set(tools) == {"web_fetch", "web_crawl", "web_grep"}

    crawl = tools["web_crawl"].input_schema
    # url is required unless a cursor continues an output: the walk says so (see the cursor tests).
    assert "required" not in crawl
    assert set(crawl["properties"]) == {
        "url", "cursor", "max_depth", "max_pages", "deadline", "max_bytes", "include", "exclude", "no_parent", "sitemap",
        "concurrency", "render",
    }
    # The bounds are the server's maxima (--max-pages 30, the defaults for the others).
    assert crawl["properties"]["max_pages"] | {"description": ""} == {
        "type": "integer", "default": 20, "minimum": 1, "maximum": MAX_PAGES, "description": "",
    }
    assert crawl["properties"]["max_depth"]["maximum"] == 5
    assert crawl["properties"]["max_depth"]["default"] == 1
    # A size or a duration is a number within the server's bounds, or a string with its unit.
    assert crawl["properties"]["deadline"]["anyOf"] == [
        {"type": "number", "exclusiveMinimum": 0, "maximum": 300}, {"type": "string"},
    ]
    assert crawl["properties"]["max_bytes"]["anyOf"] == [
        {"type": "integer", "minimum": 1, "maximum": 50_000_000}, {"type": "string"},
    ]
    # One request at a time unless the operator allows more (--max-concurrency).
    assert crawl["properties"]["concurrency"] | {"description": ""} == {
        "type": "integer", "default": 1, "minimum": 1, "maximum": 1, "description": "",
    }
    assert all(spec.get("description") for spec in crawl["properties"].values())

    grep = tools["web_grep"].input_schema
    assert "required" not in grep
    assert set(grep["properties"]) == set(crawl["properties"]) | {
        "pattern", "max_matches", "ignore_case", "context", "fixed_strings",
    }
    assert grep["properties"]["max_matches"]["default"] == 50
    assert grep["properties"]["max_matches"]["maximum"] == 500
    assert grep["properties"]["ignore_case"]["type"] == "boolean"
    assert grep["properties"]["max_pages"]["maximum"] == MAX_PAGES
    assert all(spec.get("description") for spec in grep["properties"].values())

    fetch = tools["web_fetch"].input_schema
    assert fetch["required"] == ["url"]
    assert set(fetch["properties"]) == {"url", "start_index", "max_length", "main_content", "render"}
    assert fetch["properties"]["max_length"]["maximum"] == 20_000
    assert fetch["properties"]["max_length"]["default"] == 10_000
    assert fetch["properties"]["main_content"]["default"] is True
    assert all(spec.get("description") for spec in fetch["properties"].values())
    assert {"final_url", "status", "title", "next_start_index"} <= set(tools["web_fetch"].output_schema["properties"])  # type: ignore[index]

    for tool in tools.values():
        assert tool.description and "\n    " not in tool.description
        assert tool.annotations is not None and tool.annotations.read_only_hint
        assert tool.output_schema is not None
    for tool in (tools["web_crawl"], tools["web_grep"]):
        assert tool.output_schema is not None
        assert {"fetched", "stopped", "failures", "robots_skipped", "unvisited", "unvisited_total"} <= set(
            tool.output_schema["properties"]
        )


# What tools/list may cost a model, in characters of the three tools' JSON, before it asks anything.
TOOL_LIST_BUDGET = 8000


async def test_the_tool_list_a_model_reads_stays_within_its_budget(tmp_path: Path) -> None:
    async with serve(tmp_path) as running:
        tools = (await running.session.list_tools()).tools
    sizes = {
        tool.name: len(json.dumps(tool.model_dump(mode="json", by_alias=True, exclude_none=True),
                                  separators=(",", ":"), ensure_ascii=False))
        for tool in tools
    }
    assert sum(sizes.values()) <= TOOL_LIST_BUDGET, sizes
    # docs/mcp.md gives the size measured here.
    stated = re.search(r"the three tools cost ([\d,]+) characters of `tools/list`",
                       (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8"))
    assert stated is not None and int(stated.group(1).replace(",", "")) == sum(sizes.values()), sizes
    # No parameter has a title that only repeats its name ("Max Pages").
    assert not [name for tool in tools for name, spec in tool.input_schema["properties"].items() if "title" in spec]


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("web_crawl", {"max_pages": MAX_PAGES + 1},
         f"max_pages={MAX_PAGES + 1} is above this server's limit of {MAX_PAGES} (sitewalk-mcp --max-pages)"),
        ("web_grep", {"pattern": "x", "max_matches": 501},
         "max_matches=501 is above this server's limit of 500 (sitewalk-mcp --max-matches)"),
        ("web_grep", {"pattern": "x", "context": 11}, "context=11 is above the limit of 10"),
        ("web_fetch", {"max_length": 20_001},
         "max_length=20001 is above this server's limit of 20000 (sitewalk-mcp --max-output-chars)"),
        ("web_grep", {"pattern": "x", "concurrency": 2},
         "concurrency=2 is above this server's limit of 1 (sitewalk-mcp --max-concurrency)"),
        ("web_crawl", {"max_pages": 0}, "max_pages=0 must be >= 1"),
        ("web_crawl", {"max_depth": "deep"}, 'max_depth="deep" must be a whole number'),
        ("web_crawl", {"no_parent": "maybe"}, 'no_parent="maybe" must be true or false'),
        ("web_crawl", {"max_page": 5}, "unknown parameter 'max_page' (did you mean max_pages?)"),
        ("web_grep", {"pattern": ""}, "pattern is empty"),
        ("web_crawl", {"include": "("},
         "include '(' is not a valid regular expression: missing ): ("),
        ("web_crawl", {"max_bytes": "60M"},
         "max_bytes=60000000 is above this server's limit of 50000000 (sitewalk-mcp --max-bytes)"),
        ("web_grep", {"pattern": "x", "deadline": "6m"},
         "deadline=360.0 is above this server's limit of 300 (sitewalk-mcp --max-deadline)"),
        ("web_crawl", {"max_bytes": "lots"},
         'max_bytes="lots": must be a whole number of bytes, with a unit or not (e.g. 500M, 2G), got \'lots\''),
        ("web_crawl", {"deadline": "5 weeks"},
         'deadline="5 weeks": must be a number of seconds, with a unit or not (e.g. 90s, 30m, 2h), got \'5 weeks\''),
    ],
    ids=["max_pages", "max_matches", "context", "max_length", "concurrency", "minimum", "type", "bool", "unknown", "empty",
         "regex", "max_bytes-unit", "deadline-unit", "bad-size", "bad-duration"],
)
async def test_bad_arguments_are_one_line_naming_the_parameter_and_the_limit(
    server: Server, make_site: Any, tool: str, arguments: dict[str, Any], message: str
) -> None:
    site = make_site(SITE)
    result = await server.call(tool, url=site("/"), **arguments)
    assert result.is_error
    assert text(result) == f"Error executing tool {tool}: {message}"
    assert site.requests() == []


# -- web_crawl and web_grep ------------------------------------------------------------------


async def test_web_crawl_returns_one_line_per_page_and_the_report(server: Server, make_site: Any) -> None:
    site = make_site(SITE)
    result = await server.call("web_crawl", url=site("/"))
    assert not result.is_error
    assert site.paths() == ["/", "/a", "/b"]
    report = result.structured_content
    assert report is not None
    lines = text(result).splitlines()
    bodies = [entry["bytes_sent"] for entry in site.log() if entry.get("sent", "/robots.txt") != "/robots.txt"]
    listed = [re.fullmatch(r"(\S+) 200 (\d+) B(?: — (.*))?", line) for line in lines[:3]]
    assert [(match[1], match[3]) for match in listed] == [(site("/"), "Home"), (site("/a"), "Page A"), (site("/b"), None)]
    # Each page's bytes as the site sent them: its body (10 B for /b) and its status line and headers.
    assert all(body < int(match[2]) < body + 400 for body, match in zip(bodies, listed, strict=True))
    assert lines[3] == ""
    assert lines[4].startswith(f"3 pages, {report['bytes']} bytes from {site.url} in ")
    assert len(lines) == 5
    assert report["fetched"] == 3
    assert report["origin"] == site.url
    assert report["stopped"] is None
    assert report["failures"] == report["robots_skipped"] == report["unvisited"] == []


async def test_a_budget_given_with_its_unit_bounds_what_the_site_sends(server: Server, make_site: Any) -> None:
    site = make_site({"/": {"title": "Home", "links": ["/a", "/b"]},
                      "/a": {"title": "A", "body": "<p>a</p>" * 500}, "/b": {"title": "B"}})
    result = await server.call("web_crawl", url=site("/"), max_bytes="2K", deadline="1m")
    assert not result.is_error
    report = result.structured_content
    assert report is not None
    # 2K is 2,000 bytes: robots.txt and the home page fit, /a (about 4 kB) is cut off and stops the walk.
    assert report["stopped"] == "max-bytes"
    assert report["bytes"] <= 2000
    assert report["fetched"] == 1
    # The site was asked for /a, which did not fit, and for nothing after it.
    assert site.paths() == ["/", "/a"]
    home = next(entry["wire_bytes"] for entry in site.log() if entry.get("sent") == "/")
    assert home < report["bytes"]
    assert site.paths() == ["/", "/a"]


async def test_web_grep_returns_matching_lines_grouped_by_page(server: Server, make_site: Any) -> None:
    site = make_site({
        "/": {"title": "Fruit", "links": ["/b"], "body": "<p>one apple</p><p>two</p><p>three</p><p>four</p>"
                                                       "<p>five</p><p>six apple</p>"},
        "/b": {"title": "Apple pie", "body": "<p>no fruit</p>"},
    })
    result = await server.call("web_grep", url=site("/"), pattern="apple", ignore_case=True, context=1)
    assert not result.is_error
    assert site.paths() == ["/", "/b"]
    assert text(result).splitlines()[:10] == [
        site("/"),
        "  1- Fruit",
        "  2: one apple",
        "  3- two",
        "  --",
        "  6- five",
        "  7: six apple",
        "  8- /b",
        site("/b"),
        "  1: Apple pie",
    ]
    assert "3 matching lines on 2 of 2 pages" in text(result)
    assert result.structured_content is not None and result.structured_content["fetched"] == 2


# -- one long-lived server: many calls, concurrent calls, progress --------------------------------


async def test_concurrent_calls_get_their_own_results(server: Server, make_site: Any) -> None:
    one = make_site({"/": {"title": "One", "links": ["/x"]}, "/x": {"title": "One X"}})
    two = make_site({"/": {"title": "Two", "links": ["/y", "/z"]}, "/y": {"title": "Two Y"}, "/z": {"title": "Two Z"}})
    results: dict[str, CallToolResult] = {}

    async def crawl(name: str, url: str) -> None:
        results[name] = await server.call("web_crawl", url=url)

    async def grep(name: str, url: str) -> None:
        results[name] = await server.call("web_grep", url=url, pattern="Two [YZ]", context=0)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(crawl, "one", one("/"))
        tasks.start_soon(crawl, "two", two("/"))
        tasks.start_soon(grep, "grep", two("/"))
    assert [line.split()[0] for line in text(results["one"]).splitlines()[:2]] == [one("/"), one("/x")]
    assert [line.split()[0] for line in text(results["two"]).splitlines()[:3]] == [two("/"), two("/y"), two("/z")]
    assert text(results["grep"]).splitlines()[:4] == [two("/y"), "  1: Two Y", two("/z"), "  1: Two Z"]
    assert results["one"].structured_content["fetched"] == 2  # type: ignore[index]
    assert one.paths() == ["/", "/x"]
    # Two walks of the same site ran at once: each fetched each page once.
    assert sorted(two.paths()) == sorted(["/", "/y", "/z"] * 2)


async def test_progress_is_reported_per_page_when_the_client_asks(server: Server, make_site: Any) -> None:
    site = make_site(SITE)
    seen: list[tuple[float, float | None, str | None]] = []
    all_seen = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if len(seen) == 3:
            all_seen.set()

    result = await server.session.call_tool("web_crawl", {"url": site("/"), "max_pages": 10}, progress_callback=on_progress)
    assert not result.is_error
    # Notifications are delivered to the callback in their own tasks; wait for them, not for time.
    with anyio.fail_after(10):
        await all_seen.wait()
    assert sorted(seen) == [(1.0, 10.0, site("/")), (2.0, 10.0, site("/a")), (3.0, 10.0, site("/b"))]


# -- notices -------------------------------------------------------------------------------------


async def test_robots_txt_skips_are_noticed_with_the_server_option(server: Server, make_site: Any) -> None:
    site = make_site({
        "/": {"title": "Home", "links": ["/private", "/public"]},
        "/private": {"title": "Private"},
        "/public": {"title": "Public"},
        "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /private\n"},
    })
    result = await server.call("web_crawl", url=site("/"))
    assert site.paths() == ["/", "/public"]
    assert result.structured_content["robots_skipped"] == [site("/private")]  # type: ignore[index]
    notes = _notes(result)
    assert len(notes) == 1
    assert f"1 page not fetched because the site's robots.txt disallows them ({site('/private')})" in notes[0]
    assert "--no-robots" in notes[0] and "ROBOTSTXT_OBEY=false" in notes[0]


async def test_a_stop_by_a_limit_names_the_parameter_to_raise(server: Server, make_site: Any) -> None:
    site = make_site({"/": {"title": "Home", "links": ["/1", "/2", "/3"]}, "/1": {}, "/2": {}, "/3": {}})
    result = await server.call("web_crawl", url=site("/"), max_pages=2)
    assert site.paths() == ["/", "/1"]
    assert result.structured_content["stopped"] == "max-pages"  # type: ignore[index]
    assert _notes(result) == [
        "Stopped by max_pages=2: 2 known pages left unfetched (the report's unvisited list). "
        f"To get more, raise max_pages (this server allows up to {MAX_PAGES})."
    ]

    result = await server.call("web_grep", url=site("/"), pattern="/", max_matches=1, context=0)
    assert result.structured_content["stopped"] == "callback"  # type: ignore[index]
    assert _notes(result)[0].startswith("Stopped by max_matches=1: 3 known pages left unfetched")
    assert "raise max_matches (this server allows up to 500)" in _notes(result)[0]


async def test_failures_and_refused_addresses_are_summarised(server: Server, make_site: Any) -> None:
    site = make_site({
        "/": {"title": "Home", "links": ["/away", "/inside", "/ok"]},
        "/away": {"status": 302, "headers": {"Location": "http://example.invalid/"}},
        "/inside": {"status": 302, "headers": {"Location": "http://127.0.0.2:9/"}},
        "/ok": {"title": "OK"},
    })
    result = await server.call("web_crawl", url=site("/"))
    assert not result.is_error
    assert site.paths() == ["/", "/away", "/inside", "/ok"]
    refused, failed = _notes(result)
    assert refused.startswith(f"1 page refused by the address guard, which blocks non-public addresses: {site('/inside')} (")
    assert "refused address 127.0.0.2" in refused
    assert "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)" in refused
    assert failed == (
        f"1 page could not be fetched: {site('/away')} (redirected off-origin to http://example.invalid/). "
        "Failures do not count toward max_pages; the report's failures list has them all."
    )


def test_failure_notices_name_a_few_and_count_the_rest() -> None:
    failures: list[dict[str, str | None]] = [
        {"url": f"http://site.test/{n}", "kind": "refused", "reason": "connection refused", "found_on": "http://site.test/"}
        for n in range(5)
    ]
    # The notice goes by the kind, whatever the reason says.
    failures.append({"url": "http://site.test/x", "kind": "guard", "reason": "(any words)", "found_on": None})
    report = Report(seed="http://site.test/", origin="http://site.test", fetched=1, failures=failures)
    refused, failed = report_notices(report, {"max_pages": 20}, ServerOptions())
    assert refused.startswith("1 page refused by the address guard")
    assert failed.startswith(
        "5 pages could not be fetched: http://site.test/0 (connection refused); http://site.test/1 "
        "(connection refused); http://site.test/2 (connection refused); and 2 more."
    )


def test_the_title_suffix_most_pages_repeat_is_left_out_of_the_listing() -> None:
    pages = [
        ("http://d.test/", 200, 13007, "3.11 Documentation"),
        ("http://d.test/a", 200, 900, "Tutorial — Python 3.11 documentation"),
        ("http://d.test/b", 404, 120, "Not  found — Python 3.11 documentation"),
        ("http://d.test/c", 200, 5, None),
        ("http://d.test/d", 200, 1_500_000, "Glossary — Python 3.11 documentation"),
    ]
    lines, suffix = index_lines(pages)
    assert suffix == " — Python 3.11 documentation"
    assert lines == [
        "http://d.test/ 200 13 kB — 3.11 Documentation",
        "http://d.test/a 200 900 B — Tutorial",
        "http://d.test/b 404 120 B — Not found",
        "http://d.test/c 200 5 B",
        "http://d.test/d 200 1.5 MB — Glossary",
    ]
    # A suffix that only one page has, or titles without one, are left as they are.
    lines, suffix = index_lines([pages[0], pages[1], ("http://d.test/e", 200, 1, "Home | Site")])
    assert suffix is None
    assert lines[1] == "http://d.test/a 200 900 B — Tutorial — Python 3.11 documentation"


def test_grep_lines_show_overlapping_context_once_with_matches_marked() -> None:
    matches = [
        Match(url="u", line=2, text="b", before=["a"], after=["c", "d"], depth=0),
        Match(url="u", line=3, text="c", before=["a", "b"], after=["d"], depth=0),
    ]
    assert grep_lines(matches) == ["u", "  1- a", "  2: b", "  3: c", "  4- d"]


# -- errors are tool errors; the server carries on -------------------------------------------------


async def test_a_seed_that_cannot_be_fetched_is_a_tool_error_and_the_server_carries_on(
    server: Server, make_site: Any
) -> None:
    result = await server.call("web_crawl", url=f"http://127.0.0.1:{closed_port()}/")
    assert result.is_error
    assert "could not be fetched" in text(result) and "connection refused" in text(result)

    result = await server.call("web_grep", url="ftp://example.test/", pattern="x")
    assert result.is_error
    assert "'ftp://example.test/' is not an http(s) URL" in text(result)

    result = await server.call("web_grep", url="http://127.0.0.1:9/", pattern="(")
    assert result.is_error
    assert "is not a valid regular expression" in text(result)

    site = make_site(SITE)
    result = await server.call("web_crawl", url=site("/"), max_depth=0)
    assert not result.is_error
    assert text(result).startswith(f"{site('/')} 200 ")
    assert site.paths() == ["/"]


async def test_a_seed_refused_by_the_address_guard_names_the_server_option(server: Server, make_site: Any) -> None:
    site = make_site(SITE, host="127.0.0.2")
    result = await server.call("web_crawl", url=site("/"))
    assert result.is_error
    assert text(result).endswith(
        f"url {site('/')} could not be fetched: refused address 127.0.0.2 (not a public address); "
        "this server's operator can fetch it by starting the server with --allow-networks 127.0.0.2"
    )
    assert "-s " not in text(result) and "settings=" not in text(result)
    assert site.requests() == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/", "url 'http://127.0.0.1:99999/' is not a valid URL: port out of range 0-65535 "
         "(give e.g. url=\"https://docs.example.com/\")"),
        ("http://host :80/", "url 'http://host :80/' is not a valid URL: its host has a space in it"),
        ("http://[::1/", "url 'http://[::1/' is not a valid URL: invalid IPv6 URL"),
    ],
    ids=["port", "space", "bracket"],
)
async def test_a_bad_url_is_a_tool_error_naming_the_parameter(server: Server, url: str, message: str) -> None:
    for tool, arguments in (("web_crawl", {}), ("web_grep", {"pattern": "x"})):
        result = await server.call(tool, url=url, **arguments)
        assert result.is_error
        assert message in text(result)
        assert "seed" not in text(result)


async def test_a_bad_pattern_names_the_fixed_strings_parameter(server: Server, make_site: Any) -> None:
    site = make_site(SITE)
    result = await server.call("web_grep", url=site("/"), pattern="a.b(")
    assert result.is_error
    assert "pattern 'a.b(' is not a valid regular expression" in text(result)
    assert text(result).endswith("(use fixed_strings=true to search for it literally)")
    assert site.requests() == []


async def test_a_hostile_pattern_returns_and_the_next_call_works(server: Server, make_site: Any) -> None:
    # Python's backtracking re would never return on this line: nor would any later call on the server.
    site = make_site({"/": {"title": "Home", "links": ["/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"],
                            "body": "<p>" + "x" * 40 + "</p>"}})
    with anyio.fail_after(60):
        result = await server.call("web_grep", url=site("/"), pattern="(x+x+)+y", include="(a+)+$", deadline=10)
        assert not result.is_error
        assert text(result).startswith("0 matching lines on 0 of 1 page")
        result = await server.call("web_grep", url=site("/"), pattern=r"(x+)\1")
        assert result.is_error and "uses a backreference (\\1)" in text(result)
        result = await server.call("web_crawl", url=site("/"), max_depth=0)
        assert not result.is_error and text(result).startswith(site("/"))
    assert site.paths() == ["/", "/"]


async def test_a_cancelled_call_ends_its_walk_after_the_page_in_flight(server: Server, make_site: Any) -> None:
    site = make_site({"/": {"title": "Home", "links": ["/slow", "/next"]}, "/slow": {"sleep": 1}, "/next": {}})
    first_page = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first_page.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            lambda: server.session.call_tool("web_crawl", {"url": site("/")}, progress_callback=on_progress)
        )
        with anyio.fail_after(30):
            await first_page.wait()
        tasks.cancel_scope.cancel()
    # The cancelled walk is stopped gracefully and logs its report ("/next" left unfetched).
    with anyio.fail_after(30):
        while f"from {site.url}; stopped: interrupted" not in server.log():
            await anyio.sleep(0.05)
    assert "/next" not in site.paths()
    result = await server.call("web_crawl", url=site("/"), max_depth=0)
    assert not result.is_error


def _notes(result: CallToolResult) -> list[str]:
    return [line.removeprefix("Note: ") for line in text(result).splitlines() if line.startswith("Note: ")]


# -- the server's options from the environment; the output cap ---------------------------------


async def test_environment_options_and_the_output_cap(tmp_path: Path, make_site: Any) -> None:
    links = [f"/a-rather-long-page-name-to-fill-the-listing-{n}" for n in range(25)]
    spec: dict[str, Any] = {"/": {"title": "Home", "links": links}}
    spec.update({link: {"title": f"Page {n}"} for n, link in enumerate(links)})
    spec["/robots.txt"] = {"content_type": "text/plain", "body": f"User-agent: *\nDisallow: {links[0]}\n"}
    site = make_site(spec)
    env = {
        "SITEWALK_GUARD_ALLOW_NETWORKS": ALLOW,
        "ROBOTSTXT_OBEY": "false",
        "USER_AGENT": "mcp-test-agent/1.0",
        "SITEWALK_MCP_DELAY": "0",
        "SITEWALK_MCP_MAX_PAGES": "26",
        "SITEWALK_MCP_MAX_OUTPUT_CHARS": "1000",
    }
    async with serve(tmp_path, env=env) as running:
        tools = {tool.name: tool for tool in (await running.session.list_tools()).tools}
        assert tools["web_crawl"].input_schema["properties"]["max_pages"]["maximum"] == 26
        result = await running.call("web_crawl", url=site("/"), max_pages=26)
        parts = [result, *await _continuations(running, "web_crawl", result)]
    assert not result.is_error
    # ROBOTSTXT_OBEY=false: the disallowed page was fetched; USER_AGENT reached the server.
    assert {entry["headers"]["User-Agent"] for entry in site.requests()} == {"mcp-test-agent/1.0"}
    assert result.structured_content["fetched"] == 26  # type: ignore[index]
    assert len(parts) > 2
    for part in parts:
        assert _result_size(part) <= 1000
        assert part.structured_content == result.structured_content
    first = text(result).splitlines()
    shown = [line for line in first if line.startswith(site.url)]
    assert first[: len(shown)] == [line for line in first if re.search(r" 200 [0-9.]+ k?B — (Home|Page)", line)]
    assert any(line.startswith("26 pages, ") for line in first)
    assert _notes(result) == [
        f"output cut at this server's limit of 1000 characters: showing pages 1-{len(shown)} of 26. For the next "
        f"part, call web_crawl with cursor=\"{_cursor_of(result)}\" (no other arguments needed); or narrow the "
        "request (lower max_pages or max_depth, give include or exclude, or start from a deeper URL)."
    ]
    # The parts together list every page once, in fetch order; the site was walked once.
    listed = [line.split()[0] for part in parts for line in text(part).splitlines() if line.startswith(site.url)]
    assert listed == [site(path) for path in ["/", *links]]
    assert site.paths() == ["/", *links]


def _cursor_of(result: CallToolResult) -> str | None:
    found = re.search(r'with cursor="([^"]+)"', text(result))
    return found.group(1) if found else None


async def _continuations(server: Server, tool: str, result: CallToolResult) -> list[CallToolResult]:
    """The parts that follow ``result``, by the cursor each part names."""
    parts = []
    while (cursor := _cursor_of(result)) is not None:
        result = await server.call(tool, cursor=cursor)
        assert not result.is_error, text(result)
        parts.append(result)
        assert len(parts) < 100, "the cursors do not come to an end"
    return parts


def _result_size(result: CallToolResult) -> int:
    """What the output cap counts of a result: its text and its structured content's JSON."""
    return len(text(result)) + len(json.dumps(result.structured_content, ensure_ascii=False))


# -- stdout is the protocol's; the process ends when the client hangs up --------------------------


def test_stdout_carries_only_the_protocol_and_the_server_exits_when_stdin_closes(
    tmp_path: Path, make_site: Any
) -> None:
    site = make_site(SITE)
    # A host name: its lookup starts Twisted's thread pool, which must not keep the process alive.
    seed = site("/").replace("127.0.0.1", "localhost")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "web_crawl", "arguments": {"url": seed}}},
    ]
    stderr = (tmp_path / "stderr.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        forkserver.command([sys.executable, "-m", "sitewalk.mcp", "--allow-networks", ALLOW, "--delay", "0", "--log-level", "DEBUG"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=tmp_path,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for request in requests:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        messages: list[dict[str, Any]] = []
        while not any(message.get("id") == 2 for message in messages):
            messages.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        assert process.wait(timeout=30) == 0
        messages.extend(json.loads(line) for line in process.stdout.read().splitlines())
    finally:
        process.kill()
        stderr.close()
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    result = next(message["result"] for message in messages if message.get("id") == 2)
    assert not result.get("isError")
    assert result["content"][0]["text"].startswith(f"{seed} 200 ")
    assert site.paths() == ["/", "/a", "/b"]
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Spider opened" in log and "DEBUG" in log


def test_a_bad_network_option_names_the_option(tmp_path: Path) -> None:
    result = subprocess.run(
        forkserver.command([sys.executable, "-m", "sitewalk.mcp", "--allow-networks", "127.0.0.1/33"]),
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "sitewalk-mcp: error: --allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS): '127.0.0.1/33' is not an IP "
        "network (use CIDRs such as 127.0.0.1/32,10.0.0.0/8)"
    )


# -- web_fetch: one page, as Markdown, paged by start_index ------------------------------------

ARTICLE = {
    "title": "Guide",
    "body": "<nav><a href='/menu'>Menu link</a></nav><p>First paragraph of the guide.</p>"
            "<h2>Details</h2><p>Second paragraph with <em>emphasis</em>.</p>",
}


async def test_web_fetch_returns_the_page_as_markdown_with_its_status_and_title(server: Server, make_site: Any) -> None:
    site = make_site({"/guide": ARTICLE, "/moved": {"status": 301, "headers": {"Location": "/guide"}}})
    result = await server.call("web_fetch", url=site("/moved"))
    assert not result.is_error
    content, _, note = text(result).partition("\n\nNote: ")
    assert content == (
        "# Guide\n\nFirst paragraph of the guide.\n\n## Details\n\nSecond paragraph with *emphasis*.\n"
    )
    assert note == f"{site('/moved')} redirected to {site('/guide')}."
    assert result.structured_content == {
        "url": site("/moved"), "final_url": site("/guide"), "status": 200, "content_type": "text/html",
        "title": "Guide", "bytes": result.structured_content["bytes"], "length": len(content),  # type: ignore[index]
        "start_index": 0, "next_start_index": None,
    }
    # One walk of one page: robots.txt, the page and its redirect, nothing it links to.
    assert site.paths() == ["/moved", "/guide"]

    whole = await server.call("web_fetch", url=site("/guide"), main_content=False)
    # Targets are absolute: the Markdown is read out of the page's context.
    assert f"[Menu link]({site('/menu')})" in text(whole)


@pytest.mark.slow  # Chromium
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
async def test_render_reads_what_scripts_made_unless_the_operator_switched_it_off(
    server: Server, make_site: Any, tmp_path: Path
) -> None:
    shell = ("<!DOCTYPE html><html><head><title>App</title></head><body><div id='root'></div><script>"
             "document.getElementById('root').innerHTML = '<h1>Made by a script</h1><p>Rendered.</p>';</script></body></html>")
    site = make_site({"/": {"body": shell}})
    served = await server.call("web_fetch", url=site("/"))
    assert "Made by a script" not in text(served)
    rendered = await server.call("web_fetch", url=site("/"), render="auto")
    assert not rendered.is_error and text(rendered).startswith("# Made by a script\n\nRendered.")
    async with serve(tmp_path, "--allow-networks", ALLOW, "--no-render") as strict:
        refused = await strict.call("web_crawl", url=site("/"), render="always")
    assert refused.is_error
    assert text(refused) == ('Error executing tool web_crawl: render="always": this server runs no browser '
                             '(sitewalk-mcp --no-render); give render="never"')
    assert site.paths() == ["/", "/"]


async def test_a_missing_browser_is_the_tools_error_before_any_request(make_site: Any, tmp_path: Path) -> None:
    site = make_site({"/": {"title": "Home"}})
    # No Chromium on this server's PATH: the walk's render middleware refuses to be built.
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    async with serve(tmp_path, "--allow-networks", ALLOW, env=env) as server:
        refused = await server.call("web_crawl", url=site("/"), render="always")
        assert refused.is_error
        assert text(refused).startswith("Error executing tool web_crawl: render needs Chromium, and 'chromium' is not an executable")
        assert "Traceback" not in server.log()
    assert site.requests() == []


async def test_web_fetch_in_two_parts_by_start_index_gives_the_whole_page(server: Server, make_site: Any) -> None:
    paragraphs = "".join(f"<p>Paragraph number {n} of a long page.</p>" for n in range(40))
    site = make_site({"/long": {"title": "Long", "body": paragraphs}})
    whole = await server.call("web_fetch", url=site("/long"))
    content = text(whole)
    assert "Note:" not in content
    length = len(content) // 2 + 10

    first = await server.call("web_fetch", url=site("/long"), max_length=length)
    part, _, note = text(first).partition("\n\nNote: ")
    assert len(part) == length
    assert note == (
        f"the content is cut at character {length} of {len(content)}. For the next part, call web_fetch with "
        f'url="{site("/long")}" and start_index={length}.'
    )
    assert first.structured_content["next_start_index"] == length  # type: ignore[index]
    second = await server.call("web_fetch", url=site("/long"), start_index=length, max_length=length)
    assert "Note:" not in text(second)
    assert second.structured_content["next_start_index"] is None  # type: ignore[index]
    assert part + text(second) == content
    # Read as an article (nothing says it is documentation): its headline is the title's, not the content's.
    assert content.startswith("Paragraph number 0 of a long page.")
    assert site.paths() == ["/long"] * 3

    past = await server.call("web_fetch", url=site("/long"), start_index=len(content))
    assert past.is_error
    assert text(past).endswith(f"start_index={len(content)} is past the end of the page's content ({len(content)} characters)")


async def test_web_fetch_of_text_binary_and_error_pages(server: Server, make_site: Any) -> None:
    site = make_site({
        "/notes.txt": {"content_type": "text/plain", "body": "line one\n  line <two>\n"},
        "/logo.png": {"content_type": "image/png", "size": 64},
    })
    result = await server.call("web_fetch", url=site("/notes.txt"))
    assert text(result) == "line one\n  line <two>\n"

    result = await server.call("web_fetch", url=site("/logo.png"))
    assert not result.is_error
    assert text(result) == "Note: the page is image/png (64 bytes), not text: there is no content to show."
    assert result.structured_content["length"] is None  # type: ignore[index]

    result = await server.call("web_fetch", url=site("/missing"))
    assert result.structured_content["status"] == 404  # type: ignore[index]
    assert "Note: the server answered HTTP 404: the content is that answer's." in text(result)
    assert text(result).startswith("# Not found") or "not found" in text(result)
    assert site.paths() == ["/notes.txt", "/logo.png", "/missing"]


async def test_web_fetch_errors_name_what_would_change_them(server: Server, make_site: Any) -> None:
    refused = make_site({"/": ARTICLE}, host="127.0.0.2")
    result = await server.call("web_fetch", url=refused("/"))
    assert result.is_error
    assert text(result).endswith(
        f"url {refused('/')} could not be fetched: refused address 127.0.0.2 (not a public address); "
        "this server's operator can fetch it by starting the server with --allow-networks 127.0.0.2"
    )
    assert refused.requests() == []

    site = make_site({"/private": ARTICLE, "/robots.txt": {"content_type": "text/plain",
                                                          "body": "User-agent: *\nDisallow: /private\n"}})
    result = await server.call("web_fetch", url=site("/private"))
    assert result.is_error
    assert "robots.txt" in text(result)
    assert text(result).endswith("this server's operator can fetch it by starting the server with --no-robots")
    assert [entry["path"] for entry in site.requests()] == ["/robots.txt"]

    result = await server.call("web_fetch", url=f"http://127.0.0.1:{closed_port()}/page")
    assert result.is_error
    assert text(result).endswith("connection refused; nothing listens at that host and port: check the URL")


# -- long outputs continue by cursor; structured content is bounded ------------------------------


@pytest.fixture(scope="module")
async def small(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """A server with a small output cap and a cursor memory that holds one or two cut outputs."""
    workdir = tmp_path_factory.mktemp("mcp-small")
    options = ["--allow-networks", ALLOW, "--delay", "0", "--max-output-chars", "1500", "--cursor-memory", "6000"]
    async with serve(workdir, *options) as running:
        yield running


def _matches(results: list[CallToolResult], site: Any) -> list[tuple[str, str]]:
    """(page, matching line) of each ``N: line`` in the parts, the page named by the lines above it."""
    found = []
    page = ""
    for result in results:
        for line in text(result).splitlines():
            if line.startswith(site.url):
                page = line.removesuffix(" (continued)")
            elif re.match(r"  \d+: ", line):
                found.append((page, line.strip()))
    return found


async def test_a_cut_web_grep_continued_by_its_cursor_gives_every_match_once(small: Server, make_site: Any) -> None:
    pages = [f"/p{n}" for n in range(6)]
    spec: dict[str, Any] = {"/": {"title": "Home", "links": pages}}
    spec.update({
        page: {"title": f"Page {page}", "body": "".join(f"<p>needle {page} line {n} among words</p><p>hay</p>" for n in range(8))}
        for page in pages
    })
    site = make_site(spec)
    result = await small.call("web_grep", url=site("/"), pattern="needle", context=1, max_matches=100)
    assert not result.is_error
    parts = [result, *await _continuations(small, "web_grep", result)]
    assert len(parts) >= 3
    assert all(_result_size(part) <= 1500 for part in parts)
    expected = [(site(page), f"{2 * n + 2}: needle {page} line {n} among words") for page in pages for n in range(8)]
    assert _matches(parts, site) == expected
    assert "48 matching lines on 6 of 7 pages" in text(result)
    # Continuing walked nothing again: each page was fetched once.
    assert site.paths() == ["/", *pages]


async def test_without_a_cursor_url_and_pattern_are_needed(small: Server) -> None:
    result = await small.call("web_crawl")
    assert result.is_error
    assert text(result).endswith('missing url: give the URL to walk, e.g. url="https://docs.example.com/"')
    result = await small.call("web_grep", url="http://127.0.0.1:9/")
    assert result.is_error
    assert text(result).endswith(
        "missing pattern: give the text or regular expression to search for (or a cut output's cursor to continue it)"
    )


async def test_an_unknown_or_expired_cursor_says_to_walk_again(small: Server, make_site: Any) -> None:
    result = await small.call("web_crawl", cursor="0000-12")
    assert result.is_error
    assert text(result).endswith(
        "cursor '0000-12' is unknown or expired (this server keeps the cut outputs of its recent walks up to "
        "sitewalk-mcp --cursor-memory 6000 characters): call web_crawl again without cursor to walk again"
    )
    links = [f"/page-with-a-long-name-{n}" for n in range(40)]
    site = make_site({"/": {"title": "Home", "links": links}, **{link: {"title": link} for link in links}})
    first = await small.call("web_crawl", url=site("/"), max_pages=41)
    cursor = _cursor_of(first)
    assert cursor is not None
    wrong = await small.call("web_grep", cursor=cursor)
    assert wrong.is_error
    assert text(wrong).endswith(f"cursor {cursor!r} continues a web_crawl output: call web_crawl with it")
    # Two more cut walks need the memory the first one held: its cursor expires.
    for _ in range(2):
        assert _cursor_of(await small.call("web_crawl", url=site("/"), max_pages=41)) is not None
    expired = await small.call("web_crawl", cursor=cursor)
    assert expired.is_error
    assert "is unknown or expired" in text(expired)
    assert site.paths().count("/") == 3


async def test_a_line_longer_than_the_cap_is_cut_and_its_cursor_still_named(small: Server, make_site: Any) -> None:
    long_line = "needle " + "word " * 600
    site = make_site({"/": {"title": "Home", "body": f"<p>{long_line}</p><p>needle short</p>"}})
    result = await small.call("web_grep", url=site("/"), pattern="needle", context=0)
    parts = [result, *await _continuations(small, "web_grep", result)]
    assert any(line.startswith("  2: needle word word") and line.endswith(" […line cut]")
               for part in parts for line in text(part).splitlines())
    assert all(_result_size(part) <= 1500 for part in parts)
    assert [line for _, line in _matches(parts, site)][-1] == "3: needle short"
    assert site.paths() == ["/"]


async def test_structured_content_lists_are_cut_with_their_totals(small: Server, make_site: Any) -> None:
    links = [f"/unvisited-page-with-a-longer-name-{n}" for n in range(60)]
    site = make_site({"/": {"title": "Home", "links": links}})
    result = await small.call("web_crawl", url=site("/"), max_pages=2)
    assert not result.is_error
    report = result.structured_content
    assert report is not None
    assert report["stopped"] == "max-pages"
    assert report["unvisited_total"] == 59
    assert 0 < len(report["unvisited"]) < 20
    assert report["unvisited"] == [site(link) for link in links[1:1 + len(report["unvisited"])]]
    assert _result_size(result) <= 1500
    assert "59 known pages left unfetched" in text(result)
    assert site.paths() == ["/", links[0]]


async def test_broken_links_are_in_the_structured_report(server: Server, make_site: Any) -> None:
    site = make_site({"/": {"links": ["/a", "/gone"]}, "/a": {"links": ["/gone", "/"]}})
    result = await server.call("web_crawl", url=site("/"), max_depth=1)
    assert not result.is_error
    report = result.structured_content
    assert report is not None
    # /a, at max_depth, links to /gone too: counted (not followed), as every output counts it.
    assert report["broken_links"] == [{"url": site("/gone"), "status": 404, "kind": "http", "reason": "HTTP 404 Not Found",
                                       "inlinks": 2, "linked_from": [site("/"), site("/a")]}]
    assert report["broken_links_total"] == 1
    assert site.paths() == ["/", "/a", "/gone"]


# -- scope: the same choices as a walk -----------------------------------------------------------


async def test_web_crawl_and_web_grep_take_the_scope_arguments(server: Server, make_site: Any) -> None:
    site = make_site({
        "/docs/": {"title": "Docs", "links": ["/docs/a", "/docs/skip", "/blog/post", "/"]},
        "/docs/a": {"title": "A", "body": "<p>word</p>"},
        "/docs/skip": {"title": "Skip", "body": "<p>word</p>"},
        "/blog/post": {"title": "Post", "body": "<p>word</p>"},
        "/": {"title": "Root"},
        "/hidden": {"title": "Hidden", "body": "<p>word</p>"},
        "/robots.txt": {"content_type": "text/plain", "body": "Sitemap: {origin}/sitemap.xml\n"},
        "/sitemap.xml": {"content_type": "application/xml", "body":
                         '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                         "<url><loc>{origin}/hidden</loc></url></urlset>"},
    })
    result = await server.call("web_crawl", url=site("/docs/"), no_parent=True, exclude="skip")
    assert site.paths() == ["/docs/", "/docs/a"]
    assert result.structured_content["out_of_scope"] == 3  # type: ignore[index]
    assert "3 links on the site not followed: include, exclude or no_parent left them out." in _notes(result)

    result = await server.call("web_grep", url=site("/"), pattern="word", context=0, sitemap=True, include="hidden")
    assert "Hidden" not in text(result).splitlines()[0]
    assert [line for line in text(result).splitlines() if line.startswith(site.url)] == [site("/hidden")]
    assert site.paths()[2:] == ["/", "/sitemap.xml", "/hidden"]


# -- through the MCP Inspector's CLI (npm) ---------------------------------------------------------


def inspector() -> list[str]:
    """The MCP Inspector CLI: the copy .ci/run installs, else npx's; the test skips without node."""
    installed = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
    if installed.exists():
        return [str(installed), "--cli"]
    if shutil.which("npx") is None or shutil.which("node") is None:
        pytest.skip("the MCP Inspector CLI needs node and npx, which are not installed")
    return ["npx", "-y", "@modelcontextprotocol/inspector@0.15.0", "--cli"]


def run_inspector(tmp_path: Path, *arguments: str) -> dict[str, Any]:
    command = [*inspector(), sys.executable, "-m", "sitewalk.mcp", "--allow-networks", ALLOW, "--delay", "0",
               *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                               stdin=subprocess.DEVNULL)
    assert completed.returncode == 0, completed.stderr
    answer: dict[str, Any] = json.loads(completed.stdout)
    return answer


# Three tests, not one: each Inspector run starts node and the server (seconds each), and xdist
# runs the three side by side.
@pytest.mark.slow  # node and the MCP Inspector
def test_the_inspector_cli_lists_the_tools(tmp_path: Path) -> None:
    listed = run_inspector(tmp_path, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) == {"web_fetch", "web_crawl", "web_grep"}
    assert tools["web_fetch"]["inputSchema"]["required"] == ["url"]
    assert tools["web_crawl"]["inputSchema"]["properties"]["max_pages"]["maximum"] == 200
    assert "cursor" in tools["web_grep"]["inputSchema"]["properties"]
    assert all(tool["outputSchema"]["properties"] for tool in tools.values())


@pytest.mark.slow  # node and the MCP Inspector
def test_the_inspector_cli_calls_web_fetch(tmp_path: Path, make_site: Any) -> None:
    site = make_site({"/guide": ARTICLE})
    fetched = run_inspector(tmp_path, "--method", "tools/call", "--tool-name", "web_fetch",
                            "--tool-arg", f"url={site('/guide')}")
    assert not fetched.get("isError")
    assert fetched["content"][0]["text"].startswith("# Guide\n\nFirst paragraph of the guide.\n\n## Details\n\n")
    assert fetched["structuredContent"]["title"] == "Guide"
    assert site.paths() == ["/guide"]


@pytest.mark.slow  # node and the MCP Inspector
def test_the_inspector_cli_gets_the_guards_refusal(tmp_path: Path, make_site: Any) -> None:
    refused = make_site({"/": ARTICLE}, host="127.0.0.2")
    answer = run_inspector(tmp_path, "--method", "tools/call", "--tool-name", "web_fetch",
                           "--tool-arg", f"url={refused('/')}")
    assert answer["isError"]
    assert "--allow-networks 127.0.0.2" in answer["content"][0]["text"]
    assert refused.requests() == []


async def test_the_docs_document_every_tool_parameter_and_server_option(server: Server) -> None:
    section = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for tool in (await server.session.list_tools()).tools:
        signature = re.search(rf"- `{tool.name}\(([^`]*)\)`", section)
        assert signature is not None, f"{tool.name} is not listed"
        documented = {part.strip().split("=")[0] for part in signature.group(1).replace("\n", " ").split(",")}
        assert documented == set(tool.input_schema["properties"]), tool.name
    usage = subprocess.run(forkserver.command([sys.executable, "-m", "sitewalk.mcp", "--help"]), capture_output=True, text=True,
                           timeout=60, check=True).stdout
    options = set(re.findall(r"--[a-z][a-z-]+", usage)) - {"--help", "--robots", "--render"}
    assert options
    assert {option for option in options if f"| `{option}" not in section} == set()


async def test_web_fetch_and_web_crawl_say_noindex_and_canonical(server: Server, make_site: Any) -> None:
    site = make_site({
        "/": {"title": "Home", "links": ["/copy", "/hidden.pdf"], "head": '<meta name="robots" content="noindex">'},
        "/copy": {"title": "Copy", "headers": {"Link": '</>; rel="canonical"'}},
        "/hidden.pdf": {"content_type": "application/pdf", "encoding": "latin-1", "headers": {"X-Robots-Tag": "noindex"},
                        "body": pdf([["PDF words"]], title="A PDF").decode("latin-1")},
    })
    fetched = await server.call("web_fetch", url=site("/copy"))
    assert f"Note: the page names {site('/')} as its original (rel=canonical)." in text(fetched)
    document = await server.call("web_fetch", url=site("/hidden.pdf"))
    assert text(document).startswith("PDF words\n") and "asks not to be indexed" in text(document)
    crawled = text(await server.call("web_crawl", url=site("/")))
    assert f"{site('/')} 200 " in crawled and "— Home [noindex]" in crawled
    assert f"— Copy [canonical: {site('/')}]" in crawled
    assert re.search(rf"^{re.escape(site('/hidden.pdf'))} 200 \d+ B \[noindex\]$", crawled, re.M)


async def test_since_lists_what_changed_since_the_last_call_with_it(tmp_path: Path, make_site: Any) -> None:
    spec: dict[str, Any] = {
        "/": {"title": "Home", "links": ["/a", "/b"], "validators": True},
        "/a": {"title": "Page A", "body": "<p>needle</p>", "validators": True},
        "/b": {"title": "Page B", "validators": True},
    }
    site = make_site(spec, options=("--reload",))
    options = ["--allow-networks", ALLOW, "--delay", "0", "--state-dir", "states"]
    async with serve(tmp_path, *options) as running:
        first = await running.call("web_crawl", url=site("/"), since=True)
        assert [line.split(" ")[0] for line in text(first).splitlines()[:3]] == [site("/"), site("/a"), site("/b")]
        assert "Since the last call with since: 3 new, 0 changed, 0 unchanged (not listed), 0 removed" in text(first)
        spec["/b"]["title"] = "Page B, edited"
        del spec["/a"]
        (site.log_path.parent / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        mark = len(site.log())
        second = await running.call("web_crawl", url=site("/"), since=True)
        lines = text(second).splitlines()
        # Only what changed is listed: /a, gone (404), and /b; the seed answered 304.
        assert [line.split(" ")[:2] for line in lines[:2]] == [[site("/a"), "404"], [site("/b"), "200"]]
        assert lines[2] == ""
        assert "0 new, 2 changed, 1 unchanged (not listed), 1 removed" in lines[3]
        assert lines[3].endswith(f"1 removed: {site('/a')} (404).")
        seed = next(entry for entry in site.log()[mark:] if entry.get("path") == "/")
        assert "If-None-Match" in seed["headers"]
    # One state per origin, in the operator's directory.
    assert [path.name for path in (tmp_path / "states").iterdir()] == [f"http_127.0.0.1_{site.url.rsplit(':', 1)[1]}"]


async def test_since_is_offered_only_by_a_server_with_a_state(server: Server, make_site: Any, tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    assert "since" not in tools["web_crawl"].input_schema["properties"]
    site = make_site(SITE)
    result = await server.call("web_grep", url=site("/"), pattern="x", since=True)
    assert result.is_error
    assert "unknown parameter 'since'" in text(result)
    assert site.requests() == []
    async with serve(tmp_path, "--state-dir", "states") as running:
        tools = {tool.name: tool for tool in (await running.session.list_tools()).tools}
    assert {name for name, tool in tools.items() if "since" in tool.input_schema["properties"]} == {"web_crawl", "web_grep"}
