"""Model-based test: random put / retrieve / forget / reopen sequences on every engine,
each compared with a plain in-memory model of the rules, vectors and their ranking included."""

from __future__ import annotations

import shutil
import sqlite3
import struct
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from strategies import rich_text

from pyevidence import Embedder, EvidenceStore, HybridScorer, Record, VectorScorer, native_available
from pyevidence.core.tokens import token_overlap
from pyevidence.core.vectors import cosine_distance, f32, squared_norm

ENGINES = ["python"] + (["native"] if native_available() else [])
TENANTS = st.sampled_from(["team-a", "team-b", "Team-A"])
REVISIONS = st.sampled_from(["v1", "v2"])
IDS = st.sampled_from(["r1", "r2", "r3", "R1", "é", "r\x001"])
TIMES = st.integers(min_value=0, max_value=12)
KIND = st.sampled_from(["working", "incident", "runbook"])
BODIES = rich_text.filter(lambda s: s.strip() != "")
# Small integer components: distances tie often, so the tie rule is exercised.
VECTORS = st.none() | st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any)


def toy_embedding(text: str) -> list[float]:
    """The stores' embedder: deterministic, nonzero, no meaning."""
    return [float(len(text) % 3 + 1), float(text.count("q") % 3), float(text.count("a") % 2)]


EMBEDDER = Embedder("toy", toy_embedding)


def model_vector_ranking(
    model: dict[tuple[str, str], Record],
    vectors: dict[tuple[str, str], list[float]],
    tenant: str,
    revision: str,
    query: str,
    now: int,
    limit: int,
) -> list[str]:
    """The vector rule, written out: scope first, then distance (sqlite-vec's float32
    arithmetic, pyevidence.core.vectors), then record id; similarity must be above 0."""
    q = [f32(x) for x in toy_embedding(query)]
    ranked = []
    for key, r in model.items():
        if r.tenant == tenant and r.revision == revision and r.expires_at > now and key in vectors:
            distance = cosine_distance(q, squared_norm(q), vectors[key])
            if 1.0 - distance > 0.0:
                ranked.append((distance, r.record_id))
    return [record_id for _, record_id in sorted(ranked)[:limit]]


def model_retrieve(
    model: dict[tuple[str, str], Record], tenant: str, revision: str, query: str, now: int, limit: int
) -> list[tuple[str, int, str, str]]:
    """The rules, written out plainly: scope first, then score, then order."""
    eligible = [
        r for r in model.values() if r.tenant == tenant and r.revision == revision and r.expires_at > now
    ]
    scored = [(token_overlap(query, r.body), r) for r in eligible]
    ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: (-p[0], p[1].record_id))
    return [(r.record_id, score, r.source, r.body) for score, r in ranked[:limit]]


