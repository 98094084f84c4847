"""Values that are not quite what they look like: the API checks and stores the plain value.

A str or int subclass can override every method: encode(), __len__, isspace(), __int__,
__eq__. Validation checks a plain copy of its value, and that copy is what both engines
store, so what was checked is what is written (also in the unchecked batch writer, which
turns the schema's CHECKs off). Numbers and names too large to show are refused with
pyevidence's own error, not one raised while writing the message.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import record

from pyevidence import EvidenceStore, ValidationError


class Lying(str):
    """Its value is one text; every method a checker or an encoder might call says another."""

    def __new__(cls, value: str, claims: str) -> Lying:
        made = super().__new__(cls, value)
        made.claims = claims  # type: ignore[attr-defined]
        return made

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return str(self.claims).encode()  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return 1

    def isspace(self) -> bool:
        return False

    def isascii(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0

    def __str__(self) -> str:
        return str(self.claims)  # type: ignore[attr-defined]


class LyingInt(int):
    def __new__(cls, value: int, claims: int) -> LyingInt:
        made = super().__new__(cls, value)
        made.claims = claims  # type: ignore[attr-defined]
        return made

    def __int__(self) -> int:
        return int(self.claims)  # type: ignore[attr-defined]

    def __index__(self) -> int:
        return int(self.claims)  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


def _lying_record(i: int) -> dict[str, object]:
    return record(
        tenant=Lying("team-a", "team-b"),
        record_id=Lying(f"r{i:03}", ""),
        revision=Lying("v1", " "),
        kind=Lying("runbook", "bogus"),
        body=Lying("restart the queue consumer", "\udcff" * 5000),
        source=Lying("runbook://queue/v1", "x" * 5000),
        expires_at=LyingInt(1000, -5),
    )


def _stored(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return conn.execute(
            "SELECT tenant, record_id, revision, kind, source, expires_at, typeof(body), length(body)"
            " FROM evidence ORDER BY record_id"
        ).fetchall()


@pytest.mark.parametrize("count", [1, 300])  # 300: the unchecked batch writer
def test_subclass_values_are_checked_and_stored_as_their_plain_value(
    engine: str, tmp_path: Path, count: int
) -> None:
    path = tmp_path / "s.db"
    with EvidenceStore(path, engine=engine) as store:
        if count == 1:
            store.put(**_lying_record(0))  # type: ignore[arg-type]
        else:
            store.put_many([_lying_record(i) for i in range(count)])
        found = store.retrieve(
            tenant=Lying("team-a", "team-b"), revision="v1", query=Lying("queue", "nothing"),
            now=LyingInt(0, 10**6), limit=LyingInt(3, 10**9),
        )  # fmt: skip
        assert [h.record_id for h in found] == [f"r{i:03}" for i in range(min(count, 3))]
        assert found.eligible_count == count
        assert store.retrieve(tenant="team-b", revision="v1", query="queue", now=0).eligible_count == 0
        assert store.verify(tenant="team-a").ok
    rows = _stored(path)
    assert len(rows) == count
    assert set(rows) == {
        ("team-a", f"r{i:03}", "v1", "runbook", "runbook://queue/v1", 1000, "text", 26) for i in range(count)
    }
    for row in rows:
        assert all(type(value) in (str, int) for value in row)


def test_a_kind_and_a_method_are_compared_by_their_plain_value(store: EvidenceStore) -> None:
    with pytest.raises(ValidationError, match="kind"):
        store.put(**record(kind=Lying("bogus", "runbook")))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="method"):
        store.retrieve(tenant="t", revision="v", query="q", now=0, method=Lying("neither", "index"))
    assert store.retrieve(tenant="t", revision="v", query="q", now=0, method=Lying("scan", "x")).hits == ()


HUGE = 10**5000  # over the 4,300 digits Python turns into text


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.put(**record(expires_at=HUGE)), "expires_at"),
        (lambda s: s.put_many([record(expires_at=-HUGE)]), "records[0].expires_at"),
        (lambda s: s.retrieve(tenant="t", revision="v", query="q", now=HUGE), "now"),
        (lambda s: s.retrieve(tenant="t", revision="v", query="q", now=0, limit=-HUGE), "limit"),
    ],
)
def test_an_integer_too_long_to_show_is_refused_with_its_size(
    store: EvidenceStore, call: Callable[[EvidenceStore], object], field: str
) -> None:
    with pytest.raises(ValidationError, match="integer of about 5,001 digits") as refused:
        call(store)
    assert refused.value.field == field


def test_a_path_with_a_lone_surrogate_is_refused_as_a_path(engine: str, tmp_path: Path) -> None:
    bad = str(tmp_path / "\ud800.db")
    with pytest.raises(ValidationError, match="lone surrogate") as refused:
        EvidenceStore(bad, engine=engine)
    assert refused.value.field == "path"
    with EvidenceStore(tmp_path / "s.db", engine=engine) as store:
        with pytest.raises(ValidationError, match="lone surrogate") as refused:
            store.backup(bad)
        assert refused.value.field == "dest"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_a_write_tool_compares_the_plain_revision(store: EvidenceStore) -> None:
    scoped = store.scoped(tenant="team-a")
    scoped.put_in_revision(
        record_id="r1", revision="v1", kind="runbook", body="b", source="s", expires_at=1000
    )
    with pytest.raises(ValidationError) as refused:
        scoped.put_in_revision(
            record_id="r1", revision=Lying("v2", "v1"), kind="runbook", body="b", source="s", expires_at=1000
        )
    assert refused.value.field == "record_id"
    assert [v.revision for v in store.history(tenant="team-a", record_id="r1")] == ["v1"]
