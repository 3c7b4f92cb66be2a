"""The frontier: breadth-first queue, every URL once, the origin of the seed's final URL."""

from __future__ import annotations

import pytest

from sitewalk.state import Walk
from tests.conftest import walk_for


def frontier_for(seed: str = "http://site.test/"):
    return Walk.of(walk_for(seed)).frontier


def test_the_seed_is_queued_normalised():
    frontier = frontier_for()
    frontier.add_seed("HTTP://Site.Test:80/a/../b#top")
    assert frontier.pop() == ("http://site.test/b", 0, None)
    assert not len(frontier)


def test_links_join_in_order_once_and_on_the_origin_only():
    frontier = frontier_for()
    frontier.add_seed("http://site.test/")
    frontier.pop()
    frontier.set_origin("http://site.test/")
    links = ["http://site.test/a", "http://other.test/x", "http://site.test/b", "http://site.test/a",
             "https://site.test/c", "http://site.test/"]
    assert frontier.admit(links, 1, "http://site.test/") == 2  # other host, other scheme
    assert frontier.admit(["http://site.test/b", "http://site.test/d"], 2, "http://site.test/a") == 0
    assert [frontier.pop() for _ in range(len(frontier))] == [
        ("http://site.test/a", 1, "http://site.test/"),
        ("http://site.test/b", 1, "http://site.test/"),
        ("http://site.test/d", 2, "http://site.test/a"),
    ]


def test_redirect_targets_are_recorded_without_fragments():
    frontier = frontier_for()
    frontier.set_origin("http://site.test/")
    assert frontier.record("http://site.test/new#x") is True
    assert frontier.record("http://site.test/new") is False
    assert frontier.admit(["http://site.test/new"], 1, "http://site.test/") == 0
    assert len(frontier) == 0  # a page reached by a redirect is not queued again


@pytest.mark.parametrize(
    ("final_url", "origin", "same", "other"),
    [
        ("http://site.test/", "http://site.test", "http://site.test/x", "https://site.test/x"),
        ("http://site.test:80/", "http://site.test", "http://site.test/x", "http://site.test:8080/x"),
        ("https://Site.Test:443/a", "https://site.test", "https://site.test/x", "https://www.site.test/x"),
        ("http://[::1]:8000/", "http://[::1]:8000", "http://[::1]:8000/x", "http://127.0.0.1:8000/x"),
    ],
)
def test_the_origin_of_the_seeds_final_url(final_url, origin, same, other):
    frontier = frontier_for()
    frontier.set_origin(final_url)
    assert frontier.origin == origin
    assert frontier.same_origin(same) and not frontier.same_origin(other)
    assert frontier.admit([same, other], 1, final_url) == 1
    assert frontier.unvisited() == [same]


def test_changes_name_what_was_queued_seen_popped_and_held():
    frontier = frontier_for()
    frontier.keep_changes()
    frontier.add_seed("http://site.test/")
    frontier.pop()
    frontier.set_origin("http://site.test/")
    frontier.admit(["http://site.test/a", "http://other.test/", "http://site.test/a"], 1, "http://site.test/")
    frontier.record("http://site.test/moved#x")
    frontier.hold(["http://site.test/deep"], 2, "http://site.test/a")
    changes = frontier.take_changes()
    assert changes.queued == [("http://site.test/", 0, None), ("http://site.test/a", 1, "http://site.test/")]
    assert changes.popped == ["http://site.test/"]
    assert changes.seen == ["http://site.test/moved"]
    assert changes.held == [(["http://site.test/deep"], 2, "http://site.test/a")]
    assert changes.origin == "http://site.test"
    # Taken once: the next changes start empty.
    assert frontier.take_changes().queued == []
    # Held links are neither queued nor seen.
    assert frontier.unvisited() == ["http://site.test/a"]
    assert frontier.admit(["http://site.test/deep"], 2, "http://site.test/a") == 0
    assert frontier.unvisited() == ["http://site.test/a", "http://site.test/deep"]


def test_a_restored_frontier_goes_on_from_the_queue_and_seen_urls_it_is_given():
    restored = frontier_for()
    restored.restore([("http://site.test/b", 1, "http://site.test/")], {"http://site.test/", "http://site.test/a",
                     "http://site.test/b"}, "http://site.test")
    assert restored.origin == "http://site.test"
    assert restored.unvisited() == ["http://site.test/b"]
    # Seen before: not queued again.
    assert restored.admit(["http://site.test/", "http://site.test/a", "http://site.test/c"], 2, "x") == 0
    assert restored.unvisited() == ["http://site.test/b", "http://site.test/c"]
