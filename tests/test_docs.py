"""Every command of the README and of each docs/ page, run as written against a local site (its URL
and port substituted); and a check that no page has a command block no test runs."""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from tests.conftest import LOOPBACK, ROOT, SHIMS, clean_environment, wait_for_pages
from tests.test_scrapyd import _free_port, _project_files, _wait_until

# The README and the docs site's pages, as paths relative to the checkout.
PAGES = ["README.md", *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md"))]
# Fenced blocks in these languages are commands or code, and a test must run each of them; blocks
# in the others are what the pages show (output, config files). A page uses no other language.
RUN = {"sh", "python"}
SHOWN = {"json", "toml", "ini", "yaml"}
BIN = Path(sys.executable).parent
# The docs' placeholder site, replaced by the local test site's URL.
DOCS = "https://docs.example.com/"
ALLOW = f"SITEWALK_GUARD_ALLOW_NETWORKS={LOOPBACK['SITEWALK_GUARD_ALLOW_NETWORKS']}"

SITE = {
    "/": {"title": "Docs", "links": ["/guide", "/api"],
          "body": "<p>TODO: write the intro</p><p>Call a.b(x) first.</p><a href='{origin}/api'>API</a>"},
    "/guide": {"title": "Guide", "links": ["/guide/old"], "body": "<p>This option is Deprecated.</p>"},
    "/api": {"title": "API", "body": "<p>FIXME: the deprecation of v1</p>"},
    "/guide/old": {"title": "Old guide"},
}


@cache
def lines_of(page: str) -> list[str]:
    return (ROOT / page).read_text(encoding="utf-8").splitlines(keepends=True)


@cache
def headings(page: str) -> list[tuple[int, int, str]]:
    """``(line index, level, title)`` of each heading of ``page``, code blocks skipped."""
    found, fenced = [], False
    for number, line in enumerate(lines_of(page)):
        heading = None if fenced else re.match(r"(#+) (.*)\n", line)
        fenced ^= line.startswith("```")
        if heading:
            found.append((number, len(heading.group(1)), heading.group(2)))
    return found


def span(page: str, title: str) -> range:
    """The lines under the heading ``title`` (any level), up to the next heading of its level or above."""
    marks = headings(page)
    for position, (number, level, text) in enumerate(marks):
        if text == title:
            end = next((other for other, depth, _ in marks[position + 1:] if depth <= level), len(lines_of(page)))
            return range(number + 1, end)
    raise AssertionError(f"{page} has no section {title!r}")


def section(page: str, title: str) -> str:
    """The text of ``page``'s section ``title``. Tests call it with literal arguments: that is how
    test_every_command_is_run knows which sections they run."""
    return "".join(lines_of(page)[line] for line in span(page, title))


def blocks(text: str, language: str = "sh") -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def commands(text: str) -> list[str]:
    """The shell commands of the ``sh`` blocks of ``text``, one a line (continuation lines joined)."""
    lines = []
    for block in blocks(text):
        lines.extend(line for line in block.replace("\\\n", " ").splitlines() if line.strip())
    return lines


def environment() -> dict[str, str]:
    """A user's shell after the set-up: the venv's commands first on PATH, no project settings
    (sitewalk, sitewalk-mcp and scrapy started through the suite's fork server, if it runs one)."""
    shims = [os.environ[SHIMS]] if SHIMS in os.environ else []
    return {**clean_environment(), "PATH": os.pathsep.join([*shims, str(BIN), os.environ["PATH"]])}


def run(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env={**environment(), **env},
                          capture_output=True, text=True, timeout=180)


def on_site(command: str, site: Any) -> str:
    """``command`` pointed at ``site``, with its loopback address allowed (the guard refuses it)."""
    assert DOCS in command, command
    return command.replace(DOCS, site("/")) + f" -s {ALLOW}"


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def code_blocks(page: str) -> list[tuple[int, str]]:
    """``(line index, language)`` of each fenced block of ``page``."""
    found, fenced = [], False
    for number, line in enumerate(lines_of(page)):
        if line.startswith("```") and not fenced:
            found.append((number, line[3:].strip()))
        fenced ^= line.startswith("```")
    return found


def sections_run() -> set[tuple[str, str]]:
    """The ``(page, title)`` of each ``section(page, title)`` call in this module's tests."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    return {
        (node.args[0].value, node.args[1].value) for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "section"
        and len(node.args) == 2 and all(isinstance(arg, ast.Constant) for arg in node.args)
    }


@pytest.mark.parametrize("page", PAGES)
def test_every_command_is_run(page):
    """Each command block of ``page`` lies in a section a test reads; the test takes every command of
    its section (unpacking them), so a command added to a run section fails that test instead."""
    read = [span(page, title) for name, title in sections_run() if name == page]
    blocks_here = code_blocks(page)
    assert {language for _, language in blocks_here} <= RUN | SHOWN, f"{page}: a code block needs a language of {sorted(RUN | SHOWN)}"
    unrun = [lines_of(page)[number].strip() + f" at line {number + 1}" for number, language in blocks_here
             if language in RUN and not any(number in lines for lines in read)]
    assert unrun == [], f"{page} has command blocks no test in tests/test_docs.py runs"


def test_readme_is_short_and_links_every_docs_page():
    assert {"docs/index.md", "docs/command.md", "docs/mcp.md"} <= set(PAGES)
    readme = "".join(lines_of("README.md"))
    # The README is an introduction: the rest is in docs/, every page of which it links to.
    assert len(lines_of("README.md")) <= 200
    linked = set(re.findall(r"\]\((docs/[^)#]+)", readme))
    assert linked == set(PAGES) - {"README.md"}
    assert all((ROOT / path).is_file() for path in linked)


def test_set_up_is_two_commands_and_ci_runs_the_second():
    setup = blocks(section("README.md", "Set up"))
    assert setup == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/sitewalk-example\n",
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q -n 6 -m "not slow"\n',
    ]
    # The first one's walk is tests/test_example.py's; CI installs and tests as the second says,
    # listing the slowest tests too, then runs the slow tests the second leaves out.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '-m venv .venv' in ci and 'pip install -q -e ".[test]"' in ci
    assert ci.rstrip().splitlines()[-2:] == [
        '.venv/bin/python -m pytest -q -n 6 -m "not slow" --durations=15',
        ".venv/bin/python -m pytest -q -n 4 -m slow --durations=10",
    ]


def test_readme_three_walks(make_site, tmp_path):
    index, grep, content = commands(section("README.md", "Three walks"))
    site = make_site(SITE)
    result = run(on_site(index, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [item["url"] for item in jsonl(tmp_path / "pages.jsonl")] == [site(p) for p in ("/", "/api", "/guide", "/guide/old")]
    assert site.paths() == ["/", "/api", "/guide", "/guide/old"]

    site = make_site(SITE)
    result = run(on_site(grep, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(m["url"], m["text"]) for m in jsonl(tmp_path / "matches.jsonl")] == [
        (site("/api"), "FIXME: the deprecation of v1"), (site("/guide"), "This option is Deprecated."),
    ]

    site = make_site(SITE)
    result = run(on_site(content, site), tmp_path)
    assert result.returncode == 0, result.stderr
    items = jsonl(tmp_path / "pages.jsonl")
    assert items[0]["content"].startswith("# Docs\n") and "TODO: write the intro" in items[0]["content"]


def test_readme_in_ci(make_site, tmp_path):
    (ci_walk,) = commands(section("README.md", "In CI"))
    # The report's site, its home page showing an image that is not there.
    site = make_site({**REPORT_SITE, "/": {**REPORT_SITE["/"], "body": "<img src='/logo.png' alt='logo'>"}})
    result = run(on_site(ci_walk, site), tmp_path)
    assert result.returncode == 3, result.stderr
    # The four links to missing pages, and the image: checked once, with HEAD, never as a page.
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 5
    assert [(entry["method"], entry["path"]) for entry in site.requests() if entry["path"] == "/logo.png"] == [
        ("HEAD", "/logo.png")]
    assert len(site.paths()) == 7


def test_readme_speed_walk(make_site, tmp_path):
    (speed_walk,) = commands(section("README.md", "Speed"))
    # The walk the benchmark measures (benchmarks/measure.py runs it as scrapy crawl -a/-s).
    measured = (ROOT / "benchmarks" / "measure.py").read_text(encoding="utf-8")
    assert '"-a", "delay=0"' in measured and '"-s", "ROBOTSTXT_OBEY=false"' in measured
    assert "--delay 0" in speed_walk and "--no-robots" in speed_walk
    site = make_site(SITE)
    result = run(on_site(speed_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    # No robots.txt asked for; every page, with no delay between them.
    assert [entry["path"] for entry in site.requests()] == ["/", "/api", "/guide", "/guide/old"]
    assert len(jsonl(tmp_path / "out.jsonl")) == 4


def test_walk_a_site(make_site, tmp_path):
    index, csv_walk, scrapy_walk = commands(section("docs/command.md", "Walk a site"))
    site = make_site(SITE)
    result = run(on_site(index, site), tmp_path)
    assert result.returncode == 0, result.stderr
    # The seed's body links to /api before its list does.
    assert [item["url"] for item in jsonl(tmp_path / "pages.jsonl")] == [site("/"), site("/api"), site("/guide")]
    assert site.paths() == ["/", "/api", "/guide"]

    site = make_site(SITE)
    result = run(on_site(csv_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    with (tmp_path / "pages.csv").open(newline="") as handle:
        assert [row["url"] for row in csv.DictReader(handle)] == [site(p) for p in ("/", "/api", "/guide", "/guide/old")]
    assert json.loads((tmp_path / "report.json").read_text())["fetched"] == 4

    site = make_site(SITE)
    result = run(on_site(scrapy_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(jsonl(tmp_path / "pages.jsonl")) == 4 and len(site.paths()) == 4


def test_grep(make_site, tmp_path):
    words, literal = commands(section("docs/consumers.md", "grep: search the text of a site"))
    site = make_site(SITE)
    result = run(on_site(words, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(m["url"], m["text"]) for m in jsonl(tmp_path / "matches.jsonl")] == [
        (site("/api"), "FIXME: the deprecation of v1"), (site("/guide"), "This option is Deprecated."),
    ]
    site = make_site(SITE)
    result = run(on_site(literal, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [m["text"] for m in jsonl(tmp_path / "matches.jsonl")] == ["Call a.b(x) first."]


def test_extract(make_site, tmp_path):
    titles, links = commands(section("docs/consumers.md", "extract: pull values out of every page"))
    site = make_site(SITE)
    result = run(on_site(titles, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [item["values"] for item in jsonl(tmp_path / "titles.jsonl")] == [["Docs"], ["API"], ["Guide"]]
    site = make_site(SITE)
    result = run(on_site(links, site), tmp_path)
    assert result.returncode == 0, result.stderr
    with (tmp_path / "links.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # The page's word: a CSV list cell is a JSON array.
    assert [(row["url"], json.loads(row["values"])) for row in rows] == [(site("/"), [site.url])]


def test_config_file(make_site, tmp_path):
    text = section("docs/command.md", "A walk config file")
    (toml,) = blocks(text, "toml")
    (command,) = commands(text)
    site = make_site(SITE)
    assert toml.startswith("# walk.toml\n")
    (tmp_path / "walk.toml").write_text(toml.replace(DOCS, site("/")), encoding="utf-8")
    assert tomllib.loads(toml)["seed"] == DOCS
    result = run(command + f" -s {ALLOW}", tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(m["url"], m["text"]) for m in jsonl(tmp_path / "matches.jsonl")] == [
        (site("/"), "TODO: write the intro"), (site("/api"), "FIXME: the deprecation of v1"),
    ]
    assert {entry["headers"].get("Authorization") for entry in site.requests()} == {"Bearer ..."}


def test_resume(make_site, tmp_path):
    (command,) = commands(section("docs/resume.md", "Resume a walk"))
    spec = {"/": {"links": [f"/p{i}" for i in range(12)]}, **{f"/p{i}": {"title": f"P{i}"} for i in range(12)}}
    site = make_site(spec)
    walk = subprocess.Popen(["bash", "-c", "exec " + on_site(command, site)], cwd=tmp_path, env=environment(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_pages(site, 3, walk)  # type: ignore[arg-type]
    walk.send_signal(signal.SIGINT)
    walk.communicate(timeout=60)
    assert 3 <= len(site.paths()) < len(spec)
    result = run(on_site(command, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == list(spec)
    assert [item["url"] for item in jsonl(tmp_path / "pages.jsonl")] == [site(path) for path in spec]


def test_state(make_site, tmp_path):
    (again,) = commands(section("docs/state.md", "Walk a site again"))
    (changed_only,) = commands(section("docs/state.md", "Only what changed"))
    (refused,) = commands(section("docs/state.md", "What the state holds"))
    spec = {path: {**page, "validators": True} for path, page in SITE.items()}
    site = make_site(spec, options=("--reload",))
    for _ in range(2):
        result = run(on_site(again, site), tmp_path)
        assert result.returncode == 0, result.stderr
    assert {item["change"] for item in jsonl(tmp_path / "pages.jsonl")} == {"unchanged"}
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["changes"]["unchanged"] == report["fetched"] == len(SITE)
    spec["/api"]["body"] = "<p>TODO: the deprecation of v1</p>"
    (site.log_path.parent / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    result = run(on_site(changed_only, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(match["url"], match["change"]) for match in jsonl(tmp_path / "todo.jsonl")] == [(site("/api"), "changed")]
    other = make_site(SITE)
    result = run(refused.replace("https://other.example.org/", other("/")) + f" -s {ALLOW}", tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"sitewalk: error: --state 'state' holds the state of {site.url}, not of {other.url}: give another state "
        "directory (e.g. --state state), or delete that one to start over"
    )
    assert other.requests() == []


def test_security(make_site, tmp_path):
    intranet, loopback = commands(section("docs/security.md", "Allowing a network"))
    site = make_site(SITE)
    # Allowing 10.0.0.0/8 does not open loopback: the seed is refused, before any request.
    result = run(intranet.replace("http://docs.intranet/", site("/")), tmp_path)
    assert result.returncode == 1
    assert "refused address 127.0.0.1" in result.stderr.splitlines()[-1]
    assert site.requests() == []
    port = site.url.rsplit(":", 1)[1]
    result = run(loopback.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(jsonl(tmp_path / "pages.jsonl")) == 3


def test_scrapyd_node_requirements_are_pyproject_s():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    scrapyd_pins = [r for r in project["optional-dependencies"]["test"] if r.startswith(("scrapyd==", "setuptools"))]
    listed = [line for line in (ROOT / "scrapyd-node-requirements.txt").read_text(encoding="utf-8").splitlines()
              if line and not line.startswith("#")]
    assert listed == scrapyd_pins + project["dependencies"]


# -- Running on scrapyd: two local nodes, set up, deployed to and scheduled on as docs/scrapyd.md says --

SCRAPYD_SITE = {"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A", "links": ["/b"]}, "/b": {"title": "B"}}
# Generous bounds on waiting for scrapyd and its jobs; a healthy run takes a fraction of them.
NODE_TIMEOUT = 60.0


def _install_from_this_environment(venv: Path, requirements: Path) -> None:
    """What pip would install into ``venv`` from ``requirements``, taken from this environment
    (tests reach no package index): each listed distribution and what it requires, linked into
    the venv, with its console scripts. Nothing else of this environment (sitewalk least of all)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    todo = [Requirement(line) for line in requirements.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in done:
            continue
        done.add(key)
        distribution = metadata.distribution(requirement.name)
        for text in distribution.requires or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": extra}) for extra in {"", *requirement.extras}):
                todo.append(needed)
        for top in {file.parts[0] for file in distribution.files or [] if file.parts[0] != ".."}:
            target = purelib / top
            if not target.exists():
                target.symlink_to(Path(str(distribution.locate_file(top))))
        for entry in distribution.entry_points.select(group="console_scripts"):
            module, _, function = entry.value.partition(":")
            script = venv / "bin" / entry.name
            script.write_text(f"#!{python}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
            script.chmod(0o755)


class _Node:
    """A scrapyd node as docs/scrapyd.md sets one up: its directory stands for /srv/scrapyd."""

    def __init__(self, root: Path, conf: str) -> None:
        self.root = root
        self.port = _free_port()
        (root / "scrapyd.conf").write_text(conf.replace("http_port    = 6800", f"http_port    = {self.port}"), encoding="utf-8")
        self.url = f"http://127.0.0.1:{self.port}/"

    def start(self, command: str) -> None:
        self.output = (self.root / "scrapyd.out").open("wb")
        self.process = subprocess.Popen(
            ["bash", "-c", command.replace("/srv/scrapyd", str(self.root))], env=clean_environment(),
            stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        from urllib.parse import urlencode
        from urllib.request import urlopen

        with urlopen(f"{self.url}{endpoint}?{urlencode(params)}", timeout=10) as response:
            return json.load(response)  # type: ignore[no-any-return]

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, (self.root / "scrapyd.out").read_text()
            try:
                return self.get("daemonstatus.json")["status"] == "ok"
            except OSError:
                return False

        _wait_until(ready, NODE_TIMEOUT, f"scrapyd in {self.root}")

    def items(self, job: str) -> list[dict[str, Any]]:
        """The job's items, once it has finished, from the items_dir the page's scrapyd.conf sets."""
        def finished() -> bool:
            return any(entry["id"] == job for entry in self.get("listjobs.json", project="sitewalk")["finished"])

        _wait_until(finished, NODE_TIMEOUT, f"job {job} on {self.root}")
        return jsonl(self.root / "items" / "sitewalk" / "sitewalk" / f"{job}.jl")

    def stop(self) -> None:
        if hasattr(self, "process"):
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
            self.output.close()


def _checkout(destination: Path) -> Path:
    """A clean checkout's deployable files, committed in a git repository of their own, with the
    project's guard setting allowing loopback (as docs/scrapyd.md says to do for a private network)."""
    for name in [*_project_files(), "scrapyd-node-requirements.txt"]:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / name).read_bytes())
    settings = destination / "sitewalk" / "settings.py"
    text = settings.read_text(encoding="utf-8")
    assert 'SITEWALK_GUARD_ALLOW_NETWORKS = ""\n' in text
    settings.write_text(text.replace('SITEWALK_GUARD_ALLOW_NETWORKS = ""\n', 'SITEWALK_GUARD_ALLOW_NETWORKS = "127.0.0.1/32"\n'))
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run([*git, *command], cwd=destination, check=True, capture_output=True)
    return destination


@pytest.mark.slow  # scrapyd, its deploy and its jobs
def test_running_on_scrapyd(make_site, tmp_path):
    node_text = section("docs/scrapyd.md", "A node")
    make_venv, install, start = [line for line in commands(node_text)]
    (conf,) = blocks(node_text, "ini")
    assert not [line for line in conf.splitlines() if ";" in line], "scrapyd reads an inline ; as part of the value"
    checkout = _checkout(tmp_path / "checkout")
    offline = {"PIP_NO_INDEX": "1", "TMPDIR": str(tmp_path)}

    # The node: its venv and packages (this environment's, as pip would install them), then the install line.
    one, two = tmp_path / "node1", tmp_path / "node2"
    one.mkdir()
    two.mkdir()
    assert run(make_venv.replace("/srv/scrapyd", str(one)), tmp_path).returncode == 0
    _install_from_this_environment(one / "venv", checkout / "scrapyd-node-requirements.txt")
    result = run(install.replace("/srv/scrapyd", str(one)), checkout, **offline)
    assert result.returncode == 0, result.stdout + result.stderr
    (two / "venv").symlink_to(one / "venv")
    nodes = [_Node(one, conf), _Node(two, conf)]
    try:
        for node in nodes:
            node.start(start)
        for node in nodes:
            node.wait_ready()

        # Deploy to one node: scrapy.cfg's own target, its port the local node's.
        cfg = checkout / "scrapy.cfg"
        cfg.write_text(cfg.read_text().replace("localhost:6800", f"localhost:{nodes[0].port}"))
        for command in commands(section("docs/scrapyd.md", "Deploy to one node")):
            result = run(command, checkout, **offline)
            assert result.returncode == 0, result.stdout + result.stderr
        assert '"status": "ok"' in result.stdout

        # Run a walk, then cancel it (finished by then: scrapyd says so, and nothing breaks).
        site = make_site(SCRAPYD_SITE)
        schedule, cancel = [line for line in commands(section("docs/scrapyd.md", "Run a walk")) if not line.startswith("#")]
        port = f"localhost:{nodes[0].port}"
        result = run(schedule.replace("localhost:6800", port).replace("https://example.com/", site("/")), checkout)
        answer = json.loads(result.stdout)
        assert answer["status"] == "ok", result.stderr
        assert [item["url"] for item in nodes[0].items(answer["jobid"])] == [site(p) for p in SCRAPYD_SITE]
        result = run(cancel.replace("localhost:6800", port).replace("6487ec79...", answer["jobid"]), checkout)
        assert json.loads(result.stdout)["status"] == "ok"

        # A fleet: scrapy.cfg as the page writes it, the egg built once and deployed to both nodes.
        fleet = section("docs/scrapyd.md", "Many walks over a fleet of nodes")
        (targets,) = blocks(fleet, "ini")
        for number, node in enumerate(nodes, 1):
            targets = targets.replace(f"node{number}.internal:6800", f"127.0.0.1:{node.port}")
        cfg.write_text(targets)
        build, deploy, loop = blocks(fleet)[0].splitlines() + [blocks(fleet)[1]]
        credentials = {"SCRAPYD_USER": "walker", "SCRAPYD_PASSWORD": "secret"}
        assert run(build, checkout, **offline, **credentials).returncode == 0
        result = run(deploy, checkout, **offline, **credentials)
        assert result.returncode == 0 and result.stdout.count('"status": "ok"') == 2, result.stdout + result.stderr
        sites = [make_site(SCRAPYD_SITE), make_site(SCRAPYD_SITE)]
        (checkout / "sites.txt").write_text("".join(site("/") + "\n" for site in sites))
        result = run(loop, checkout, **credentials)
        assert result.returncode == 0, result.stdout + result.stderr
        jobs = [line.split(" => ")[1] for line in result.stdout.splitlines() if line.startswith("sitewalk / sitewalk => ")]
        assert len(jobs) == 2, result.stdout
        for node, job, site in zip(nodes, jobs, sites, strict=True):
            assert [item["url"] for item in node.items(job)] == [site(p) for p in SCRAPYD_SITE]
            assert site.paths() == list(SCRAPYD_SITE)
    finally:
        for node in nodes:
            node.stop()


def test_python_api(make_site, monkeypatch, capsys):
    import functools

    import sitewalk

    (code,) = blocks(section("docs/api.md", "walk()"), "python")
    site = make_site(SITE)
    # The page's call, its site's loopback address allowed (a setting the API takes in settings=).
    monkeypatch.setattr(sitewalk, "walk", functools.partial(sitewalk.walk, settings=LOOPBACK))
    exec(compile(code.replace(DOCS, site("/")), "docs/api.md", "exec"), {})
    assert capsys.readouterr().out == "3 None []\n"
    assert site.paths() == ["/", "/api", "/guide"]


def test_content(make_site, tmp_path):
    content, save = commands(section("docs/content.md", "Content of a page"))
    site = make_site(SITE)
    result = run(on_site(content, site), tmp_path)
    assert result.returncode == 0, result.stderr
    items = jsonl(tmp_path / "pages.jsonl")
    assert items[0]["content"].startswith("# Docs\n") and "TODO: write the intro" in items[0]["content"]

    site = make_site(SITE)
    result = run(on_site(save, site), tmp_path)
    assert result.returncode == 0, result.stderr
    saved = tmp_path / "docs-site"
    assert (saved / "index.md").read_text().startswith("# Docs\n\nTODO: write the intro")
    assert (saved / "guide.md").read_text().startswith("# Guide\n")
    assert (saved / "llms.txt").read_text().startswith(f"# Docs\n\n> TODO: write the intro\n\n## Pages\n\n- [Docs]({site('/')})")
    assert "Source: " + site("/api") in (saved / "llms-full.txt").read_text()

    (links,) = commands(section("docs/content.md", "Links of a page"))
    site = make_site(SITE)
    result = run(on_site(links, site), tmp_path)
    assert result.returncode == 0, result.stderr
    # Every page lists its links, followed or not (/guide/old is beyond max_depth).
    assert [item["links"] for item in jsonl(tmp_path / "pages.jsonl")] == [
        [site("/api"), site("/guide")], [], [site("/guide/old")],
    ]
    assert site.paths() == ["/", "/api", "/guide"]


def test_scope(make_site, tmp_path):
    scope, sitemap = commands(section("docs/rules.md", "Scope: include, exclude, no_parent, sitemap"))
    site = make_site({**SITE, "/": {**SITE["/"], "links": ["/guide", "/old", "/api"]}, "/old": {"title": "Old"}})
    result = run(on_site(scope, site), tmp_path)
    assert result.returncode == 0, result.stderr
    # /old is excluded.
    assert site.paths() == ["/", "/api", "/guide"]

    site = make_site({**SITE, "/robots.txt": {"content_type": "text/plain", "body": "Sitemap: {origin}/map.xml\n"},
                      "/map.xml": {"content_type": "application/xml", "body": (
                          '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                          "<url><loc>{origin}/orphan</loc></url></urlset>")},
                      "/orphan": {"title": "Orphan"}})
    result = run(on_site(sitemap, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/map.xml", "/api", "/guide", "/orphan"]



def test_concurrency(make_site, tmp_path):
    (several,) = commands(section("docs/rules.md", "Several requests in flight"))
    site = make_site(SITE)
    result = run(on_site(several, site), tmp_path)
    assert result.returncode == 0, result.stderr
    # The walk one request at a time gives: same pages, same order.
    alone = make_site(SITE)
    (tmp_path / "single").mkdir()
    single = run(on_site(several.replace("--concurrency 8", "--concurrency 1"), alone), tmp_path / "single")
    assert single.returncode == 0, single.stderr
    assert [item["url"].replace(site.url, "") for item in jsonl(tmp_path / "pages.jsonl")] == \
        [item["url"].replace(alone.url, "") for item in jsonl(tmp_path / "single" / "pages.jsonl")]


@pytest.mark.slow  # Chromium
def test_render(make_site, tmp_path):
    auto, always = commands(section("docs/render.md", "Render a site"))
    # An app shell linking to a page of text whose script changes its title: auto renders the
    # shell only (its link is made by its script), always both.
    shell = ("<!DOCTYPE html><html><head><title>App</title></head><body><div id='root'></div><script>"
             "document.getElementById('root').innerHTML = '<a href=\\'/guide\\'>Guide</a>';</script></body></html>")
    guide = {"title": "Guide", "head": "<script>document.title = 'Guide, scripted';</script>",
             "body": "<p>A guide of plain text, read as the server sends it.</p>" * 12}
    for command, title in ((auto, "Guide"), (always, "Guide, scripted")):
        site = make_site({"/": {"body": shell}, "/guide": guide})
        result = run(on_site(command, site), tmp_path)
        assert result.returncode == 0, result.stderr
        items = jsonl(tmp_path / "pages.jsonl")
        assert [(item["url"], item["title"]) for item in items] == [(site("/"), "App"), (site("/guide"), title)]
        assert site.paths() == ["/", "/guide"]


# docs/report.md, against a local site with known broken links.
REPORT_SITE = {
    "/": {"title": "Docs", "links": ["/guide", "/api", "/gone"]},
    "/guide": {"title": "Guide", "links": ["/gone", "/guide/old"]},
    "/api": {"title": "API", "links": ["/gone"]},
    "/guide/old": {"title": "Old guide", "links": ["/api/v1"]},
}


def test_report_the_html_report_command(make_site, tmp_path):
    (html_walk,) = commands(section("docs/report.md", "The HTML report"))
    site = make_site(REPORT_SITE)
    result = run(on_site(html_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/guide", "/api", "/gone", "/guide/old", "/api/v1"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(row["url"], row["inlinks"]) for row in report["broken_links"]] == [(site("/gone"), 3), (site("/api/v1"), 1)]
    text = (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert "Broken links (2)" in text and "<script>" in text


def test_report_the_link_check_command(make_site, tmp_path):
    (check_walk,) = commands(section("docs/report.md", "Links to other sites, resources and fragments"))
    other = make_site({"/ok": {}, "/no-head": {"methods": ["GET"]}})
    site = make_site({
        **REPORT_SITE,
        "/": {"title": "Docs", "links": ["/guide", "/api#intro", other("/ok"), other("/gone"), other("/no-head")],
              "body": '<img src="/logo.png">'},
        "/api": {"title": "API", "body": '<h2 id="intro">Intro</h2>'},
        "/logo.png": {"content_type": "image/png", "body": "png"},
    })
    result = run(on_site(check_walk, site), tmp_path)
    assert result.returncode == 3, result.stderr
    # The walk's pages in their order (GET), the resource checked (HEAD) at the walk's pace.
    gets = [entry["path"] for entry in site.requests() if entry["method"] == "GET" and entry["path"] != "/robots.txt"]
    assert gets == ["/", "/guide", "/api", "/gone", "/guide/old", "/api/v1"]
    assert [entry["path"] for entry in site.requests() if entry["method"] == "HEAD"] == ["/logo.png"]
    assert sorted((entry["method"], entry["path"]) for entry in other.requests()) == [
        ("GET", "/no-head"), ("HEAD", "/gone"), ("HEAD", "/no-head"), ("HEAD", "/ok")]
    failures = {case.name: case.result[0].type for suite in JUnitXml.fromfile(str(tmp_path / "links.xml"))
                for case in suite if not case.is_passed}
    assert failures == {site("/gone"): "http", site("/api/v1"): "http", other("/gone"): "http"}


def test_report_the_ci_commands(make_site, tmp_path):
    text = section("docs/report.md", "Broken links in CI")
    ci_walk, scrapy_walk = commands(text)
    # The workflow's step runs the command the page shows (and this test runs).
    assert re.search(r"^  run: (.*)$", blocks(text, "yaml")[0], re.MULTILINE).group(1) == ci_walk
    site = make_site(REPORT_SITE)
    result = run(on_site(ci_walk, site), tmp_path)
    assert result.returncode == 3, result.stderr
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 4
    assert len(site.paths()) == 6

    site = make_site(REPORT_SITE)
    result = run(on_site(scrapy_walk, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert JUnitXml.fromfile(str(tmp_path / "links.xml")).failures == 4
    assert "Broken links (2)" in (tmp_path / "walk.html").read_text(encoding="utf-8")
    assert len(site.paths()) == 6


def test_report_the_python_example(make_site, tmp_path, capsys, monkeypatch):
    (code,) = blocks(section("docs/report.md", "Broken links in CI"), "python")
    site = make_site(REPORT_SITE)
    monkeypatch.chdir(tmp_path)
    # As written, but at the local site and with its loopback address allowed.
    local = code.replace(DOCS, site("/")).replace("html_report=", f"settings={LOOPBACK!r}, delay=0, html_report=")
    exec(compile(local, "docs/report.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == [f"{site('/gone')} HTTP 404 Not Found linked from 3 pages",
                                                    f"{site('/api/v1')} HTTP 404 Not Found linked from 1 pages"]
    assert (tmp_path / "walk.html").exists()
