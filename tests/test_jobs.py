"""A walk's job files: scrapyd output paths and the JOBDIR state a resumed walk goes on from."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings

from sitewalk import jobs
from sitewalk.state import Walk
from tests.conftest import walk_for

SEED = "http://site.test/"


def test_a_scrapyd_job_without_feeds_gets_its_own(tmp_path):
    settings = Settings({"SITEWALK_JOBS_DIR": str(tmp_path / "jobs")})
    assert jobs.job_feeds(settings, "j1") == {str(tmp_path / "jobs" / "sitewalk" / "j1.jsonl"): {"format": "jsonlines"}}
    assert jobs.job_feeds(Settings({"FEEDS": {"items/j1.jl": {}}}), "j1") is None


@pytest.mark.parametrize(
    ("feeds", "report", "job", "expected"),
    [
        ({"items/sitewalk/sitewalk/j1.jl": {}}, None, "j1", "items/sitewalk/sitewalk/j1.report.json"),
        ({"file:///{tmp}/items/j1.jl": {}}, None, "j1", "{tmp}/items/j1.report.json"),
        ({"s3://bucket/j1.jl": {}}, None, "j1", "jobs/sitewalk/j1.report.json"),
        ({}, None, "j1", "jobs/sitewalk/j1.report.json"),
        ({"items/j1.jl": {}}, "mine.json", "j1", "mine.json"),
        ({}, None, None, None),
    ],
)
def test_where_the_report_goes(tmp_path, monkeypatch, feeds, report, job, expected):
    monkeypatch.chdir(tmp_path)
    feeds = {uri.replace("{tmp}", str(tmp_path).lstrip("/")): options for uri, options in feeds.items()}
    settings = Settings({"FEEDS": feeds, "SITEWALK_JOBS_DIR": "jobs"})
    path = jobs.report_path(settings, report, job)
    assert path == (expected.replace("{tmp}", str(tmp_path)) if expected else None)
    if path is not None and report is None:
        assert Path(path).parent.is_dir()


def test_the_state_of_an_unfinished_walk_is_kept_for_the_same_seed(tmp_path):
    settings = Settings({"JOBDIR": str(tmp_path / "job")})
    crawler = walk_for(SEED)
    walk = Walk.of(crawler)
    walk.frontier.add_seed(SEED)
    walk.budget.resume(3, 1200, 4.5)
    walk.results.failures.append({"url": SEED + "x", "reason": "timed out after 1s", "found_on": SEED})
    jobs.save_state(settings, walk.snapshot(4.5), finished=False)
    state = jobs.load_state(settings, SEED)
    assert state is not None
    again = Walk.of(walk_for(SEED))
    again.restore(state)
    assert again.resumed and again.frontier.unvisited() == [SEED]
    assert (again.budget.pages, again.budget.bytes) == (3, 1200) and again.budget.elapsed() >= 4.5
    assert again.results.failures == walk.results.failures
    assert jobs.load_state(settings, "http://other.test/") is None  # another walk's JOBDIR


def test_a_finished_walk_leaves_nothing_to_resume(tmp_path):
    settings = Settings({"JOBDIR": str(tmp_path / "job")})
    jobs.save_state(settings, Walk.of(walk_for(SEED)).snapshot(1.0), finished=True)
    assert (tmp_path / "job" / "sitewalk.state").exists()
    assert jobs.load_state(settings, SEED) is None
    assert jobs.load_state(Settings(), SEED) is None  # no JOBDIR
