"""The walk's outputs: checked before the first request, and left as they were when the seed fails."""

from __future__ import annotations

import pytest

from tests.conftest import allow_loopback, run_cli, run_sitewalk, start_cli, wait_for_pages

SITE = {"/": {"title": "Home", "links": ["/a"]}, "/a": {"title": "A"}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-o", "/proc/pages.jsonl"), "output '/proc/pages.jsonl' cannot be written (No such file or directory)"),
        (("-O", "/proc/pages.csv"), "output '/proc/pages.csv' cannot be written (No such file or directory)"),
        (("-o", "/sys/pages.json"), "output '/sys/pages.json' cannot be written (Permission denied)"),
        (("-O", "out/pages.jsonl"), "output 'out/pages.jsonl' is in a directory that does not exist ('out')"),
        (("-O", "pages.jsonl", "-a", "report=out/r.json"), "report 'out/r.json' is in a directory that does not exist ('out')"),
        (("-a", "report=/proc/r.json"), "report '/proc/r.json' cannot be written (No such file or directory)"),
    ],
)
def test_an_output_that_cannot_be_written_fails_before_any_request(make_site, tmp_path, args, message):
    site = make_site(SITE)
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", *allow_loopback(), *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"sitewalk: error: {message}: give a file path in an existing directory, "
                                          f"e.g. {'-a report=report.json' if 'report' in message else '-o pages.jsonl'}"]
    assert site.requests() == []
    # No directory was made, no file left.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["site0"]


def test_an_existing_file_is_written_in_place(make_site, tmp_path):
    site = make_site(SITE)
    (tmp_path / "pages.jsonl").write_text("old\n")
    result = run_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-o", "pages.jsonl", *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # -o appends (Scrapy's): the checks before the walk opened the file without changing it.
    assert (tmp_path / "pages.jsonl").read_text().splitlines()[0] == "old"
    assert len((tmp_path / "pages.jsonl").read_text().splitlines()) == 3


@pytest.mark.parametrize("name", ["pages.jsonl", "pages.json", "pages.csv", "pages.xml"])
def test_a_walk_whose_seed_fails_leaves_its_outputs_as_they_were(make_site, tmp_path, name):
    site = make_site(SITE)
    result = run_sitewalk(site("/"), "--delay", "0", "-o", name, *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    before = (tmp_path / name).read_bytes()
    assert site("/a").encode() in before
    # The same walk without the setting that lets it reach the site: the seed is refused.
    for run in (
        lambda: run_sitewalk(site("/"), "--delay", "0", "-o", name, cwd=tmp_path),
        lambda: run_cli("-a", f"seed={site('/')}", "-O", name, cwd=tmp_path),
    ):
        result = run()
        assert result.returncode == 1
        assert "could not be fetched: refused address 127.0.0.1" in result.stderr.splitlines()[-1]
        assert (tmp_path / name).read_bytes() == before
    assert len(site.paths()) == 2


def test_a_report_that_cannot_be_written_at_the_end_is_one_line_after_the_summary(make_site, tmp_path):
    site = make_site({"/": {"title": "Home", "links": ["/slow"]}, "/slow": {"title": "Slow", "sleep": 1}})
    (tmp_path / "out").mkdir()
    process = start_cli("-a", f"seed={site('/')}", "-a", "delay=0", "-a", "report=out/r.json", "-O", "pages.jsonl",
                        *allow_loopback(), cwd=tmp_path)
    wait_for_pages(site, 2, process)
    # The report's directory goes away while the walk runs.
    (tmp_path / "out").rmdir()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0
    lines = stderr.splitlines()
    assert "INFO: sitewalk: 2 pages, " in lines[-2]
    assert lines[-1].endswith("ERROR: sitewalk: the report could not be written to out/r.json: No such file or directory")
    assert "Traceback" not in stderr
