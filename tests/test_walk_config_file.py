"""A walk configured by a TOML file (-a config=walk.toml) or a mapping (the API), end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitewalk import SitewalkError, grep, walk
from tests.conftest import LOOPBACK, allow_loopback, run_cli

SITE = {
    "/": {"title": "Home", "links": ["/a", "/b", "/c"]},
    "/a": {"title": "A", "body": "<p>needle in a</p>"},
    "/b": {"title": "B", "body": "<p>Needle in b</p>"},
    "/c": {"title": "C", "body": "<p>needle in c</p>"},
}


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def headers_seen(site: Any, name: str) -> list[str | None]:
    """The value of header ``name`` in each request the server received (robots.txt included)."""
    return [entry["headers"].get(name) for entry in site.requests()]


def test_cli_uses_the_file_and_a_values_override_it(make_site, tmp_path):
    site = make_site(SITE)
    write_config(tmp_path / "walk.toml", (
        f'seed = "{site("/")}"\n'
        "max_pages = 2\n"
        "delay = 0\n"
        'report = "from-file.json"\n'
        "[headers]\n"
        'X-Test = "from-file"\n'
        '"X-Walk" = "config"\n'
    ))
    result = run_cli("-a", "config=walk.toml", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/a"]
    assert json.loads((tmp_path / "from-file.json").read_text())["stopped"] == "max-pages"
    assert headers_seen(site, "X-Test") == ["from-file"] * 3  # robots.txt, /, /a
    assert headers_seen(site, "X-Walk") == ["config"] * 3

    site = make_site(SITE)
    result = run_cli(
        "-a", "config=walk.toml", "-a", f"seed={site('/')}", "-a", "max_pages=3", "-a", "report=from-cli.json",
        "-a", "headers=X-Test: from-cli", "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/", "/a", "/b"]
    assert json.loads((tmp_path / "from-cli.json").read_text())["fetched"] == 3
    # -a headers are merged into the file's [headers], winning where both name a header.
    assert headers_seen(site, "X-Test") == ["from-cli"] * 4
    assert headers_seen(site, "X-Walk") == ["config"] * 4


def test_cli_grep_configured_by_the_file(make_site, tmp_path):
    site = make_site(SITE)
    write_config(tmp_path / "grep.toml", (
        f'seed = "{site("/")}"\ndelay = 0\ngrep = "needle"\nignore_case = true\ncontext = 0\nmax_matches = 2\n'
    ))
    result = run_cli("-a", "config=grep.toml", "-O", "m.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [(item["url"], item["text"]) for item in items] == [(site("/a"), "needle in a"), (site("/b"), "Needle in b")]
    assert site.paths() == ["/", "/a", "/b"]


def test_default_request_headers_setting_reaches_the_server(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli(
        "-a", f"seed={site('/')}", "-a", "max_depth=0", "-a", "delay=0",
        "-s", 'DEFAULT_REQUEST_HEADERS={"X-Test": "1", "X-Keep": "kept"}',
        "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert site.paths() == ["/"]
    assert headers_seen(site, "X-Test") == ["1", "1"]
    assert headers_seen(site, "X-Keep") == ["kept", "kept"]


def test_walk_headers_add_to_the_default_request_headers_setting(make_site, tmp_path):
    site = make_site(SITE)
    write_config(tmp_path / "walk.toml", f'seed = "{site("/")}"\nmax_depth = 0\ndelay = 0\n[headers]\nX-Test = "2"\n')
    result = run_cli(
        "-a", "config=walk.toml", "-s", 'DEFAULT_REQUEST_HEADERS={"X-Test": "1", "X-Keep": "kept"}',
        "-O", "pages.jsonl", *allow_loopback(), cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert headers_seen(site, "X-Test") == ["2", "2"]
    assert headers_seen(site, "X-Keep") == ["kept", "kept"]


def test_api_config_mapping_and_path(make_site, tmp_path):
    site = make_site(SITE)
    report = walk(
        config={"seed": site("/"), "max_pages": 2, "delay": 0, "headers": {"X-Test": "mapping"}},
        settings=LOOPBACK,
    )
    assert report.fetched == 2 and report.stopped == "max-pages"
    assert site.paths() == ["/", "/a"]
    assert headers_seen(site, "X-Test") == ["mapping"] * 3

    site = make_site(SITE)
    path = write_config(tmp_path / "walk.toml", f'seed = "{site("/")}"\nmax_pages = 2\ndelay = 0\n[headers]\nX-Test = "file"\n')
    report = walk(config=str(path), max_pages=3, settings=LOOPBACK)
    assert report.fetched == 3
    assert site.paths() == ["/", "/a", "/b"]
    assert headers_seen(site, "X-Test") == ["file"] * 4


def test_api_grep_takes_its_pattern_from_the_config(make_site, tmp_path):
    site = make_site(SITE)
    path = write_config(tmp_path / "grep.toml", f'seed = "{site("/")}"\ndelay = 0\ngrep = "needle"\ncontext = 0\n')
    matches, report = grep(config=str(path), settings=LOOPBACK)
    assert [m.text for m in matches] == ["needle in a", "needle in c"]
    matches, _ = grep(config=str(path), ignore_case=True, settings=LOOPBACK)
    assert [m.text for m in matches] == ["needle in a", "Needle in b", "needle in c"]
    # The pattern argument overrides the file's.
    matches, _ = grep(pattern="in b", config=str(path), settings=LOOPBACK)
    assert [m.text for m in matches] == ["Needle in b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('max_pages = "ten"\n', "max_pages must be a whole number, got 'ten'"),
        ("max_pagez = 3\n", "unknown argument 'max_pagez'"),
        ('[headers]\n"Bad Name" = "x"\n', "header name 'Bad Name' is not a valid HTTP header name"),
        ("max_pages = \n", "config 'walk.toml' is not valid TOML"),
        (None, "config 'walk.toml' cannot be read: No such file or directory"),
    ],
)
def test_cli_config_errors_are_one_line_exit_2_and_no_request(make_site, tmp_path, text, message):
    site = make_site(SITE)
    if text is not None:
        write_config(tmp_path / "walk.toml", f'seed = "{site("/")}"\ndelay = 0\n{text}')
    result = run_cli("-a", "config=walk.toml", "-a", f"seed={site('/')}", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("sitewalk: error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert site.requests() == []
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_pages": "ten"}, "max_pages must be a whole number, got 'ten'"),
        ({"max_pagez": 3}, "unknown argument 'max_pagez'"),
        ("missing.toml", "config 'missing.toml' cannot be read"),
    ],
)
def test_api_config_errors_raise_before_any_request(make_site, config, message):
    site = make_site(SITE)
    with pytest.raises(SitewalkError, match=message):
        walk(site("/"), config=config, delay=0, settings=LOOPBACK)
    assert site.requests() == []
