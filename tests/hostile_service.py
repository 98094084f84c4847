"""A reranking service on 127.0.0.1 that misbehaves on purpose, byte by byte.

tests/provider.py answers through http.server, so its replies are always
well-framed HTTP. This one writes raw bytes on the socket, so a test can make
a service that drips its status line, its headers, a chunk-size line or its
body one byte at a time, floods, lies about Content-Length, answers with
nested or badly encoded JSON, or never reads the request at all.

A behaviour is a function given each accepted connection; it reads the request
(or not), writes what it likes and returns, and the connection is closed. A
drip lasts at most HOLD seconds, so a client that fails to give up fails its
test in a few seconds instead of hanging the run.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from provider import Received

HOLD = 5.0  # the longest any behaviour keeps a connection busy
DRIP_INTERVAL = 0.05  # seconds between two dripped bytes: far less than any deadline tested


class Connection:
    """One accepted connection, as a behaviour sees it."""

    def __init__(self, sock: socket.socket, service: HostileService) -> None:
        self.sock = sock
        self.service = service
        self.sock.settimeout(HOLD)

    def read_request(self) -> Received:
        """The request, read in full (head, then Content-Length bytes of body) and recorded."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the client closed before its request was complete")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the client closed before its request body was complete")
            body += chunk
        received = Received(head + b"\r\n\r\n", body)
        self.service.received.append(received)
        return received

    def send(self, data: bytes) -> bool:
        """Writes ``data``; False once the client has gone away (or the test is over)."""
        if self.service.stopping.is_set():
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def drip(self, data: Iterable[int], interval: float = DRIP_INTERVAL) -> None:
        """Sends ``data`` one byte at a time, ``interval`` apart, for at most HOLD seconds."""
        for sent, byte in enumerate(data):
            if sent * interval >= HOLD or not self.send(bytes([byte])):
                return
            if self.service.stopping.wait(interval):
                return

    def flood(self, chunk: bytes) -> None:
        """Sends ``chunk`` again and again, as fast as the client takes it, for HOLD seconds at most."""
        until = time.monotonic() + HOLD
        while time.monotonic() < until and self.send(chunk):
            pass


Behaviour = Callable[[Connection], None]


@dataclass
class HostileService:
    url: str
    behaviour: Behaviour
    received: list[Received] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def candidate_texts(self) -> list[str]:
        return [c["text"] for r in self.received for c in r.document["candidates"]]


@contextmanager
def hostile_service(behaviour: Behaviour, receive_buffer: int | None = None) -> Iterator[HostileService]:
    """A service on 127.0.0.1 that treats every connection with ``behaviour``;
    ``receive_buffer`` shrinks its sockets' receive buffers (a stalled send fills them sooner)."""
    listener = socket.socket()
    if receive_buffer is not None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)
    service = HostileService(url=f"http://127.0.0.1:{listener.getsockname()[1]}/rerank", behaviour=behaviour)
    workers: list[threading.Thread] = []

    def serve(sock: socket.socket) -> None:
        with sock:
            try:
                service.behaviour(Connection(sock, service))
            except OSError:
                pass  # the client gave up, which is what most tests want of it

    def accept() -> None:
        while not service.stopping.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            worker = threading.Thread(target=serve, args=(sock,), daemon=True)
            worker.start()
            workers.append(worker)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield service
    finally:
        service.stopping.set()
        acceptor.join()
        listener.close()
        for worker in workers:
            worker.join(HOLD + 1)


# --- well-formed HTTP around a body chosen by the test ---------------------------------


def scores_for(request: Received) -> bytes:
    """The body a well-behaved service would send: every candidate scores 1."""
    ids = [c["id"] for c in request.document["candidates"]]
    return json.dumps({"scores": [{"id": i, "score": 1} for i in ids]}).encode()


def head(status: str = "200 OK", *headers: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *headers, "Connection: close"]) + "\r\n\r\n").encode()


def replying(body: bytes | Callable[[Received], bytes], *headers: str) -> Behaviour:
    """A correctly framed HTTP 200 whose body is ``body`` (or made from the request)."""

    def behaviour(conn: Connection) -> None:
        request = conn.read_request()
        payload = body(request) if callable(body) else body
        conn.send(
            head("200 OK", "Content-Type: application/json", f"Content-Length: {len(payload)}", *headers)
        )
        conn.send(payload)

    return behaviour


def raw(data: bytes) -> Behaviour:
    """Exactly ``data`` after the request, then the connection closes."""

    def behaviour(conn: Connection) -> None:
        conn.read_request()
        conn.send(data)

    return behaviour


# --- slow: each phase of a reply dripped one byte at a time ----------------------------


def drip_status_line(conn: Connection) -> None:
    conn.read_request()
    conn.drip(itertools.chain(b"HTTP/1.1 200 ", itertools.repeat(ord("K"))))


def drip_headers(conn: Connection) -> None:
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\n")
    conn.drip(itertools.chain(b"X-Slow: ", itertools.repeat(ord("a"))))


def drip_many_headers(conn: Connection) -> None:
    """Short header lines, each complete, dripped: no single read waits long."""
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\n")
    conn.drip(itertools.cycle(b"X-A: b\r\n"))


