"""The lines `pyevidence mcp` reads from its client, each made a JSON-RPC message or refused.

The MCP SDK's own stdin reader parses each line with pydantic's JSON parser, which refuses a
lone surrogate escape such as ``"\\ud83d"``: what JSON.stringify writes for half of a cut
emoji, which JSON allows. The SDK then drops the line without a reply, and the client waits
for ever. pyevidence refuses such text too (the API, the CLI and the tools alike say ``query:
is not valid Unicode text (lone surrogate at index N)``), but in a reply the client gets. So
it reads stdin itself:

- a line that is a JSON-RPC message goes to the server, lone surrogates included, so the
  tools apply the same rules to it as the Python API does, and refuse it in their reply;
- a line that is not gets a JSON-RPC error naming what was wrong, with the request's id
  when the line shows one, so the client's call ends;
- a notification that is not valid gets no reply (JSON-RPC forbids one): it is logged.

When stdin ends, every request read before its end is answered before the session closes:
the SDK cancels the calls still running when its input ends (a batch piped in got "Connection
closed", or no reply at all), so the server sees the end only once those calls are answered.

JSON is read by strict_json, the parser for every JSON text pyevidence does not trust.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from ..core import strict_json
from ..core.errors import EvidenceError

if TYPE_CHECKING:
    import mcp_types
    from mcp.shared.message import SessionMessage

# JSON-RPC 2.0's codes (also in mcp_types, which the base install does not have).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_JSON_NAMES = {
    type(None): "null",
    bool: "true or false",
    float: "a number with a fraction or an exponent",
    list: "an array",
    dict: "an object",
}


@dataclass(frozen=True)
class Refusal:
    """Why a line is not a message. ``request_id`` is None when the line shows none;
    ``reply`` is False for a notification, which must get no reply."""

    request_id: int | str | None
    code: int
    message: str
    reply: bool = True


def read_message(line: bytes) -> mcp_types.JSONRPCMessage | Refusal | None:
    """The message on ``line``, why it is refused, or None for a blank line."""
    import mcp_types
    import pydantic

    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"is not UTF-8 (byte {exc.start} is 0x{line[exc.start]:02x}); send JSON text in UTF-8"
        return _refused(line.decode("utf-8", "replace"), PARSE_ERROR, problem)
    if text.startswith("\ufeff"):  # as Windows tools write before a first line; JSON has none
        request_id, notification = _id_despite_refusal(text[1:])
        problem = "the message starts with a byte order mark (U+FEFF), which JSON text does not"
        problem += "; send it without one"
        return Refusal(request_id, PARSE_ERROR, problem, reply=not notification)
    try:
        document = strict_json.loads(text)
    except strict_json.JsonRefused as exc:
        request_id, notification = _id_despite_refusal(text)
        return Refusal(request_id, PARSE_ERROR, f"the message {exc}", reply=not notification)
    if not isinstance(document, dict):
        return Refusal(None, INVALID_REQUEST, "the message is not a JSON object")
    if isinstance(document.get("id"), str) and not _is_unicode(document["id"]):
        return Refusal(None, INVALID_REQUEST, "the message's id is not valid Unicode text (a lone surrogate)")
    if isinstance(document.get("method"), str) and not _is_unicode(document["method"]):
        request_id = document.get("id") if _is_id(document.get("id")) else None
        problem = "the message's method is not valid Unicode text (a lone surrogate)"
        return Refusal(request_id, INVALID_REQUEST, problem, reply="id" in document)
    if "id" in document and not _is_id(document["id"]):
        given = _JSON_NAMES.get(type(document["id"]), "that")
        return Refusal(None, INVALID_REQUEST, f"the message's id must be a string or an integer, not {given}")
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_python(document, by_name=False)
    except pydantic.ValidationError as exc:
        kind = _kind(document)
        errors = exc.errors()
        first = next((error for error in errors if error["loc"][:1] == (kind,)), errors[0])
        where = ".".join(str(part) for part in first["loc"][1:])
        problem = f"is not a JSON-RPC 2.0 {kind[7:].lower()}: {where}: {first['msg']}"
        return _refused(text, INVALID_REQUEST, problem, document)
    # The SDK answers bad params of the methods pyevidence serves with a bare "Invalid request
    # parameters": an agent needs to know which field to mend. And a refused initialize must not
    # start the session (_Lifecycle), or a tools/call after it gets that same bare answer.
    checked: dict[str, type[pydantic.BaseModel]] = {
        "tools/call": mcp_types.CallToolRequestParams,
        "initialize": mcp_types.InitializeRequestParams,
        "tools/list": mcp_types.PaginatedRequestParams,
        "ping": mcp_types.RequestParams,
    }
    if isinstance(message, mcp_types.JSONRPCRequest) and message.method in checked:
        try:
            checked[message.method].model_validate(message.params or {}, by_name=False)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return Refusal(message.id, INVALID_PARAMS, f"the message's params.{where}: {first['msg']}")
    return message


class _Members(dict[str, Any]):
    """An object as the lenient parser reads it, with every value its "id" keys hold."""

    ids: list[Any]


def _members(pairs: list[tuple[str, Any]]) -> _Members:
    found = _Members(pairs)
    found.ids = [value for key, value in pairs if key == "id"]
    return found


# The id of a request cut short or otherwise not JSON, when it comes before any nested value,
# as clients write it: {"jsonrpc": "2.0", "id": 7, "method": ...}.
_LEADING_ID = re.compile(
    r'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\\x00-\x1f]*"\s*,)*'
    r'\s*"id"\s*:\s*(-?(?:0|[1-9][0-9]{0,17})|"[^"\\\x00-\x1f]*")\s*[,}]'
)


def _id_despite_refusal(text: str) -> tuple[int | str | None, bool]:
    """The request id a line that strict_json refuses still shows (a huge number, deep
    nesting, NaN or a repeated key elsewhere in it), so that the client's call ends with the
    error instead of waiting for ever; and whether the line is a notification, which gets no
    reply. The id must be certain: one "id" key at the top, a string or an integer."""
    try:
        document = json.loads(
            text,
            object_pairs_hook=_members,
            parse_constant=lambda _: None,
            parse_int=lambda digits: int(digits) if len(digits) <= 100 else None,
        )
    except (ValueError, RecursionError):
        leading = _LEADING_ID.match(text)
        try:
            return (json.loads(leading.group(1)) if leading else None), False
        except ValueError:  # the pattern follows JSON's grammar; this guards it, not the rule
            return None, False
    if not isinstance(document, _Members):
        return None, False
    if "method" not in document and ("result" in document or "error" in document):
        return None, True  # a response: JSON-RPC answers none, whatever it holds
    if not document.ids:
        return None, "method" in document
    request_id = document.ids[0]
    certain = len(document.ids) == 1 and _is_id(request_id)
    if not certain or (isinstance(request_id, str) and not _is_unicode(request_id)):
        return None, False
    return request_id, False


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _kind(document: dict[str, Any]) -> str:
    """Which JSON-RPC message ``document`` means to be, by the keys it has."""
    if "method" in document:
        return "JSONRPCRequest" if "id" in document else "JSONRPCNotification"
    return "JSONRPCError" if "error" in document else "JSONRPCResponse"


def _refused(text: str, code: int, problem: str, document: Any = None) -> Refusal:
    """A refusal carrying the id of the request on ``text``, if it shows one."""
    if document is None:
        try:
            document = strict_json.loads(text)
        except strict_json.JsonRefused:
            return Refusal(None, code, f"the message {problem}")
    if not isinstance(document, dict):
        return Refusal(None, code, f"the message {problem}")
    request_id = document.get("id")
    response = "method" not in document and ("result" in document or "error" in document)
    notification = response or ("id" not in document and "method" in document)
    return Refusal(
        request_id if _is_id(request_id) else None, code, f"the message {problem}", reply=not notification
    )


class _Sends(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class _Unanswered:
    """The requests passed on to the server and not answered yet, counted by id as the SDK
    correlates them ("7" and 7 are one id). A request its client cancels leaves the count:
    the SDK answers none (MCP forbids it)."""

    def __init__(self) -> None:
        self._open: dict[int | str, int] = {}
        self._emptied: Any = None  # the anyio.Event wait_until_none waits on

    def add(self, request_id: int | str) -> None:
        key = _correlated(request_id)
        self._open[key] = self._open.get(key, 0) + 1

    def answered(self, request_id: int | str) -> None:
        key = _correlated(request_id)
        if self._open.get(key, 0) > 1:
            self._open[key] -= 1
        else:
            self._forget(key)

    def cancelled(self, request_id: int | str) -> None:
        self._forget(_correlated(request_id))

    def _forget(self, key: int | str) -> None:
        self._open.pop(key, None)
        if not self._open and self._emptied is not None:
            self._emptied.set()

    async def wait_until_none(self) -> None:
        import anyio

        while self._open:
            self._emptied = anyio.Event()
            await self._emptied.wait()


def _correlated(request_id: int | str) -> int | str:
    from mcp.shared.dispatcher import coerce_request_id

    return coerce_request_id(request_id)


class _WritableReplies:
    """The server's write stream, with every reply checked before the SDK's writer takes it:
    a reply that would echo a lone surrogate (an unknown method's name, say) cannot be written
    as JSON, and the writer's failure would end the session. Such a reply becomes an error
    that says so, to the same request. Each reply the server sends is counted off
    ``unanswered``."""

    def __init__(self, inner: _Sends, unanswered: _Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    def __getattr__(self, name: str) -> Any:  # close, aclose, clone...: the stream's own
        return getattr(self._inner, name)

    async def __aenter__(self) -> _WritableReplies:
        await self._inner.__aenter__()  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._inner.__aexit__(*exc)  # type: ignore[attr-defined]

    async def send(self, item: SessionMessage, /) -> None:
        """Send the server's message; a reply counts its request answered."""
        import mcp_types

        request_id = getattr(item.message, "id", None)
        await self.send_uncounted(item)
        if isinstance(item.message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)) and _is_id(
            request_id
        ):
            self._unanswered.answered(request_id)

    async def send_uncounted(self, item: SessionMessage) -> None:
        """Send a message, checked, counting nothing: the reply to a line the server never saw."""
        import mcp_types
        import pydantic_core
        from mcp.shared.message import SessionMessage

        try:
            item.message.model_dump_json(by_alias=True, exclude_unset=True)
        except (ValueError, pydantic_core.PydanticSerializationError):
            request_id = getattr(item.message, "id", None)
            error = mcp_types.ErrorData(
                code=INTERNAL_ERROR,
                message="the reply would hold text that is not valid Unicode (a lone surrogate from "
                "the request, echoed) and cannot be sent; send the request in valid Unicode",
            )
            safe = request_id if isinstance(request_id, int) or _is_unicode(str(request_id)) else None
            item = SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=safe, error=error))
        await self._inner.send(item)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of an MCP session on stdin and stdout, as the SDK's
    stdio_server gives them, but with stdin read by read_message and every reply checked
    to be writable."""
    import io

    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    unanswered = _Unanswered()
    # The SDK still owns stdout (one writer, so replies never interleave); its stdin is
    # given an empty file, and the real one is read below.
    try:
        async with stdio_server(stdin=anyio.wrap_file(io.StringIO())) as (_, write_stream):
            replies = _WritableReplies(write_stream, unanswered)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_relay, sys.stdin.fileno(), send, replies, unanswered)
                try:
                    yield receive, replies
                finally:
                    tasks.cancel_scope.cancel()
    except* OSError as failed:  # the SDK's stdout writer: the client stopped reading
        raise EvidenceError(
            f"could not write a reply to standard output ({failed.exceptions[0]}): the client stopped "
            "reading, and the requests not answered by then are lost"
        ) from None


# The longest line the server reads: a put_evidence of a body at the store's 1 MiB limit
# fits many times over, even with every character escaped. A longer one is refused and its
# bytes are dropped as they come, so a client that never ends a line cannot fill the memory.
MAX_LINE_BYTES = 16 * 1024 * 1024


def _too_long(start: bytes) -> Refusal:
    """The refusal of a line over MAX_LINE_BYTES, with the id its start shows, if any."""
    request_id, notification = _id_despite_refusal(start[: 1 << 16].decode("utf-8", "replace"))
    problem = f"the message is over {MAX_LINE_BYTES:,} bytes without a line end; it was not read"
    return Refusal(request_id, INVALID_REQUEST, problem, reply=not notification)


def _read_lines(fd: int, lines: Any, token: Any) -> None:
    """The stdin reader's thread: each line of ``fd`` into the ``lines`` stream (a Refusal for
    one over MAX_LINE_BYTES), then its end. A daemon thread reading the descriptor itself:
    Ctrl-C then ends the process even while it waits for a line (a thread blocked in
    sys.stdin's buffered reader kept the process alive, or aborted it at exit, holding the
    reader's lock)."""
    import anyio.from_thread

    def send(item: bytes | Refusal) -> None:
        anyio.from_thread.run(lines.send, item, token=token)

    pending: list[bytes] = []  # the pieces of the line not ended yet
    size = 0  # their length
    dropping = False  # within a line over the limit: its bytes are not kept
    try:
        try:
            while chunk := os.read(fd, 1 << 16):
                *ends, rest = chunk.split(b"\n")
                for end in ends:  # each ends the line pending
                    if not dropping:
                        line = b"".join([*pending, end])
                        send(line + b"\n" if len(line) <= MAX_LINE_BYTES else _too_long(line))
                    pending, size, dropping = [], 0, False
                if dropping:
                    continue
                pending.append(rest)
                size += len(rest)
                if size > MAX_LINE_BYTES:
                    send(_too_long(b"".join(pending)))
                    pending, size, dropping = [], 0, True
            if size and not dropping:
                send(b"".join(pending))
        except OSError as exc:  # not an end of input, but no more can be read: end as at one
            print(f"pyevidence mcp: could not read standard input ({exc}); ending", file=sys.stderr)
        anyio.from_thread.run(lines.aclose, token=token)
    except Exception:  # the session ended first: nobody is left to read
        pass


class _Lifecycle:
    """MCP's order: a session starts with initialize. The SDK answered a tools/call sent before
    it with "Invalid request parameters", which sends a client looking at its arguments."""

    def __init__(self) -> None:
        self.initialized = False

    def admit(self, message: mcp_types.JSONRPCMessage) -> mcp_types.JSONRPCMessage | Refusal:
        import mcp_types

        if not isinstance(message, mcp_types.JSONRPCRequest) or self.initialized:
            return message
        if message.method == "initialize":
            self.initialized = True
        elif message.method != "ping":
            problem = (
                f"came before the session was initialized: send 'initialize' first, then {message.method!r}"
            )
            return Refusal(message.id, INVALID_REQUEST, f"the request {problem}")
        return message


async def _relay(stdin: int, messages: Any, replies: _WritableReplies, unanswered: _Unanswered) -> None:
    """Read stdin to its end: each message to ``messages``, each refusal's reply to ``replies``.
    At the end, wait until every request passed on is answered (or cancelled by the client),
    then close ``messages``: the SDK cancels the calls still running when its input ends."""
    import threading

    import anyio
    import anyio.lowlevel
    import mcp_types
    from mcp.shared.message import SessionMessage

    lifecycle = _Lifecycle()
    send_line, lines = anyio.create_memory_object_stream[bytes | Refusal](16)
    token = anyio.lowlevel.current_token()
    threading.Thread(target=_read_lines, args=(stdin, send_line, token), daemon=True).start()
    async with messages, lines:
        async for line in lines:
            outcome = line if isinstance(line, Refusal) else read_message(line)
            if outcome is None:
                continue
            if not isinstance(outcome, Refusal):
                outcome = lifecycle.admit(outcome)
            if not isinstance(outcome, Refusal):
                if isinstance(outcome, mcp_types.JSONRPCRequest):
                    unanswered.add(outcome.id)
                elif (
                    isinstance(outcome, mcp_types.JSONRPCNotification)
                    and outcome.method == "notifications/cancelled"
                ):
                    cancelled = (outcome.params or {}).get("requestId")
                    if _is_id(cancelled):
                        unanswered.cancelled(cancelled)
                await messages.send(SessionMessage(outcome))
                continue
            print(f"pyevidence mcp: refused: {outcome.message}", file=sys.stderr, flush=True)
            if outcome.reply:
                error = mcp_types.ErrorData(code=outcome.code, message=outcome.message)
                reply = mcp_types.JSONRPCError(jsonrpc="2.0", id=outcome.request_id, error=error)
                await replies.send_uncounted(SessionMessage(reply))
        await unanswered.wait_until_none()
