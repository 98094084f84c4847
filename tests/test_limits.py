"""Payload limits: over a limit, a clear error naming the field and the limit, and nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import record

from pyevidence import EvidenceStore, Limits, ValidationError

SMALL = Limits(max_body_bytes=40, max_field_bytes=20, max_query_bytes=30, max_query_tokens=3)


@pytest.fixture
def small(engine: str) -> Any:
    with EvidenceStore(":memory:", engine=engine, limits=SMALL) as store:
        store.put(**record(record_id="keep", body="queue lag"))
        yield store


def eligible(store: EvidenceStore) -> int:
    return store.retrieve(tenant="team-a", revision="v1", query="", now=-1).eligible_count


@pytest.mark.parametrize(
    ("overrides", "field", "size", "limit"),
    [
        ({"body": "x" * 41}, "body", 41, 40),
        ({"body": "é" * 21}, "body", 42, 40),  # bytes of UTF-8, not characters
        ({"tenant": "t" * 21}, "tenant", 21, 20),
        ({"record_id": "r" * 21}, "record_id", 21, 20),
        ({"revision": "ü" * 11}, "revision", 22, 20),
        ({"source": "s" * 21}, "source", 21, 20),
    ],
)
def test_put_over_a_limit_names_field_and_limit(
    small: EvidenceStore, overrides: dict[str, str], field: str, size: int, limit: int
) -> None:
    with pytest.raises(ValidationError) as info:
        small.put(**record(**overrides))
    assert info.value.field == field
    assert f"is {size:,} bytes of UTF-8, over this store's limit of {limit:,}" in str(info.value)
    assert eligible(small) == 1


def test_exactly_at_the_limits_is_accepted(small: EvidenceStore) -> None:
    small.put(**record(record_id="r" * 20, source="s" * 20, body="b" * 40))
    assert len(small.retrieve(tenant="team-a", revision="v1", query="b" * 20 + " x", now=0)) == 0
    assert eligible(small) == 2


def test_put_many_applies_the_limits_to_every_record(small: EvidenceStore) -> None:
    with pytest.raises(ValidationError) as info:
        small.put_many([record(record_id="a"), record(record_id="b", body="x" * 41)])
    assert info.value.field == "records[1].body"
    assert eligible(small) == 1


@pytest.mark.parametrize(
    ("query", "message"),
    [("q" * 31, "is 31 bytes of UTF-8, over this store's limit of 30"), ("a b c d", "has 4 tokens, over")],
)
def test_query_over_a_limit(small: EvidenceStore, query: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        small.retrieve(tenant="team-a", revision="v1", query=query, now=0)
    assert info.value.field == "query"


def test_scope_fields_are_limited_too(small: EvidenceStore) -> None:
    with pytest.raises(ValidationError) as info:
        small.retrieve(tenant="t" * 21, revision="v1", query="q", now=0)
    assert info.value.field == "tenant"
    with pytest.raises(ValidationError) as info:
        small.forget(tenant="team-a", record_id="r" * 21)
    assert info.value.field == "record_id"


def test_default_limits_are_generous_and_documented() -> None:
    assert Limits() == Limits(
        max_body_bytes=1 << 20, max_field_bytes=1 << 10, max_query_bytes=16 << 10, max_query_tokens=256
    )
    with EvidenceStore(":memory:") as store:
        store.put(**record(body="x" * (1 << 20)))
        with pytest.raises(ValidationError, match="body"):
            store.put(**record(body="x" * ((1 << 20) + 1)))


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_limits_must_be_positive_integers(bad: Any) -> None:
    with pytest.raises(ValidationError, match=r"limits\.max_body_bytes: must be a positive integer"):
        Limits(max_body_bytes=bad)


def test_limits_argument_must_be_limits() -> None:
    with pytest.raises(ValidationError, match=r"limits: must be a pyevidence\.Limits"):
        EvidenceStore(":memory:", limits={"max_body_bytes": 5})  # type: ignore[arg-type]
