"""The trusted scope: a handle bound to one tenant, and an agent tool with no tenant field."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from helpers import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import any_text

from pyevidence import EvidenceStore, Record, ScopedStore, ValidationError
from pyevidence.core import validation
from pyevidence.core.records import VERSION_PATTERN, parse_version
from pyevidence.tool import (
    CITED_VERSION_TOOL,
    NO_EVIDENCE,
    NOT_IN_SCOPE,
    READ_TOOLS,
    RETRIEVE_TOOL,
    WRITE_TOOLS,
    run_retrieve_tool,
    run_tool,
)

OTHER_BODY = "team-b secret: queue lag runbook"


@pytest.fixture
def shared(store: EvidenceStore) -> EvidenceStore:
    store.put(**record(tenant="team-a", record_id="mine", body="team-a queue lag runbook"))
    for rid in ("mine", "other", "' OR 1=1 --", "%"):
        store.put(**record(tenant="team-b", record_id=rid, body=OTHER_BODY))
    return store


def test_no_method_of_a_scoped_store_takes_a_tenant() -> None:
    for name in ("put", "put_many", "retrieve", "forget", "put_in_revision", "forget_in_revision"):
        assert "tenant" not in inspect.signature(getattr(ScopedStore, name)).parameters, name


def test_scoped_handle_reads_and_writes_its_own_tenant(shared: EvidenceStore) -> None:
    mine = shared.scoped(tenant="team-a")
    mine.put(record_id="new", revision="v1", kind="working", body="queue note", source="s", expires_at=9)
    assert [h.record_id for h in mine.retrieve(revision="v1", query="queue", now=0, limit=10)] == [
        "mine",
        "new",
    ]
    assert mine.forget(record_id="mine") is True
    assert shared.retrieve(tenant="team-b", revision="v1", query="", now=-1).eligible_count == 4


# The fixture's store is shared by the examples on purpose: whatever one example
# forgets, team-b's four records must survive all of them.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_id=any_text, revision=any_text, query=any_text)
def test_scoped_handle_never_reaches_another_tenant(
    shared: EvidenceStore, record_id: str, revision: str, query: str
) -> None:
    mine = shared.scoped(tenant="team-a")
    try:
        hits = mine.retrieve(revision=revision, query=query + " queue lag", now=0, limit=10)
    except ValidationError:
        hits = ()
    assert all(h.body != OTHER_BODY for h in hits)
    try:
        mine.forget(record_id=record_id)
    except ValidationError:
        pass
    assert shared.retrieve(tenant="team-b", revision="v1", query="", now=-1).eligible_count == 4


def test_scoped_put_many_refuses_a_tenant_field(shared: EvidenceStore) -> None:
    mine = shared.scoped(tenant="team-a")
    fields = {k: v for k, v in record(record_id="x").items() if k != "tenant"}
    with pytest.raises(ValidationError) as info:
        mine.put_many([fields, {**fields, "tenant": "team-b"}])
    assert info.value.field == "records[1]"
    with pytest.raises(ValidationError) as info:  # a Record carries its own tenant
        mine.put_many([fields, Record(**record(tenant="team-b", record_id="sneak"))])  # type: ignore[arg-type]
    assert info.value.field == "records[1]"
    assert mine.put_many([fields]) == 1
    assert shared.retrieve(tenant="team-b", revision="v1", query="", now=-1).eligible_count == 4


def test_scoped_tenant_is_validated(store: EvidenceStore) -> None:
    with pytest.raises(ValidationError, match="tenant"):
        store.scoped(tenant=" ")


def test_tool_description_has_no_tenant_anywhere() -> None:
    text = json.dumps(RETRIEVE_TOOL).lower()
    assert "tenant" not in text
    assert RETRIEVE_TOOL["input_schema"]["additionalProperties"] is False
    assert set(RETRIEVE_TOOL["input_schema"]["properties"]) == {"query", "limit"}


def test_tool_returns_cited_hits_of_the_bound_tenant(shared: EvidenceStore) -> None:
    out = run_retrieve_tool(shared.scoped(tenant="team-a"), {"query": "queue lag"}, revision="v1", now=0)
    assert [h["citation"] for h in out["hits"]] == ["runbook://queue/v1"]
    assert out["eligible_count"] == 1 and "note" not in out
    empty = run_retrieve_tool(shared.scoped(tenant="team-a"), {"query": "latency"}, revision="v1", now=0)
    assert empty == {"hits": [], "eligible_count": 1, "note": NO_EVIDENCE}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"query": "queue", "tenant": "team-b"}, "arguments"),
        ({"query": "queue", "revision": "v2"}, "arguments"),
        ({}, "arguments.query"),
        ({"query": ""}, "query"),
        ({"query": "q", "limit": 50}, "limit"),
        (["queue"], "arguments"),
    ],
)
def test_tool_rejects_arguments_outside_its_schema(shared: EvidenceStore, arguments: Any, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        run_retrieve_tool(shared.scoped(tenant="team-a"), arguments, revision="v1", now=0)
    assert info.value.field == field


def test_no_tool_has_a_tenant_or_revision_field_or_accepts_unknown_ones() -> None:
    for spec in (*READ_TOOLS, *WRITE_TOOLS):
        schema = spec["input_schema"]
        assert schema["additionalProperties"] is False, spec["name"]
        assert not {"tenant", "revision", "now"} & set(schema["properties"]), spec["name"]
        assert set(schema["required"]) <= set(schema["properties"])
        assert "tenant" not in json.dumps(spec).lower(), spec["name"]


def test_every_tool_stays_in_the_bound_revision(shared: EvidenceStore) -> None:
    mine = shared.scoped(tenant="team-a")
    mine.put(
        record_id="later", revision="v2", kind="runbook", body="queue lag in v2", source="s2", expires_at=9
    )
    later = mine.history(record_id="later")[0].version
    writes = dict(allow_writes=True, revision="v1", now=0)

    def run(name: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
        return run_tool(name, mine, arguments, **{**writes, **options})

    assert run("get_cited_version", {"record_id": "later", "version": later}) == {
        "status": "unknown",
        "version": None,
        "note": NOT_IN_SCOPE,
    }
    assert (
        run("get_cited_version", {"record_id": "later", "version": later}, revision="v2")["status"] == "found"
    )
    assert run("record_history", {"record_id": "later"}) == {"record_id": "later", "versions": []}
    put = {"record_id": "later", "kind": "working", "body": "moved", "source": "s", "expires_at": 9}
    for name, arguments in [("put_evidence", put), ("forget_evidence", {"record_id": "later"})]:
        with pytest.raises(ValidationError, match="'later' has versions in another revision here") as info:
            run(name, arguments)
        assert info.value.field == "record_id"
    assert [v.revision for v in mine.history(record_id="later")] == ["v2"]
    with pytest.raises(ValidationError, match="no tool named 'put_evidence' here"):
        run("put_evidence", put, allow_writes=False)
    stored = run("put_evidence", {**put, "record_id": "fresh"})
    hit = run("retrieve_evidence", {"query": "moved"})["hits"][0]
    assert (hit["record_id"], hit["version"]) == ("fresh", stored["version"])
    assert run("record_history", {"record_id": "fresh"}, now=9)["versions"][0]["expired"] is True
    assert run("forget_evidence", {"record_id": "fresh"}) == {"forgotten": True, "record_id": "fresh"}
    assert (  # forgotten: its revision was erased with its content, so not shown as this one's
        run("get_cited_version", {"record_id": "fresh", "version": stored["version"]})["status"] == "unknown"
    )


def _two_revisions(store: EvidenceStore) -> tuple[ScopedStore, str]:
    """Record "r" stored at v0, then at v1: the v0 version of it, its version id."""
    mine = store.scoped(tenant="team-a")
    mine.put(record_id="r", revision="v0", kind="runbook", body="v0 body", source="s0", expires_at=9)
    mine.put(record_id="r", revision="v1", kind="runbook", body="v1 body", source="s1", expires_at=9)
    return mine, mine.history(record_id="r")[0].version


def test_forget_tool_never_erases_another_revisions_version(store: EvidenceStore) -> None:
    mine, _ = _two_revisions(store)
    before = mine.history(record_id="r")
    with pytest.raises(ValidationError, match="'r' has versions in another revision here") as info:
        run_tool("forget_evidence", mine, {"record_id": "r"}, revision="v1", now=0, allow_writes=True)
    assert info.value.field == "record_id"
    assert mine.history(record_id="r") == before
    assert [v.body for v in before] == ["v0 body", "v1 body"]


def test_a_forgotten_version_is_unknown_to_every_revision(store: EvidenceStore) -> None:
    """A forget erases a version's revision with its content, so no bound revision can
    tell that the version was its own: the tool shows neither its status nor its hashes."""
    mine, v0 = _two_revisions(store)
    assert mine.forget(record_id="r") is True
    unknown = {"status": "unknown", "version": None, "note": NOT_IN_SCOPE}
    for revision in ("v0", "v1", "v9"):
        cited = {"record_id": "r", "version": v0}
        assert run_tool("get_cited_version", mine, cited, revision=revision, now=0) == unknown


PUT_R = {"record_id": "r", "kind": "working", "body": "tool note", "source": "s", "expires_at": 9}


@pytest.mark.parametrize(
    ("name", "arguments"), [("put_evidence", PUT_R), ("forget_evidence", {"record_id": "r"})]
)
def test_a_write_racing_a_write_tool_cannot_make_it_cross_revisions(
    open_store: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any]
) -> None:
    """Another writer puts "r" at v2 right after the tool has read r's history: the tool's
    check and write are one transaction, so the other writer waits, and the tool never
    writes over (or erases) a version of v2."""
    import threading

    from pyevidence.storage import versions

    db = tmp_path / "race.db"
    mine = open_store(db).scoped(tenant="team-a")
    other = open_store(db).scoped(tenant="team-a")
    mine.put(record_id="r", revision="v1", kind="runbook", body="v1 body", source="s1", expires_at=9)
    read_history = versions.history
    raced: list[threading.Thread] = []

    def history_then_race(engine: Any, tenant: str, record_id: str) -> Any:
        found = read_history(engine, tenant, record_id)
        if not raced:
            put_v2 = threading.Thread(
                target=other.put,
                kwargs=dict(
                    record_id="r", revision="v2", kind="runbook", body="v2 body", source="s2", expires_at=9
                ),
            )
            raced.append(put_v2)
            put_v2.start()
            put_v2.join(timeout=1)  # it finishes at once unless the tool holds the write lock
        return found

    monkeypatch.setattr(versions, "history", history_then_race)
    run_tool(name, mine, arguments, revision="v1", now=0, allow_writes=True)
    raced[0].join()
    monkeypatch.undo()
    after = mine.history(record_id="r")
    assert [v.revision for v in after if v.operation == "put"][-1] == "v2"
    assert after[-1].body == "v2 body", "the tool wrote over, or erased, a version of another revision"


@given(
    seq=st.integers(min_value=-1, max_value=10**20),
    digest=st.sampled_from(["0" * 64, "a" * 64, "A" * 64, "0" * 63]),
)
def test_the_version_schema_is_the_version_rule(seq: int, digest: str) -> None:
    """What get_cited_version's schema accepts as a version, the store's rule accepts too,
    and the other way round, but for the 64-bit bound on seq, which a pattern cannot say."""
    import jsonschema

    schema = CITED_VERSION_TOOL["input_schema"]["properties"]["version"]
    assert schema["pattern"] == f"^{VERSION_PATTERN.pattern}$"  # one rule, not a copy of it
    text = f"{seq}-{digest}"
    by_schema = jsonschema.Draft202012Validator(schema).is_valid(text)
    by_rule = parse_version(text) is not None
    assert by_rule == (by_schema and seq <= 2**63 - 1)


def test_the_limit_schema_is_the_limit_rule() -> None:
    import jsonschema

    schema = RETRIEVE_TOOL["input_schema"]["properties"]["limit"]
    assert (schema["minimum"], schema["maximum"]) == (validation.LIMIT_MIN, validation.LIMIT_MAX)
    for limit in range(-2, validation.LIMIT_MAX + 3):
        try:
            validation.limit(limit)
        except ValidationError:
            accepted = False
        else:
            accepted = True
        assert jsonschema.Draft202012Validator(schema).is_valid(limit) == accepted, limit
