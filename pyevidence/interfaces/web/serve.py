"""The `pyevidence serve` command: open one store read-only and serve one scope of it.

    pyevidence serve --db evidence.db --tenant team-a --revision v1 [--host 127.0.0.1] [--port 8000]

The web dependencies (the web extra: Starlette, uvicorn, Jinja2) are imported only
when the command runs, so the rest of the command line works without them.
"""

from __future__ import annotations

import argparse
import sys

from ...core.errors import EvidenceError
from ...store import EvidenceStore
from .. import clock, db_args

DESCRIPTION = "serve a read-only web page over one tenant and revision of a store (pyevidence[web])"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", required=True, help="the one tenant this page shows")
    parser.add_argument("--revision", required=True, help="the one revision this page shows")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the port to listen on (default: 8000)")
    clock.add_arguments(parser)


def main(args: argparse.Namespace) -> None:
    try:
        import uvicorn

        from .app import LOOPBACK_NAMES, create_app
    except ImportError:
        raise EvidenceError("pyevidence serve needs the web extra: pip install 'pyevidence[web]'") from None

    chosen_clock = clock.Clock(args.clock, args.now)
    if args.host in LOOPBACK:
        allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    else:
        allowed_hosts = ("*",)
        print(
            f"pyevidence serve: listening on {args.host}, not loopback: the page has no login, "
            "so anyone who can reach this address reads this tenant's evidence",
            file=sys.stderr,
        )
    with EvidenceStore(db_args.existing(args.db), engine=args.engine, read_only=True) as store:
        app = create_app(
            store.scoped(tenant=args.tenant),
            revision=args.revision,
            clock=chosen_clock,
            allowed_hosts=allowed_hosts,
        )
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"pyevidence serve: http://{shown}:{args.port}/ (tenant {args.tenant!r}, "
            f"revision {args.revision!r}, read-only); Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        # No access log: the queries people type are evidence of what they were looking for.
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
