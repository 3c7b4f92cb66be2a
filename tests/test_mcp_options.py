"""The operator's options: one table spells them for --help, the settings and every message."""

from __future__ import annotations

from dataclasses import fields

import pytest

from sitewalk.mcp.cli import _options
from sitewalk.mcp.options import MCP, OPTIONS, ServerOptions


def test_every_server_option_has_one_spelling() -> None:
    assert list(OPTIONS) == [spec.name for spec in fields(ServerOptions)]
    assert len({spec.flag for spec in OPTIONS.values()}) == len({spec.env for spec in OPTIONS.values()}) == len(OPTIONS)


@pytest.mark.parametrize(
    ("setting", "value", "spelled"),
    [
        ("SITEWALK_GUARD_ALLOW_NETWORKS", "10.0.0.5", "--allow-networks 10.0.0.5"),
        ("ROBOTSTXT_OBEY", False, "--no-robots"),
        ("ROBOTSTXT_OBEY", True, "--robots"),
        ("USER_AGENT", "bot/1", "--user-agent bot/1"),
    ],
)
def test_a_setting_is_named_by_the_option_that_gives_it(setting: str, value: object, spelled: str) -> None:
    assert MCP.setting(setting, value) == spelled


def test_messages_name_the_flag_and_the_environment_variable() -> None:
    assert OPTIONS["robots"].given(False) == "--no-robots (env ROBOTSTXT_OBEY=false)"
    assert OPTIONS["allow_networks"].given() == "--allow-networks (env SITEWALK_GUARD_ALLOW_NETWORKS)"
    assert ServerOptions(max_output_chars=3000).limit("max_length") == (3000, "--max-output-chars")
    assert ServerOptions().limit("context") is None


def test_settings_are_those_the_options_give(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServerOptions().settings() == {"ROBOTSTXT_OBEY": True}
    monkeypatch.setenv("ROBOTSTXT_OBEY", "no")
    options, _ = _options(["--allow-networks", "10.0.0.0/8", "--user-agent", "bot/1", "--max-pages", "7"])
    assert options.settings() == {
        "SITEWALK_GUARD_ALLOW_NETWORKS": "10.0.0.0/8", "ROBOTSTXT_OBEY": False, "USER_AGENT": "bot/1",
    }
    assert options.max_pages == 7


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--max-pages", "0"], "argument --max-pages: max_pages must be >= 1, got 0"),
        (["--max-output-chars", "999"], "argument --max-output-chars: must be >= 1000, got 999"),
        (["--max-deadline", "x"], "argument --max-deadline: invalid float value: 'x'"),
    ],
)
def test_a_bad_option_names_the_flag(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _options(argv)
    assert capsys.readouterr().err.splitlines()[-1] == f"sitewalk-mcp: error: {error}"
