"""The demonstration: eligibility decides what may be ranked, before any scoring.

Three records could all answer the question lexically; only one is in scope.
Then the runbook is updated, and the citation of the hit still resolves to the
exact text that was cited.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from .store import EvidenceStore

QUERY = "queue backlog consumer lag"
TENANT, REVISION, NOW = "team-a", "v1", 100

RECORDS: tuple[dict[str, Any], ...] = (
    # In scope: team-a, revision v1, expires after NOW.
    dict(
        tenant="team-a",
        record_id="runbook-queue",
        revision="v1",
        kind="runbook",
        body="Queue backlog runbook: when the queue depth alarm fires, check consumer lag, "
        "then scale the queue workers and drain the dead-letter queue.",
        source="runbook://queue/v1",
        expires_at=1000,
    ),
    # Out of scope: expires exactly at NOW, and eligibility needs expires_at > now.
    dict(
        tenant="team-a",
        record_id="incident-queue-backlog",
        revision="v1",
        kind="incident",
        body="Incident: queue backlog grew after a consumer deploy; consumer lag peaked at 40 minutes.",
        source="incident://2026-11-02/queue-backlog",
        expires_at=100,
    ),
    # Out of scope: another tenant's private working note.
    dict(
        tenant="team-b",
        record_id="note-queue",
        revision="v1",
        kind="working",
        body="team-b private note: queue backlog and consumer lag after our restart.",
        source="note://team-b/queue",
        expires_at=1000,
    ),
)

# The runbook's next version, stored after the hit was cited.
UPDATED_BODY = (
    "Queue backlog runbook, revised: check consumer lag first; if it exceeds 10 minutes, "
    "page the queue owner before scaling the workers."
)

NOTE = (
    "Citations are synthetic identifiers chosen by whoever stored the record, not URLs. "
    "Scores count shared words; they do not measure meaning. An empty hit list means "
    "no evidence was found, not that no problem exists: gather fresh telemetry next."
)


def run(engine: str = "auto") -> dict[str, Any]:
    """Build a temporary database, query it, and return the JSON-ready report."""
    with tempfile.TemporaryDirectory(prefix="pyevidence-demo-") as tmp:
        with EvidenceStore(os.path.join(tmp, "demo.db"), engine=engine) as store:
            for record in RECORDS:
                store.put(**record)
            result = store.retrieve(tenant=TENANT, revision=REVISION, query=QUERY, now=NOW)
            cited = result.hits[0]
            store.put(**{**RECORDS[0], "body": UPDATED_BODY})
            updated = store.history(tenant=TENANT, record_id=cited.record_id)[-1]
            lookup = store.get_version(tenant=TENANT, record_id=cited.record_id, version=cited.version)
            verification = store.verify(tenant=TENANT)
    return {
        "query": QUERY,
        "scope": {"tenant": TENANT, "revision": REVISION, "now": NOW},
        "stored_records": len(RECORDS),
        **result.to_dict(),
        "reproducible_citation": {
            "cited": cited.cite(),
            "record_updated_to_version": updated.version,
            "cited_version_status": lookup.status,
            "cited_body_unchanged": lookup.version is not None and lookup.version.body == cited.body,
        },
        "verify": verification.to_dict(),
        "note": NOTE,
    }
