"""pyevidence mcp: one tenant's evidence served to an agent host over MCP (stdio).

    pyevidence mcp --db evidence.db --tenant team-a --revision v1 [--allow-writes]

The tenant and the revision are the operator's configuration, given on the command
line; no tool has a field for either, and a call that carries one (or any field
its schema does not name) is refused with a tool error. The tools, their wording
and their argument checks are pyevidence.tool's: this module only adapts them to
the official MCP SDK's low-level server (the mcp extra, 2.x), which validates no
arguments itself. Without --allow-writes the store is opened read-only and the
write tools are neither listed nor callable.

``now`` is the server's clock in whole epoch seconds (--clock wall, the default),
read at each call, or a fixed logical time the operator passes (--clock logical
--now N): a record is evidence while its expires_at is greater than now.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import warnings
from typing import TYPE_CHECKING, Any

from .. import tool
from ..core import validation
from ..core.errors import EvidenceError
from ..core.visible import one_line
from ..store import EvidenceStore
from . import clock as clocks
from . import db_args, mcp_wire

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext

DESCRIPTION = "serve one tenant's evidence to an agent host over MCP (stdio)"
CLOCKS = clocks.CLOCKS
TEXT_BODY_CHARS = 300  # the text rendering shows this much of a body; structured content has it all


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", required=True, help="the one tenant this server serves")
    parser.add_argument("--revision", required=True, help="the one revision this server serves")
    parser.add_argument(
        "--allow-writes", action="store_true", help="also offer put_evidence and forget_evidence"
    )
    clocks.add_arguments(parser)


class Binding:
    """What the operator fixed: the scoped store, the revision, the clock and the tools on offer."""

    def __init__(
        self,
        store: EvidenceStore,
        *,
        tenant: str,
        revision: str,
        allow_writes: bool,
        clock: str,
        now: int | None,
    ) -> None:
        self._clock = clocks.Clock(clock, now)
        self.scoped = store.scoped(tenant=tenant)
        self.revision = validation.text("revision", revision)
        self.allow_writes = allow_writes
        self.tools = tool.READ_TOOLS + (tool.WRITE_TOOLS if allow_writes else ())

    def now(self) -> int:
        return self._clock.now()

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        return tool.run_tool(
            name,
            self.scoped,
            arguments,
            revision=self.revision,
            now=self.now(),
            allow_writes=self.allow_writes,
        )


def render(name: str, result: dict[str, Any]) -> str:
    """The short text rendering beside the structured content, for hosts that show only text."""
    if name == "retrieve_evidence":
        if not result["hits"]:
            count = result["eligible_count"]
            why = (
                f"{count} record(s) in scope, none sharing a word with the query ({tool.WORD_RULE})"
                if count
                else "nothing in scope"
            )
            return f"{result['note']} ({why}.)"
        # Stored text is someone else's: each hit stays on its one line, every character visible.
        lines = [f"{len(result['hits'])} hit(s) of {result['eligible_count']} records in scope:"]
        for hit in result["hits"]:
            body = _shortened(hit["body"])
            lines.append(
                f"- {one_line(hit['citation'])} (record {one_line(hit['record_id'])}, version "
                f"{hit['version']}): {one_line(body)}"
            )
        return "\n".join(lines)
    if name == "get_cited_version":
        if result["status"] == "found":
            found = result["version"]
            expired = " (expired: not current evidence)" if found["expired"] else ""
            return (
                f"found: {one_line(found['source'])} version {found['version']}{expired}: "
                f"{one_line(found['body'])}"
            )
        return str(result["note"])
    if name == "record_history":
        return f"{len(result['versions'])} version(s) of {one_line(result['record_id'])} in this scope."
    if name == "put_evidence" and result.get("expired"):
        return f"{result['note']} {json.dumps(result, sort_keys=True)}"
    return json.dumps(result, sort_keys=True)


def _shortened(body: str) -> str:
    return body if len(body) <= TEXT_BODY_CHARS else body[:TEXT_BODY_CHARS] + "..."


def serve(binding: Binding) -> None:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    try:
        import anyio
        import mcp_types as types
        from mcp.server import Server
    except ImportError:
        raise EvidenceError(
            "pyevidence mcp needs the MCP SDK 2.x, the mcp extra: in the pyevidence checkout, "
            "pip install '.[mcp]'"
        ) from None
    from importlib.metadata import version

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        del ctx, params
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
                for t in binding.tools
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        del ctx
        arguments = {} if params.arguments is None else params.arguments
        try:
            # The store blocks; a worker thread keeps the session answering meanwhile.
            result = await anyio.to_thread.run_sync(functools.partial(binding.call, params.name, arguments))
        except EvidenceError as exc:
            field = getattr(exc, "field", None)
            return types.CallToolResult(
                content=[types.TextContent(text=f"error: {exc}")],
                structured_content={"error": str(exc), "field": field},
                is_error=True,
            )
        return types.CallToolResult(
            content=[types.TextContent(text=render(params.name, result))], structured_content=result
        )

    server: Server[Any] = Server(
        "pyevidence",
        version=version("pyevidence"),
        instructions=tool.INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def run() -> None:
        async with mcp_wire.stdio_streams() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        with warnings.catch_warnings():
            # When stdout fails, the loop closes with the stdin relay's call back into it
            # unstarted, and Python would warn about it on stderr before the one-line error.
            warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
            anyio.run(run)
    except KeyboardInterrupt:
        pass  # Ctrl-C in a terminal ends the server, as closing its input does


def main(args: argparse.Namespace) -> None:
    """The `pyevidence mcp` command: open the store (read-only unless --allow-writes) and serve."""
    db = db_args.existing(args.db)
    with EvidenceStore(db, engine=args.engine, read_only=not args.allow_writes) as store:
        binding = Binding(
            store,
            tenant=args.tenant,
            revision=args.revision,
            allow_writes=args.allow_writes,
            clock=args.clock,
            now=args.now,
        )
        _note_an_empty_scope(store, args.tenant, args.revision)
        serve(binding)


def _note_an_empty_scope(store: EvidenceStore, tenant: str, revision: str) -> None:
    """A mistyped --tenant or --revision serves nothing at all, and each answer would read as
    "no evidence found": say so once, at the start, where the person who started it looks."""
    in_scope = store.retrieve(tenant=tenant, revision=revision, query="", now=-(2**63)).eligible_count
    if in_scope == 0:
        print(
            f"pyevidence mcp: note: this store holds no record of tenant {tenant!r} in revision "
            f"{revision!r}; every query will find nothing until records are put there (check --tenant "
            "and --revision)",
            file=sys.stderr,
            flush=True,
        )
