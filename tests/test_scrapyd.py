"""sitewalk under a real scrapyd: deploy with scrapyd-deploy, per-job items and reports, cancel, the guard."""

from __future__ import annotations

import json
import os
import site as site_module
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from configparser import ConfigParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from tests.conftest import LOOPBACK, ROOT

# scrapyd and its jobs run as processes of their own: seconds each (left to CI: -m slow).
pytestmark = pytest.mark.slow

PROJECT = "sitewalk"
VERSION = "1"
ALLOW_LOOPBACK = f"SITEWALK_GUARD_ALLOW_NETWORKS={LOOPBACK['SITEWALK_GUARD_ALLOW_NETWORKS']}"
# What a checkout holds that the egg is built from; the rest of the repo is not deployed.
DEPLOYED = ("sitewalk/", "scrapy.cfg", "pyproject.toml", "README.md")
# Generous bounds on waiting for the external processes; a healthy run takes a fraction of them.
START_TIMEOUT = 30.0
JOB_TIMEOUT = 45.0

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b"]},
    "/a": {"title": "A", "links": ["/c"]},
    "/b": {"title": "B", "links": ["/a"]},
    "/c": {"title": "C"},
}
SLOW_SITE = {
    "/": {"title": "Home", "links": [f"/p{number:02d}" for number in range(20)]},
    **{f"/p{number:02d}": {"title": f"P{number}"} for number in range(20)},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until(condition: Any, timeout: float, what: str) -> None:
    """Poll ``condition`` (an external process's state) every 0.1s until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)


class Node:
    """A scrapyd process with all its directories under ``root`` (its working directory).

    With ``items_dir`` scrapyd sets each job's FEEDS to ``items/<project>/<spider>/<job>.jl``;
    without it sitewalk writes ``jobs/<spider>/<job>.jsonl`` (SITEWALK_JOBS_DIR) itself.
    """

    def __init__(self, root: Path, python: Path, *, items_dir: bool) -> None:
        root.mkdir()
        self.root = root
        self.items_dir = items_dir
        port = _free_port()
        (root / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            "bind_address = 127.0.0.1\n"
            f"http_port = {port}\n"
            "eggs_dir = eggs\n"
            "logs_dir = logs\n"
            "dbs_dir = dbs\n"
            f"items_dir = {'items' if items_dir else ''}\n"
            # scrapyd prunes each job directory to this many files; the reports live there too.
            "jobs_to_keep = 100\n"
            "max_proc = 1\n"
            "poll_interval = 0.2\n",
            encoding="utf-8",
        )
        self.url = f"http://127.0.0.1:{port}/"
        self.output_path = root / "scrapyd.out"
        # A node has no project of its own: nothing from this environment may pick the settings.
        env = {key: value for key, value in os.environ.items() if not key.startswith("SCRAPY") and key != "PYTHONPATH"}
        with self.output_path.open("wb") as output:
            self.process = subprocess.Popen(
                [python, "-m", "scrapyd"], cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT
            )

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, f"scrapyd exited:\n{self.output()}"
            try:
                return self.get("daemonstatus.json")["status"] == "ok"
            except OSError:
                return False

        _wait_until(ready, START_TIMEOUT, f"scrapyd at {self.url}")

    def output(self) -> str:
        """scrapyd's own log, where a job's stderr lands too."""
        return self.output_path.read_text(encoding="utf-8", errors="replace")

    def fetch(self, path: str) -> bytes:
        with urlopen(self.url + path, timeout=10) as response:
            return response.read()  # type: ignore[no-any-return]

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        return json.loads(self.fetch(f"{endpoint}?{urlencode(params)}"))  # type: ignore[no-any-return]

    def post(self, endpoint: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        with urlopen(self.url + endpoint, data=urlencode(params).encode(), timeout=10) as response:
            answer: dict[str, Any] = json.load(response)
        assert answer["status"] == "ok", answer
        return answer

    def schedule(self, *settings: str, **args: str) -> str:
        # The deployed version, named, so scrapyd answers from the spider list it made at deploy time.
        params = [
            ("project", PROJECT), ("spider", "sitewalk"), ("_version", VERSION),
            *(("setting", setting) for setting in settings), *args.items(),
        ]
        return str(self.post("schedule.json", params)["jobid"])

    def finished(self, job: str) -> dict[str, Any] | None:
        jobs = self.get("listjobs.json", project=PROJECT)["finished"]
        return next((entry for entry in jobs if entry["id"] == job), None)

    def wait_finished(self, job: str) -> dict[str, Any]:
        try:
            _wait_until(lambda: self.finished(job) is not None, JOB_TIMEOUT, f"job {job} to finish")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; scrapyd's log:\n{self.output()}") from None
        entry = self.finished(job)
        assert entry is not None
        return entry

    def job_log(self, job: str) -> str:
        return (self.root / "logs" / PROJECT / "sitewalk" / f"{job}.log").read_text(encoding="utf-8")

    def outputs(self, job: str) -> tuple[Path, Path]:
        """Where a job's items and report land, relative to nothing but the job id."""
        if self.items_dir:
            directory = self.root / "items" / PROJECT / "sitewalk"
            return directory / f"{job}.jl", directory / f"{job}.report.json"
        directory = self.root / "jobs" / "sitewalk"
        return directory / f"{job}.jsonl", directory / f"{job}.report.json"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _node_python(venv: Path) -> Path:
    """A Python with this environment's packages except sitewalk, like a fresh scrapyd node.

    An editable (or any) install of sitewalk here would shadow the deployed egg in the jobs, and
    the test would then prove nothing about what scrapyd-deploy built.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    for directory in site_module.getsitepackages():
        for entry in Path(directory).iterdir():
            target = Path(purelib) / entry.name
            if "sitewalk" not in entry.name and not target.exists():
                target.symlink_to(entry)
    shadow = subprocess.run(
        [python, "-c", "import sitewalk; print(sitewalk.__file__)"], cwd=venv, capture_output=True, text=True
    )
    assert shadow.returncode != 0, f"the node environment imports sitewalk from {shadow.stdout.strip()}, not the egg"
    return python


def _project_files() -> list[str]:
    """The files a clean checkout has of what is deployed: tracked and new, nothing git ignores."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *DEPLOYED],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")
    return [name for name in listed if name and (ROOT / name).is_file()]


