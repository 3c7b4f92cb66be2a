"""The benchmarks' work directory (benchmarks/.work/), its lock, and the sites served from it."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import gensite

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work"
DOCS_SOURCE = Path("/usr/share/doc/python3.11/html")


@dataclass
class Site:
    """A directory served by nginx on its own loopback port; ``seed`` is the walk's start path."""

    name: str
    root: Path
    seed: str = "/index.html"
    port: int = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + self.seed

    @property
    def access_log(self) -> Path:
        return WORK / "nginx" / f"access-{self.name}.log"


def lock_work() -> None:
    """Take the work directory's lock until this process exits: one benchmark at a time uses its
    nginx files and ports."""
    WORK.mkdir(parents=True, exist_ok=True)
    lock = open(WORK / "lock", "w")  # noqa: SIM115 - held (and locked) until the process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another benchmark is running (it holds {WORK / 'lock'})") from None
    _LOCKS.append(lock)


# The open lock files (a lock is released when its file is closed).
_LOCKS: list[IO[str]] = []


def prepare_docs() -> Path:
    target = WORK / "sites" / "docs"
    if not (target / "index.html").exists():
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"copying {DOCS_SOURCE} (symlinks dereferenced)", flush=True)
        subprocess.run(["cp", "-rL", str(DOCS_SOURCE), str(target)], check=True)
    return target


def prepare_generated(name: str, pages: int) -> Path:
    target = WORK / "sites" / name
    if gensite.generate(target, pages):
        print(f"generated {name}: {pages} pages", flush=True)
    return target
