"""A local test site: serves pages from a JSON spec and logs every request it receives.

Run as ``python tests/mockserver.py SPEC.json LOG.jsonl [--host 127.0.0.1] [--idle-timeout S]
[--requests-per-connection N] [--send-buffer BYTES] [--write-size BYTES] [--wait-for-reads] [--reload]``; it binds port 0 and prints its base URL on the first line of stdout.
``--idle-timeout`` closes a kept-alive connection idle that long; ``--requests-per-connection``
answers N requests on a connection and closes it on the next one, unanswered (logged as
``dropped``), as a server that closed an idle connection just as the request arrived.
``--send-buffer`` sets each connection's SO_SNDBUF (the kernel doubles it, to at least 4.5 KiB)
and ``--write-size`` writes every body that many bytes at a time (by default a body goes in one
write, 1 KiB ones when it is ``chunked``): with both small, a client that cuts a download off is
seen by the next write. The client's kernel still takes what the server writes into its own receive
buffer (on loopback 128 KiB and more) before the client reads any of it; ``--wait-for-reads``
writes each piece of a body only once the client has read everything written before it (the
server's send queue is empty and so is the receive queue of the client's socket, as the kernel's
sock_diag tells of a client on this machine), as a slow link would: the server is then never more
than one write ahead of what the client read, and it stops writing once the client has closed
its end (it cut the download off). ``--reload`` reads the spec again when its file changed (a site that
changes between two walks on the same origin).
The spec maps paths (with query) to pages:

    {"/": {"links": ["/a", "/b"], "title": "Home"},
     "/r": {"status": 301, "headers": {"Location": "/a"}},
     "/slow": {"sleep": 6, "body": "late"},
     "/big": {"size": 100000, "content_type": "text/plain", "chunked": true},
     "/bomb": {"size": 5000000, "gzip": true, "content_type": "text/plain"}}

Page keys: ``status`` (200), ``headers``, ``content_type`` (text/html; charset=utf-8), ``body``
(text; ``{origin}`` and ``{port}`` are replaced by the server's base URL and port), ``links`` (an HTML page linking them,
each a string or ``{"href", "rel", "text"}``), ``title``, ``head`` (extra HTML for <head>),
``size`` (a body of that many bytes), ``random`` (with ``size``: random letters, digits, + and /, the same
for the same path, which gzip compresses to about 3/4 of their size, not a repeated pattern
compressed a thousandfold), ``gzip`` (send the body gzip-encoded), ``gzip_file`` (the
body is a gzip file, sent as it is: a ``.xml.gz`` sitemap), ``chunked`` (no
Content-Length), ``sleep`` (seconds before answering), ``trickle`` (seconds between 1 KiB
writes), ``encoding`` (of the body text, utf-8), ``raw`` (text sent as the whole answer, then the
connection is closed), ``cut`` (close the connection after that many body bytes), ``close``
(close the connection without answering), ``reset`` (reset the connection without answering: a
TCP RST, SO_LINGER 0, where ``close`` sends a FIN), ``methods`` (the methods answered, GET and HEAD by
default; another is answered 405), ``before`` (a list of pages answered first, one per
request for the path, before the page itself), ``validators`` (send an ``ETag`` of the body and a
``Last-Modified``, and answer a request that names them, ``If-None-Match`` or
``If-Modified-Since``, 304 Not Modified without a body: logged ``not_modified``). A path not in the spec is a 404. Each log line is JSON: time, method (GET or HEAD: a HEAD is answered as a GET, without the body), path, headers,
``answering`` (how many requests the server was answering at once, this one included),
``on_connection`` (the how-manyth request on its connection this is: 1 on a fresh one), and
``bytes_sent`` is logged on a second line when the body was written; each connection accepted is
logged as ``connection`` (the client's address). Every answer logs ``wire_bytes``: the bytes the
server wrote for it, status line, headers and body as sent (compressed, if gzip), counted as the
socket took them (a client that cut the download off took fewer than the page): on the ``sent``
line, on a ``headers_sent`` line for a HEAD, a ``reset`` line for ``reset`` (0).
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import gzip
import hashlib
import html
import json
import random
import socket
import struct
import termios
import threading
import time
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server
    # What the answer in progress wrote to the socket (see send()).
    wire_bytes = 0
    # With --wait-for-reads: what the client has read of the connection.
    reads: ClientReads | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.logged("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self.logged("HEAD")

    def setup(self) -> None:
        super().setup()
        if self.server.send_buffer:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.server.send_buffer)
        if self.server.wait_for_reads:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.reads = ClientReads(self.connection)

    def finish(self) -> None:
        super().finish()
        if self.reads is not None:
            self.reads.close()

    def logged(self, method: str) -> None:
        answering = self.server.begin()
        self.on_connection = getattr(self, "on_connection", 0) + 1
        # What this answer wrote to the socket: status line, headers and body.
        self.wire_bytes = 0
        try:
            self.server.log({
                "time": time.time(),
                "method": method,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "answering": answering,
                "on_connection": self.on_connection,
            })
            self.answer()
        finally:
            self.server.end()

    def send(self, data: bytes) -> None:
        """Write ``data``, counting in ``wire_bytes`` each byte the socket took, as it takes them
        (if the client is gone midway, what went before is counted)."""
        view = memoryview(data)
        while view:
            written = self.connection.send(view)
            self.wire_bytes += written
            view = view[written:]

    def flush_headers(self) -> None:
        # BaseHTTPRequestHandler's, through send(): the status line and headers are counted.
        if hasattr(self, "_headers_buffer"):
            self.send(b"".join(self._headers_buffer))
            self._headers_buffer = []

    def answer(self) -> None:
        answered = getattr(self, "answered", 0)
        limit = self.server.requests_per_connection
        if limit and answered >= limit:
            self.server.log({"time": time.time(), "dropped": self.path})
            self.close_connection = True
            return
        self.answered = answered + 1
        self.server.reload()
        page = self.server.spec.get(self.path)
        if page is not None and page.get("before"):
            # Answers given first, one per request, before the page itself.
            answered_before = self.server.count(self.path)
            if answered_before < len(page["before"]):
                page = page["before"][answered_before]
        if page is None:
            page = {"status": 404, "body": "<html><head><title>Not found</title></head>"
                    "<body>not found <a href='/from-404'>home</a></body></html>"}
        if self.command not in page.get("methods", ("GET", "HEAD")):
            page = {"status": 405, "headers": {"Allow": ", ".join(page["methods"])}, "body": "method not allowed"}
        if page.get("sleep"):
            time.sleep(page["sleep"])
        if page.get("reset"):
            # Closed with SO_LINGER 0: the kernel sends an RST, not a FIN, and drops what is unsent.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.server.log({"time": time.time(), "reset": self.path, "wire_bytes": 0})
            # The socket closes once the handler's files are closed (finish()); the server's
            # shutdown(SHUT_WR), which would send a FIN first, then fails on the closed socket.
            self.connection.close()
            return
        if page.get("close") or "raw" in page:
            self.send(page.get("raw", "").encode("latin-1"))
            self.close_connection = True
            self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": 0, "wire_bytes": self.wire_bytes})
            return
        body = self.server.body_of(page, self.path)
        if page.get("gzip_file"):
            body = gzip.compress(body)
        status = page.get("status", 200)
        headers = {"Content-Type": page.get("content_type", "text/html; charset=utf-8")}
        headers.update({k: v.replace("{origin}", self.server.origin) for k, v in page.get("headers", {}).items()})
        if page.get("gzip"):
            body = self.server.gzipped(body)
            headers["Content-Encoding"] = "gzip"
        # The ETag of the body before any gzip (whose header holds the time it was made).
        if page.get("validators") and self.not_modified(self.server.body_of(page), headers):
            return
        chunked = page.get("chunked", False)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if chunked:
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(len(body)))
        try:
            self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self.server.log({"time": time.time(), "headers_sent": self.path, "wire_bytes": self.wire_bytes})
            return
        if self.command == "HEAD":
            self.server.log({"time": time.time(), "headers_sent": self.path, "wire_bytes": self.wire_bytes})
            return
        if "cut" in page:
            body = body[: page["cut"]]
            self.close_connection = True
        step = 1024 if (chunked or page.get("trickle")) else max(len(body), 1)
        if self.server.write_size and not page.get("trickle"):
            step = self.server.write_size
        head_bytes = self.wire_bytes
        try:
            for start in range(0, len(body), step):
                if self.reads is not None and not self.reads.wait():
                    self.close_connection = True
                    break
                self.send(body[start:start + step])
                if page.get("trickle"):
                    time.sleep(page["trickle"])
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        sent = self.wire_bytes - head_bytes
        self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": sent, "wire_bytes": self.wire_bytes})
        if chunked:
            self.close_connection = True

    def not_modified(self, body: bytes, headers: dict[str, str]) -> bool:
        """Validators for ``body`` in ``headers``; a 304 sent (True) when the request's match them."""
        headers["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        headers["Last-Modified"] = _MODIFIED
        if self.headers.get("If-None-Match", self.headers.get("If-Modified-Since")) not in (headers["ETag"], _MODIFIED):
            return False
        self.send_response(304)
        self.send_header("ETag", headers["ETag"])
        self.send_header("Last-Modified", _MODIFIED)
        self.end_headers()
        self.server.log({"time": time.time(), "sent": self.path, "bytes_sent": 0, "not_modified": True})
        return True


# The Last-Modified of every page with validators: its ETag tells a changed body.
_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"


class ClientReads:
    """Whether the client has read what the server wrote to it on ``connection`` (the client on
    this machine): the server's send queue is empty (SIOCOUTQ: everything acknowledged) and so is
    the receive queue of the client's socket, asked of the kernel through NETLINK_SOCK_DIAG (as
    ``ss`` asks it), by the connection's addresses."""

    NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, NLMSG_ERROR = 4, 20, 1, 2
    TCP_ESTABLISHED = 1
    ESTABLISHED = 1 << TCP_ESTABLISHED  # the states asked about: a socket closed or closing is not found
    NO_COOKIE = 0xFFFFFFFF

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        client, server = connection.getpeername(), connection.getsockname()
        family = socket.AF_INET6 if ":" in client[0] else socket.AF_INET
        addresses = [socket.inet_pton(family, host).ljust(16, b"\0") for host in (client[0], server[0])]
        # struct inet_diag_req_v2, its inet_diag_sockid the client's socket (source: the client).
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, self.ESTABLISHED) + struct.pack(
            "!HH", client[1], server[1]) + b"".join(addresses) + struct.pack("=III", 0, self.NO_COOKIE, self.NO_COOKIE)
        self._message = struct.pack("=IHHII", 16 + len(request), self.SOCK_DIAG_BY_FAMILY, self.NLM_F_REQUEST, 0, 0) + request
        self._netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, self.NETLINK_SOCK_DIAG)

    def unread(self) -> int | None:
        """The bytes written and not yet read by the client (in the server's send queue or the
        client's receive queue); None once the client's socket is closed (or closing)."""
        # struct tcp_info begins with the state: once the client closed or reset its end, the
        # server's is no longer established.
        if self._connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] != self.TCP_ESTABLISHED:
            return None
        unsent = struct.unpack("i", fcntl.ioctl(self._connection.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
        if unsent:
            return int(unsent)
        self._netlink.send(self._message)
        reply = self._netlink.recv(8192)
        if struct.unpack_from("=IH", reply)[1] == self.NLMSG_ERROR:
            return None
        # After the reply's nlmsghdr (16 B), struct inet_diag_msg: family, state, timer, retrans
        # (4 B), the sockid (48 B), expires (4 B), then the receive queue.
        return int(struct.unpack_from("=I", reply, 16 + 4 + 48 + 4)[0])

    def wait(self) -> bool:
        """Wait until the client has read everything written to it; False if it has closed its
        end meanwhile (it cut the download off: the server would learn so from its next writes)."""
        while True:
            unread = self.unread()
            if unread is None:
                return False
            if unread == 0:
                return True
            time.sleep(0.0002)

    def close(self) -> None:
        with suppress(OSError):
            self._netlink.close()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, spec: dict[str, Any], log_path: Path, requests_per_connection: int = 0,
                 send_buffer: int = 0, write_size: int = 0, wait_for_reads: bool = False,
                 reload_from: Path | None = None) -> None:
        super().__init__((host, 0), Handler)
        self.spec = spec
        self._reload_from = reload_from
        self._loaded = reload_from.stat().st_mtime_ns if reload_from is not None else 0
        self.requests_per_connection = requests_per_connection
        self.send_buffer = send_buffer
        self.write_size = write_size
        self.wait_for_reads = wait_for_reads
        # Bodies sent gzip-encoded, compressed once each: large ones take a while.
        self._gzipped: dict[bytes, bytes] = {}
        self._log = log_path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.answering = 0
        self._asked: dict[str, int] = {}
        host_part = f"[{host}]" if ":" in host else host
        self.origin = f"http://{host_part}:{self.server_address[1]}"

    def process_request(self, request: Any, client_address: Any) -> None:
        self.log({"time": time.time(), "connection": list(client_address)})
        super().process_request(request, client_address)

    def reload(self) -> None:
        """With --reload: the spec as its file says now."""
        if self._reload_from is None:
            return
        with self._lock:
            changed = self._reload_from.stat().st_mtime_ns
            if changed != self._loaded:
                self.spec, self._loaded = json.loads(self._reload_from.read_text(encoding="utf-8")), changed

    def count(self, path: str) -> int:
        """How many times ``path`` was asked for before this request."""
        with self._lock:
            asked = self._asked.get(path, 0)
            self._asked[path] = asked + 1
            return asked

    def begin(self) -> int:
        """A request arrived: how many the server is answering now, this one included."""
        with self._lock:
            self.answering += 1
            return self.answering

    def end(self) -> None:
        with self._lock:
            self.answering -= 1

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def gzipped(self, body: bytes) -> bytes:
        with self._lock:
            compressed = self._gzipped.get(body)
        if compressed is None:
            compressed = gzip.compress(body, compresslevel=9)
            with self._lock:
                self._gzipped[body] = compressed
        return compressed

    def body_of(self, page: dict[str, Any], path: str = "") -> bytes:
        if "size" in page and page.get("random"):
            # The same letters for the same path: base64 of random bytes, 6 bits in each byte.
            rng = random.Random(path)
            return base64.b64encode(rng.randbytes(page["size"] * 3 // 4 + 3))[: page["size"]]
        if "size" in page:
            return (b"0123456789abcdef" * (page["size"] // 16 + 1))[: page["size"]]
        if "links" in page or "title" in page:
            links = []
            for link in page.get("links", []):
                link = {"href": link} if isinstance(link, str) else link
                rel = f' rel="{link["rel"]}"' if "rel" in link else ""
                text = html.escape(link.get("text", link["href"]))
                links.append(f'<a href="{html.escape(link["href"])}"{rel}>{text}</a>')
            title = page.get("title", "")
            text = (
                f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title>{page.get('head', '')}</head>"
                f"<body><h1>{html.escape(title)}</h1>{page.get('body', '')}<ul>"
                + "".join(f"<li>{link}</li>" for link in links)
                + "</ul></body></html>"
            )
        else:
            text = page.get("body", "")
        encoding = page.get("encoding", "utf-8")
        text = text.replace("{origin}", self.origin).replace("{port}", str(self.server_address[1]))
        return text.encode(encoding)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", type=Path)
    parser.add_argument("log", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("--requests-per-connection", type=int, default=0)
    parser.add_argument("--send-buffer", type=int, default=0)
    parser.add_argument("--write-size", type=int, default=0)
    parser.add_argument("--wait-for-reads", action="store_true")
    parser.add_argument("--reload", action="store_true")
    args = parser.parse_args()
    # BaseHTTPRequestHandler applies it to each connection's socket: an idle one is closed.
    Handler.timeout = args.idle_timeout
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    server = Server(args.host, spec, args.log, args.requests_per_connection, args.send_buffer, args.write_size,
                    args.wait_for_reads, args.spec if args.reload else None)
    print(server.origin, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
