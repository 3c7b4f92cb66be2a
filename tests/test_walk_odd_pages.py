"""One bad page never stops the walk: odd markup over real HTTP ends as an item or a failure, and a
component that raises or hangs on a page cannot hold the walk past its deadline or a signal."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

from sitewalk import pagereader, walk
from tests import forkserver
from tests.conftest import LOOPBACK, ROOT, allow_loopback, wait_for_pages

# Bytes that are not UTF-8 (the server sends the text as Latin-1, byte for byte).
INVALID = "<p>\xff\xfe\xc3(</p><a href='/after-utf8'>u</a>"
# Odd pages, each linking (where it can) to a page that only that link leads to.
DEEP = 5000
ODD: dict[str, dict[str, Any]] = {
    "/svg": {"body": '<svg><a xlink:href="/svg-xlink"><text>x</text></a><a href="/svg-href"><text>y</text></a>'
                     '<a xlink:href="/svg-shadowed" href="/svg-both"><text>z</text></a></svg>'},
    "/math": {"body": '<math><mrow><a href="/math-link">m</a></mrow></math>'},
    # Inert, as in a browser: not followed.
    "/template": {"body": '<template><a href="/in-template">t</a></template><a href="/after-template">a</a>'},
    # No value: a link to the page itself. Two hrefs: the first wins (the HTML parser's rule).
    "/attributes": {"body": '<a href>self</a><a href="/first-href" href="/second-href">d</a><a hidden href="/bare">b</a>'},
    "/many-attributes": {"body": "<a " + " ".join(f'data-a{i}="{i}"' for i in range(5000)) + ' href="/after-attributes">m</a>'},
    "/deep": {"body": "<div>" * DEEP + '<a href="/deep-link">deep</a>' + "</div>" * DEEP},
    "/nul": {"body": '<p>nul\x00here</p><a href="/after-nul">n</a>'},
    # Large enough to be read by the helper process.
    "/huge-title": {"title": "t" * 1_000_000, "body": '<a href="/after-title">t</a>'},
    "/base-without-href": {"body": '<base target="_blank"><a href="relative">r</a>'},
    "/invalid-utf8": {"raw": f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(INVALID)}\r\n"
                             f"Connection: close\r\n\r\n{INVALID}"},
}
FOLLOWED = ["/svg-xlink", "/svg-href", "/svg-both", "/math-link", "/after-template", "/first-href", "/bare",
            "/after-attributes", "/deep-link", "/after-nul", "/after-title", "/relative", "/after-utf8"]
NOT_FOLLOWED = ["/svg-shadowed", "/in-template", "/second-href"]
SITE = {
    "/": {"title": "Home", "links": list(ODD)},
    **{path: page if "raw" in page else {"title": path, **page} for path, page in ODD.items()},
    **{path: {"title": path} for path in FOLLOWED},
}


def test_every_odd_page_ends_as_an_item_and_its_links_are_followed(make_site):
    site = make_site(SITE)
    pages: list[str] = []
    report = walk(site("/"), delay=0, deadline=60, max_pages=100, max_depth=3, settings=LOOPBACK,
                  on_page=lambda page: pages.append(page.url), on_page_stops=False)
    assert report.stopped is None and report.failures == []
    paths = site.paths()
    assert Counter(paths).most_common(1)[0][1] == 1  # each page fetched once
    assert sorted(pages) == sorted(site(path) for path in paths)
    assert set(FOLLOWED) <= set(paths)
    assert not set(NOT_FOLLOWED) & set(paths)
    # Breadth first: the odd pages in the order the seed lists them, then what they link to.
    assert paths[: len(ODD) + 1] == ["/", *ODD]


def test_a_page_that_cannot_be_read_is_its_failure_and_the_walk_goes_on(make_site, monkeypatch, caplog):
    site = make_site({
        "/": {"title": "Home", "links": ["/bad", "/good"]},
        "/bad": {"title": "Bad", "links": ["/behind-bad"]},
        "/good": {"title": "Good", "links": ["/behind-good"]},
        "/behind-good": {"title": "Behind"},
    })
    read_tree = pagereader.read_tree

    def faulty(tree: Any, url: str, *args: Any, **kwargs: Any) -> Any:
        if url.endswith("/bad"):
            raise KeyError("href")
        return read_tree(tree, url, *args, **kwargs)

    monkeypatch.setattr(pagereader, "read_tree", faulty)
    pages: list[str] = []
    report = walk(site("/"), delay=0, deadline=60, max_depth=3, settings=LOOPBACK, on_page=lambda page: pages.append(page.url),
                  on_page_stops=False)
    assert report.stopped is None
    assert site.paths() == ["/", "/bad", "/good", "/behind-good"]
    assert pages == [site("/"), site("/good"), site("/behind-good")]
    assert report.fetched == 4  # the unreadable page was fetched: it counts
    assert [(f["url"], f["kind"], f["found_on"]) for f in report.failures] == [(site("/bad"), "read", site("/"))]
    assert report.failures[0]["reason"] == "the page could not be read (KeyError: 'href'); its links are not followed"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(site("/bad") in message and "could not be read" in message for message in warnings)
    assert not any(r.exc_info for r in caplog.records if r.levelno > 10)  # the traceback only at DEBUG


def test_an_error_answer_of_the_helper_fails_that_page_only(monkeypatch):
    """The helper's answer for a page it could not read is read as such, and the next page's
    answer still arrives (the framing of an error answer once left every later page waiting)."""
    import io

    def read_page(markup: bytes, url: str, flags: int, encoding: str | None = None, headers: Any = None,
                  media_type: str | None = None) -> Any:
        if url.endswith("/bad"):
            raise KeyError("href")
        return pagereader.ReadPage("T", [url + "/next"], None)

    class Sent:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

        def is_closing(self) -> bool:
            return False

    async def scenario() -> tuple[BaseException | None, Any]:
        answers = asyncio.StreamReader()
        sent = Sent()
        process: Any = type("Process", (), {"stdin": sent, "stdout": answers})()
        reader = pagereader.ReaderProcess(process)
        bad, good = reader.read(b"<p>", "http://x/bad", 1), reader.read(b"<p>", "http://x/good", 1)
        out = io.BytesIO()
        monkeypatch.setattr(pagereader, "read_page", read_page)
        monkeypatch.setattr(pagereader.signal, "signal", lambda *args: None)
        pagereader.serve(io.BytesIO(sent.data), out)
        answers.feed_data(out.getvalue())
        answers.feed_eof()
        done, _ = await asyncio.wait({bad, good}, timeout=5)
        assert done == {bad, good}
        return bad.exception(), good.result()

    error, page = asyncio.run(scenario())
    assert isinstance(error, RuntimeError) and "KeyError" in str(error)
    assert page.links == ["http://x/good/next"]


class RaisingPipeline:
    """A consumer that fails on one page."""

    def process_item(self, item: Any) -> Any:
        if item.url.endswith("/a"):
            raise ValueError("no room for this one")
        return item


class HangingPipeline:
    """A consumer that never returns from one page."""

    async def process_item(self, item: Any) -> Any:
        if item.url.endswith("/a"):
            await asyncio.get_running_loop().create_future()
        return item


class RaisingExporter:
    """A feed exporter that fails on one item (Scrapy's JSON lines exporter otherwise)."""

    def __new__(cls, file: Any, **kwargs: Any) -> Any:
        from scrapy.exporters import JsonLinesItemExporter

        class Exporter(JsonLinesItemExporter):
            def export_item(self, item: Any) -> None:
                if item.url.endswith("/a"):
                    raise OSError(28, "No space left on device")
                super().export_item(item)

        return Exporter(file, **kwargs)


CHAIN = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "A", "links": ["/a1"]},
    "/b": {"title": "B", "links": ["/b1"]},
    "/a1": {"title": "A1"},
    "/b1": {"title": "B1"},
}


