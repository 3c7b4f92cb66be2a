"""WalkConfig: one typed, validated configuration for -a arguments, a TOML file and the Python API."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from sitewalk import SitewalkError, WalkConfig

SEED = "https://docs.example.com/"


def config(**values: Any) -> WalkConfig:
    return WalkConfig.from_mapping({"seed": SEED, **values})


def test_defaults_live_in_one_place():
    assert WalkConfig.from_mapping({"seed": SEED}) == WalkConfig(seed=SEED)
    assert {f.name: f.default for f in dataclasses.fields(WalkConfig) if f.name not in ("headers", "settings")} == {
        "seed": dataclasses.MISSING, "max_depth": 1, "max_pages": 20, "delay": 0.25, "concurrency": 1, "deadline": 60.0,
        "max_bytes": 20_000_000, "report": None, "html_report": None, "junit": None, "fail_on_broken": False, "allow_incomplete": False, "check_links": False, "grep": None, "max_matches": 50, "ignore_case": False,
        "fixed_strings": False, "context": 2, "css": None, "xpath": None, "regex": None,
        "include": None, "exclude": None, "no_parent": False, "content": None, "main_content": False,
        "links": False, "sitemap": False, "save_dir": None, "index_noindex": False, "state": None, "changed_only": False,
        "render": "never",
    }
    assert WalkConfig(seed=SEED).headers == {}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        # -a values are strings; TOML and the API give typed values.
        ("max_depth", "3", 3),
        ("max_depth", 3, 3),
        ("max_depth", "0", 0),
        ("max_pages", " 7 ", 7),
        ("max_bytes", 1000, 1000),
        ("delay", "0.5", 0.5),
        ("delay", "0", 0.0),
        ("delay", 2, 2.0),
        ("deadline", "1.5", 1.5),
        ("deadline", 30, 30.0),
        ("report", "out/report.json", "out/report.json"),
        ("ignore_case", "true", True),
        ("ignore_case", "Yes", True),
        ("ignore_case", "on", True),
        ("ignore_case", "1", True),
        ("ignore_case", "false", False),
        ("ignore_case", "OFF", False),
        ("ignore_case", "0", False),
        ("ignore_case", True, True),
        ("fixed_strings", "no", False),
        ("context", "0", 0),
        ("max_matches", "1", 1),
        ("headers", "X-Test: 1; Accept-Language: fr, en", {"X-Test": "1", "Accept-Language": "fr, en"}),
        ("headers", "Authorization: Bearer a:b", {"Authorization": "Bearer a:b"}),
        ("headers", {"X-Test": "1"}, {"X-Test": "1"}),
        ("headers", {}, {}),
    ],
)
def test_values_are_converted_to_the_declared_type(key, value, expected):
    consumer = {"grep": "x"} if key in ("max_matches", "ignore_case", "fixed_strings", "context") else {}
    assert getattr(config(**{key: value}, **consumer), key) == expected


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_pages": "ten"}, "max_pages must be a whole number, got 'ten'"),
        ({"max_pages": 2.5}, "max_pages must be a whole number, got 2.5"),
        ({"max_pages": "2.5"}, "max_pages must be a whole number, got '2.5'"),
        ({"max_pages": True}, "max_pages must be a whole number, got True"),
        ({"max_pages": 0}, "max_pages must be >= 1, got 0"),
        ({"max_depth": -1}, "max_depth must be >= 0, got -1"),
        ({"max_bytes": 0}, "max_bytes must be >= 1 bytes, got 0"),
        ({"grep": "x", "max_matches": "0"}, "max_matches must be >= 1, got 0"),
        ({"grep": "x", "context": -2}, "context must be >= 0, got -2"),
        ({"delay": "soon"}, "delay must be a number of seconds, got 'soon'"),
        ({"delay": -1}, "delay must be >= 0 seconds, got -1"),
        ({"delay": True}, "delay must be a number of seconds, got True"),
        ({"delay": "nan"}, "delay must be a finite number, got 'nan'"),
        ({"deadline": "inf"}, "deadline must be a finite number, got 'inf'"),
        ({"deadline": 0}, "deadline must be > 0 seconds, got 0"),
        ({"grep": "x", "ignore_case": "maybe"}, "ignore_case must be true or false, got 'maybe'"),
        ({"grep": "x", "ignore_case": 1}, "ignore_case must be true or false, got 1"),
        ({"report": 5}, "report must be a string, got 5"),
        ({"grep": ["a", "b"]}, "grep must be a string, got ['a', 'b']"),
        ({"seed": 5}, "seed must be a string, got 5"),
        ({"seed": "ftp://example.com/"}, "seed 'ftp://example.com/' is not an http(s) URL"),
        ({"seed": "docs.example.com"}, "seed 'docs.example.com' is not an http(s) URL"),
        ({"max_deth": 2}, "unknown argument 'max_deth'"),
        ({"headers": "no colon here"}, "headers must look like 'Name: value; Other: value'"),
        ({"headers": {"X-Num": 1}}, "headers must be a table of name = \"value\" strings"),
        ({"headers": ["X-Test: 1"]}, "headers must be a table of name = \"value\" strings"),
        ({"headers": {"Bad Name": "x"}}, "header name 'Bad Name' is not a valid HTTP header name"),
        ({"headers": {"X-Ü": "x"}}, "header name 'X-Ü' is not a valid HTTP header name"),
        ({"headers": {"X-A": "a\r\nX-Evil: 1"}}, "header 'X-A' has a line break or NUL in its value"),
        ({"grep": "a.b("}, "grep 'a.b(' is not a valid regular expression"),
        ({"grep": "x", "css": "p"}, "grep and css/xpath are different consumers: give one of them"),
        ({"css": "p", "xpath": "//p"}, "give css or xpath, not both"),
        ({"regex": "x"}, "regex filters css/xpath values: give -a css=... or -a xpath=... too"),
        ({"css": "p", "regex": "(x"}, "regex '(x' is not a valid regular expression"),
        ({"css": "p["}, "css 'p[' is not a valid CSS selector"),
        ({"css": "p::nope"}, "css 'p::nope' is not a valid CSS selector"),
        ({"css": ""}, "css '' is not a valid CSS selector"),
        ({"xpath": "//p["}, "xpath '//p[' is not a valid XPath expression"),
        ({"xpath": "x:p"}, "xpath 'x:p' is not a valid XPath expression"),
        ({"xpath": "nosuchfunction(//p)"}, "xpath 'nosuchfunction(//p)' is not a valid XPath expression"),
        ({"config": {"config": "other.toml"}}, "config mapping names another config"),
        ({"max_page": 2}, "unknown argument 'max_page' (did you mean 'max_pages'?)"),
        ({"gerp": "x"}, "unknown argument 'gerp' (did you mean 'grep'?)"),
        ({"zzz": 1}, "unknown argument 'zzz' (known: allow_incomplete, changed_only, check_links, concurrency, content, context, css,"),
        ({"context": 1}, "context is an option of grep: give a grep pattern too, or leave context out"),
        ({"ignore_case": True}, "ignore_case is an option of grep: give a grep pattern too"),
        ({"max_matches": "5"}, "max_matches is an option of grep: give a grep pattern too"),
        ({"fixed_strings": "true", "css": "p"}, "fixed_strings is an option of grep: give a grep pattern too"),
        ({"grep": ""}, "grep is empty: give the text or regular expression to search for"),
        ({"grep": "", "fixed_strings": True}, "grep is empty"),
    ],
)
def test_invalid_values_name_the_key_in_one_line(values, message):
    with pytest.raises(SitewalkError) as raised:
        config(**values)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_missing_seed():
    with pytest.raises(SitewalkError, match="missing seed: give the URL to walk"):
        WalkConfig.from_mapping({"max_pages": "3"})


@pytest.mark.parametrize(
    ("values", "consumer"),
    [
        ({}, "index"),
        ({"grep": "x"}, "grep"),
        ({"grep": "a.b(", "fixed_strings": "true"}, "grep"),
        ({"css": "h1::text"}, "extract"),
        ({"xpath": "//h1/text()", "regex": r"(\d+)"}, "extract"),
    ],
)
def test_consumer(values, consumer):
    assert config(**values).consumer == consumer


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # The config's values are used, and the other keys override them.
        ({"config": {"max_pages": 5, "delay": 0}}, {"max_pages": 5, "delay": 0.0}),
        ({"config": {"max_pages": 5, "delay": 0}, "max_pages": "9"}, {"max_pages": 9, "delay": 0.0}),
        ({"config": {"seed": "http://a.example/"}, "seed": SEED}, {"seed": SEED}),
        # Headers are merged, the other keys' values winning.
        (
            {"config": {"headers": {"X-A": "1", "X-B": "2"}}, "headers": "X-B: 3; X-C: 4"},
            {"headers": {"X-A": "1", "X-B": "3", "X-C": "4"}},
        ),
        # None means "not given"; scrapyd's own job arguments are not walk settings.
        ({"config": {"max_depth": 3}, "max_depth": None}, {"max_depth": 3}),
        ({"_job": "abc", "_version": "1", "setting": "X=1"}, {"max_pages": 20}),
    ],
)
def test_a_config_mapping_and_its_overrides(values, expected):
    result = WalkConfig.from_mapping({"seed": SEED, **values})
    assert {key: getattr(result, key) for key in expected} == expected


def test_the_seed_can_come_from_the_config_alone():
    assert WalkConfig.from_mapping({"config": {"seed": SEED}}).seed == SEED


def test_a_config_file_is_toml(tmp_path: Path):
    path = tmp_path / "walk.toml"
    path.write_text(
        f'seed = "{SEED}"\nmax_depth = 2\ndelay = 0\nignore_case = true\ngrep = "a.b("\nfixed_strings = true\n'
        '[headers]\nX-Test = "1"\n"Accept-Language" = "fr"\n',
        encoding="utf-8",
    )
    result = WalkConfig.from_mapping({"config": str(path), "max_depth": "4"})
    assert result == WalkConfig(
        seed=SEED, max_depth=4, delay=0.0, ignore_case=True, grep="a.b(", fixed_strings=True,
        headers={"X-Test": "1", "Accept-Language": "fr"},
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('seed = "https://a.example/"\nmax_pages = "ten"\n', "max_pages must be a whole number, got 'ten'"),
        ('seed = "https://a.example/"\nmax_pagez = 3\n', "unknown argument 'max_pagez'"),
        ('seed = "https://a.example/"\ndelay = true\n', "delay must be a number of seconds, got True"),
        ('seed = "https://a.example/"\n[headers]\nX-Num = 1\n', "headers must be a table of name = \"value\" strings"),
        ('seed = "https://a.example/"\n[grep]\npattern = "x"\n', "grep must be a string"),
        ('seed = "https://a.example/"\nconfig = "other.toml"\n', "names another config"),
        ('seed = "https://a.example/"\nmax_pages = \n', "is not valid TOML"),
        ("seed = https://a.example/\n", "is not valid TOML"),
    ],
)
def test_config_file_errors_are_one_line(tmp_path: Path, text, message):
    path = tmp_path / "walk.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SitewalkError) as raised:
        WalkConfig.from_mapping({"config": str(path)})
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_unreadable_config_files_name_the_file(tmp_path: Path):
    for path, reason in [
        (tmp_path / "missing.toml", "cannot be read: No such file or directory"),
        (tmp_path, "cannot be read: Is a directory"),
    ]:
        with pytest.raises(SitewalkError, match=re.escape(f"config '{path}' {reason}")):
            WalkConfig.from_mapping({"config": str(path)})
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes('seed = "https://a.example/caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(SitewalkError, match=re.escape(f"config '{latin1}' is not UTF-8 text")):
        WalkConfig.from_mapping({"config": str(latin1)})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_bytes", "500M", 500_000_000), ("max_bytes", "2G", 2_000_000_000), ("max_bytes", "1.5GB", 1_500_000_000),
        ("max_bytes", "64k", 64_000), ("max_bytes", "4KiB", 4096), ("max_bytes", "1MiB", 2**20),
        # A plain number keeps its meaning: bytes, seconds.
        ("max_bytes", "20000000", 20_000_000), ("max_bytes", 1234, 1234),
        ("deadline", "90s", 90.0), ("deadline", "30m", 1800.0), ("deadline", "2h", 7200.0), ("deadline", "1.5m", 90.0),
        ("deadline", "45", 45.0), ("deadline", 2.5, 2.5),
    ],
)
def test_sizes_and_durations_take_units(key, value, expected):
    assert getattr(config(**{key: value}), key) == expected


def test_units_in_a_config_file(tmp_path: Path):
    path = tmp_path / "walk.toml"
    path.write_text('max_bytes = "500M"\ndeadline = "30m"\n', encoding="utf-8")
    walk = config(config=str(path))
    assert (walk.max_bytes, walk.deadline) == (500_000_000, 1800.0)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_bytes", "5X", "max_bytes must be a number of bytes, with a unit or not (e.g. 500M, 2G), got '5X'"),
        ("max_bytes", "0.5", "max_bytes must be a whole number of bytes, got '0.5'"),
        ("max_bytes", "0M", "max_bytes must be >= 1 bytes, got 0"),
        ("deadline", "3d", "deadline must be a number of seconds, with a unit or not (e.g. 90s, 30m, 2h), got '3d'"),
        ("deadline", "30M", "deadline must be a number of seconds, with a unit or not"),
        ("deadline", "0s", "deadline must be > 0 seconds, got 0"),
    ],
)
def test_a_bad_unit_is_one_line(key, value, message):
    with pytest.raises(SitewalkError) as raised:
        config(**{key: value})
    assert str(raised.value).startswith(message)
