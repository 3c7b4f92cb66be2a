"""A walk's job files: scrapyd output paths and the JOBDIR journal a resumed walk goes on from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scrapy.settings import Settings

from sitewalk import jobs
from sitewalk.config import WalkConfig
from sitewalk.exceptions import SitewalkError
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


def entry(**changes):
    """One journal line: nothing changed but what ``changes`` names."""
    return {"queued": [], "seen": [], "held": [], "done": [], "origin": None, "failures": [], "robots_skipped": [],
            "consumers": {}, "pages": 0, "bytes": 0, "elapsed": 0.0, "feeds": {}, **changes}


def config(seed: str = SEED, **arguments: object) -> WalkConfig:
    return WalkConfig.from_mapping({"seed": seed, **arguments})


def journal_of(tmp_path, *entries, seed=SEED, **arguments):
    settings = Settings({"JOBDIR": str(tmp_path / "job")})
    journal = jobs.Journal(jobs.journal_path(settings), config(seed, **arguments), resume=False)
    for line in entries:
        journal.append(line)
    journal.close()
    return settings


def test_a_replayed_journal_gives_the_unfinished_queue_in_order_and_what_was_spent(tmp_path):
    failure = {"url": SEED + "x", "kind": "timeout", "reason": "timed out after 1s", "found_on": SEED}
    settings = journal_of(
        tmp_path,
        entry(queued=[[SEED, 0, None]], done=[SEED], origin="http://site.test", pages=1, bytes=100, elapsed=0.5),
        entry(queued=[[SEED + "a", 1, SEED], [SEED + "b", 1, SEED], [SEED + "x", 1, SEED]], seen=[SEED + "moved"],
              done=[SEED + "x"], failures=[failure], pages=2, bytes=300, elapsed=1.5, feeds={"out.jsonl": 80},
              consumers={"grep": 2}),
        # Page b was consumed before a (in hand at the last line): a is fetched again, b is not.
        entry(done=[SEED + "b"], held=[[[SEED + "deep"], 2, SEED + "b"]], pages=3, bytes=400, elapsed=2.0,
              feeds={"out.jsonl": 120}, consumers={"grep": 3}),
    )
    state = jobs.replay(settings, config())
    assert state is not None
    assert state.queue == [(SEED + "a", 1, SEED)]
    assert state.seen >= {SEED, SEED + "a", SEED + "b", SEED + "x", SEED + "moved"}
    assert state.origin == "http://site.test" and state.failures == [failure]
    # Counts and sizes are the last line's.
    assert (state.pages, state.bytes, state.elapsed, state.consumers) == (3, 400, 2.0, {"grep": 3})
    assert state.feeds == {"out.jsonl": 120} and state.held == [([SEED + "deep"], 2, SEED + "b")]

    walk = Walk.of(walk_for(SEED, max_depth=2))
    walk.restore(state)
    # The held link joins the queue when max_depth reaches it, after the queue left.
    assert walk.frontier.unvisited() == [SEED + "a", SEED + "deep"]
    assert (walk.ledger.pages, walk.ledger.bytes) == (3, 400) and walk.ledger.elapsed() >= 2.0
    assert [restored.record() for restored in walk.results.failures] == [failure]
    shallow = Walk.of(walk_for(SEED, max_depth=1))
    shallow.restore(state)
    assert shallow.frontier.unvisited() == [SEED + "a"]


def test_a_line_cut_short_by_a_crash_did_not_happen(tmp_path):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], origin="http://site.test"))
    path = jobs.journal_path(settings)
    with path.open("ab") as file:
        file.write(b'{"queued": [["http://site.test/a", 1')
    state = jobs.replay(settings, config())
    assert state is not None and state.queue == [(SEED, 0, None)]
    # Appending again starts on a line of its own.
    journal = jobs.Journal(path, config(), resume=True)
    journal.append(entry(done=[SEED], pages=1))
    journal.close()
    state = jobs.replay(settings, config())
    assert state is not None and state.queue == [] and state.pages == 1


def test_another_seeds_jobdir_is_refused_naming_it(tmp_path):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], origin="http://site.test"))
    with pytest.raises(SitewalkError, match=r"JOBDIR .*job holds the walk of http://site.test/, not of http://other.test/"):
        jobs.replay(settings, config("http://other.test/"))
    with pytest.raises(SitewalkError, match="give the walk another JOBDIR"):
        jobs.check_jobdir(settings, config("http://other.test/"))
    jobs.check_jobdir(settings, config())


@pytest.mark.parametrize(("content", "why"), [
    (None, "seed was never fetched"),
    (b"not json\n", "unreadable or from another sitewalk version"),
])
def test_a_journal_that_cannot_be_resumed_starts_the_walk_over_saying_why(tmp_path, caplog, content, why):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], done=[SEED], pages=1))
    if content is not None:
        jobs.journal_path(settings).write_bytes(content)
    with caplog.at_level("INFO"):
        assert jobs.replay(settings, config()) is None
    assert why in caplog.text
    assert jobs.replay(Settings(), config()) is None  # no JOBDIR


def test_feeds_are_cut_back_to_the_size_the_journal_gives(tmp_path, caplog):
    longer, shorter = tmp_path / "longer.jsonl", tmp_path / "shorter.jsonl"
    longer.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    shorter.write_bytes(b"{}\n")
    jobs.cut_feeds({"longer.jsonl": longer, "shorter.jsonl": shorter}, {"longer.jsonl": 9, "shorter.jsonl": 10})
    assert longer.read_bytes() == b'{"a": 1}\n'
    assert shorter.read_bytes() == b"{}\n"
    assert "shorter than the walk's journal says" in caplog.text


def test_a_damaged_line_is_said_once_and_the_journal_cut_there(tmp_path, caplog):
    settings = journal_of(
        tmp_path,
        entry(queued=[[SEED, 0, None], [SEED + "a", 1, SEED]], done=[SEED], origin="http://site.test", pages=1),
        entry(done=[SEED + "a"], pages=2),
        entry(pages=3),
    )
    path = jobs.journal_path(settings)
    lines = path.read_bytes().split(b"\n")
    lines[2] = b'{"done": ["http://site.test/a"], "pag'  # the second entry, damaged in the middle
    path.write_bytes(b"\n".join(lines))
    with caplog.at_level("INFO"):
        state = jobs.replay(settings, config())
    assert state is not None and state.queue == [(SEED + "a", 1, SEED)] and state.pages == 1
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"JOBDIR {path.parent}: line 3 of its journal cannot be read; the walk goes on from the line before it, "
        "and the pages done in the 2 lines after it are fetched again (the journal is cut there)"
    ]
    # Repaired: the next replay reads every line there is, and says nothing.
    caplog.clear()
    assert len(path.read_bytes().splitlines()) == 2
    assert jobs.replay(settings, config()).queue == [(SEED + "a", 1, SEED)]  # type: ignore[union-attr]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


@pytest.mark.parametrize(("given", "message"), [
    ({"grep": "other"}, "holds a walk with grep='needle', not grep='other'"),
    ({"grep": "needle", "ignore_case": True}, "holds a walk with ignore_case=False, not ignore_case=True"),
    ({}, "holds a walk with grep='needle', not grep=None"),
])
def test_a_rerun_with_another_consumer_is_refused_naming_what_differs(tmp_path, given, message):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], origin="http://site.test"), grep="needle")
    with pytest.raises(SitewalkError, match=re.escape(message) + ": its feed would mix the two"):
        jobs.check_jobdir(settings, config(**given))
    jobs.check_jobdir(settings, config(grep="needle"))
