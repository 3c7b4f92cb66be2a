"""A walk configured by a TOML file (-a config=walk.toml) or a mapping (the API), end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitewalk import SitewalkError, grep, walk
from tests.conftest import LOOPBACK, allow_loopback, run_cli, run_sitewalk

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


ROBOTS_SITE = {
    **SITE,
    "/robots.txt": {"content_type": "text/plain", "body": "User-agent: *\nDisallow: /b\n"},
}


def walked(site: Any, tmp_path: Path, name: str, *args: str, config: str | None = None) -> list[tuple[str, str]]:
    """Run the sitewalk command on ``site`` (with ``config``'s text as --config's file, if given);
    the (path, User-Agent) of each request the server received, robots.txt's included."""
    options = list(args)
    if config is not None:
        options += ["--config", str(write_config(tmp_path / f"{name}.toml", config))]
    result = run_sitewalk(site("/"), "--delay", "0", *options, "-o", str(tmp_path / f"{name}.jsonl"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    requests = [(entry["path"], entry["headers"].get("User-Agent")) for entry in site.requests()]
    site.log_path.write_text("", encoding="utf-8")
    return requests


def test_settings_in_the_file_walk_as_the_sitewalk_commands_options(make_site, tmp_path):
    site = make_site(ROBOTS_SITE)
    loopback = 'allow_networks = "127.0.0.1/32"\n'
    # user_agent: every request, robots.txt's too, says what the file or the option says; the option wins.
    by_file = walked(site, tmp_path, "agent", config=f'{loopback}user_agent = "file-agent/1"\n')
    by_option = walked(site, tmp_path, "agent-option", "--user-agent", "file-agent/1", "--allow-networks", "127.0.0.1/32")
    assert by_file == by_option == [("/robots.txt", "file-agent/1"), ("/", "file-agent/1"), ("/a", "file-agent/1"),
                                    ("/c", "file-agent/1")]
    both = walked(site, tmp_path, "agent-both", "--user-agent", "option-agent/1",
                  config=f'{loopback}user_agent = "file-agent/1"\n')
    assert {agent for _, agent in both} == {"option-agent/1"}
    # robots = false: robots.txt is not asked for, and /b, which it disallows, is fetched.
    by_file = walked(site, tmp_path, "robots", config=f"{loopback}robots = false\n")
    by_option = walked(site, tmp_path, "robots-option", "--no-robots", "--allow-networks", "127.0.0.1/32")
    assert [path for path, _ in by_file] == [path for path, _ in by_option] == ["/", "/a", "/b", "/c"]
    assert [path for path, _ in walked(site, tmp_path, "robots-both", "--robots", config=f"{loopback}robots = false\n")] == [
        "/robots.txt", "/", "/a", "/c"]


def test_allow_networks_in_the_file_is_the_address_guards(make_site, tmp_path):
    # Linux answers on all of 127.0.0.0/8: only the guard keeps a walk from 127.0.0.2.
    site = make_site(SITE, host="127.0.0.2")
    paths = walked(site, tmp_path, "allowed", config='allow_networks = "127.0.0.2/32"\n')
    assert [path for path, _ in paths] == ["/robots.txt", "/", "/a", "/b", "/c"]
    refused = run_sitewalk(site("/"), "--delay", "0", "--config",
                           str(write_config(tmp_path / "refused.toml", 'allow_networks = "127.0.0.1/32"\n')),
                           "-o", str(tmp_path / "refused.jsonl"), cwd=tmp_path)
    assert refused.returncode == 1
    assert "refused address 127.0.0.2 (not a public address)" in refused.stderr, refused.stderr
    assert site.requests() == []
    # The option given with the file wins, as for any other.
    paths = walked(site, tmp_path, "option", "--allow-networks", "127.0.0.2/32", config='allow_networks = "127.0.0.1/32"\n')
    assert [path for path, _ in paths] == ["/robots.txt", "/", "/a", "/b", "/c"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('robots = "nope"\n', "robots in config 'walk.toml' must be true or false, got 'nope'"),
        ('allow_networks = "10.0.0/8"\n', "allow_networks in config 'walk.toml': '10.0.0/8' is not an IP network"),
        ("user_agent = 3\n", "user_agent in config 'walk.toml' must be a string, got 3"),
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
        ({"robots": "nope"}, "robots in config mapping must be true or false, got 'nope'"),
        ("missing.toml", "config 'missing.toml' cannot be read"),
    ],
)
def test_api_config_errors_raise_before_any_request(make_site, config, message):
    site = make_site(SITE)
    with pytest.raises(SitewalkError, match=message):
        walk(site("/"), config=config, delay=0, settings=LOOPBACK)
    assert site.requests() == []


def test_a_setting_is_not_a_walk_argument(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "robots=false", "-O", "p.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert "sitewalk: error: robots is a setting, not a walk argument: give -s ROBOTSTXT_OBEY=false, or robots in a config file" in result.stderr
    assert site.requests() == []
