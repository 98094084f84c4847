"""The `pyevidence serve` command: open one store read-only and serve one scope of it.

    pyevidence serve --db evidence.db --tenant team-a --revision v1 [--host 127.0.0.1] [--port 8000]
        [--allowed-host NAME ...]

The web dependencies (the web extra: Starlette, uvicorn, Jinja2) are imported only
when the command runs, so the rest of the command line works without them.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import socket
import sys
from collections.abc import Sequence
from typing import Any

from ...core.errors import EvidenceError, ValidationError
from ...store import EvidenceStore
from .. import clock, db_args, number_args

DESCRIPTION = "serve a read-only web page over one tenant and revision of a store (the web extra)"
# The names a browser sends in Host for a loopback address (Host: [::1]:8000 for IPv6).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
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
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name or address the page is reached by, beyond the ones it answers to anyway "
        "(the loopback names, the --host name, the addresses bound); repeatable",
    )
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


def check_allowed_host(name: str) -> str:
    """``name`` as the Host header check compares it: lower case, an IPv6 address in brackets (given
    with or without them), else a usage error. Never a pattern: ``*`` is refused like any non-name."""
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        if bare is not name or not _HOST_NAME.fullmatch(name) or len(name.rstrip(".")) > 253:
            raise ValidationError(
                "allowed-host",
                f"must be a host name or an IP address, without a port or a wildcard; got {name!r}",
            ) from None
        return name.lower()
    return f"[{ip}]" if ip.version == 6 else str(ip)


def _address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """A bound or resolved address as what it means: an IPv4-mapped IPv6 address is its IPv4 one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # without an IPv6 scope (fe80::1%eth0)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback(address: str) -> bool:
    return _address(address).is_loopback


def host_names(host: str, bound: Sequence[str], allowed: Sequence[str] = ()) -> tuple[str, ...]:
    """The Host header values the page answers to when ``host`` was asked for and ``bound`` are the
    addresses its sockets got: the names of this server and nothing else, so that a page that
    points its own name at this machine (DNS rebinding) is refused, whatever the binding.

    Each address bound, as an address (a page cannot rebind an address); the loopback names when a
    loopback or a wildcard address (0.0.0.0, ::, which listen on loopback too) is bound; ``host``
    itself when it is a name (the operator chose it); and every ``allowed`` (--allowed-host)."""
    names: list[str] = []
    for address in bound:
        ip = _address(address)
        if ip.is_loopback or ip.is_unspecified:
            names.extend(LOOPBACK_NAMES)
        names.append(f"[{address}]" if ":" in address else address)
    try:
        ipaddress.ip_address(host)
    except ValueError:  # a name, as the operator typed it (127.1 and LOCALHOST included)
        names.extend((host.lower(), host.lower().rstrip(".")))
    names.extend(check_allowed_host(name) for name in allowed)
    return tuple(dict.fromkeys(names))


def check_port(port: int) -> int:
    if not 0 <= port <= 65535:
        raise ValidationError("port", f"must be from 0 to 65535 (0 picks a free one); got {port}")
    return port


def resolve(host: str, port: int) -> list[tuple[int, tuple[Any, ...]]]:
    """The (family, address) pairs ``host`` names, as uvicorn's own asyncio server would bind them;
    an IPv4-mapped IPv6 address as its IPv4 address."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        if exc.errno in _NO_SUCH_NAME:
            raise ValidationError("host", f"{host!r} names no address: {exc.strerror}") from None
        raise EvidenceError(f"cannot look up host {host!r}: {exc.strerror}") from None
    return list(dict.fromkeys(_unmapped(family, address) for family, _, _, _, address in found))


def listen(
    host: str, port: int, addresses: list[tuple[int, tuple[Any, ...]]] | None = None
) -> list[socket.socket]:
    """Listening sockets on every address ``host`` names (``addresses``, from resolve), all
    on one port: ``port``, or the one the first bind picked when it is 0. Bound before anything is
    printed, so that the banner names the port really bound, and a port that cannot be had is a
    one-line error (EvidenceError) rather than a banner followed by a failure."""
    if addresses is None:
        addresses = resolve(host, port)
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


def _unmapped(family: int, address: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]]:
    """An IPv4-mapped IPv6 address (::ffff:127.0.0.1) as the IPv4 address it means: an IPv6-only
    socket cannot bind one."""
    if family == socket.AF_INET6:
        mapped = ipaddress.IPv6Address(str(address[0]).split("%", 1)[0]).ipv4_mapped
        if mapped is not None:
            return socket.AF_INET, (str(mapped), *address[1:2])
    return family, tuple(address)


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def main(args: argparse.Namespace) -> None:
    try:
        import uvicorn

        from .app import create_app
    except ImportError:
        raise EvidenceError(
            "pyevidence serve needs the web extra: in the pyevidence checkout, pip install '.[web]'"
        ) from None

    chosen_clock = clock.Clock(args.clock, args.now)
    host, port = check_host(args.host), check_port(args.port)
    for name in args.allowed_host:  # bad input before the store is opened or a port bound
        check_allowed_host(name)
    with EvidenceStore(db_args.existing(args.db), engine=args.engine, read_only=True) as store:
        addresses = resolve(host, port)
        bound = [str(address[0]) for _, address in addresses]
        allowed_hosts = host_names(host, bound, args.allowed_host)
        app = create_app(
            store.scoped(tenant=args.tenant),
            revision=args.revision,
            clock=chosen_clock,
            allowed_hosts=allowed_hosts,
        )
        sockets = listen(host, port, addresses)
        try:
            if not all(is_loopback(address) for address in bound):
                print(
                    f"pyevidence serve: listening on {host}, not loopback: the page has no login, "
                    "so anyone who can reach this address reads this tenant's evidence; it answers "
                    f"to the names {', '.join(allowed_hosts)} (--allowed-host NAME adds one)",
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
