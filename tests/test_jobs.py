"""A walk's job files: scrapyd output paths and the JOBDIR journal a resumed walk goes on from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scrapy.settings import Settings

from sitewalk import jobs
from sitewalk.config import WalkConfig
from sitewalk.exceptions import SitewalkError
from sitewalk.items import count
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


@pytest.mark.parametrize("cut", [None, b'{"queued":[["http://site.test/a",1'])
def test_a_journal_whose_seed_was_never_fetched_starts_the_walk_over_saying_why(tmp_path, caplog, cut):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], done=[SEED], pages=1))
    if cut is not None:  # the seed's line, cut short by a kill
        path = jobs.journal_path(settings)
        path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n" + cut)
    with caplog.at_level("INFO"):
        assert jobs.replay(settings, config()) is None
    assert "seed was never fetched: starting over" in caplog.text
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
        f"JOBDIR {path.parent}: its journal cannot be read at line 3 (not JSON); resuming from line 2 of 4: 1 page done, "
        "1 queued; the pages done after it are fetched again (the report's refetched counts them), and the journal is cut there"
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


A, B, C = SEED + "a", SEED + "b", SEED + "c"


def four_pages(tmp_path):
    """A journal of the seed and its three links, each done on a line of its own (lines 2 to 5)."""
    return journal_of(
        tmp_path,
        entry(queued=[[SEED, 0, None], [A, 1, SEED], [B, 1, SEED], [C, 1, SEED]], done=[SEED], origin="http://site.test", pages=1),
        entry(done=[A], pages=2, feeds={"out.jsonl": 20}),
        entry(done=[B], pages=3, feeds={"out.jsonl": 40}),
        entry(done=[C], pages=4, feeds={"out.jsonl": 60}),
    )


def damage(path: Path, number: int, line: bytes | None, *, newline: bool = True) -> None:
    """Line ``number`` (from 1) of the journal replaced by ``line`` (None: removed); with
    ``newline`` false, the file's last newline gone."""
    lines = path.read_bytes().split(b"\n")[:-1]
    if line is None:
        del lines[number - 1]
    else:
        lines[number - 1] = line
    path.write_bytes(b"\n".join(lines) + (b"\n" if newline else b""))


def line_of(**changes: object) -> bytes:
    return json.dumps(entry(**changes), separators=(",", ":")).encode()


# Each kind of damage after the header: the line damaged, what it becomes; what replay keeps
# (the last line read, the queue left, the pages done then), the pages lost, and what it says.
RECOVERED = [
    pytest.param(5, b'{"queued":[],"seen":[],"held":[],"done":["http://site.test/c"],"ori', False,
                 4, [C], 3, {C}, "INFO", "its journal's last line (line 5) was cut short as the walk ended; "
                 "resuming from line 4 of 5: 3 pages done, 1 queued", id="last-line-cut-after-its-done"),
    pytest.param(5, b'{"queued":[],"seen":[],"held":[],"done":["http://site.te', False,
                 4, [C], 3, set(), "INFO", "its journal's last line (line 5) was cut short", id="last-line-cut-in-its-done"),
    pytest.param(5, line_of(done=[C], pages=4), False,
                 4, [C], 3, {C}, "INFO", "its journal's last line (line 5) was cut short", id="last-line-without-newline"),
    pytest.param(4, b"\x00\x00\x00garbage", True,
                 3, [B, C], 2, {C}, "WARNING", "its journal cannot be read at line 4 (not JSON); resuming from line 3 "
                 "of 5: 2 pages done, 2 queued; the pages done after it are fetched again", id="not-json"),
    pytest.param(4, b"[1, 2]", True, 3, [B, C], 2, {C}, "WARNING", "at line 4 (not a JSON object)", id="not-an-object"),
    pytest.param(4, b"", True, 3, [B, C], 2, {C}, "WARNING", "at line 4 (empty)", id="empty-line"),
    pytest.param(4, line_of(done=[B], pages="3"), True,
                 3, [B, C], 2, {B, C}, "WARNING", "at line 4 ('pages' is not a count)", id="wrong-type"),
    pytest.param(4, line_of(done=[B], queued=[[SEED + "d", "1", B]]), True,
                 3, [B, C], 2, {B, C}, "WARNING", "at line 4 ('queued' is not a list of [url, depth, found_on])",
                 id="wrong-type-inside"),
    pytest.param(4, line_of(done=[B], pages=3)[:-1] + b',"bytes":"x"}', True,
                 3, [B, C], 2, {B, C}, "WARNING", "at line 4 ('bytes' is not a count)", id="wrong-type-duplicate-key"),
    pytest.param(4, line_of(done=[B], pages=3).replace(b'"done":["http://site.test/b"],', b""), True,
                 3, [B, C], 2, {C}, "WARNING", "at line 4 (no 'done')", id="missing-field"),
    pytest.param(4, line_of(done=[B], pages=3, feeds={"out\udcff": 1}).replace(b"\\udcff", b"\xff"), True,
                 3, [B, C], 2, {B, C}, "WARNING", "at line 4 (not UTF-8)", id="not-utf-8"),
]