class StoreMachine(RuleBasedStateMachine):
    @initialize()
    def open_stores(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="pyevidence-model-"))
        self.model: dict[tuple[str, str], Record] = {}
        # Every put (its body) and forget (None), per (tenant, record_id): what history() lists.
        self.events: dict[tuple[str, str], list[str | None]] = {}
        self.vectors: dict[tuple[str, str], list[float]] = {}  # float32 components
        self.stores = {
            name: EvidenceStore(self.tmp / f"{name}.db", engine=name, embedder=EMBEDDER) for name in ENGINES
        }

    @rule(
        tenant=TENANTS,
        record_id=IDS,
        revision=REVISIONS,
        kind=KIND,
        body=BODIES,
        expires_at=TIMES,
        vector=VECTORS,
    )
    def put(
        self,
        tenant: str,
        record_id: str,
        revision: str,
        kind: str,
        body: str,
        expires_at: int,
        vector: list[int] | None,
    ) -> None:
        rec = Record(tenant, record_id, revision, kind, body, f"src://{record_id}", expires_at)
        self.model[(tenant, record_id)] = rec
        self.events.setdefault((tenant, record_id), []).append(body)
        self.vectors[(tenant, record_id)] = [f32(x) for x in (vector or toy_embedding(body))]
        for store in self.stores.values():
            store.put(**rec.__dict__, embedding=vector)

    @rule(tenant=TENANTS, record_id=IDS)
    def forget(self, tenant: str, record_id: str) -> None:
        expected = self.model.pop((tenant, record_id), None) is not None
        self.vectors.pop((tenant, record_id), None)
        if expected:
            self.events[(tenant, record_id)].append(None)
        for store in self.stores.values():
            assert store.forget(tenant=tenant, record_id=record_id) is expected

    @rule(
        tenant=TENANTS,
        revision=REVISIONS,
        query=rich_text,
        now=TIMES,
        limit=st.integers(min_value=1, max_value=10),
    )
    def retrieve(self, tenant: str, revision: str, query: str, now: int, limit: int) -> None:
        expected = model_retrieve(self.model, tenant, revision, query, now, limit)
        eligible = sum(
            1
            for r in self.model.values()
            if r.tenant == tenant and r.revision == revision and r.expires_at > now
        )
        for name, store in self.stores.items():
            result = store.retrieve(tenant=tenant, revision=revision, query=query, now=now, limit=limit)
            got = [(h.record_id, h.score, h.citation, h.body) for h in result]
            assert got == expected, name
            assert result.eligible_count == eligible, name

    # Small limits: with a handful of records in scope, the top-k cut has to matter.
    @rule(tenant=TENANTS, revision=REVISIONS, query=rich_text, now=TIMES, limit=st.integers(1, 3))
    def retrieve_by_vector(self, tenant: str, revision: str, query: str, now: int, limit: int) -> None:
        expected = model_vector_ranking(self.model, self.vectors, tenant, revision, query, now, limit)
        results = []
        for name, store in self.stores.items():
            result = store.retrieve(
                tenant=tenant,
                revision=revision,
                query=query,
                now=now,
                limit=limit,
                scorer=VectorScorer(EMBEDDER),
            )
            assert [h.record_id for h in result] == expected, name
            assert result.unranked_count == 0, name  # every record was put with a vector
            hybrid = store.retrieve(
                tenant=tenant,
                revision=revision,
                query=query,
                now=now,
                limit=limit,
                scorer=HybridScorer(EMBEDDER),
            )
            results.append((result, hybrid))
        assert all(pair == results[0] for pair in results)  # scores too, bit for bit

    @rule()
    def reopen(self) -> None:
        for name in list(self.stores):
            self.stores[name].close()
            self.stores[name] = EvidenceStore(self.tmp / f"{name}.db", engine=name, embedder=EMBEDDER)

    @invariant()
    def every_current_record_has_exactly_its_vector(self) -> None:
        """No stale vector: one per current record, of its current version, as put."""
        if not hasattr(self, "stores"):
            return
        for name in self.stores:
            conn = sqlite3.connect(self.tmp / f"{name}.db")
            try:
                rows = conn.execute(
                    "SELECT v.tenant, v.record_id, v.version = e.version, v.embedding"
                    " FROM evidence_vectors AS v"
                    " LEFT JOIN evidence AS e ON e.tenant = v.tenant AND e.record_id = v.record_id"
                ).fetchall()
            finally:
                conn.close()
            stored = {(t, r): (current, list(struct.unpack("<3f", blob))) for t, r, current, blob in rows}
            assert stored == {key: (1, vector) for key, vector in self.vectors.items()}, name

    @invariant()
    def engines_hold_the_same_records(self) -> None:
        if not hasattr(self, "stores"):
            return
        for tenant in ("team-a", "team-b", "Team-A"):
            for revision in ("v1", "v2"):
                counts = {
                    store.retrieve(tenant=tenant, revision=revision, query="", now=-1).eligible_count
                    for store in self.stores.values()
                }
                expected = sum(1 for r in self.model.values() if (r.tenant, r.revision) == (tenant, revision))
                assert counts == {expected}

    @invariant()
    def engines_hold_the_same_versions(self) -> None:
        """history() follows the model on every engine, the engines agree on every hash,
        and every tenant's chain verifies."""
        if not hasattr(self, "stores"):
            return
        for (tenant, record_id), events in self.events.items():
            last_forget = max((i for i, body in enumerate(events) if body is None), default=-1)
            expected = [
                ("forget", None) if body is None else ("put", body if i > last_forget else None)
                for i, body in enumerate(events)
            ]
            found = [store.history(tenant=tenant, record_id=record_id) for store in self.stores.values()]
            for versions in found:
                assert [(v.operation, v.body) for v in versions] == expected
                assert [v.seq for v in versions] == list(range(1, len(events) + 1))
            assert all(versions == found[0] for versions in found)  # hashes and chain, byte for byte
        for tenant in ("team-a", "team-b", "Team-A"):
            for store in self.stores.values():
                assert store.verify(tenant=tenant).ok

    def teardown(self) -> None:
        for store in getattr(self, "stores", {}).values():
            store.close()
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)


StoreMachine.TestCase.settings = settings(stateful_step_count=25)  # on top of the loaded profile
test_store_machine = StoreMachine.TestCase