def run_walk(site: Any, tmp_path: Any, *settings: str, deadline: float = 60, delay: float = 0) -> Any:
    from tests.conftest import run_cli

    return run_cli(
        "-a", f"seed={site('/')}", "-a", f"delay={delay}", "-a", f"deadline={deadline}", "-a", "max_depth=2",
        "-a", "report=r.json",
        "-o", "p.jsonl", *allow_loopback(), *settings,
        cwd=tmp_path, env={"PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ('ITEM_PIPELINES={"tests.test_walk_odd_pages.RaisingPipeline": 900}', "a pipeline raised ValueError: no room for this one"),
        ('FEED_EXPORTERS={"jsonl": "tests.test_walk_odd_pages.RaisingExporter"}',
         "a feed exporter raised OSError: [Errno 28] No space left on device"),
    ],
    ids=["pipeline", "exporter"],
)
def test_a_consumer_that_raises_fails_that_page_and_the_walk_goes_on(make_site, tmp_path, setting, reason):
    site = make_site(CHAIN)
    result = run_walk(site, tmp_path, "-s", setting)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/a", "/b", "/a1", "/b1"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] is None and report["fetched"] == 5
    assert [(f["url"], f["kind"], f["reason"]) for f in report["failures"]] == [(site("/a"), "consumer", reason)]
    items = [json.loads(line)["url"] for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert items == [site(p) for p in ("/", "/b", "/a1", "/b1")]
    assert "Traceback" not in result.stderr
    assert sum("a failure of kind consumer" in line for line in result.stderr.splitlines()) == 1


def test_a_consumer_that_hangs_cannot_hold_the_walk_past_its_deadline(make_site, tmp_path):
    site = make_site(CHAIN)
    result = run_walk(site, tmp_path, "-s", 'ITEM_PIPELINES={"tests.test_walk_odd_pages.HangingPipeline": 900}',
                      deadline=2)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "deadline"
    # The deadline ends the walk within a second (the report's clock, not the test's).
    assert report["elapsed_s"] < 3
    items = [json.loads(line)["url"] for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert items == [site("/")]
    # The page the consumer held, and those after it, were not done: a resumed walk needs them.
    assert report["unvisited"] == [site(p) for p in ("/a", "/b", "/a1", "/b1")]
    assert report["fetched"] == 1
    assert site.paths() == ["/", "/a", "/b", "/a1", "/b1"]


def start_walk(site: Any, workdir: Any, pipeline: str) -> subprocess.Popen[str]:
    """``scrapy crawl sitewalk`` on ``site`` in the background, with ``pipeline`` (of this module)."""
    environment = {**os.environ, "SCRAPY_SETTINGS_MODULE": "sitewalk.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        forkserver.command([sys.executable, "-m", "scrapy", "crawl", "sitewalk", "-a", f"seed={site('/')}", "-a", "delay=0",
                            "-a", "report=r.json", "-o", "p.jsonl", *allow_loopback(),
                            "-s", f'ITEM_PIPELINES={{"tests.test_walk_odd_pages.{pipeline}": 900}}'], environment),
        cwd=workdir, env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_consumer_that_hangs_cannot_hold_the_walk_past_a_signal(make_site, tmp_path, signum):
    site = make_site(CHAIN)
    process = start_walk(site, tmp_path, "HangingPipeline")
    wait_for_pages(site, 2, process)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted"
    assert "Traceback" not in stderr


def test_a_second_signal_ends_the_process_at_once(make_site, tmp_path):
    # A consumer that holds the reactor itself: only the process's end can stop it.
    site = make_site(CHAIN)
    process = start_walk(site, tmp_path, "BlockingPipeline")
    try:
        wait_for_pages(site, 2, process)
        # Two signals, the second after the first was handled (a signal sent twice before its
        # handler runs is one): sent again until the process is gone.
        for _ in range(100):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                continue
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM
    assert "received SIGTERM twice: stopping now" in stderr


class BlockingPipeline:
    """A consumer that blocks the reactor on one page (for far longer than any test waits)."""

    def process_item(self, item: Any) -> Any:
        if item.url.endswith("/a"):
            import time

            time.sleep(3600)
        return item
