"""A TCP proxy on loopback that adds a network's round trip to everything it forwards.

    python benchmarks/latency.py UPSTREAM_PORT [--rtt 0.02] [--port 0]

It listens on 127.0.0.1 (``--port``, 0 for a free one), prints ``listening on 127.0.0.1:PORT``
once it accepts connections, and forwards each connection to 127.0.0.1:UPSTREAM_PORT (nginx),
until SIGTERM or Ctrl-C.

The model is a link with a fixed propagation delay and no bandwidth limit: every byte takes half
the round trip (``rtt / 2``) to cross, in each direction. Each chunk read from one side is written
to the other ``rtt / 2`` after it was read, in order; chunks are not held behind one another, so a
large response streams through in ``rtt / 2`` plus the time nginx takes to send it, as on a fast
link, and an HTTP/1.1 exchange on a kept-alive connection costs one round trip more than on
loopback: the request takes ``rtt / 2`` to reach nginx, the response ``rtt / 2`` to come back.
Opening a connection costs one round trip too (the TCP handshake a client waits for before it
sends its request): nothing the client sends is forwarded before ``rtt`` has passed since the
connection was accepted, so the first request on a new connection costs two round trips, as on a
real network. Connections are independent (one upstream connection for each, opened at once), so
N connections carry N requests in the same round trip. Not modelled: TCP's slow start and
congestion window (a real link delivers a large first response in several round trips), loss,
bandwidth. An end-of-file from one side is passed on (after the data before it) to the other; the
connection closes when both directions are finished, or when either side resets it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

__all__ = ["serve"]

CHUNK = 256 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, not_before: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it was read (and, on a
    new connection, not before the handshake's round trip is over: loop time ``not_before``)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((max(loop.time(), not_before) + delay, data))
        finally:
            # End of file (b""), or the connection failed: either way, nothing more comes.
            queue.put_nowait((max(loop.time(), not_before) + delay, b""))

    reading = asyncio.create_task(read())
    try:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    finally:
        reading.cancel()
        # Its failure (a reset) was passed on as an end of file; it ends the connection when raised here.
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def _forward(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                   upstream_port: int, rtt: float) -> None:
    loop = asyncio.get_running_loop()
    handshake_over = loop.time() + rtt
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
    except OSError:
        client_writer.close()
        return
    pipes = [asyncio.create_task(_pipe(client_reader, up_writer, rtt / 2, handshake_over)),
             asyncio.create_task(_pipe(up_reader, client_writer, rtt / 2, handshake_over))]
    try:
        # Both directions at once, each until its end of file; the first that fails (a reset) ends both.
        await asyncio.wait(pipes, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        # The proxy is stopping and cancels the connections still open: this one ends here, quietly
        # (Python 3.11's start_server logs a connection task that ends cancelled as an error).
        pass
    finally:
        for pipe in pipes:
            pipe.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)
        for writer in (up_writer, client_writer):
            writer.close()
        for writer in (up_writer, client_writer):
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def serve(upstream_port: int, rtt: float, port: int = 0) -> None:
    """Proxy 127.0.0.1:``port`` to 127.0.0.1:``upstream_port`` with ``rtt`` seconds per round trip,
    until cancelled (SIGTERM and SIGINT cancel it)."""
    server = await asyncio.start_server(lambda r, w: _forward(r, w, upstream_port, rtt), "127.0.0.1", port,
                                        backlog=512)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream_port", type=int, help="the port on 127.0.0.1 to forward to")
    parser.add_argument("--rtt", type=float, default=0.02, help="seconds per round trip (default 0.02)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    args = parser.parse_args(argv)
    if args.rtt < 0:
        parser.error("--rtt must not be negative")
    asyncio.run(serve(args.upstream_port, args.rtt, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