def _checkout(destination: Path, nodes: dict[str, Node]) -> Path:
    """A copy of the project's files, its scrapy.cfg deploy targets replaced by one per node."""
    for name in _project_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / name).read_bytes())
    config = ConfigParser()
    config.read(destination / "scrapy.cfg", encoding="utf-8")
    assert config.get("deploy", "project") == PROJECT
    for section in config.sections():
        if section.startswith("deploy:"):
            config.remove_section(section)
    config.remove_option("deploy", "url")
    for name, node in nodes.items():
        config[f"deploy:{name}"] = {"url": node.url}
    with (destination / "scrapy.cfg").open("w", encoding="utf-8") as handle:
        config.write(handle)
    return destination


def _scrapyd_deploy(project: Path, *args: str) -> str:
    # scrapyd-deploy leaves its build directory behind with --build-egg: keep it in the test's tree.
    result = subprocess.run(
        [Path(sys.executable).parent / "scrapyd-deploy", *args],
        cwd=project, env={**os.environ, "TMPDIR": str(project.parent)}, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Node]]:
    """Two scrapyd nodes, one with items_dir and one without, and the project deployed to both
    as a fleet is: the egg built once, then ``scrapyd-deploy -a`` to every target. Once per
    worker: a module fixture was torn down and built again whenever the worker ran another
    module's tests between these. (xdist's loadgroup, which would keep them on one worker, does
    not group under pytest 9.2: it renames the items through an attribute pytest no longer reads.)"""
    root = tmp_path_factory.mktemp("scrapyd")
    python = _node_python(root / "venv")
    nodes = {
        "items": Node(root / "items-node", python, items_dir=True),
        "plain": Node(root / "plain-node", python, items_dir=False),
    }
    try:
        project = _checkout(root / "project", nodes)
        egg = root / "sitewalk.egg"
        _scrapyd_deploy(project, "--build-egg", str(egg))
        for node in nodes.values():
            node.wait_ready()
        output = _scrapyd_deploy(project, "-a", "--egg", str(egg), "--version", VERSION)
        # One answer per node; scrapyd lists the egg's spiders to count them.
        answers = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert [(answer["status"], answer["spiders"]) for answer in answers] == [("ok", 1)] * len(nodes), output
        yield nodes
    finally:
        for node in nodes.values():
            node.stop()


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSON lines feed, each of which must parse."""
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), f"{path} ends in a partial line"
    return [json.loads(line) for line in text.splitlines()]


def test_deploy_builds_the_project_egg(fleet):
    modules = {name for name in _project_files() if name.endswith(".py")}
    for node in fleet.values():
        (egg,) = (node.root / "eggs" / PROJECT).glob("*.egg")
        with zipfile.ZipFile(egg) as archive:
            names = archive.namelist()
            entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
        # The whole package and nothing else: not the generated setup.py, not the tests.
        assert {name for name in names if name.endswith(".py")} == modules
        assert all(name.startswith(("sitewalk/", "EGG-INFO/")) for name in names), names
        assert "[scrapy]\nsettings = sitewalk.settings\n" in entry_points


@pytest.mark.parametrize("node_name", ["items", "plain"])
def test_job_items_and_report_land_per_job(fleet, make_site, node_name):
    node = fleet[node_name]
    site = make_site(SITE)
    job = node.schedule(ALLOW_LOOPBACK, seed=site("/"), delay="0", max_depth="1")
    entry = node.wait_finished(job)

    assert site.paths() == ["/", "/a", "/b"]
    feed, report_path = node.outputs(job)
    items = _lines(feed)
    assert [(item["url"], item["depth"], item["title"]) for item in items] == [
        (site("/"), 0, "Home"), (site("/a"), 1, "A"), (site("/b"), 1, "B"),
    ]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["seed"] == site("/") and report["fetched"] == 3 and report["stopped"] is None
    # Every byte the site sent: the pages' (status line, headers, body) and robots.txt's answer,
    # as the server wrote them (less the Connection header, which Scrapy's count leaves out too).
    robots = [entry["wire_bytes"] for entry in site.log() if entry.get("sent") == "/robots.txt"]
    assert len(robots) == 1
    assert sum(item["byte_count"] for item in items) < report["bytes"] <= sum(item["byte_count"] for item in items) + robots[0]
    if node.items_dir:
        # scrapyd serves its items_dir over HTTP: the feed, and the report beside it.
        assert entry["items_url"] == f"/items/{PROJECT}/sitewalk/{job}.jl"
        assert json.loads(node.fetch(f"items/{PROJECT}/sitewalk/{job}.report.json")) == report
    else:
        assert entry["items_url"] is None
    assert "sitewalk: 3 pages" in node.job_log(job)


def test_job_writes_the_html_report_and_junit_it_is_given(fleet, make_site, tmp_path):
    node = fleet["items"]
    site = make_site({"/": {"title": "Home", "links": ["/a", "/gone"]}, "/a": {"links": ["/gone"]}})
    html_path, junit_path = tmp_path / "walk.html", tmp_path / "links.xml"
    job = node.schedule(ALLOW_LOOPBACK, seed=site("/"), delay="0", html_report=str(html_path), junit=str(junit_path))
    node.wait_finished(job)
    assert site.paths() == ["/", "/a", "/gone"]
    _, report_path = node.outputs(job)
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert [(row["url"], row["inlinks"]) for row in report["broken_links"]] == [(site("/gone"), 2)]
    assert "Broken links (1)" in html_path.read_text(encoding="utf-8")
    assert 'failures="2"' in junit_path.read_text(encoding="utf-8")


# cancel.json sends SIGINT unless told otherwise (scrapyd 1.6); SIGTERM is what service managers send.
@pytest.mark.parametrize(
    ("node_name", "signal"),
    [("items", None), ("plain", "TERM")],
    ids=["items-node-default-signal", "plain-node-SIGTERM"],
)
def test_cancel_stops_the_walk_with_a_valid_feed(fleet, make_site, node_name, signal):
    node = fleet[node_name]
    site = make_site(SLOW_SITE)
    job = node.schedule(ALLOW_LOOPBACK, seed=site("/"), delay="0.5", max_depth="1")
    _wait_until(lambda: len(site.paths()) >= 2, JOB_TIMEOUT, "two page requests")
    cancelled_at = time.time()
    params = [("project", PROJECT), ("job", job), *([("signal", signal)] if signal else [])]
    assert node.post("cancel.json", params)["prevstate"] == "running"
    node.wait_finished(job)

    # The request already on its way when the signal arrived may land; none after it.
    late = [entry["path"] for entry in site.requests() if entry["time"] > cancelled_at]
    assert len(late) <= 1, late
    paths = site.paths()
    assert 2 <= len(paths) < len(SLOW_SITE)
    feed, report_path = node.outputs(job)
    items = _lines(feed)
    assert [item["url"] for item in items] == [site(path) for path in paths]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["stopped"] == "interrupted"
    assert report["fetched"] == len(items)
    assert report["unvisited"] == [site(path) for path in SLOW_SITE if path not in paths]


def test_guard_stays_on_under_scrapyd(fleet, make_site):
    node = fleet["plain"]
    site = make_site(SITE)
    job = node.schedule(seed=site("/"), delay="0")
    node.wait_finished(job)

    assert site.requests() == []
    errors = [line for line in node.output().splitlines() if "sitewalk: error:" in line and site.url in line]
    assert len(errors) == 1, errors
    assert f"sitewalk: error: seed {site('/')} could not be fetched: " in errors[0]
    assert "SITEWALK_GUARD_ALLOW_NETWORKS" in errors[0]
    _, report_path = node.outputs(job)
    assert json.loads(report_path.read_text(encoding="utf-8"))["fetched"] == 0
    assert f"seed {site('/')} could not be fetched" in node.job_log(job)
