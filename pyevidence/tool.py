"""Agent tools over one tenant's evidence, with no tenant or revision field anywhere.

Each tool is a JSON-Schema description (the shape most model APIs accept: name,
description, input_schema) and ``run_tool`` runs one for a model's arguments. The
model chooses only the query, a record id or a cited version; the host binds the
tenant (a ScopedStore), the revision and the time. Arguments are checked strictly:
an unexpected field, a tenant or a revision above all, is an error, not something
ignored. This module is the one source of the tools' wording: ``pyevidence mcp``
serves exactly these descriptions and schemas.

Every tool stays inside the bound revision: hits come only from it, a cited version
or a history entry stored at another revision is not shown (nor a forgotten one,
whose revision was erased), put_evidence refuses a record whose current version
belongs to another revision, and forget_evidence one with any version there; each
checks and writes in one transaction (ScopedStore.put_in_revision, forget_in_revision).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .core import validation
from .core.errors import ValidationError
from .core.records import KINDS, VERSION_PATTERN, Retrieval, Version
from .core.strict_json import shown
from .core.tokens import token_set
from .store import ScopedStore

_RECORD_ID = {"type": "string", "minLength": 1, "description": "the record_id, as returned in a hit"}

RETRIEVE_TOOL: dict[str, Any] = {
    "name": "retrieve_evidence",
    "description": (
        "Search this team's runbooks, incident records and notes for records that share words "
        "with the query, and return them with citations. Matching is lexical: use the words the "
        "records would use. No results means no evidence was found, not that there is no problem."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words to look for", "minLength": 1},
            "limit": {
                "type": "integer",
                "minimum": validation.LIMIT_MIN,
                "maximum": validation.LIMIT_MAX,
                "default": 5,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}

CITED_VERSION_TOOL: dict[str, Any] = {
    "name": "get_cited_version",
    "description": (
        "Show exactly what a hit cited: the record_id and version returned in a hit of "
        "retrieve_evidence resolve to the same body and fields, even after the record was updated. "
        'status "unknown" means no such version exists here, or it was forgotten since.'
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "record_id": _RECORD_ID,
            "version": {
                "type": "string",
                # The store's rule; it also bounds seq to 64 bits, which a pattern cannot say.
                "pattern": f"^{VERSION_PATTERN.pattern}$",
                "description": "the version, as returned in a hit ('<seq>-<64 hex digits>')",
            },
        },
        "required": ["record_id", "version"],
        "additionalProperties": False,
    },
}

HISTORY_TOOL: dict[str, Any] = {
    "name": "record_history",
    "description": (
        "List the stored versions of one record, oldest first, with their hashes, to see how a "
        "runbook or incident record changed, within this scope. Versions whose content was "
        "forgotten are not listed. "
        "An expired version is listed with expired: true; it is no longer evidence."
    ),
    "input_schema": {
        "type": "object",
        "properties": {"record_id": _RECORD_ID},
        "required": ["record_id"],
        "additionalProperties": False,
    },
}

PUT_TOOL: dict[str, Any] = {
    "name": "put_evidence",
    "description": (
        "Store a new version of a record (a working note, an incident record or a runbook); it "
        "becomes the current one and earlier versions stay in its history. It is found later only "
        "by the words it contains, and not at all once expires_at has passed."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "record_id": {"type": "string", "minLength": 1, "description": "a stable name for the record"},
            "kind": {"type": "string", "enum": list(KINDS)},
            "body": {"type": "string", "minLength": 1, "description": "the record text"},
            "source": {"type": "string", "minLength": 1, "description": "the citation to show for it"},
            "expires_at": {
                "type": "integer",
                "minimum": 0,
                "maximum": validation.INT64_MAX,
                "description": "when it stops being evidence, on the server's clock",
            },
        },
        "required": ["record_id", "kind", "body", "source", "expires_at"],
        "additionalProperties": False,
    },
}

FORGET_TOOL: dict[str, Any] = {
    "name": "forget_evidence",
    "description": (
        "Forget a record: it is no longer found, and the content of all its versions is erased "
        "(only their hashes remain). This cannot be undone."
    ),
    "input_schema": {
        "type": "object",
        "properties": {"record_id": _RECORD_ID},
        "required": ["record_id"],
        "additionalProperties": False,
    },
}

READ_TOOLS = (RETRIEVE_TOOL, CITED_VERSION_TOOL, HISTORY_TOOL)
WRITE_TOOLS = (PUT_TOOL, FORGET_TOOL)

# What a host shows a model about the whole set of tools (pyevidence mcp's instructions).
INSTRUCTIONS = (
    "Evidence from one team's runbooks, incident records and notes, in a scope the operator fixed. "
    "Matching is lexical (shared words), not by meaning. No results means no evidence was found, "
    "not that there is no problem."
)
NO_EVIDENCE = "No evidence found in scope. This does not mean there is no problem: gather fresh telemetry."
NOT_IN_SCOPE = "No such version of this record in this scope."
# What a word is to the search (core.tokens): said wherever a result reports that none matched.
WORD_RULE = "a word here is a run of ASCII letters and digits; other letters never match"
# Said of a query with no such word (core.tokens.token_set is empty): refused by the MCP tool,
# noted by retrieve's output and the page.
NO_WORD = f"has no word this search can match ({WORD_RULE}), so it could find nothing"


def no_evidence_note(found_any: bool) -> dict[str, str]:
    """``{"note": NO_EVIDENCE}`` when a retrieve found nothing, else ``{}``: the one place that
    decides when every interface (the MCP tool, the CLI, the web page) says it."""
    return {} if found_any else {"note": NO_EVIDENCE}


def retrieve_output(*, query: str, tenant: str, revision: str, now: int, result: Retrieval) -> dict[str, Any]:
    """What `pyevidence retrieve` prints, and the web page's search answers as JSON: the query, the
    scope, the result and, with no hits, the note."""
    scope = {"tenant": tenant, "revision": revision, "now": now}
    return {
        "query": query,
        "scope": scope,
        **result.to_dict(),
        **no_evidence_note(bool(result.hits)),
        **no_words_note(query, result),
    }


def no_words_note(query: str, result: Retrieval) -> dict[str, str]:
    """``{"query_note": ...}`` when the words ranked the result and the query has none the token
    rule matches (Russian, fullwidth letters, only punctuation), so it could find nothing whatever
    the records hold; else ``{}``. The MCP tool refuses such a query outright (_retrieve)."""
    if result.ranked_by != "token_overlap" or token_set(query):
        return {}
    return {"query_note": f"the query {NO_WORD}"}


def run_retrieve_tool(scoped: ScopedStore, arguments: Any, *, revision: str, now: int) -> dict[str, Any]:
    """Run retrieve_evidence for a model's ``arguments`` (a mapping, as decoded from JSON)."""
    return run_tool("retrieve_evidence", scoped, arguments, revision=revision, now=now)