@pytest.mark.parametrize(("number", "line", "newline", "kept", "queue", "pages", "lost", "level", "said"), RECOVERED)
def test_a_damaged_journal_resumes_from_the_last_line_before_the_damage_and_says_so(
    tmp_path, caplog, number, line, newline, kept, queue, pages, lost, level, said
):
    settings = four_pages(tmp_path)
    path = jobs.journal_path(settings)
    damage(path, number, line, newline=newline)
    size = path.stat().st_size
    with caplog.at_level("INFO"):
        state = jobs.replay(settings, config())
    assert state is not None
    assert state.queue == [(url, 1, SEED) for url in queue] and state.pages == pages and state.lost == lost
    assert state.feeds == ({"out.jsonl": 20 * (pages - 1)} if pages > 1 else {})
    said_lines = [r for r in caplog.records if "its journal" in r.getMessage()]
    assert len(said_lines) == 1 and said_lines[0].levelname == level
    message = said_lines[0].getMessage()
    assert message.startswith(f"JOBDIR {settings['JOBDIR']}: ") and said in message
    assert f"resuming from line {kept} of 5: {count(pages, 'page')} done, {len(queue)} queued" in message
    if level == "WARNING":
        # Cut after the last line read: this walk's lines follow it, and the next rerun reads them.
        assert path.read_bytes().count(b"\n") == kept
    else:
        # A line cut short is left to the journal, which drops it when it opens (the walk may yet be refused).
        assert path.stat().st_size == size


def test_every_damaged_line_is_named_in_the_one_warning(tmp_path, caplog):
    settings = four_pages(tmp_path)
    path = jobs.journal_path(settings)
    damage(path, 3, b"garbage")
    damage(path, 5, b"[]")
    state = jobs.replay(settings, config())
    # Line 4 names its page; neither damaged line can say which page it was.
    assert state is not None and state.lost == {B}
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "at line 3 (not JSON); line 5 after it is damaged too; resuming from line 2 of 5" in warning


@pytest.mark.parametrize(("content", "why"), [
    (b"", "its journal (sitewalk.journal) is empty"),
    (b'{"journal":1,"seed":"http://si', "its journal (sitewalk.journal) has only its first line, cut short"),
    (b"not json\n", "does not start with a sitewalk journal's header (line 1 is not JSON)"),
    (b'{"journal":1,"seed":"http://site.test/\xff"}\n', "(line 1 is not UTF-8)"),
    (b"[1]\n", "(line 1 is not a JSON object)"),
    (line_of(done=[SEED], origin="http://site.test") + b"\n", "(line 1 is another JSON object)"),
    (b'{"journal":2,"seed":"http://site.test/"}\n', "is of another sitewalk (journal version 2, this one reads 1)"),
])
def test_a_journal_without_a_readable_header_is_refused_naming_jobdir_and_what_to_do(tmp_path, content, why):
    settings = journal_of(tmp_path, entry(queued=[[SEED, 0, None]], done=[SEED], origin="http://site.test", pages=1))
    path = jobs.journal_path(settings)
    path.write_bytes(content)
    jobdir = settings["JOBDIR"]
    expected = f"JOBDIR {jobdir}: " + r".*" + re.escape(why) + r".*" + re.escape(
        f": nothing in it can be resumed; delete {jobdir} to start the walk over, or give the walk another JOBDIR")
    with pytest.raises(SitewalkError, match=expected):
        jobs.check_jobdir(settings, config())
    with pytest.raises(SitewalkError, match=expected):
        jobs.replay(settings, config())
    assert path.read_bytes() == content


def test_a_journal_damaged_before_the_seeds_line_is_refused(tmp_path):
    settings = four_pages(tmp_path)
    path = jobs.journal_path(settings)
    damage(path, 2, b"garbage")
    content = path.read_bytes()
    jobdir = settings["JOBDIR"]
    with pytest.raises(SitewalkError, match=re.escape(
        f"JOBDIR {jobdir}: its journal cannot be read at line 2 (not JSON), before the walk's first page is recorded: "
        f"nothing in it can be resumed; delete {jobdir} to start the walk over"
    )):
        jobs.replay(settings, config())
    assert path.read_bytes() == content
