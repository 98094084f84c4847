"""Raw SQL with reals where integers belong, as JavaScript hosts write it (Node's
better-sqlite3 binds every number as a real): a real that is a whole number in range
counts as that integer, in schema.sql's evidence_put (both engines) and in the C
relation evidence_eligible; anything else is refused with a message saying why.

The one rule is Python's: ``x.is_integer()`` and ``int(x)`` within the integer's range.
"""

from __future__ import annotations

import math
import re
import sqlite3
from typing import Any

import pytest
from helpers import record
from hypothesis import given
from hypothesis import strategies as st

from pyevidence import EvidenceStore, StoreError, native_available
from pyevidence.storage import schema

needs_native = pytest.mark.skipif(not native_available(), reason="needs the native engine")

EXPIRES_AT_RANGE = (0, 2**63 - 1)
NOW_RANGE = (-(2**63), 2**63 - 1)
PUT_REFUSED = "evidence_put: expires_at must be a whole number from 0 to 9223372036854775807"
# A NaN reaches SQLite as NULL, which the type guard refuses.
PUT_NULL_REFUSED = "and source must be text, expires_at an integer"

EDGES = [
    *(0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 5e-324, 1000.0, 1000.5, 1717171717.5),
    *(2.0**53, 2.0**53 + 2, 2.0**62, 2.0**63 - 1024, 2.0**63, 1e19, 1e300),
    *(-(2.0**63), -(2.0**63) - 2048, -1e300, 1.7976931348623157e308, math.inf, -math.inf, math.nan),
]
REALS = st.floats() | st.integers(-(2**64), 2**64).map(float) | st.sampled_from(EDGES)


def integer_for(x: float, bounds: tuple[int, int]) -> int | None:
    """The one rule: the integer the real ``x`` stands for, or None when it is refused."""
    if not x.is_integer():  # also False for NaN and the infinities
        return None
    return int(x) if bounds[0] <= int(x) <= bounds[1] else None


def raw_put(store: EvidenceStore, expires_at: Any) -> str | None:
    """INSERT INTO evidence_put on the store's own connection, as a raw-SQL writer would;
    the error message, or None when it was stored."""
    params = ("team-a", "r1", "v1", "runbook", "queue consumer lag", "runbook://q", expires_at)
    try:
        if store.engine == "native":
            store._engine.run(schema.PUT_SQL, params, read_only=False)
        else:
            # numbered placeholders take a mapping (a sequence is deprecated since Python 3.12)
            store._engine._conn.execute(schema.PUT_SQL, {str(n): v for n, v in enumerate(params, 1)})
    except (StoreError, sqlite3.Error) as exc:
        return str(exc)
    return None


def stored_rows(store: EvidenceStore) -> list[tuple[Any, ...]]:
    """Every row of both tables, with the storage class of expires_at (1000 == 1000.0 in Python)."""
    versions = store._engine.select(
        "SELECT *, typeof(expires_at) FROM evidence_versions ORDER BY tenant, chain_seq"
    )
    current = store._engine.select("SELECT *, typeof(expires_at) FROM evidence ORDER BY tenant, record_id")
    return [("versions", *row) for row in versions] + [("current", *row) for row in current]


def check_put(x: float) -> None:
    expected = integer_for(x, EXPIRES_AT_RANGE)
    engines = ["python", "native"] if native_available() else ["python"]
    rows = {}
    for engine in engines:
        with EvidenceStore(":memory:", engine=engine) as store:
            error = raw_put(store, x)
            rows[engine] = stored_rows(store)
        if expected is None:
            assert error is not None and (PUT_NULL_REFUSED if math.isnan(x) else PUT_REFUSED) in error
            assert rows[engine] == []
            continue
        assert error is None
        with EvidenceStore(":memory:", engine=engine) as api:
            api.put(**record(body="queue consumer lag", source="runbook://q", expires_at=expected))
            assert rows[engine] == stored_rows(api)  # the same bytes, hashes included
    assert all(found == rows["python"] for found in rows.values())


@pytest.mark.parametrize("x", EDGES, ids=repr)
def test_evidence_put_takes_a_whole_real_as_its_integer_on_both_engines(x: float) -> None:
    check_put(x)


@given(x=REALS)
def test_evidence_put_follows_the_one_rule_on_both_engines(x: float) -> None:
    check_put(x)


# Records whose expiry sits at the edges now can take, and one of another tenant.
EXPIRIES = {"zero": 0, "one": 1, "t1000": 1000, "t2_53": 2**53, "t2_62": 2**62, "max": 2**63 - 1}
ELIGIBLE_QUERY = (
    "SELECT record_id, typeof(scope_now), scope_now FROM evidence_eligible(?, ?, ?) ORDER BY record_id"
)


@pytest.fixture(scope="module")
def native_store() -> Any:
    if not native_available():
        pytest.skip("needs the native engine")
    with EvidenceStore(":memory:", engine="native") as store:
        store.put_many([record(record_id=name, expires_at=at) for name, at in EXPIRIES.items()])
        store.put(**record(tenant="team-b", expires_at=2**63 - 1))
        yield store


def check_now(store: EvidenceStore, x: float) -> None:
    expected = integer_for(x, NOW_RANGE)
    if expected is None:
        with pytest.raises(StoreError) as info:
            store.query(ELIGIBLE_QUERY, ["team-a", "v1", x])
        message = str(info.value)
        if math.isnan(x):
            assert "evidence_eligible(): now must be an integer, got NULL" in message
            return
        found = re.search(r"evidence_eligible\(\): now must be an integer, got real (\S+) \((.*)\)", message)
        assert found is not None, message
        # The value shown as SQLite shows a real: to 15 significant digits.
        shown, expected_shown = float(found[1]), float(f"{x:.15g}")
        assert shown == expected_shown or shown == pytest.approx(expected_shown, rel=1e-14)
        in_range = math.isfinite(x) and -(2.0**63) <= x < 2.0**63
        assert found[2] == ("not a whole number" if in_range else "outside the 64-bit range")
        return
    rows = list(store.query(ELIGIBLE_QUERY, ["team-a", "v1", x]))
    assert rows == list(store.query(ELIGIBLE_QUERY, ["team-a", "v1", expected]))
    assert [name for name, _, _ in rows] == sorted(n for n, at in EXPIRIES.items() if at > expected)
    assert all(kind == "integer" and now == expected for _, kind, now in rows)


@needs_native
@pytest.mark.parametrize("x", EDGES, ids=repr)
def test_evidence_eligible_takes_a_whole_real_as_its_integer(native_store: EvidenceStore, x: float) -> None:
    check_now(native_store, x)


@needs_native
@given(x=REALS)
def test_evidence_eligible_follows_the_one_rule(native_store: EvidenceStore, x: float) -> None:
    check_now(native_store, x)
