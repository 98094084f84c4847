"""Every validation rule: a clear error naming the field, and nothing changed."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import record

from pyevidence import EngineFallbackWarning, EngineUnavailableError, EvidenceStore, ValidationError

TEXT_FIELDS = ("tenant", "record_id", "revision", "body", "source")
NOT_TEXT = (None, 1, 1.5, b"bytes", ["list"], True)
EMPTY_TEXT = ("", " ", "\t\n", "\u00a0", "\u3000 \u2028")


def snapshot(store: EvidenceStore) -> list[Any]:
    return [
        (h.record_id, h.body)
        for t in ("team-a", "team-b")
        for h in store.retrieve(tenant=t, revision="v1", query="queue restart", now=0, limit=10)
    ]


@pytest.fixture
def seeded(store: EvidenceStore) -> EvidenceStore:
    store.put(**record(record_id="keep-a", body="queue restart"))
    store.put(**record(tenant="team-b", record_id="keep-b", body="queue restart"))
    return store


def rejects(store: EvidenceStore, field: str, call: Any, **kwargs: Any) -> ValidationError:
    before = snapshot(store)
    with pytest.raises(ValidationError) as info:
        call(**kwargs)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert snapshot(store) == before
    return info.value


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("value", NOT_TEXT, ids=repr)
def test_put_text_fields_must_be_strings(seeded: EvidenceStore, field: str, value: Any) -> None:
    err = rejects(seeded, field, seeded.put, **record(**{"record_id": "keep-a", field: value}))
    assert "must be a string" in str(err)


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("value", EMPTY_TEXT, ids=repr)
def test_put_text_fields_must_not_be_blank(seeded: EvidenceStore, field: str, value: str) -> None:
    err = rejects(seeded, field, seeded.put, **record(**{"record_id": "keep-a", field: value}))
    assert "empty" in str(err)


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_put_rejects_lone_surrogates(seeded: EvidenceStore, field: str) -> None:
    err = rejects(seeded, field, seeded.put, **record(**{"record_id": "keep-a", field: "ok\ud800"}))
    assert "lone surrogate at index 2" in str(err)


@pytest.mark.parametrize("value", ["Runbook", "note", "", None, 1, "runbook "])
def test_put_kind_must_be_known(seeded: EvidenceStore, value: Any) -> None:
    err = rejects(seeded, "kind", seeded.put, **record(kind=value, record_id="keep-a"))
    assert "working, incident, runbook" in str(err)


@pytest.mark.parametrize("value", [-1, 2**63, True, False, 1.0, "5", None])
def test_put_expires_at_must_be_a_non_negative_int64(seeded: EvidenceStore, value: Any) -> None:
    rejects(seeded, "expires_at", seeded.put, **record(expires_at=value, record_id="keep-a"))


def test_put_accepts_the_expiry_bounds(store: EvidenceStore) -> None:
    store.put(**record(record_id="zero", expires_at=0))
    store.put(**record(record_id="max", expires_at=2**63 - 1))
    assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=-1).eligible_count == 2


def test_put_is_keyword_only(store: EvidenceStore) -> None:
    with pytest.raises(TypeError):
        store.put("team-a", "r1", "v1", "runbook", "b", "s", 1)  # type: ignore[misc]


def test_first_bad_field_is_reported_in_signature_order(seeded: EvidenceStore) -> None:
    rejects(seeded, "tenant", seeded.put, **record(tenant="", kind="bogus", expires_at=-1))


@pytest.mark.parametrize("value", [0, 11, -1, True, 2.5, "5", None])
def test_retrieve_limit_is_an_int_from_1_to_10(seeded: EvidenceStore, value: Any) -> None:
    rejects(seeded, "limit", seeded.retrieve, tenant="team-a", revision="v1", query="q", now=0, limit=value)


@pytest.mark.parametrize("value", [True, 1.0, "0", None, 2**63, -(2**63) - 1])
def test_retrieve_now_is_an_int64(seeded: EvidenceStore, value: Any) -> None:
    rejects(seeded, "now", seeded.retrieve, tenant="team-a", revision="v1", query="q", now=value)


@pytest.mark.parametrize("field", ["tenant", "revision"])
@pytest.mark.parametrize("value", ["", "  ", None, 3, "x\udfff"], ids=repr)
def test_retrieve_scope_must_be_non_empty_text(seeded: EvidenceStore, field: str, value: Any) -> None:
    args: dict[str, Any] = dict(tenant="team-a", revision="v1", query="q", now=0)
    args[field] = value
    rejects(seeded, field, seeded.retrieve, **args)


@pytest.mark.parametrize("value", [None, b"q", 5, "\ud800"], ids=repr)
def test_retrieve_query_must_be_text(seeded: EvidenceStore, value: Any) -> None:
    rejects(seeded, "query", seeded.retrieve, tenant="team-a", revision="v1", query=value, now=0)


def test_retrieve_scorer_must_have_score(seeded: EvidenceStore) -> None:
    rejects(seeded, "scorer", seeded.retrieve, tenant="team-a", revision="v1", query="q", now=0, scorer=len)


@pytest.mark.parametrize("field", ["tenant", "record_id"])
@pytest.mark.parametrize("value", ["", " ", None, 7], ids=repr)
def test_forget_key_must_be_non_empty_text(seeded: EvidenceStore, field: str, value: Any) -> None:
    args: dict[str, Any] = dict(tenant="team-a", record_id="keep-a")
    args[field] = value
    rejects(seeded, field, seeded.forget, **args)


@pytest.mark.parametrize("engine_name", ["sqlite", "", None, "NATIVE"])
def test_unknown_engine_is_a_clear_error(engine_name: Any) -> None:
    with pytest.raises(ValidationError, match="engine: must be one of auto, native, python"):
        EvidenceStore(":memory:", engine=engine_name)


def test_path_must_be_a_path() -> None:
    with pytest.raises(ValidationError, match="path: must be a file path"):
        EvidenceStore(123)  # type: ignore[arg-type]


def test_path_with_nul_is_refused_not_cut(engine: str, tmp_path: Any) -> None:
    with pytest.raises(ValidationError, match="path: must not contain NUL"):
        EvidenceStore(str(tmp_path / "a.db\x00b"), engine=engine)
    assert list(tmp_path.iterdir()) == []


def test_native_unavailable_message_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import pyevidence.store

    monkeypatch.setitem(sys.modules, "pyevidence.storage.engines.native_engine", None)
    monkeypatch.setattr(pyevidence.store, "_fallback_warned", False)
    with pytest.raises(EngineUnavailableError, match="libsqlite3-dev"):
        EvidenceStore(":memory:", engine="native")
    with pytest.warns(EngineFallbackWarning, match="libsqlite3-dev"):
        with EvidenceStore(":memory:", engine="auto") as store:
            assert store.engine == "python"
