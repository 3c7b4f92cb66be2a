"""The README's CI command, run exactly as written (pointed at a local site): inside its budgets it
passes; on a site larger than them it exits 4, with the failing testcase in its JUnit file."""

from __future__ import annotations

from collections import Counter

import pytest
from junitparser import Failure, JUnitXml

from tests.test_docs import commands, jsonl, on_site, run, section

# Two pages of 260 MB: together past the command's --max-bytes 500M (the only budget a test can
# exceed in seconds: 5,000 pages or 30 minutes cannot be).
BIG = 260_000_000


def ci_command() -> str:
    (command,) = commands(section("README.md", "In CI"))
    return command


def test_the_readme_ci_command_passes_a_site_inside_its_budgets(make_site, tmp_path):
    site = make_site({"/": {"title": "Docs", "links": ["/guide", "/api"], "body": "<img src='/logo.png'>"},
                      "/guide": {"title": "Guide", "links": ["/api#intro"]},
                      "/api": {"title": "API", "body": "<h2 id='intro'>Intro</h2>"},
                      "/logo.png": {"content_type": "image/png", "body": "png"}})
    result = run(on_site(ci_command(), site), tmp_path)
    assert result.returncode == 0, result.stderr
    # Each page once (GET), the image checked once (HEAD).
    assert Counter((entry["method"], entry["path"]) for entry in site.requests() if entry["path"] != "/robots.txt") == Counter({
        ("GET", "/"): 1, ("GET", "/guide"): 1, ("GET", "/api"): 1, ("HEAD", "/logo.png"): 1,
    })
    xml = JUnitXml.fromfile(str(tmp_path / "links.xml"))
    assert xml.failures == 0 and "sitewalk" not in [suite.name for suite in xml]
    assert [item["url"] for item in jsonl(tmp_path / "pages.jsonl")] == [site("/"), site("/guide"), site("/api")]


@pytest.mark.slow  # half a gigabyte through loopback and the walk: seconds of CPU
def test_the_readme_ci_command_fails_a_site_larger_than_its_budgets(make_site, tmp_path):
    site = make_site({"/": {"title": "Docs", "links": ["/one", "/two", "/three"]},
                      "/one": {"size": BIG, "content_type": "text/plain"},
                      "/two": {"size": BIG, "content_type": "text/plain"},
                      "/three": {"title": "Three"}})
    result = run(on_site(ci_command(), site), tmp_path)
    assert result.returncode == 4, result.stderr
    # /two is cut off at max_bytes: the walk stops there and /three is never asked for.
    assert site.paths()[:3] == ["/", "/one", "/two"] and "/three" not in site.paths()
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(tmp_path / "links.xml"))}
    (case,) = suites["sitewalk"]
    (failure,) = case.result
    assert isinstance(failure, Failure) and failure.type == "incomplete"
    assert failure.message.startswith("the check is incomplete: max-bytes left ")
    assert "raise --max-bytes (or give --allow-incomplete" in failure.message
    assert "incomplete: max-bytes left" in result.stderr
