"""A deadline-bounded HTTP/1.1 connection: http.client that cannot outlive a given instant.

RemoteScorer gives each request to the ranking service a moment by which it must be
over (the earlier of its timeout and the retrieve's deadline), and a service that is
slow, silent or hostile must not stretch that. A socket timeout alone cannot do it:
it restarts at every byte, so a service dripping one byte a second could hold a
retrieve forever, and a name lookup has no timeout at all. So every step gets only
the time left before that moment: the name lookup (in a helper thread, abandoned
when time is up), the connect, the TLS handshake, and each send and receive.

    connection = BoundedConnection(host, port, until=time.monotonic() + 5, tls=None)
    try:
        connection.request("POST", "/rerank", body=body, headers=headers)
        response = connection.getresponse()   # then read the body from response
    finally:
        connection.close()
        connection.release()   # the socket stays open for the reply until this

When time runs out the step raises TimeoutError; other failures are http.client's
and the socket's own exceptions. Nothing is read from the environment (no proxies).
Standard library only.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import socket
import ssl
import threading
import time
from typing import Any


class BoundedConnection(http.client.HTTPConnection):
    """http.client's HTTP/1.1 over a socket that cannot outlive ``until``, with TLS
    when ``tls`` is given. Nothing is read from the environment (no proxies)."""

    def __init__(self, host: str, port: int, *, until: float, tls: ssl.SSLContext | None) -> None:
        self.default_port = 443 if tls is not None else 80  # the Host header omits it
        super().__init__(host, port)
        self._until = until
        self._tls = tls
        self._socket: socket.socket | None = None

    def connect(self) -> None:
        sock = _open(self.host, self.port, self._until)
        try:
            if self._tls is not None:
                # ssl bounds the whole handshake by the socket's timeout, not each read.
                sock.settimeout(_left(self._until))
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        self.sock = _Bounded(sock, self._until)

    def release(self) -> None:
        """Closes the socket; close() leaves it open while the reply may still be read
        (http.client calls close() as soon as the headers say the connection will close)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class _Bounded:
    """The socket as http.client uses it: every send and receive gets the time left
    before ``until`` as its timeout, so no spacing of the bytes can stretch a request."""

    def __init__(self, sock: socket.socket, until: float) -> None:
        self._sock = sock
        self._until = until

    def sendall(self, data: bytes) -> None:
        # send() in a loop, not sendall(): an SSL socket's sendall gives each of its
        # own sends the full timeout, so a slow reader could stretch it.
        with memoryview(data) as view, view.cast("B") as unsent:
            while unsent:
                self._sock.settimeout(_left(self._until))
                unsent = unsent[self._sock.send(unsent) :]

    def recv_into(self, buffer: Any) -> int:
        self._sock.settimeout(_left(self._until))
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str) -> io.BufferedReader:
        del mode  # http.client reads its replies through this, always "rb"
        return io.BufferedReader(_Receiver(self))

    def close(self) -> None:
        """Nothing: BoundedConnection.release() closes the socket once the reply is read."""


class _Receiver(io.RawIOBase):
    def __init__(self, sock: _Bounded) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)


def _left(until: float) -> float:
    """The seconds left before ``until``; TimeoutError when there are none."""
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


def _open(host: str, port: int, until: float) -> socket.socket:
    """A TCP connection to host:port by ``until``, its name looked up first."""
    failure: OSError = OSError(f"no address found for {host}")
    for family, kind, proto, _, address in _resolve(host, port, until):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_left(until))
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc  # try the next address, if time is left
        except BaseException:
            sock.close()
            raise
    raise failure


def _resolve(host: str, port: int, until: float) -> list[Any]:
    """getaddrinfo by ``until``. A name lookup has no timeout of its own: it runs in
    a helper thread, abandoned when time is up (it ends when the resolver gives up)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # an address: nothing to look up, no wait
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    outcome: list[Any] = []

    def look_up() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            outcome.append(exc)

    lookup = threading.Thread(target=look_up, name=f"pyevidence lookup of {host}", daemon=True)
    lookup.start()
    lookup.join(_left(until))
    if not outcome:
        raise TimeoutError(f"the name lookup of {host} timed out")
    if isinstance(outcome[0], OSError):
        raise outcome[0]
    return list(outcome[0])
