"""The report's header (the machine, the versions, the commit) and RESULTS.md, where each script
keeps its own section."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from sites import HERE, REPO, WORK

MB = 1024 * 1024


def head_commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def machine_facts(start_commit: str) -> list[str]:
    import scrapy
    import twisted

    import sitewalk

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = f"{kb / MB:.1f} GB"
    except (OSError, IndexError, ValueError):
        pass

    def first_line(argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError:
            return "?"
        return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) else "?"

    commit = head_commit()
    if commit != start_commit:
        # The runs import the working tree as it is when each starts.
        commit = f"{start_commit}, then {commit} (commits landed during the run)"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return [
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {os.cpu_count()} CPUs ({cpu}), {mem} RAM, {platform.system()} {platform.release()}",
        f"- load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- Python {platform.python_version()}, Scrapy {scrapy.__version__}, Twisted {twisted.__version__}, "
        f"sitewalk {sitewalk.__version__} at {commit}{' with local changes' if dirty else ''}",
        f"- {first_line(['nginx', '-v'])}, {first_line(['wget', '--version'])}",
    ]


def keep_runs(runs: list[Any], name: str) -> None:
    """The raw runs (dataclasses), for a second look or a report that failed to render:
    ``benchmarks/.work/<name>``."""
    (WORK / name).write_text(json.dumps([dataclasses.asdict(run) for run in runs]), encoding="utf-8")


def facts_with_load(start_commit: str, load_before: tuple[float, float, float]) -> list[str]:
    """:func:`machine_facts`, with the load average when the run started."""
    facts = machine_facts(start_commit)
    facts.insert(2, f"- load average at the start: {' '.join(f'{x:.2f}' for x in load_before)}")
    return facts


def write_results(script: str, text: str) -> None:
    """Put ``text`` in RESULTS.md as the section of ``script``, between its markers, keeping the
    sections other scripts wrote; a script's first section goes at the end."""
    path = HERE / "RESULTS.md"
    begin, end = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{text}\n{end}\n"
    if begin in old and end in old:
        head, _, rest = old.partition(begin)
        tail = rest.partition(end)[2].lstrip("\n")
        new = head + block + ("\n" + tail if tail else "")
    else:
        new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + block
    path.write_text(new, encoding="utf-8")
    print(f"\nwrote {path.relative_to(REPO)}")
