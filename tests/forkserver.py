"""Start the suite's commands without paying for Python's imports each time: a fork server.

A ``scrapy crawl sitewalk ...`` spends about a second of CPU importing Scrapy, Twisted and the
package before it reads its first argument; the suite runs hundreds of them on two cores. This
module is two programs:

- ``python tests/forkserver.py SOCKET`` is the server: it imports what the commands import, then
  forks a child for each request on the Unix socket ``SOCKET``. The child takes the request's
  standard streams, working directory, environment and arguments, and runs the command as
  ``python -m MODULE`` or ``python SCRIPT`` would (``runpy``): same argv, same exit status, same
  output. Nothing is imported that starts a thread or installs Twisted's reactor, so each child
  starts clean.
- ``python -I -S tests/forkserver.py --run COMMAND...`` is what a test starts instead of
  ``COMMAND...`` (see :func:`command`): a small process that hands its own standard streams to
  the server, passes on SIGINT, SIGTERM and SIGHUP to the child, and exits as the child did. If it
  is killed, the server kills the child.

A test that kills a walk with SIGKILL, or a process group, starts the command itself.
"""

from __future__ import annotations

import marshal
import os
import signal
import socket
import sys

# The client is started for each command: it imports what it needs and no more (not json, typing,
# pathlib or contextlib: tens of milliseconds of CPU each time; marshal is built in).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

VARIABLE = "SITEWALK_TEST_FORKSERVER"
# What the commands import before they read their arguments (scrapy crawl, sitewalk, sitewalk-mcp,
# and the mock site).
_PRELOAD = (
    "scrapy.cmdline", "scrapy.crawler", "scrapy.commands.crawl", "scrapy.extensions.feedexport",
    "sitewalk.cli", "sitewalk.commands.crawl", "sitewalk.spiders.sitewalk", "sitewalk.extensions",
    "sitewalk.pipelines", "sitewalk.downloadermiddlewares", "sitewalk.spidermiddlewares",
    "sitewalk.mcp", "sitewalk.mcp.server", "sitewalk.mcp.cli",
    # tests/mockserver.py's
    "argparse", "gzip", "html", "http.server",
)


