"""An agent tool for evidence retrieval that has no tenant field.

``RETRIEVE_TOOL`` is a JSON-Schema tool description (the shape most model APIs
accept: name, description, input_schema). The model chooses only the query and
how many hits; the host binds the tenant (a ScopedStore), the revision and the
logical time. ``run_retrieve_tool`` validates the model's arguments strictly:
an unexpected field, a tenant above all, is an error, not something ignored.
"""

from __future__ import annotations

from typing import Any

from . import validation
from .errors import ValidationError
from .scoped import ScopedStore

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
            "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}

NO_EVIDENCE = "No evidence found in scope. This does not mean there is no problem: gather fresh telemetry."


def run_retrieve_tool(scoped: ScopedStore, arguments: Any, *, revision: str, now: int) -> dict[str, Any]:
    """Run the tool for a model's ``arguments`` (a mapping, as decoded from JSON)."""
    if not isinstance(arguments, dict):
        raise ValidationError("arguments", f"must be a JSON object, got {type(arguments).__name__}")
    allowed = set(RETRIEVE_TOOL["input_schema"]["properties"])
    unknown = sorted(str(key) for key in arguments if key not in allowed)
    if unknown:
        raise ValidationError("arguments", f"unknown field(s) {', '.join(unknown)}; allowed: query, limit")
    if "query" not in arguments:
        raise ValidationError("arguments.query", "is required")
    query = validation.text("query", arguments["query"])
    limit = validation.limit(arguments.get("limit", 5))
    result = scoped.retrieve(revision=revision, query=query, now=now, limit=limit)
    hits = [
        {
            "citation": hit.citation,
            "record_id": hit.record_id,
            "kind": hit.kind,
            "score": hit.score,
            "body": hit.body,
        }
        for hit in result
    ]
    return {"hits": hits, "eligible_count": result.eligible_count, **({} if hits else {"note": NO_EVIDENCE})}
