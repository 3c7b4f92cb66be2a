"""Every command of the README, run as written against a local site (its URL and port substituted)."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from tests.conftest import LOOPBACK, ROOT, clean_environment, wait_for_pages

README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
# The README's placeholder site, replaced by the local test site's URL.
DOCS = "https://docs.example.com/"
ALLOW = f"SITEWALK_GUARD_ALLOW_NETWORKS={LOOPBACK['SITEWALK_GUARD_ALLOW_NETWORKS']}"

SITE = {
    "/": {"title": "Docs", "links": ["/guide", "/api"],
          "body": "<p>TODO: write the intro</p><p>Call a.b(x) first.</p><a href='{origin}/api'>API</a>"},
    "/guide": {"title": "Guide", "links": ["/guide/old"], "body": "<p>This option is Deprecated.</p>"},
    "/api": {"title": "API", "body": "<p>FIXME: the deprecation of v1</p>"},
    "/guide/old": {"title": "Old guide"},
}


def section(title: str) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of its level or above."""
    lines, level, fenced = [], None, False
    for line in README.splitlines(keepends=True):
        heading = None if fenced else re.match(r"(#+) (.*)\n", line)
        fenced ^= line.startswith("```")
        if heading and level is not None and len(heading.group(1)) <= level:
            break
        if level is not None:
            lines.append(line)
        elif heading and heading.group(2) == title:
            level = len(heading.group(1))
    assert level is not None, f"README has no section {title!r}"
    return "".join(lines)


def blocks(text: str, language: str = "sh") -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def commands(text: str) -> list[str]:
    """The shell commands of the ``sh`` blocks of ``text``, one a line (continuation lines joined)."""
    lines = []
    for block in blocks(text):
        lines.extend(line for line in block.replace("\\\n", " ").splitlines() if line.strip())
    return lines


def environment() -> dict[str, str]:
    """A user's shell after the set-up: the venv's commands first on PATH, no project settings."""
    return {**clean_environment(), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def run(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env={**environment(), **env},
                          capture_output=True, text=True, timeout=180)


def on_site(command: str, site: Any) -> str:
    """``command`` pointed at ``site``, with its loopback address allowed (the guard refuses it)."""
    assert DOCS in command, command
    return command.replace(DOCS, site("/")) + f" -s {ALLOW}"


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_set_up_is_two_commands_and_ci_runs_the_second():
    setup = blocks(section("Set up"))
    assert setup == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/sitewalk-example\n",
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q\n',
    ]
    # The first one's walk is tests/test_example.py's; CI installs and tests as the second says.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '-m venv .venv' in ci and 'pip install -q -e ".[test]"' in ci and ci.rstrip().endswith(".venv/bin/python -m pytest -q")


def test_usage(make_site, tmp_path):
    index, csv_walk, scrapy_walk = commands(section("Usage"))
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
    words, literal = commands(section("grep: search the text of a site"))
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
    titles, links = commands(section("extract: pull values out of every page"))
    site = make_site(SITE)
    result = run(on_site(titles, site), tmp_path)
    assert result.returncode == 0, result.stderr
    assert [item["values"] for item in jsonl(tmp_path / "titles.jsonl")] == [["Docs"], ["API"], ["Guide"]]
    site = make_site(SITE)
    result = run(on_site(links, site), tmp_path)
    assert result.returncode == 0, result.stderr
    with (tmp_path / "links.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # The README's word: a CSV list cell is a JSON array.
    assert [(row["url"], json.loads(row["values"])) for row in rows] == [(site("/"), [site.url])]


def test_config_file(make_site, tmp_path):
    text = section("A walk config file")
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
    (command,) = commands(section("Resuming a long walk"))
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


def test_security(make_site, tmp_path):
    intranet, loopback = commands(section("Security: the address guard"))
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
