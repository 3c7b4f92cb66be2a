"""Fixtures: a local site in a subprocess (with its request log) and ways to walk it."""

from __future__ import annotations

import compileall
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import forkserver

HERE = Path(__file__).parent
ROOT = HERE.parent
# The address guard is on everywhere; the suite's own site is on loopback, so it is allowed here
# (and only 127.0.0.1: tests of the guard rely on 127.0.0.2 staying refused).
# How late the mock site may log a request on a loaded machine (-n 6 on two cores): it logs when
# its thread for the request runs. Gaps between requests, as the site saw them, are checked less this.
SERVER_LAG = 0.05
# A folder of shims that start sitewalk, sitewalk-mcp and scrapy through this worker's fork server:
# first on the PATH of a test's shell (see _fork_server), if set.
SHIMS = "SITEWALK_TEST_SHIMS"
LOOPBACK = {"SITEWALK_GUARD_ALLOW_NETWORKS": "127.0.0.1/32,::1/128"}


class Site:
    """A running mock site: ``site.url`` is its origin, ``site("/a")`` a URL on it."""

    def __init__(self, spec: dict[str, Any], workdir: Path, host: str = "127.0.0.1", *options: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        spec_path = workdir / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        self.log_path = workdir / "requests.jsonl"
        self.log_path.touch()
        self._process = subprocess.Popen(
            forkserver.command([sys.executable, str(HERE / "mockserver.py"), str(spec_path), str(self.log_path), "--host", host, *options]),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        self.url = self._process.stdout.readline().strip()
        assert self.url.startswith("http://"), "mock server did not start"

    def __call__(self, path: str) -> str:
        return self.url + path

    def log(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def requests(self) -> list[dict[str, Any]]:
        """Every request the server received, in arrival order (robots.txt included)."""
        return [entry for entry in self.log() if "method" in entry]

    def paths(self) -> list[str]:
        """Paths of page requests, in arrival order (robots.txt excluded)."""
        return [entry["path"] for entry in self.requests() if entry["path"] != "/robots.txt"]

    def stop(self) -> None:
        """Stop the server; it no longer listens once this returns (through the fork server, the
        process started ends when the server has)."""
        self._process.terminate()
        self._process.wait()


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package and the tests once, into their ``__pycache__`` folders.

    Under ``PYTHONDONTWRITEBYTECODE`` (set on many CI machines) nothing is cached: each xdist
    worker would rewrite the tests' asserts again, and each process a test starts (``scrapy
    crawl``, ``sitewalk``, ``sitewalk-mcp``, a walk's page-reading helper, scrapyd's jobs) would
    compile the package again from source: seconds of CPU per worker, a tenth of one per process.
    Reading cached bytecode is allowed there; only writing it is not, so it is written here.
    """
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller compiled them before it started the workers
    for folder in (ROOT / "sitewalk", HERE):
        compileall.compile_dir(folder, quiet=1)


@pytest.fixture(scope="session", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This worker's fork server (tests/forkserver.py), which :func:`run_cli`, :func:`run_sitewalk`
    and the docs' shell commands start their commands through: a command then costs a fork, not
    a second of imports. ``SITEWALK_TEST_FORKSERVER=off`` starts each command itself."""
    if os.environ.get(forkserver.VARIABLE) == "off":
        yield
        return
    path = tmp_path_factory.mktemp("forkserver") / "socket"
    server = subprocess.Popen([sys.executable, str(HERE / "forkserver.py"), str(path)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdout.readline().strip() == "ready", "the fork server did not start"
    os.environ[forkserver.VARIABLE] = str(path)
    bin_folder = Path(sys.executable).parent
    scripts = [bin_folder / name for name in ("sitewalk", "sitewalk-mcp", "scrapy")]
    os.environ[SHIMS] = str(forkserver.shims(path.parent / "bin", scripts))
    yield
    del os.environ[forkserver.VARIABLE], os.environ[SHIMS]
    server.kill()
    server.wait()


@pytest.fixture(scope="session", autouse=True)
def _reactor_in_its_own_thread() -> None:
    """The Python API's one reactor per process, started in its own thread before any test.

    Otherwise the first API call of a worker decides where it lives: an ``asyncio.run(walk_async(...))``
    would install it on that call's loop, which ends with the call, and every later walk in the
    process would fail (as it would in a user's program that did the same; the API says so). The
    order xdist gives a worker's tests must not decide whether they pass.
    """
    from sitewalk._reactor import run_blocking

    async def nothing(_: None) -> None:
        return None

    run_blocking(nothing, None)


@pytest.fixture
def make_site(tmp_path: Path) -> Iterator[Any]:
    sites: list[Site] = []

    def make(spec: dict[str, Any], host: str = "127.0.0.1", options: tuple[str, ...] = ()) -> Site:
        """A site serving ``spec``; ``options`` are mockserver.py's flags (--idle-timeout ...)."""
        site = Site(spec, tmp_path / f"site{len(sites)}", host, *options)
        sites.append(site)
        return site

    yield make
    for site in sites:
        site.stop()


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy crawl sitewalk ARGS`` as a user would, in ``cwd``."""
    environment = {**os.environ, "SCRAPY_SETTINGS_MODULE": "sitewalk.settings", **(env or {})}
    return subprocess.run(
        forkserver.command([sys.executable, "-m", "scrapy", "crawl", "sitewalk", *args], environment),
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sitewalk_command() -> Path:
    """The installed ``sitewalk`` console script."""
    return Path(sys.executable).parent / "sitewalk"


def clean_environment() -> dict[str, str]:
    """This environment without what could point a command at the checkout's project."""
    return {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY") and key != "PYTHONPATH"}


def run_sitewalk(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the installed ``sitewalk ARGS`` as a user would, in ``cwd`` (outside the checkout)."""
    environment = clean_environment()
    return subprocess.run(
        forkserver.command([str(sitewalk_command()), *args], environment),
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout,
    )


def start_cli(*args: str, cwd: Path, new_session: bool = False, own_process: bool = False) -> subprocess.Popen[str]:
    """Start ``scrapy crawl sitewalk ARGS`` in the background (stderr captured), through the
    fork server: SIGINT, SIGTERM and SIGHUP reach the walk, SIGKILL ends it; with ``own_process``
    as a process of its own, whose pid is the walk's (for its helpers, its sockets, a SIGKILL at
    an exact moment); with ``new_session``, also in its own process group, as a shell starts a
    command (see os.killpg)."""
    environment = {**os.environ, "SCRAPY_SETTINGS_MODULE": "sitewalk.settings"}
    command = [sys.executable, "-m", "scrapy", "crawl", "sitewalk", *args]
    return subprocess.Popen(
        command if own_process or new_session else forkserver.command(command, environment),
        cwd=cwd, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=new_session,
    )


def helper_processes(parent: int | None = None) -> set[int]:
    """Process ids of running page-reading helpers (sitewalk.pagereader): the children of process
    ``parent`` (another test's walks, run beside this one, have helpers of their own), or anyone's."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                # The parent's pid is the field after the command's name, which is in parentheses.
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if b"sitewalk.pagereader import serve" in cmdline and parent in (None, ppid):
                pids.add(int(entry.name))
    return pids


def running(pids: set[int]) -> set[int]:
    """Which of ``pids`` are still running (not ended, nor ended and not yet reaped)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def wait_for_pages(site: Site, count: int, process: subprocess.Popen[str], timeout: float = 30) -> None:
    """Wait until the site has received ``count`` page requests from the running walk."""
    deadline = time.monotonic() + timeout
    while len(site.paths()) < count:
        assert process.poll() is None, "the walk ended before the awaited request"
        assert time.monotonic() < deadline, f"the site received fewer than {count} page requests"
        time.sleep(0.02)


def allow_loopback() -> list[str]:
    return ["-s", f"SITEWALK_GUARD_ALLOW_NETWORKS={LOOPBACK['SITEWALK_GUARD_ALLOW_NETWORKS']}"]


def walk_for(seed: str = "http://site.test/", settings: dict[str, Any] | None = None, **arguments: Any) -> Any:
    """A crawler with a sitewalk spider built the Scrapy way (not started); its walk is ``crawler.spider.walk``."""
    from scrapy.utils.test import get_crawler

    from sitewalk.spiders.sitewalk import SitewalkSpider

    crawler = get_crawler(SitewalkSpider, settings or {})
    crawler.spider = SitewalkSpider.from_crawler(crawler, seed=seed, **arguments)
    return crawler