def drip_chunk_size_line(conn: Connection) -> None:
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    conn.drip(itertools.repeat(ord("0")))  # leading zeros of a chunk size that never ends


def drip_body(conn: Connection) -> None:
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json", "Content-Length: 100000"))
    conn.drip(itertools.chain(b'{"scores": [', itertools.repeat(ord(" "))))


def drip_chunked_body(conn: Connection) -> None:
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    conn.send(b"100000\r\n")
    conn.drip(itertools.chain(b'{"scores": [', itertools.repeat(ord(" "))))


def drip_chunks(conn: Connection) -> None:
    """Many one-byte chunks, each complete: the body never ends, no read waits long."""
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    conn.drip(itertools.cycle(b"1\r\n \r\n"))


def drip_trailers(conn: Connection) -> None:
    """A complete chunked body, then trailer lines that never end."""
    request = conn.read_request()
    body = scores_for(request)
    conn.send(head("200 OK", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    conn.send(b"%x\r\n%s\r\n0\r\n" % (len(body), body))
    conn.drip(itertools.cycle(b"X-T: 1\r\n"))


def endless_continues(conn: Connection) -> None:
    """'100 Continue' interim replies, one after another, never the real one."""
    conn.read_request()
    for _ in range(int(HOLD / DRIP_INTERVAL)):
        if not conn.send(b"HTTP/1.1 100 Continue\r\n\r\n") or conn.service.stopping.wait(DRIP_INTERVAL):
            return


def silent(conn: Connection) -> None:
    """Reads the request and never answers."""
    conn.read_request()
    conn.service.stopping.wait(HOLD)


def never_reads(conn: Connection) -> None:
    """Never reads the request: a large one fills the socket buffers and the send stalls."""
    conn.service.stopping.wait(HOLD)


def drip_tls_handshake(conn: Connection) -> None:
    """For an https:// URL: a TLS record header announcing 16 KiB, then its bytes, dripped."""
    conn.drip(itertools.chain(b"\x16\x03\x03\x40\x00", itertools.repeat(0)))


def plain_http_to_tls(conn: Connection) -> None:
    """For an https:// URL: answers the TLS hello in plain HTTP."""
    conn.send(head("200 OK", "Content-Length: 2") + b"{}")


# --- big: replies that never end --------------------------------------------------------


def flood_body(conn: Connection) -> None:
    """A body without length, sent as fast as possible until the client hangs up."""
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json"))
    conn.send(b'{"scores": [], "pad": "')
    conn.flood(b"x" * 65536)


def flood_chunks(conn: Connection) -> None:
    conn.read_request()
    conn.send(head("200 OK", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    conn.flood(b"10000\r\n" + b" " * 65536 + b"\r\n")


def flood_headers(conn: Connection) -> None:
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\n")
    conn.flood(b"X-Flood: 1\r\n" * 4096)


# --- wrong framing ----------------------------------------------------------------------


def content_length_beyond_body(conn: Connection) -> None:
    """A complete, valid reply whose Content-Length claims 100 more bytes; then close."""
    request = conn.read_request()
    body = scores_for(request)
    conn.send(head("200 OK", f"Content-Length: {len(body) + 100}") + body)


def content_length_short_of_body(conn: Connection) -> None:
    """Content-Length counts half the body; the rest follows it."""
    request = conn.read_request()
    body = scores_for(request)
    conn.send(head("200 OK", f"Content-Length: {len(body) // 2}") + body)


def content_length(*values: str) -> Behaviour:
    """A valid body with the given Content-Length header lines (however wrong)."""

    def behaviour(conn: Connection) -> None:
        request = conn.read_request()
        body = scores_for(request)
        conn.send(head("200 OK", *(f"Content-Length: {v}" for v in values)) + body)

    return behaviour


def length_and_chunked(conn: Connection) -> None:
    """Both Content-Length and Transfer-Encoding: the framing is ambiguous."""
    request = conn.read_request()
    body = scores_for(request)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    conn.send(head("200 OK", f"Content-Length: {len(body)}", "Transfer-Encoding: chunked") + chunked)


def chunked_as(*codings: str) -> Behaviour:
    """A correctly chunked body sent with these Transfer-Encoding headers (one each)."""

    def behaviour(conn: Connection) -> None:
        request = conn.read_request()
        body = scores_for(request)
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        conn.send(head("200 OK", *(f"Transfer-Encoding: {coding}" for coding in codings)) + chunked)

    return behaviour


def close_without_reply(conn: Connection) -> None:
    conn.read_request()


def reset_without_reply(conn: Connection) -> None:
    conn.read_request()
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST


# --- malformed JSON ---------------------------------------------------------------------


def nested(depth: int, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    return prefix + b"[" * depth + b"]" * depth + suffix


def scores_then(extra: bytes) -> Callable[[Received], bytes]:
    """A valid reply with ``extra`` (a JSON member, bytes) added to its top-level object."""
    return lambda request: scores_for(request)[:-1] + b", " + extra + b"}"


def utf16(encoding: str) -> Callable[[Received], bytes]:
    return lambda request: scores_for(request).decode().encode(encoding)
