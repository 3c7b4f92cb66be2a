"""The gate: requests in flight, request order whatever the arrival order, the look-ahead bound, the
consumers' exact answers, cuts, the pace."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from sitewalk.gate import AHEAD, Gate
from sitewalk.items import Page
from sitewalk.kinds import KIND, Kind
from sitewalk.state import Walk
from sitewalk.tickets import Dropped, Ticket
from tests.clock import FakeClock
from tests.conftest import walk_for


def page() -> Page:
    return Page(url="u", final_url="u", status=200, byte_count=0, depth=0, content_type="text/html",
                title=None, found_on=None, headers={}, body=b"")


async def returns(awaitable: Any) -> bool:
    """Whether ``awaitable`` completes once everything else has had its turn."""
    task = asyncio.ensure_future(awaitable)
    for _ in range(5):
        await asyncio.sleep(0)
    if task.done():
        return True
    task.cancel()
    return False


def gate_for(**arguments: Any) -> Any:
    return Walk.of(walk_for(delay=0, **arguments)).gate


def consume(gate: Any, ticket: Ticket) -> None:
    """One item made of ``ticket``'s page, through the pipelines."""
    gate.item_out(ticket)
    gate.output_done(ticket)
    gate.item_done(ticket)


def arrived(gate: Any, path: str = "/") -> Ticket:
    """A request sent, and its page arrived."""
    ticket = gate.request_sent(f"http://site.test{path}")
    gate.page_arrived(ticket, page())
    return ticket


def test_a_request_in_flight_holds_the_next():
    async def scenario() -> None:
        gate = gate_for()
        ticket = gate.request_sent("http://site.test/")
        assert not await returns(gate.settled(lambda: False))
        gate.request_over(ticket)
        assert await returns(gate.settled(lambda: False))
        arrived(gate)
        assert await returns(gate.settled(lambda: False))

    asyncio.run(scenario())


def test_an_empty_frontier_waits_for_the_links_of_the_pages_in_hand():
    async def scenario() -> None:
        gate = gate_for()
        in_hand = arrived(gate)
        assert not await returns(gate.settled(lambda: True))
        assert await returns(gate.settled(lambda: False))  # a queued page may go meanwhile
        gate.links_admitted(in_hand)
        assert await returns(gate.settled(lambda: True))

    asyncio.run(scenario())


def test_a_consumer_that_may_stop_holds_the_walk_until_the_pages_are_consumed():
    asked: list[list[Page]] = []

    def may_stop(in_hand: Sequence[Ticket]) -> bool:
        asked.append([entry.page for entry in in_hand])
        return any(not entry.read for entry in in_hand) or len(in_hand) > 1

    async def scenario() -> None:
        gate = gate_for()
        gate.add_check(may_stop)
        one = arrived(gate, "/1")
        assert not await returns(gate.ready(60))  # not read yet: the answer is not known
        gate.page_read(one)
        assert await returns(gate.ready(60))  # read: the consumer says it will not stop on it
        assert asked[-1] == [one.page]
        two = arrived(gate, "/2")
        gate.page_read(two)
        assert not await returns(gate.ready(60))  # two pages in hand: it might
        consume(gate, one)
        assert await returns(gate.ready(60))
        assert len(asked[-1]) == 1

    asyncio.run(scenario())


def test_at_most_ahead_pages_in_hand():
    async def scenario() -> None:
        gate = gate_for()
        tickets = [arrived(gate, f"/{n}") for n in range(AHEAD)]
        assert await returns(gate.ready(60))
        arrived(gate, f"/{AHEAD}")
        assert not await returns(gate.ready(60))
        consume(gate, tickets[0])
        assert await returns(gate.ready(60))

    asyncio.run(scenario())


def test_pages_take_their_turns_in_fetch_order():
    async def scenario() -> list[str]:
        gate = gate_for()
        order: list[str] = []
        one, two = arrived(gate, "/1"), arrived(gate, "/2")

        async def later() -> None:
            await two.turn_to_admit()
            order.append("admit 2")
            gate.links_admitted(two)
            await two.turn_to_consume()
            order.append("consume 2")

        task = asyncio.ensure_future(later())
        await asyncio.sleep(0)
        order.append("admit 1")
        gate.links_admitted(one)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        order.append("consume 1")
        consume(gate, one)
        await task
        return order

    assert asyncio.run(scenario()) == ["admit 1", "admit 2", "consume 1", "consume 2"]


