"""Model-based test: random put / retrieve / forget / reopen sequences on every engine,
each compared with a plain in-memory model of the rules."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from strategies import rich_text

from pyevidence import EvidenceStore, Record, native_available
from pyevidence.tokens import token_overlap

ENGINES = ["python"] + (["native"] if native_available() else [])
TENANTS = st.sampled_from(["team-a", "team-b", "Team-A"])
REVISIONS = st.sampled_from(["v1", "v2"])
IDS = st.sampled_from(["r1", "r2", "r3", "R1", "é", "r\x001"])
TIMES = st.integers(min_value=0, max_value=12)
KIND = st.sampled_from(["working", "incident", "runbook"])
BODIES = rich_text.filter(lambda s: s.strip() != "")


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
        self.stores = {name: EvidenceStore(self.tmp / f"{name}.db", engine=name) for name in ENGINES}

    @rule(tenant=TENANTS, record_id=IDS, revision=REVISIONS, kind=KIND, body=BODIES, expires_at=TIMES)
    def put(self, tenant: str, record_id: str, revision: str, kind: str, body: str, expires_at: int) -> None:
        rec = Record(tenant, record_id, revision, kind, body, f"src://{record_id}", expires_at)
        self.model[(tenant, record_id)] = rec
        self.events.setdefault((tenant, record_id), []).append(body)
        for store in self.stores.values():
            store.put(**rec.__dict__)

    @rule(tenant=TENANTS, record_id=IDS)
    def forget(self, tenant: str, record_id: str) -> None:
        expected = self.model.pop((tenant, record_id), None) is not None
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

    @rule()
    def reopen(self) -> None:
        for name in list(self.stores):
            self.stores[name].close()
            self.stores[name] = EvidenceStore(self.tmp / f"{name}.db", engine=name)

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
