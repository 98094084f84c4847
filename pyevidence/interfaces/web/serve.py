"""The `pyevidence serve` command: open one store read-only and serve one scope of it.

    pyevidence serve --db evidence.db --tenant team-a --revision v1 [--host 127.0.0.1] [--port 8000]

The web dependencies (the web extra: Starlette, uvicorn, Jinja2) are imported only
when the command runs, so the rest of the command line works without them.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import socket
import sys

from ...core.errors import EvidenceError, ValidationError
from ...store import EvidenceStore
from .. import clock, db_args, number_args

DESCRIPTION = "serve a read-only web page over one tenant and revision of a store (the web extra)"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# A host name as the resolver takes one: dot-separated labels of letters, digits, "-" and "_"
# (which /etc/hosts allows), each 1 to 63 characters, none starting or ending with "-".
_HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")
# getaddrinfo's answers that mean the name is not one: bad input, not a passing failure.
_NO_SUCH_NAME = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", required=True, help="the one tenant this page shows")
    parser.add_argument("--revision", required=True, help="the one revision this page shows")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=number_args.whole_number,
        default=8000,
        help="the port to listen on, 0 to 65535; 0 picks a free one (default: 8000)",
    )
    clock.add_arguments(parser)


def check_host(host: str) -> str:
    """``host`` when it is an IP address or a well-formed name, else a usage error saying why."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(host) or len(host.rstrip(".")) > 253:
        raise ValidationError(
            "host",
            f"must be an IP address (IPv6 without brackets) or a host name of letters, digits, "
            f"dots, hyphens and underscores; got {host!r}",
        )
    return host


def check_port(port: int) -> int:
    if not 0 <= port <= 65535:
        raise ValidationError("port", f"must be from 0 to 65535 (0 picks a free one); got {port}")
    return port


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` names (as uvicorn's own asyncio server would), all
    on one port: ``port``, or the one the first bind picked when it is 0. Bound before anything is
    printed, so that the banner names the port really bound, and a port that cannot be had is a
    one-line error (EvidenceError) rather than a banner followed by a failure."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        if exc.errno in _NO_SUCH_NAME:
            raise ValidationError("host", f"{host!r} names no address: {exc.strerror}") from None
        raise EvidenceError(f"cannot look up host {host!r}: {exc.strerror}") from None
    addresses = list(dict.fromkeys((family, address) for family, _, _, _, address in found))
    sockets: list[socket.socket] = []
    where = _shown(host, port)
    try:
        for family, address in addresses:
            where = _shown(str(address[0]), port)
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # this one address, not its IPv4 twin as well
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port, *address[2:]))
            sock.listen()  # a browser opened at the banner waits for the server, not refused
            port = sock.getsockname()[1]
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise EvidenceError(
            f"cannot listen on {where}: {exc.strerror or exc}; --host must be an address of this "
            "machine and --port one that no other program holds"
        ) from None
    return sockets


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def main(args: argparse.Namespace) -> None:
    try:
        import uvicorn

        from .app import LOOPBACK_NAMES, create_app
    except ImportError:
        raise EvidenceError(
            "pyevidence serve needs the web extra: in the pyevidence checkout, pip install '.[web]'"
        ) from None

    chosen_clock = clock.Clock(args.clock, args.now)
    host, port = check_host(args.host), check_port(args.port)
    loopback = host in LOOPBACK
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES if loopback else ("*",)
    with EvidenceStore(db_args.existing(args.db), engine=args.engine, read_only=True) as store:
        app = create_app(
            store.scoped(tenant=args.tenant),
            revision=args.revision,
            clock=chosen_clock,
            allowed_hosts=allowed_hosts,
        )
        sockets = listen(host, port)
        try:
            if not loopback:
                print(
                    f"pyevidence serve: listening on {host}, not loopback: the page has no login, "
                    "so anyone who can reach this address reads this tenant's evidence",
                    file=sys.stderr,
                )
            print(
                f"pyevidence serve: http://{_shown(host, sockets[0].getsockname()[1])}/ (tenant "
                f"{args.tenant!r}, revision {args.revision!r}, read-only); Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )
            # No access log: the queries people type are evidence of what they were looking for.
            config = uvicorn.Config(app, log_level="warning", access_log=False)
            uvicorn.Server(config).run(sockets=sockets)
        except KeyboardInterrupt:
            pass  # Ctrl-C in a terminal ends the server, as uvicorn.run let it
        finally:
            for sock in sockets:
                sock.close()