def test_a_page_is_consumed_when_each_of_its_items_is_through():
    async def scenario() -> None:
        gate = gate_for()
        in_hand = arrived(gate)
        gate.item_out(in_hand)
        gate.item_out(in_hand)
        gate.item_done(in_hand)
        gate.output_done(in_hand)
        assert not in_hand.consumed.done()
        gate.item_done(in_hand)
        assert in_hand.consumed.done() and in_hand.admitted.done()

    asyncio.run(scenario())


def test_the_pace_counts_from_the_previous_request_start():
    async def scenario() -> float:
        clock = FakeClock()
        gate = Gate(0.2, clock=clock)
        started = gate.request_started()
        clock.advance(0.05)
        await gate.ready(60)
        return clock.now() - started

    assert asyncio.run(scenario()) == pytest.approx(0.2)


def test_crawl_delay_only_slows_the_walk_down():
    gate = Gate(0.5, clock=FakeClock())
    assert gate.slow_down(0.1) is False and gate.crawl_delay == 0
    assert gate.slow_down(1.5) is True and gate.crawl_delay == 1.5
    assert gate.slow_down(1.0) is False and gate.crawl_delay == 1.5
    assert gate.delay == 0.5  # the set-up keeps the user's pace


def test_crawl_delay_paces_the_walk_from_the_seed_on_not_its_set_up():
    """robots.txt starts, its Crawl-delay is parsed: the seed follows robots.txt after ``delay``,
    the next page ``crawl_delay`` after the seed, and a robots.txt of another host ``delay`` after."""

    async def scenario() -> list[tuple[str, float]]:
        clock = FakeClock(start=0.0)
        gate = Gate(0.5, clock=clock)
        starts = []
        for name, meta in (("robots", {KIND: Kind.ROBOTS}), ("seed", {}), ("page", {}),
                           ("robots of another host", {KIND: Kind.ROBOTS}), ("page", {}),
                           ("check on another origin", {KIND: Kind.CHECK_OTHER})):
            await gate.start(meta)
            starts.append((name, meta["sitewalk_started"]))
            if name == "robots":
                gate.slow_down(30)
        return starts

    assert asyncio.run(scenario()) == [
        ("robots", 0.0), ("seed", 0.5), ("page", 30.5), ("robots of another host", 31.0), ("page", 60.5),
        # Paced by the link checker per host, not by the gate.
        ("check on another origin", 60.5),
    ]


def test_a_pause_holds_every_start_and_belongs_to_the_requests_in_flight_when_it_began():
    async def scenario() -> tuple[bool, bool, float]:
        clock = FakeClock(start=0.0)
        gate = Gate(0, clock=clock)
        before = gate.request_started()
        clock.advance(1)
        began = gate.pause(10, before)
        # An answer to a request that started before this pause: it starts no other.
        again = gate.pause(20, before)
        robots: dict[str, Any] = {KIND: Kind.ROBOTS}
        await gate.start(robots)
        return began, again, robots["sitewalk_started"]

    assert asyncio.run(scenario()) == (True, False, 11.0)


def test_a_stop_wakes_every_wait():
    async def scenario() -> None:
        gate = gate_for()
        gate.add_check(lambda pages: True)
        gate.request_sent("http://site.test/")
        waits = [asyncio.ensure_future(gate.settled(lambda: True)), asyncio.ensure_future(gate.ready(60))]
        for _ in range(5):
            await asyncio.sleep(0)
        assert not any(wait.done() for wait in waits)
        gate.stop()
        await asyncio.gather(*waits)

    asyncio.run(scenario())


def test_several_requests_in_flight_up_to_the_concurrency():
    async def scenario() -> None:
        gate = Gate(0, concurrency=3)
        tickets = [gate.request_sent(f"http://site.test/{n}") for n in range(3)]
        assert gate.in_flight == 3
        assert not await returns(gate.settled(lambda: False))
        gate.page_arrived(tickets[1], page())
        assert await returns(gate.settled(lambda: False))

    asyncio.run(scenario())


