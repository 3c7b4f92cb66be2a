"""The ledger: what counts as a page and as a byte, its invariants, its events, its clock, and the
progress line it tells a person; unit tests on a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sitewalk.config import WalkConfig
from sitewalk.kinds import KIND, WIRE_BYTES, Kind
from sitewalk.ledger import BytesSpent, Ledger
from sitewalk.tickets import TICKET, Ticket
from tests.clock import FakeClock


def ledger_for(queued: Any = lambda: 0, clock: FakeClock | None = None, **limits: Any) -> Ledger:
    return Ledger(WalkConfig(seed="http://site.test/", **limits), clock or FakeClock(), queued=queued)


def tickets(count: int) -> list[Ticket]:
    async def made() -> list[Ticket]:
        made: list[Ticket] = []
        for number in range(1, count + 1):
            made.append(Ticket(number, f"http://site.test/{number}", True, made[-1] if made else None))
        return made

    return asyncio.run(made())


def test_a_page_holds_its_place_from_its_start_until_it_settles_or_is_released():
    ledger = ledger_for(max_pages=3)
    one, two, three = tickets(3)
    events: list[tuple[str, int]] = []
    ledger.listen(lambda event, ticket: events.append((event, ticket.number)))
    ledger.hold(one)
    ledger.hold(two)
    assert (ledger.pages, ledger.held, ledger.exhausted()) == (0, 2, None)
    ledger.hold(three)
    # Three requests sent: max_pages is reached before any page arrived.
    assert ledger.exhausted() == "max-pages"
    ledger.settle(one, depth=0)
    ledger.release(two)  # it failed: its place is free again
    assert (ledger.pages, ledger.held, ledger.exhausted()) == (1, 1, None)
    assert events == [("settle", 1), ("release", 2)]


def test_every_byte_is_charged_as_it_arrives_whatever_the_kind_and_a_page_knows_its_own():
    ledger = ledger_for(max_bytes=1000)
    (page,) = tickets(1)
    ledger.hold(page)
    page_meta: dict[str, Any] = {TICKET: page}
    robots_meta: dict[str, Any] = {KIND: Kind.ROBOTS}
    ledger.charge(robots_meta, 100)
    ledger.charge(page_meta, 150, coming=300)
    ledger.charge(page_meta, 300)
    assert (ledger.bytes, page_meta[WIRE_BYTES], robots_meta[WIRE_BYTES]) == (550, 450, 100)
    # The page is held: a walk resumed from here fetches it again, its bytes are not spent yet.
    assert ledger.settled_bytes() == 100
    ledger.settle(page, depth=0)
    assert ledger.settled_bytes() == 550


@pytest.mark.parametrize(
    ("charges", "refused_at", "spent"),
    [
        # Pieces of a body: the one that would pass max_bytes is cut, the bytes stop at max_bytes.
        ([(400, 0), (400, 0), (400, 0)], 2, 1000),
        # Headers announcing a body that cannot fit: cut before the body comes.
        ([(200, 0), (200, 900)], 1, 400),
        # Exactly max_bytes: nothing refused, but nothing more may start.
        ([(500, 0), (500, 0)], None, 1000),
    ],
)
def test_a_charge_past_max_bytes_is_refused_and_the_bytes_never_pass_it(charges, refused_at, spent):
    ledger = ledger_for(max_bytes=1000)
    refused = None
    for number, (byte_count, coming) in enumerate(charges):
        try:
            ledger.charge({}, byte_count, coming=coming)
        except BytesSpent as exc:
            refused = number
            assert str(exc).startswith("cut off at max_bytes (max_bytes=1000, ")
            break
    assert refused == refused_at
    assert ledger.bytes == spent <= ledger.max_bytes
    assert ledger.exhausted() == "max-bytes"
    ledger.check()


def test_the_first_refusal_is_told_once():
    told: list[str] = []
    ledger = Ledger(WalkConfig(seed="http://site.test/", max_bytes=10), FakeClock(), refused=lambda: told.append("spent"))
    for _ in range(3):
        with pytest.raises(BytesSpent):
            ledger.charge({}, 11)
    # A status line's reason, counted once the answer is whole, is never refused and never passes max_bytes.
    ledger.charge({}, 2, refusable=False)
    assert told == ["spent"] and ledger.bytes == 10


def test_the_invariants_hold_through_any_sequence_of_events():
    import random

    rng = random.Random(31)
    for _ in range(200):
        ledger = ledger_for(max_pages=rng.randint(1, 6), max_bytes=rng.randint(1, 5000))
        pending = tickets(8)
        held: list[Ticket] = []
        for _ in range(30):
            step = rng.random()
            if step < 0.3 and pending and not ledger.exhausted():
                ticket = pending.pop(0)
                ledger.hold(ticket)
                held.append(ticket)
            elif step < 0.7 and held:
                try:
                    ledger.charge({TICKET: rng.choice(held)}, rng.randint(0, 2000), coming=rng.choice([0, 500]))
                except BytesSpent:
                    assert ledger.refused
            elif held:
                ticket = held.pop(rng.randrange(len(held)))
                if rng.random() < 0.5:
                    ledger.settle(ticket, depth=1)
                else:
                    ledger.release(ticket)
            ledger.check()
            assert ledger.pages + ledger.held <= ledger.max_pages
            assert ledger.bytes <= ledger.max_bytes
            assert 0 <= ledger.settled_bytes() <= ledger.bytes


def test_the_deadline_is_on_the_walks_clock():
    clock = FakeClock()
    ledger = ledger_for(clock=clock, deadline=10)
    ledger.start_clock()
    clock.advance(9.5)
    assert ledger.seconds_left() == pytest.approx(0.5) and ledger.exhausted() is None
    clock.advance(0.5)
    assert ledger.exhausted() == "deadline"
    # A resumed walk goes on from the time its journal says was spent.
    ledger.resume(0, 0, 4.0)
    ledger.start_clock()
    assert ledger.elapsed() == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("limits", "spent", "rate", "queued", "expected"),
    [
        # Enough pages queued to reach max_pages: that many more at the walk's pace.
        ({"max_pages": 20}, (10, 1000), 2.0, 15, (5.0, "max-pages")),
        ({"max_pages": 20}, (10, 1000), 2.0, 10, (5.0, "max-pages")),
        # Too few queued: the walk may run out of pages first, so no estimate.
        ({"max_pages": 20}, (10, 1000), 2.0, 9, None),
        # The queued pages, at the pages' mean size so far, would pass max_bytes.
        ({"max_pages": 1000, "max_bytes": 100_000}, (10, 50_000), 2.0, 20, (5.0, "max-bytes")),
        ({"max_pages": 1000, "max_bytes": 100_000}, (10, 50_000), 2.0, 9, None),
        ({}, (0, 0), 0.0, 50, None),
    ],
)
def test_time_left_names_the_limit_that_will_end_the_walk(limits, spent, rate, queued, expected):
    ledger = ledger_for(**limits)
    ledger.resume(spent[0], spent[1], 5.0)
    assert ledger.time_left(rate, queued) == expected


def test_time_left_is_the_deadline_when_the_queue_outlasts_it():
    ledger = ledger_for(max_pages=1000, deadline=60)
    ledger.resume(10, 1000, 5.0)
    seconds, reason = ledger.time_left(2.0, 500)
    assert reason == "deadline" and 54 < seconds <= 55
    assert ledger.time_left(2.0, 100) is None  # 50 s of pages: done before the deadline


def test_progress_line(caplog):
    ledger = ledger_for(max_pages=20, max_depth=2, queued=lambda: 30)
    ledger.resume(10, 1_234_567, 5.0)
    with caplog.at_level("INFO", logger="sitewalk.ledger"):
        ledger.log_progress()
    (line,) = caplog.messages
    assert line.startswith("progress: pages 10/20, depth 0/2, 1.2 MB/20 MB, elapsed 5.0s/60s, 2.0 pages/s, 30 queued, about 5.0s left (max-pages)")


@pytest.mark.parametrize(
    ("config", "spent", "ending"),
    [
        # The last page: max_pages is reached, no time to tell.
        ({"max_pages": 10}, (10, 1000, 5.0), ", max-pages reached"),
        # Past the deadline (the last page arrived late): not "about -0.0s left".
        ({"max_pages": 100, "deadline": 4}, (10, 1000, 5.0), ", deadline reached"),
    ],
)
def test_a_limit_reached_is_said_so_in_the_progress_line(caplog, config, spent, ending):
    ledger = ledger_for(**config, queued=lambda: 500)
    ledger.resume(*spent)
    with caplog.at_level("INFO", logger="sitewalk.ledger"):
        ledger.log_progress()
    (line,) = caplog.messages
    assert line.endswith(ending) and "-0" not in line


