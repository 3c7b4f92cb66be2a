"""The progress line on a terminal: the sitewalk command run in a real pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import time

import pytest

from tests.conftest import allow_loopback, clean_environment, run_sitewalk, sitewalk_command

# Six pages at 0.4 s each: the walk takes more than a second or two, so the line is drawn.
SLOW_SITE = {"/": {"links": [f"/{n}" for n in range(5)]}, **{f"/{n}": {"sleep": 0.4} for n in range(5)}}
ERASE = "\r\x1b[K"


def run_in_terminal(*args: str, cwd) -> tuple[int, str]:
    """Run ``sitewalk ARGS`` with its stderr on a pseudo-terminal; its exit status and what the
    terminal received."""
    leader, follower = pty.openpty()
    # A terminal 200 columns wide: the line is cut to the width.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    process = subprocess.Popen([str(sitewalk_command()), *args], cwd=cwd, env=clean_environment(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    received = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the command ended
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return process.wait(timeout=30), received.decode("utf-8", "replace")


@pytest.mark.slow  # a sitewalk process of its own, on a pseudo-terminal
def test_the_progress_line_updates_in_place_on_a_terminal(make_site, tmp_path):
    site = make_site(SLOW_SITE)
    status, screen = run_in_terminal(site("/"), "--delay", "0", "-s", "SITEWALK_PROGRESS_INTERVAL=0.5",
                                     "-o", str(tmp_path / "p.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert status == 0, screen
    # Drawn in place (back to the line's start, erased), with pages, depth, bytes, rate and time.
    drawn = [part.split("\r")[0].split("\n")[0] for part in screen.split(ERASE)[1:]]
    lines = [line for line in drawn if line.startswith("progress: pages ")]
    assert lines, screen
    assert all(", depth " in line and " pages/s, " in line and " queued" in line for line in lines)
    assert max(len(line) for line in drawn) < 200
    # No progress line every interval: only those at each new depth reach the log (two).
    logged = [line for line in screen.replace(ERASE, "\n").splitlines() if "INFO: progress:" in line]
    assert len(logged) == 2, screen
    # The line is erased before each log record: the summary is a line of its own.
    summary = next(line for line in screen.split("\n") if "sitewalk: 6 pages" in line)
    assert ERASE + "20" in summary and summary.split(ERASE)[-1].startswith("20"), screen


def test_a_pipe_keeps_the_progress_lines(make_site, tmp_path):
    site = make_site(SLOW_SITE)
    result = run_sitewalk(site("/"), "--delay", "0", "-s", "SITEWALK_PROGRESS_INTERVAL=0.5",
                          "-o", str(tmp_path / "p.jsonl"), *allow_loopback(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ERASE not in result.stderr
    # The two at each new depth and at least one every 0.5 s.
    assert result.stderr.count("INFO: progress: pages") >= 3
