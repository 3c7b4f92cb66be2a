"""Patterns from users, config files and models: RE2, checked up front, searched line by line."""

from __future__ import annotations

import random
import re
import time

import pytest

from sitewalk import patterns
from sitewalk.config import WalkConfig
from sitewalk.exceptions import SitewalkError
from sitewalk.hints import API, COMMAND


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(a)\1", r"include '(a)\\1' uses a backreference (\1), which RE2 (the linear-time engine patterns run in) does not support"),
        (r"(?P<w>a)(?P=w)", "uses a named backreference (?P=name), which RE2"),
        (r"docs(?=/)", "uses look-ahead (?=...), which RE2"),
        (r"docs(?!/)", "uses negative look-ahead (?!...), which RE2"),
        (r"(?<=/)docs", "uses look-behind (?<=...), which RE2"),
        (r"(?<!/)docs", "uses negative look-behind (?<!...), which RE2"),
        (r"(?>a+)b", "uses an atomic group (?>...), which RE2"),
        (r"a++", "uses a possessive quantifier (++), which RE2"),
        (r"(?x) a b", "uses verbose mode (?x), which RE2"),
        (r"html\Z", r"uses \Z (write \z for the end of the text), which RE2"),
        (r"caf\u00e9", r"uses \u (write \x{00e9} for a character by its code point), which RE2"),
        (r"a{1001}", "is not a valid regular expression: invalid repetition size: {1001} (a repetition may count at most 1000)"),
        (r"\pL{1000}", "is too large for RE2 (the linear-time engine patterns run in): use fewer or smaller repetitions"),
        ("(docs", "include '(docs' is not a valid regular expression: missing ): (docs"),
        ("x" * 1001, f"include '{'x' * 80}...' is 1001 characters long: a pattern may have at most 1000"),
    ],
)
def test_a_pattern_re2_cannot_run_is_one_line_naming_it_and_what_it_uses(pattern, message):
    with pytest.raises(SitewalkError) as raised:
        patterns.compile(pattern, name="include")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("values", "surface", "message"),
    [
        ({"grep": r"(\w+) \1"}, COMMAND, r"--grep '(\\w+) \\1' uses a backreference (\1), which RE2 (the linear-time engine "
         "patterns run in) does not support (use --fixed-strings to search for it literally)"),
        ({"css": "a::attr(href)", "regex": "(?<=#).*"}, API, "regex '(?<=#).*' uses look-behind (?<=...)"),
        ({"exclude": "x" * 1001}, COMMAND, "--exclude 'xxx"),
        # As plain text it is only bounded in length.
        ({"grep": "x" * 1001, "fixed_strings": True}, API, "pattern 'xxx"),
    ],
)
def test_the_walk_refuses_such_a_pattern_before_it_starts_in_the_surface_s_words(values, surface, message):
    with pytest.raises(SitewalkError) as raised:
        WalkConfig.from_mapping({"seed": "https://example.com/", **values}, surface)
    assert str(raised.value).startswith(message)


def test_plain_text_may_hold_what_re2_refuses():
    config = WalkConfig.from_mapping({"seed": "https://example.com/", "grep": r"(a)\1 (?=x)", "fixed_strings": True})
    assert patterns.compile(config.grep or "", name="grep", literal=True).search(r"see (a)\1 (?=x) here")


@pytest.mark.parametrize(
    ("pattern", "options", "text", "found"),
    [
        # Python's named groups, classes, inline flags and anchors read the same.
        (r"(?P<year>\d{4})-(?P<month>\d\d)", {}, "on 2026-12-01", True),
        (r"(?i)INSTALL", {}, "pip install", True),
        (r"^\s*def \w+\(", {}, "    def walk(seed):", True),
        (r"page\d+$", {}, "page12 of", False),
        (r"\bwalk\b", {}, "sitewalk", False),
        (r"[[:upper:]]{3}", {}, "an API", True),
        # ignore_case folds Unicode letters; fixed_strings searches the text literally.
        ("ÉTÉ", {"ignore_case": True}, "un été chaud", True),
        ("a.b(", {"literal": True}, "x = a.b(1)", True),
        ("a.b", {"literal": True}, "axb", False),
        ("A.B", {"literal": True, "ignore_case": True}, "x = a.b(1)", True),
        # RE2's \d, \w, \s and \b are ASCII (Python's are Unicode): \p{...} names Unicode classes.
        (r"^\w+$", {}, "café", False),
        (r"^\pL+$", {}, "café", True),
        (r"\d", {}, "٣", False),
        (r"\p{Nd}", {}, "٣", True),
    ],
)
def test_semantics_users_rely_on(pattern, options, text, found):
    assert patterns.compile(pattern, name="grep", **options).search(text) is found


def test_hostile_patterns_run_in_linear_time():
    started = time.monotonic()
    assert not patterns.compile("(a+)+$", name="include").search("/" + "a" * 10_000 + "!")
    assert patterns.compile("(x+x+)+y", name="grep").matching_lines(["x" * 10_000] * 100) == []
    assert not patterns.compile("(.*a){20}b", name="regex").search("a" * 10_000)
    # A match across lines in the joined text (see matching_lines) does not make each line cost the rest of the page.
    lines = ["a" * 10] * 20_000 + ["b"]
    assert patterns.compile("(?s)a.*b", name="grep").matching_lines(lines) == []
    # Python's re takes longer than the universe has been around for any of them.
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    "pattern",
    [r"^a", r"b$", r"^$", r"\bab\b", r"a\B", r"a|^b", r"(?i)A+b", r"\Aa", r"b\z", r"(?-m)^a", r"(?-m:b$)",
     r"[^a]", r"\s", r"(?s).b", r"a*", r"ba", r"^", r"a b", r"\n", r"(?m)^b"],
)
def test_matching_lines_are_the_lines_each_search_matches(pattern):
    # matching_lines searches the lines joined: it must find what searching each line finds.
    compiled = patterns.compile(pattern, name="grep")
    rng = random.Random(pattern)
    for _ in range(500):
        lines = ["".join(rng.choice("ab ") for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(0, 6))]
        expected = [index for index, line in enumerate(lines) if compiled.search(line)]
        assert compiled.matching_lines(lines) == expected, lines
        if "-m" not in pattern:  # Python has no global (?-m)
            assert expected == [i for i, line in enumerate(lines) if re.search(pattern.replace(r"\z", r"\Z"), line)]


def test_matching_lines_of_non_ascii_lines():
    compiled = patterns.compile("é$", name="grep")
    assert compiled.matching_lines(["café", "été ", "ééé", "", "😀é"]) == [0, 2, 4]
