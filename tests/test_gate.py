"""The gate: one request at a time, the look-ahead bound, the consumers' exact answers, the pace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from scrapy.http import HtmlResponse

from sitewalk.gate import AHEAD, InHand
from sitewalk.items import Page
from sitewalk.state import Walk
from tests.conftest import walk_for


def response(path: str = "/") -> HtmlResponse:
    return HtmlResponse(f"http://site.test{path}", body=b"<html></html>")


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


def consume(gate: Any, answer: Any) -> None:
    """One item made of the page of ``answer``, through the pipelines."""
    gate.item_out(answer)
    gate.output_done(answer)
    gate.item_done(answer)


def test_a_request_in_flight_holds_the_next():
    async def scenario() -> None:
        gate = gate_for()
        gate.request_sent()
        assert not await returns(gate.settled(lambda: False))
        gate.request_over()
        assert await returns(gate.settled(lambda: False))
        gate.request_sent()
        gate.page_arrived(response(), page())
        assert await returns(gate.settled(lambda: False))

    asyncio.run(scenario())


def test_an_empty_frontier_waits_for_the_links_of_the_pages_in_hand():
    async def scenario() -> None:
        gate = gate_for()
        gate.request_sent()
        answer = response()
        in_hand = gate.page_arrived(answer, page())
        assert not await returns(gate.settled(lambda: True))
        assert await returns(gate.settled(lambda: False))  # a queued page may go meanwhile
        gate.links_admitted(in_hand)
        assert await returns(gate.settled(lambda: True))

    asyncio.run(scenario())


def test_a_consumer_that_may_stop_holds_the_walk_until_the_pages_are_consumed():
    asked: list[list[Page]] = []

    def may_stop(in_hand: Sequence[InHand]) -> bool:
        asked.append([entry.page for entry in in_hand])
        return any(not entry.read for entry in in_hand) or len(in_hand) > 1

    async def scenario() -> None:
        gate = gate_for()
        gate.add_check(may_stop)
        first, second = response("/1"), response("/2")
        one = gate.page_arrived(first, first_page := page())
        assert not await returns(gate.ready(60))  # not read yet: the answer is not known
        gate.page_read(one)
        assert await returns(gate.ready(60))  # read: the consumer says it will not stop on it
        assert asked[-1] == [first_page]
        two = gate.page_arrived(second, page())
        gate.page_read(two)
        assert not await returns(gate.ready(60))  # two pages in hand: it might
        consume(gate, first)
        assert await returns(gate.ready(60))
        assert len(asked[-1]) == 1

    asyncio.run(scenario())


def test_at_most_ahead_pages_in_hand():
    async def scenario() -> None:
        gate = gate_for()
        answers = [response(f"/{n}") for n in range(AHEAD + 1)]
        for answer in answers[:AHEAD]:
            gate.page_arrived(answer, page())
        assert await returns(gate.ready(60))
        gate.page_arrived(answers[AHEAD], page())
        assert not await returns(gate.ready(60))
        consume(gate, answers[0])
        assert await returns(gate.ready(60))

    asyncio.run(scenario())


def test_pages_take_their_turns_in_fetch_order():
    async def scenario() -> list[str]:
        gate = gate_for()
        order: list[str] = []
        first, second = response("/1"), response("/2")
        one, two = gate.page_arrived(first, page()), gate.page_arrived(second, page())

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
        consume(gate, first)
        await task
        return order

    assert asyncio.run(scenario()) == ["admit 1", "admit 2", "consume 1", "consume 2"]


def test_a_page_is_consumed_when_each_of_its_items_is_through():
    async def scenario() -> None:
        gate = gate_for()
        answer = response()
        in_hand = gate.page_arrived(answer, page())
        gate.item_out(answer)
        gate.item_out(answer)
        gate.item_done(answer)
        gate.output_done(answer)
        assert not in_hand.consumed.done()
        gate.item_done(answer)
        assert in_hand.consumed.done() and in_hand.admitted.done()

    asyncio.run(scenario())


def test_the_pace_counts_from_the_previous_request_start():
    async def scenario() -> float:
        gate = gate_for()
        gate.slow_down(0.2)
        gate.request_started()
        started = time.monotonic()
        await gate.ready(60)
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 0.2 - 0.01


def test_crawl_delay_only_slows_the_walk_down():
    gate = Walk.of(walk_for(delay=0.5)).gate
    assert gate.slow_down(0.1) is False and gate.delay == 0.5
    assert gate.slow_down(1.5) is True and gate.delay == 1.5


def test_a_stop_wakes_every_wait():
    async def scenario() -> None:
        gate = gate_for()
        gate.add_check(lambda pages: True)
        gate.request_sent()
        waits = [asyncio.ensure_future(gate.settled(lambda: True)), asyncio.ensure_future(gate.ready(60))]
        for _ in range(5):
            await asyncio.sleep(0)
        assert not any(wait.done() for wait in waits)
        gate.stop()
        await asyncio.gather(*waits)

    asyncio.run(scenario())