def run_tool(
    name: str, scoped: ScopedStore, arguments: Any, *, revision: str, now: int, allow_writes: bool = False
) -> dict[str, Any]:
    """Run tool ``name`` for a model's ``arguments`` in the bound ``revision`` at time ``now``.

    Raises ValidationError (field "arguments" or "arguments.<name>", or the field
    the store's rules name) with nothing changed when the arguments break the
    tool's schema, and for a write tool unless ``allow_writes``.
    """
    runners = {**_READ_RUNNERS, **(_WRITE_RUNNERS if allow_writes else {})}
    if name not in runners:
        offered = ", ".join(sorted(runners))
        raise ValidationError("name", f"no tool named {name!r} here; the tools are {offered}")
    spec = next(tool for tool in (*READ_TOOLS, *WRITE_TOOLS) if tool["name"] == name)
    _check_fields(spec, arguments)
    return runners[name](scoped, arguments, revision, now)


def _check_fields(spec: Mapping[str, Any], arguments: Any) -> None:
    if not isinstance(arguments, dict):
        raise ValidationError("arguments", f"must be a JSON object, got {type(arguments).__name__}")
    schema = spec["input_schema"]
    allowed = list(schema["properties"])
    unknown = sorted(shown_name(key) for key in map(str, arguments) if key not in allowed)
    if unknown:
        raise ValidationError(
            "arguments", f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    for required in schema["required"]:
        if required not in arguments:
            raise ValidationError(f"arguments.{required}", "is required")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def shown_name(name: str) -> str:
    """A field or parameter name as an error lists it: as it is when it is plainly a name, else
    quoted, so that an empty or blank one is seen, one with a comma reads as one, and one a reply
    cannot carry or a reader cannot see (a lone surrogate, a control) is escaped."""
    return name if _PLAIN_NAME.fullmatch(name) else repr(name)


def _retrieve(scoped: ScopedStore, arguments: dict[str, Any], revision: str, now: int) -> dict[str, Any]:
    query = validation.text("query", arguments["query"])
    limit = validation.limit(arguments.get("limit", 5))
    # Such a query finds nothing whatever the records hold (a Russian runbook for a Russian query):
    # "no evidence found" would be false, so the model is told to rephrase instead.
    if not token_set(query):
        raise ValidationError(
            "query",
            f"{NO_WORD}; use the ASCII words the records would use; got {shown(query)}",
        )
    result = scoped.retrieve(revision=revision, query=query, now=now, limit=limit)
    hits = [
        {
            "citation": hit.citation,
            "record_id": hit.record_id,
            "version": hit.version,
            "kind": hit.kind,
            "score": hit.score,
            "body": hit.body,
        }
        for hit in result
    ]
    return {"hits": hits, "eligible_count": result.eligible_count, **no_evidence_note(bool(hits))}


def _version_entry(version: Version, now: int) -> dict[str, Any]:
    expires_at = version.expires_at
    return {**version.to_dict(), "expired": expires_at is not None and expires_at <= now}


def _cited_version(scoped: ScopedStore, arguments: dict[str, Any], revision: str, now: int) -> dict[str, Any]:
    record_id = validation.text("record_id", arguments["record_id"])
    found = scoped.get_version(record_id=record_id, version=arguments["version"])
    # Shown only when it is known to be the bound revision's. A forgotten version lost its
    # revision with its content, so it is "unknown" here, whichever revision it had.
    if found.status != "found" or found.version is None or found.version.revision != revision:
        return {"status": "unknown", "version": None, "note": NOT_IN_SCOPE}
    return {"status": "found", "version": _version_entry(found.version, now)}


def _history(scoped: ScopedStore, arguments: dict[str, Any], revision: str, now: int) -> dict[str, Any]:
    record_id = validation.text("record_id", arguments["record_id"])
    shown = [v for v in scoped.history(record_id=record_id) if v.revision == revision]
    return {"record_id": record_id, "versions": [_version_entry(v, now) for v in shown]}


def _put(scoped: ScopedStore, arguments: dict[str, Any], revision: str, now: int) -> dict[str, Any]:
    stored = scoped.put_in_revision(revision=revision, **arguments)
    reply = {"stored": True, "record_id": stored.record_id, "version": stored.version}
    # The model is not told the server's clock, so it may pick an expiry that has passed: the
    # record is then stored but never found, and the reply must say so.
    if arguments["expires_at"] <= now:
        reply["expired"] = True
        reply["note"] = (
            f"stored, but expires_at {arguments['expires_at']} is not after the server's time now "
            f"({now}), so retrieve_evidence will not find it; put it again with a later expires_at"
        )
    return reply


def _forget(scoped: ScopedStore, arguments: dict[str, Any], revision: str, now: int) -> dict[str, Any]:
    del now
    record_id = validation.text("record_id", arguments["record_id"])
    return {
        "forgotten": scoped.forget_in_revision(record_id=record_id, revision=revision),
        "record_id": record_id,
    }


_READ_RUNNERS = {
    "retrieve_evidence": _retrieve,
    "get_cited_version": _cited_version,
    "record_history": _history,
}
_WRITE_RUNNERS = {"put_evidence": _put, "forget_evidence": _forget}
