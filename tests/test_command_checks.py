"""What both commands check before a walk starts: the type of every setting whose type is known,
and outputs that would overwrite each other. One line, exit status 2, no request, nothing written."""

from __future__ import annotations

import logging
import re

import pytest
from scrapy.settings import Settings

from sitewalk import SitewalkError
from sitewalk.configchecks import check_settings, setting_types
from tests.conftest import ROOT, allow_loopback, run_cli, run_sitewalk

SITE = {"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A"}}
# A value each kind of setting refuses, and what the message says it takes.
BAD = {
    bool: ("nope", "true or false"),
    int: ("lots", "a whole number"),
    float: ("soon", "a number"),
    dict: ("{nope", "a JSON object"),
    list[int]: ("a,b", "comma-separated whole numbers"),
    logging: ("VERBOSE", "a log level (CRITICAL, ERROR, WARNING, INFO, DEBUG)"),
}
# Checked by its component as it is built, in words of its own (tests/test_cli.py has them).
BY_ITS_COMPONENT = {"SITEWALK_PROGRESS_INTERVAL": "-s SITEWALK_PROGRESS_INTERVAL=soon is not a number of seconds"}


def documented() -> list[str]:
    """The settings whose type is known that sitewalk sets (sitewalk/settings.py) or its docs name."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                                                                    ROOT / "sitewalk" / "settings.py"])
    names = set(re.findall(r"\b[A-Z][A-Z0-9_]{3,}\b", text))
    return sorted(names & set(setting_types()))


def test_the_documented_settings_include_sitewalk_s_own_and_scrapy_s():
    names = documented()
    for name in ("ROBOTSTXT_OBEY", "LOG_LEVEL", "DOWNLOAD_TIMEOUT", "CONCURRENT_REQUESTS", "SITEWALK_LINKCHECK_MAX_CHECKS",
                 "SITEWALK_RETRY_TIMES", "SITEWALK_RENDER_TIMEOUT", "FEEDS", "DOWNLOAD_MAXSIZE"):
        assert name in names
    assert setting_types()["DOWNLOAD_DELAY"] is float  # an int default that Scrapy reads as seconds
    assert setting_types()["RETRY_HTTP_CODES"] == list[int]


@pytest.mark.parametrize("name", sorted(setting_types()))
def test_every_typed_setting_refuses_a_bad_value(name):
    """Scrapy's too, whether or not a walk reads it (in-process: the commands run this same check)."""
    kind = setting_types()[name]
    value, takes = BAD[kind]
    if name in BY_ITS_COMPONENT:
        return
    settings = Settings()
    settings.setmodule("sitewalk.settings", priority="project")
    if kind is dict:
        # -s gives a table setting's JSON to Scrapy, which parses it as it is set: the commands refuse it then.
        settings.set(name, {"x": 1}, priority="cmdline")
        check_settings(settings)
        return
    settings.set(name, value, priority="cmdline")
    with pytest.raises(SitewalkError) as raised:
        check_settings(settings)
    assert str(raised.value).startswith(f"-s {name}={value}: {name} takes {takes} (e.g. -s {name}=")


def test_good_values_pass():
    settings = Settings()
    settings.setmodule("sitewalk.settings", priority="project")
    for name, value in (("ROBOTSTXT_OBEY", "False"), ("LOG_LEVEL", "debug"), ("DOWNLOAD_DELAY", "0.5"),
                        ("DOWNLOAD_TIMEOUT", "2.5"), ("CONCURRENT_REQUESTS", "8"), ("RETRY_HTTP_CODES", "500,503"),
                        ("SITEWALK_RENDER_TIMEOUT", "7.5"), ("LOG_LEVEL", 10)):
        settings.set(name, value, priority="cmdline")
    check_settings(settings)


@pytest.mark.parametrize("command", ["sitewalk", "scrapy crawl"])
@pytest.mark.parametrize("name", documented())
def test_a_documented_setting_with_a_bad_value_is_one_line_and_exit_2(make_site, tmp_path, command, name):
    site = make_site(SITE)
    value, takes = BAD[setting_types()[name]]
    (tmp_path / "out.jsonl").write_text("an earlier walk's\n")
    if command == "sitewalk":
        result = run_sitewalk(site("/"), "-s", f"{name}={value}", "-o", "out.jsonl", *allow_loopback(), cwd=tmp_path)
    else:
        result = run_cli("-a", f"seed={site('/')}", "-s", f"{name}={value}", "-O", "out.jsonl", *allow_loopback(),
                         cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    if name in BY_ITS_COMPONENT:
        assert line.startswith(f"sitewalk: error: {BY_ITS_COMPONENT[name]}"), line
    elif setting_types()[name] is dict and command == "scrapy crawl":
        # Scrapy's own refusal, before sitewalk sees the value: one line too.
        assert line == "sitewalk: error: Invalid -s value, use -s NAME=VALUE"
    else:
        assert line.startswith(f"sitewalk: error: -s {name}={value}: {name} takes {takes}"), line
    assert site.requests() == []
    assert (tmp_path / "out.jsonl").read_text() == "an earlier walk's\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--report", "x.json", "-o", "x.json"],
         "output 'x.json' and --report 'x.json' are the same file"),
        (["--junit", "r.xml", "--html-report", "r.xml"],
         "--html-report 'r.xml' and --junit 'r.xml' are the same file"),
        (["--junit", "sub/../r.xml", "--report", "r.xml"],
         "--report 'r.xml' and --junit 'sub/../r.xml' are the same file"),
        (["--report", "link.json", "--junit", "real.json"],
         "--report 'link.json' and --junit 'real.json' are the same file"),
        (["--save-dir", "site", "-o", "site/pages.jsonl"],
         "output 'site/pages.jsonl' is inside --save-dir 'site', where the walk writes files of its own"),
        (["--jobdir", "job", "--report", "job/report.json"],
         "--report 'job/report.json' is inside -s JOBDIR=job, where the walk writes files of its own"),
        (["--jobdir", "out", "--save-dir", "out/pages"],
         "--save-dir 'out/pages' and -s JOBDIR=out overlap"),
        (["--report", "missing/r.json"], "report 'missing/r.json' is in a directory that does not exist"),
        (["--junit", "real.json/r.xml"], "junit 'real.json/r.xml' is in a directory that does not exist ('real.json')"),
    ],
    ids=["report-o", "junit-html", "dotdot", "symlink", "save-dir", "jobdir", "dirs", "missing", "under-a-file"],
)
def test_outputs_that_collide_or_cannot_be_written_are_refused(make_site, tmp_path, args, message):
    site = make_site(SITE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "real.json").write_text("kept\n")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    before = sorted(path.name for path in tmp_path.rglob("*"))
    result = run_sitewalk(site("/"), *args, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"sitewalk: error: {message}"), line
    assert site.requests() == []
    assert sorted(path.name for path in tmp_path.rglob("*")) == before
    assert (tmp_path / "real.json").read_text() == "kept\n"


def test_scrapy_crawl_refuses_outputs_that_collide(make_site, tmp_path):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "report=x.json", "-O", "x.json", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"sitewalk: error: output 'x.json' and -a report 'x.json' are the same file ({str(tmp_path / 'x.json')!r}): "
        "give each output its own file"
    ]
    assert site.requests() == []
    assert not (tmp_path / "x.json").exists()
