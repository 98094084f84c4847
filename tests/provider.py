"""A reranking service on 127.0.0.1 for the RemoteScorer tests, recording all it receives.

By default it answers the documented contract (one score per candidate: the
length of its text); a test swaps ``reply`` for a function that misbehaves.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """One request exactly as it arrived: the raw request line and headers, and the body."""

    head: bytes
    body: bytes

    @property
    def document(self) -> Any:
        return json.loads(self.body)


# A reply: (HTTP status, body bytes, seconds to wait before sending it).
Reply = tuple[int, bytes, float]


def length_scores(document: Any) -> Reply:
    """The well-behaved service: each candidate scores the length of its text."""
    scores = [{"id": c["id"], "score": len(c["text"])} for c in document["candidates"]]
    return 200, json.dumps({"scores": scores}).encode(), 0.0


@dataclass
class Provider:
    url: str
    reply: Callable[[Any], Reply] = length_scores
    received: list[Received] = field(default_factory=list)
    replied: list[bytes] = field(default_factory=list)  # reply bodies, in the order sent

    @property
    def candidate_texts(self) -> list[str]:
        return [c["text"] for r in self.received for c in r.document["candidates"]]

    def everything_received(self) -> bytes:
        return b"".join(r.head + r.body for r in self.received)


@contextmanager
def provider(host: str = "127.0.0.1") -> Iterator[Provider]:
    """The service, listening on ``host`` (an IPv4 or IPv6 address) at a free port."""
    service = Provider(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            head = (self.requestline + "\r\n").encode() + bytes(self.headers)
            service.received.append(Received(head, body))
            status, payload, delay = service.reply(json.loads(body))
            if delay:
                threading.Event().wait(delay)
            # Recorded before it is sent: once the client has it, the test may look.
            service.replied.append(payload)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up waiting (a timeout test): nothing was delivered

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True

    server = Server((host, 0), Handler)
    shown = f"[{host}]" if ":" in host else host
    service.url = f"http://{shown}:{server.server_address[1]}/rerank"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