def test_pages_take_their_turns_in_request_order_whatever_order_they_arrive_in():
    async def scenario() -> list[str]:
        gate = Gate(0, concurrency=3)
        tickets = [gate.request_sent(f"http://site.test/{n}") for n in range(3)]
        order: list[str] = []

        async def walk_page(ticket: Ticket) -> None:
            gate.page_arrived(ticket, page())
            await ticket.turn_to_admit()
            order.append(f"admit {ticket.number}")
            gate.links_admitted(ticket)
            await ticket.turn_to_consume()
            order.append(f"consume {ticket.number}")
            consume(gate, ticket)

        # The last request's page arrives first, the first request's last.
        tasks = [asyncio.ensure_future(walk_page(ticket)) for ticket in reversed(tickets)]
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(scenario())
    assert [step for step in order if step.startswith("admit")] == ["admit 1", "admit 2", "admit 3"]
    assert [step for step in order if step.startswith("consume")] == ["consume 1", "consume 2", "consume 3"]


def test_a_request_that_ends_without_a_page_is_done_at_its_turn():
    async def scenario() -> list[str]:
        gate = Gate(0, concurrency=2)
        first, second = gate.request_sent("http://site.test/1"), gate.request_sent("http://site.test/2")
        done: list[str] = []
        gate.when_done(lambda ticket: done.append(ticket.url))
        gate.request_over(second, lambda: done.append("failure recorded"))
        assert done == []  # the first is not done yet
        gate.page_arrived(first, page())
        gate.links_admitted(first)
        consume(gate, first)
        return done

    assert asyncio.run(scenario()) == ["http://site.test/1", "failure recorded", "http://site.test/2"]


def test_a_cut_drops_the_requests_after_a_ticket_and_lists_them_in_request_order():
    async def scenario() -> tuple[list[str], list[str], bool]:
        gate = Gate(0, concurrency=4)
        tickets = [gate.request_sent(f"http://site.test/{n}") for n in range(1, 5)]
        gate.page_arrived(tickets[0], page())
        gate.page_arrived(tickets[2], page())
        dropped_turn = asyncio.ensure_future(tickets[2].turn_to_admit())
        download = asyncio.ensure_future(tickets[3].unless_dropped(asyncio.sleep(3600)))
        await asyncio.sleep(0)
        gate.cut(after=2)
        outcome: list[str] = []
        for wait in (dropped_turn, download):
            try:
                await wait
            except Dropped:
                outcome.append("dropped")
        # The pages before the cut go on: the first is consumed, the second ends without a page.
        await tickets[0].turn_to_admit()
        gate.links_admitted(tickets[0])
        await tickets[0].turn_to_consume()
        consume(gate, tickets[0])
        gate.request_over(tickets[1])
        gate.output_done(tickets[2])
        gate.request_over(tickets[3])
        return outcome, gate.dropped(), gate.busy()

    outcome, dropped, busy = asyncio.run(scenario())
    assert outcome == ["dropped", "dropped"]
    assert dropped == ["http://site.test/3", "http://site.test/4"]
    assert not busy


def test_a_stop_ends_the_pace_wait_at_once():
    async def scenario() -> float:
        clock = FakeClock()
        gate = Gate(0, clock=clock)
        gate.slow_down(30)
        started = gate.request_started()
        waiting = asyncio.ensure_future(gate.ready(60))
        gate.stop()
        await waiting
        return clock.now() - started

    assert asyncio.run(scenario()) == 0


def test_a_start_waits_for_the_pace_and_a_stop_drops_a_page_request_not_another():
    """What every request to the site passes before it goes to the network (the budget
    middleware, the download handler's re-send): the pace, then a stop's drop, then its start."""
    from sitewalk.tickets import TICKET

    async def scenario() -> tuple[float, float, bool, bool]:
        clock = FakeClock(start=0.0)
        gate = Gate(0.2, clock=clock)
        gate.request_started()
        paced: dict[str, Any] = {}
        await gate.start(paced)
        other: dict[str, Any] = {KIND: Kind.CHECK_OTHER}
        await gate.start(other)  # a link check to another site: its own pace
        ticket = gate.request_sent("http://site.test/a")
        gate.stop()
        dropped = False
        try:
            await gate.start({TICKET: ticket})
        except Dropped:
            dropped = True
        robots: dict[str, Any] = {KIND: Kind.ROBOTS}
        await gate.start(robots)  # no ticket (robots.txt): it still starts
        return paced["sitewalk_started"], other["sitewalk_started"], dropped, "sitewalk_started" in robots

    assert asyncio.run(scenario()) == (0.2, 0.2, True, True)
