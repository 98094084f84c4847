"""The demonstration: eligibility decides what may be ranked, before any scoring.

Three records could all answer the question lexically; only one is in scope.
Then the runbook is updated, and the citation of the hit still resolves to the
exact text that was cited.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ..store import EvidenceStore

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


# The semantic demonstration (pyevidence demo --semantic): what the lexical scorer
# misses. The in-scope runbook says "response time", never "latency".
SEMANTIC_QUERY = "latency"
SEMANTIC_MIN_SIMILARITY = 0.2  # MiniLM gives unrelated texts about 0.0-0.15
SEMANTIC_RECORDS: tuple[dict[str, Any], ...] = (
    dict(
        tenant="team-a",
        record_id="runbook-web-pool",
        revision="v1",
        kind="runbook",
        body="If the API response time goes above two seconds, scale the web pool.",
        source="runbook://web/pool/v1",
        expires_at=1000,
    ),
    dict(
        tenant="team-a",
        record_id="runbook-disk",
        revision="v1",
        kind="runbook",
        body="When a node's disk is over 90 percent full, rotate the logs and expand the volume.",
        source="runbook://node/disk/v1",
        expires_at=1000,
    ),
    dict(
        tenant="team-a",
        record_id="runbook-certs",
        revision="v1",
        kind="runbook",
        body="Renew the TLS certificate a week before it expires and reload the load balancer.",
        source="runbook://edge/certs/v1",
        expires_at=1000,
    ),
    # Out of scope: expired, and another tenant's. Both say "latency" outright, and the
    # team-b note is the query's nearest neighbour of all: eligibility still comes first.
    dict(
        tenant="team-a",
        record_id="incident-latency",
        revision="v1",
        kind="incident",
        body="Incident: latency on the checkout API after the deploy.",
        source="incident://2026-10-01/latency",
        expires_at=50,
    ),
    dict(
        tenant="team-b",
        record_id="note-latency",
        revision="v1",
        kind="working",
        body="team-b note: latency spikes on the checkout service.",
        source="note://team-b/latency",
        expires_at=1000,
    ),
)

SEMANTIC_NOTE = (
    "token_overlap finds no record sharing a word with the query. all-MiniLM-L6-v2, run locally, "
    "ranks the runbook that says 'response time' by cosine similarity: a learned statistical "
    "association, not understanding, so read the cited text before acting on it. The out-of-scope "
    "records that say 'latency' were never ranked. An empty hit list means no evidence was found."
)


def run_semantic(engine: str = "auto") -> dict[str, Any]:
    """The same question answered by the lexical, the vector and the hybrid scorer.
    Needs the embeddings extra (in the pyevidence checkout: pip install '.[embeddings]')."""
    from ..ranking.embeddings import minilm
    from ..ranking.vector_scoring import HybridScorer, VectorScorer

    embedder = minilm()
    scope = dict(tenant=TENANT, revision=REVISION, now=NOW)
    with tempfile.TemporaryDirectory(prefix="pyevidence-demo-") as tmp:
        with EvidenceStore(os.path.join(tmp, "semantic.db"), engine=engine, embedder=embedder) as store:
            store.put_many(SEMANTIC_RECORDS)
            results = {
                name: store.retrieve(query=SEMANTIC_QUERY, scorer=scorer, **scope).to_dict()  # type: ignore[arg-type]
                for name, scorer in (
                    ("lexical", None),
                    ("vector", VectorScorer(embedder, min_similarity=SEMANTIC_MIN_SIMILARITY)),
                    ("hybrid", HybridScorer(embedder, min_similarity=SEMANTIC_MIN_SIMILARITY)),
                )
            }
            engine_name = store.engine
    return {
        "query": SEMANTIC_QUERY,
        "scope": scope,
        "engine": engine_name,
        "embedding_model": embedder.model,
        "min_similarity": SEMANTIC_MIN_SIMILARITY,
        "stored_records": len(SEMANTIC_RECORDS),
        **results,
        "note": SEMANTIC_NOTE,
    }