def command(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """``argv`` as a test should start it: through the fork server when this worker runs one
    (``python -m MODULE ...`` or ``SCRIPT ...``), else as it is."""
    if (env if env is not None else os.environ).get(VARIABLE, "off") != "off":
        return [sys.executable, "-I", "-S", __file__, "--run", *argv]
    return argv


def _send(connection: socket.socket, message: dict[str, object], fds: list[int] | None = None) -> None:
    data = marshal.dumps(message)
    if fds:
        socket.send_fds(connection, [data], fds)
    else:
        connection.sendall(data)


def _receive(reader: BinaryIO) -> dict[str, object] | None:
    try:
        return marshal.load(reader)  # type: ignore[no-any-return]
    except EOFError:
        return None


def shims(directory: Path, scripts: list[Path]) -> Path:
    """``directory`` with a shell script for each of ``scripts`` (console scripts: ``sitewalk``...)
    that runs it through the fork server: put first on a shell's PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    for script in scripts:
        shim = directory / script.name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{__file__}" --run "{script}" "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return directory


def run(argv: list[str]) -> None:
    """The client: run ``argv`` in a child of the server, as this process, and exit as it did."""
    if os.environ.get(VARIABLE, "off") == "off":
        os.execv(argv[0], argv)
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(os.environ[VARIABLE])
    _send(connection, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2])
    reader = connection.makefile("rb")
    started = _receive(reader)
    assert started is not None, "the fork server did not start the command"
    child = int(started["pid"])  # type: ignore[call-overload]

    def forward(signum: int, _: object) -> None:
        try:  # noqa: SIM105 - contextlib would be one more import for each command
            os.kill(child, signum)
        except ProcessLookupError:  # it ended as the signal came: its status is on its way
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    ended = _receive(reader)
    status = int(ended["status"]) if ended is not None else -signal.SIGKILL  # type: ignore[call-overload]
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def serve(path: str) -> dict[str, object]:
    """The server: fork a child for each request. Returns only in a child, with its request."""
    import gc
    import selectors

    from scrapy.utils.misc import walk_modules

    for module in _PRELOAD:
        __import__(module)
    walk_modules("scrapy.commands")  # scrapy's command line imports each to list them
    # Children share the preloaded objects until written: a collection in a child would touch,
    # and so copy, each of them (a child that ran to Python's own exit took 0.8 s, 0.1 s frozen).
    gc.freeze()
    assert "twisted.internet.reactor" not in sys.modules, "a preloaded module installed the reactor"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(64)
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    print("ready", flush=True)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wakeup_read, selectors.EVENT_READ, "child")
    children: dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select():
            if key.data == "accept":
                connection, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
                request = marshal.loads(message)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for fd in (wakeup_read, wakeup_write):
                        os.close(fd)
                    selector.close()
                    listener.close()
                    connection.close()
                    for open_connection in children.values():
                        open_connection.close()
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    return request  # type: ignore[no-any-return]
                for fd in fds:
                    os.close(fd)
                children[pid] = connection
                _send(connection, {"pid": pid})
                selector.register(connection, selectors.EVENT_READ, pid)
            elif key.data == "child":
                os.read(wakeup_read, 4096)
                _reap(children, selector)
            else:
                # The client sent nothing more than its request: readable means it ended.
                pid = key.data
                selector.unregister(key.fileobj)
                if pid in children:
                    os.kill(pid, signal.SIGKILL)


def _reap(children: dict[int, socket.socket], selector: object) -> None:
    import contextlib

    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(KeyError):
            selector.unregister(connection)  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):  # the client ended first
            _send(connection, {"status": code})
        connection.close()


def child(request: dict[str, object]) -> None:
    """In a forked child: become the requested command and run it as Python would."""
    import io
    import runpy
    import traceback

    env: dict[str, str] = request["env"]  # type: ignore[assignment]
    server_path = os.environ.get("PYTHONPATH", "")
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(request["cwd"]))
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=os.isatty(1),
                                  write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), errors="backslashreplace",
                                  line_buffering=True)
    argv: list[str] = request["argv"]  # type: ignore[assignment]
    # sys.path as Python sets it: the command's PYTHONPATH instead of the server's, after the
    # working directory for -m or the script's folder for a script (the server's folder until now).
    for entry in _python_path(server_path):
        if entry in sys.path:
            sys.path.remove(entry)
    sys.path[1:1] = _python_path(env.get("PYTHONPATH", ""))
    try:
        if len(argv) >= 3 and argv[1] == "-m":
            sys.path[0] = os.getcwd()
            sys.argv = [argv[2], *argv[3:]]
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        else:
            if argv[0] == sys.executable:  # python SCRIPT ..., not a console script
                argv = argv[1:]
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:  # noqa: BLE001 - as Python ends a program on any uncaught exception
        traceback.print_exc()
        status = 1
    _exit(status)


def _exit_status(code: object) -> int:
    """The exit status of ``sys.exit(code)``, as Python makes it (a message is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _exit(status: int) -> None:
    """End the child as Python ends a program (atexit's functions run, the standard streams are
    flushed), but without tearing down each object: in a forked child that writes to every page
    the server shared with it, a tenth of a second of CPU for each command."""
    import atexit

    atexit._run_exitfuncs()  # what Python runs at exit (logging.shutdown among them)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120  # as Python does when it cannot flush at exit
    os._exit(status)


def _python_path(value: str) -> list[str]:
    return [os.path.abspath(entry) for entry in value.split(os.pathsep) if entry]


if __name__ == "__main__":
    if sys.argv[1] == "--run":
        run(sys.argv[2:])
    else:
        child(serve(sys.argv[1]))
