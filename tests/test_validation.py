"""Every validation rule: a clear error naming the field, and nothing changed."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import record
from hypothesis import given
from hypothesis import strategies as st

from pyevidence import EngineFallbackWarning, EngineUnavailableError, EvidenceStore, Limits, ValidationError
from pyevidence.core import validation
from pyevidence.core.records import Record

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


# ---- put_many's shortcut for plainly valid records (validation._plain_record)


class _Text(str):
    pass


class _Int(int):
    pass


class _EqualToAll:
    """Not a str, though it says it equals one."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:  # the same test id in every run
        return "_EqualToAll()"


_LIMITS = Limits(max_field_bytes=6, max_body_bytes=9)
# values around every edge the shortcut tests: ASCII or not, blank, at and over the limits
# of _LIMITS, lone surrogates, str and int subclasses, other types
_TEXT_EDGES = [
    "a",
    "team-a",
    "team-ab",
    "abcdefghi",
    "abcdefghij",
    "é",
    "aé",
    "\u00a0",
    " ",
    "",
    "\t\n",
    "ok\ud800",
    _Text("a"),
    _Text(" "),
    _Text("é"),
]
_OTHER_EDGES = [None, 1, 1.5, b"a", True, ["a"]]
_KIND_EDGES = [
    "working",
    "incident",
    "runbook",
    "Runbook",
    "",
    _Text("runbook"),
    _EqualToAll(),
    1,
    None,
    ["x"],
]
_EXPIRY_EDGES = [0, 1, 2**63 - 1, 2**63, -1, True, False, 1.0, None, "1", _Int(0), _Int(5), _Int(-1)]
_FIELD_VALUES = st.sampled_from(_TEXT_EDGES)
_OTHER_VALUES = st.sampled_from(_OTHER_EDGES)
_KINDS = st.sampled_from(_KIND_EDGES)
_EXPIRIES = st.sampled_from(_EXPIRY_EDGES)
_EDGES = (
    [
        (name, value)
        for name in ("tenant", "record_id", "revision", "body", "source")
        for value in _TEXT_EDGES + _OTHER_EDGES
    ]
    + [("kind", value) for value in _KIND_EDGES]
    + [("expires_at", value) for value in _EXPIRY_EDGES]
)


def _item(values: dict[str, Any], as_record: bool) -> Any:
    if not as_record:
        return values
    try:
        return Record(**values)  # a Record holds what it is given; validation checks it
    except TypeError:
        return values


@st.composite
def _items(draw: st.DrawFn) -> list[Any]:
    items = []
    for _ in range(draw(st.integers(0, 4))):
        # a valid record, with up to two fields drawn from the edges
        values = record(tenant="t", record_id=draw(st.sampled_from(["r", "r2"])), body="b", source="s")
        fields = sorted(values)
        for name in {draw(st.sampled_from(fields)), draw(st.sampled_from([*fields, "none"]))} - {"none"}:
            if name == "kind":
                values[name] = draw(_KINDS)
            elif name == "expires_at":
                values[name] = draw(_EXPIRIES)
            else:
                values[name] = draw(_FIELD_VALUES | _OTHER_VALUES)
        wrong_keys = draw(st.integers(0, 19))
        if wrong_keys == 0:
            values.pop(draw(st.sampled_from(sorted(values))))
        elif wrong_keys == 1:
            values["extra"] = 1
        items.append(_item(values, draw(st.booleans())))
    return items


def _in_full(items: list[Any]) -> Any:
    """What records() returns or raises, with every item checked by record() in full (the
    path before the shortcut): the records, or the error's field and reason."""
    out = []
    for index, item in enumerate(items):
        values = {n: getattr(item, n) for n in validation.RECORD_FIELDS} if isinstance(item, Record) else item
        if values.keys() != set(validation.RECORD_FIELDS):
            return ("error", f"records[{index}]")
        try:
            valid = validation.record(**values, limits=_LIMITS)
        except ValidationError as exc:
            return ("error", f"records[{index}].{exc.field}", exc.reason)
        out.append(item if validation.kept_as_given(item, valid) else valid)
    return out


def _outcome(items: list[Any]) -> Any:
    try:
        return validation.records(items, _LIMITS)
    except ValidationError as exc:
        if "." not in exc.field:  # the item itself: which keys are wrong is _wrong_keys' to say
            return ("error", exc.field)
        return ("error", exc.field, exc.reason)


@pytest.mark.parametrize(("name", "value"), _EDGES, ids=repr)
@pytest.mark.parametrize("as_record", [True, False], ids=["Record", "dict"])
def test_put_many_checks_every_edge_of_a_field_as_put_does(name: str, value: Any, as_record: bool) -> None:
    items = [_item(record(**{"tenant": "t", "body": "b", "source": "s", name: value}), as_record)]
    got, want = _outcome(items), _in_full(items)
    assert got == want
    if isinstance(want, list):
        assert [type(getattr(r, name)) for r in got] == [type(getattr(r, name)) for r in want]
        assert (got[0] is items[0]) == (want[0] is items[0])


@given(_items())
def test_put_many_accepts_and_refuses_exactly_what_put_does(items: list[Any]) -> None:
    got, want = _outcome(items), _in_full(items)
    assert got == want
    if isinstance(want, list):  # the same records, down to the types of their fields
        assert [tuple(map(type, vars(r).values())) for r in got] == [
            tuple(map(type, vars(r).values())) for r in want
        ]
        # a Record kept as it came in one is kept in the other
        assert [g is i for g, i in zip(got, items, strict=True)] == [
            w is i for w, i in zip(want, items, strict=True)
        ]


def test_put_many_keeps_a_valid_record_as_it_came() -> None:
    given_records = [Record(**record(record_id=f"r{i}")) for i in range(3)]
    checked = validation.records(given_records)
    assert all(c is g for c, g in zip(checked, given_records, strict=True))
    from_mappings = validation.records([record(record_id="m")])
    assert from_mappings == [Record(**record(record_id="m"))]
