"""The recent schema upgrades. Version 6 stores each body once (evidence is a view of the
current pointer and the history), and its cheaper blank-text CHECKs keep version 5's rule
exactly; version 7 lets the engines' own writer skip the current rows' checks; version 8
stores the history's hashes as 32-byte blobs; version 9 keys the token index's postings by
era first; version 10 keeps each current row's document number in evidence_current; version 11
links each version to the record's version before it and names forgotten records' tombstones
in evidence_forgotten, instead of a tree of the history keyed by record; version 12 stores
evidence_current by document number, which makes it the index's map from a number to its
record in place of evidence_index_docs; version 13 adds a trigger that refuses a raw insert of
a current row for the version the record's row already names. A store of version 5 to 12
upgrades in place with every row kept and everything still verifying."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tables import table_rows

from pyevidence import EvidenceStore, Record
from pyevidence.core import validation
from pyevidence.storage import schema, sql_functions

MIGRATIONS = Path(schema.__file__).with_name("migrations")
TABLES = (
    "evidence",
    "evidence_versions",
    "evidence_vectors",
    "evidence_index_scopes",
    "evidence_index_postings",
    "evidence_index_expiry",
)
VECTOR = b"\x00\x00\x80\x3f" * 4  # four float32 1.0

# Raw evidence_put rows: scopes, a replaced and a forgotten record, text that starts
# with whitespace of several kinds, NUL and non-ASCII first characters.
ROWS = [
    ("team-a", "queue", "v1", "runbook", "Restart the QUEUE consumer; check lag.", "rb://q", 1000),
    ("team-a", "lead", "v1", "incident", "\u3000 ideographic space first", "\u00a0nbsp", 50),
    ("team-a", "nul", "v1", "working", "\x00 nul first, queue", "w://2", 2**40),
    ("team-a", "tab", "v2", "runbook", "\tqueue in v2", " s", 1000),
    ("team-b", "queue", "v1", "runbook", "\u0130stanbul queue", "rb://b", 2**62),
]


def old_store(path: Path, version: int) -> None:
    """A store of an earlier schema version as that version's schema made it, written
    through raw SQL."""
    conn = sqlite3.connect(path)
    sql_functions.register(conn)
    conn.executescript((MIGRATIONS / f"schema_v{version}.sql").read_text(encoding="utf-8"))
    conn.executemany("INSERT INTO evidence_put VALUES (?, ?, ?, ?, ?, ?, ?)", ROWS)
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'queue', 'v1', 'runbook', 'queue 2', 's', 9)")
    conn.execute("INSERT INTO evidence_put VALUES ('team-a', 'gone', 'v1', 'working', 'queue gone', 's', 9)")
    conn.execute("DELETE FROM evidence WHERE tenant = 'team-a' AND record_id = 'gone'")
    conn.execute(
        "INSERT INTO evidence_vectors (tenant, record_id, version, model, dims, embedding)"
        " VALUES ('team-b', 'queue', 1, 'm', 4, ?)",
        (VECTOR,),
    )
    conn.commit()
    conn.close()


def all_rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    return table_rows(path, TABLES)


@pytest.mark.parametrize("version", [5, 6, 7, 8, 9, 10, 11, 12])
def test_an_earlier_store_is_upgraded_with_every_row_kept(engine: str, tmp_path: Path, version: int) -> None:
    path = tmp_path / f"v{version}.db"
    old_store(path, version)
    before = all_rows(path)
    assert before["evidence_vectors"] and before["evidence_index_postings"]
    with EvidenceStore(path, engine=engine) as store:
        for tenant in ("team-a", "team-b"):
            assert store.verify(tenant=tenant).ok
        assert store.check_index().ok
        got = store.retrieve(tenant="team-a", revision="v1", query="queue", now=0)
        assert [h.record_id for h in got.hits] == ["nul", "queue"]
        store.put(
            tenant="team-a",
            record_id="new",
            revision="v1",
            kind="working",
            body="a queue",
            source="s",
            expires_at=5,
        )
    assert all_rows(path) != before  # the put above landed
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,) == (13,)
        assert frozenset(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")) == (
            schema.expected_objects()
        )
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_each_body_is_stored_once(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "once.db"
    marker = "zqxmarkerbody"
    with EvidenceStore(path, engine=engine) as store:
        store.put_many([_record(f"r{i}", f"{marker}{i} queue") for i in range(50)])
        store.put(**_record("r0", f"{marker}0 replaced").__dict__)
    data = path.read_bytes()  # closed: the WAL is checkpointed into the file
    for i in range(1, 50):
        assert data.count(f"{marker}{i} queue".encode()) == 1
    assert data.count(f"{marker}0 queue".encode()) == 1  # the first version stays in the history
    assert data.count(f"{marker}0 replaced".encode()) == 1


def _record(record_id: str, body: str) -> Record:
    return Record(
        tenant="team-a",
        record_id=record_id,
        revision="v1",
        kind="working",
        body=body,
        source="s",
        expires_at=100,
    )


@pytest.mark.parametrize("version", [5, 6, 7, 8, 9, 10, 11])
def test_the_upgrade_itself_changes_no_row(tmp_path: Path, version: int) -> None:
    """Every row stays; the hashes of the history are stored as their 32 bytes from
    version 8 on, and stand for the same hex digits; each docset gains its era (chunk >> 3)
    in version 9; in version 10 each current row keeps the number the index gave it, and
    the index's document rows are keyed by number; in version 11 each version names the
    record's version before it, and each forgotten record its tombstone; in version 12 the
    index's document rows are gone, and evidence_current holds each of them: the same
    (scope, number, record, expiry)."""
    path = tmp_path / f"v{version}.db"
    old_store(path, version)
    before = all_rows(path)
    (documents_before,) = table_rows(path, ["evidence_index_docs"]).values()
    EvidenceStore(path, engine="python").close()
    after = all_rows(path)
    with sqlite3.connect(path) as conn:
        documents = conn.execute(
            "SELECT s.scope, c.doc, c.record_id, c.expires_at FROM evidence_current AS c"
            " JOIN evidence_index_scopes AS s ON s.tenant = c.tenant AND s.revision = c.revision"
            " ORDER BY 1, 2, 3"
        ).fetchall()
        forgotten = conn.execute("SELECT * FROM evidence_forgotten").fetchall()
        assert not conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'evidence_index_docs'").fetchall()
    conn.close()
    # previous: the chain position of the same record's version seq - 1, none for seq 1
    places = {(r[0], r[2], r[3]): r[1] for r in after["evidence_versions"]}
    assert [r[4] for r in after["evidence_versions"]] == [
        places.get((r[0], r[2], r[3] - 1)) for r in after["evidence_versions"]
    ]
    assert any(r[4] is not None for r in after["evidence_versions"])
    after["evidence_versions"] = [(*r[:4], *r[5:]) for r in after["evidence_versions"]]
    if version >= 11:  # the links were there before: checked above, as after
        before["evidence_versions"] = [(*r[:4], *r[5:]) for r in before["evidence_versions"]]
    tombstones = [r for r in after["evidence_versions"] if r[4] == "forget"]
    assert forgotten == [("team-a", "gone", tombstones[0][1])] and len(tombstones) == 1
    if version < 10:  # keyed by record before version 10
        documents_before = [
            (scope, doc, record_id, expires) for scope, record_id, doc, expires in documents_before
        ]
    assert len(documents) == len(after["evidence"]) and documents == sorted(documents_before)
    hashes = [row[-2:] for row in after["evidence_versions"]]
    assert hashes and all(type(h) is bytes and len(h) == 32 for pair in hashes for h in pair)
    stored_as = bytes if version >= 8 else str
    assert all(type(h) is stored_as for row in before["evidence_versions"] for h in row[-2:])
    for rows in (before, after):
        rows["evidence_versions"] = [
            (*r[:-2], *(h.hex() if isinstance(h, bytes) else h for h in r[-2:]))
            for r in rows["evidence_versions"]
        ]
    postings = after["evidence_index_postings"]
    assert postings and all(era == chunk >> 3 for _, era, _, chunk, _ in postings)
    for rows in (before, after):  # the era, where there is one, is chunk >> 3 (checked above)
        rows["evidence_index_postings"] = sorted(
            (row[0], *row[-3:]) for row in rows["evidence_index_postings"]
        )
    assert after == before


def test_the_upgrade_from_12_adds_the_trigger_and_changes_no_row(tmp_path: Path) -> None:
    path = tmp_path / "v12.db"
    old_store(path, 12)
    before = table_rows(path, [*TABLES, "evidence_current", "evidence_forgotten"])
    EvidenceStore(path, engine="python").close()
    assert table_rows(path, [*TABLES, "evidence_current", "evidence_forgotten"]) == before
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'")}
    conn.close()
    assert "evidence_current_insert_is_a_new_version" in names


# ---- the CHECK's shortcut is the same rule as version 5's trim

WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
TEXT = st.text(
    alphabet=st.sampled_from([*WHITESPACE, "a", "~", "!", "\x00", "\x7f", "\u0130", "\u200b", "\U0001f600"]),
    max_size=6,
)


def _check_of(schema_text: str) -> str:
    """The blank-text CHECK expression of evidence_versions.body in a schema file, for column x."""
    table = schema_text.split("CREATE TABLE IF NOT EXISTS evidence_versions (")[1]
    found = re.search(r"body\s+TEXT\s+CHECK \((.*)\),\n", table)
    assert found is not None
    return found[1].replace("body", "x")


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_the_version_6_check_accepts_exactly_what_version_5_did(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    old = _check_of((MIGRATIONS / "schema_v5.sql").read_text(encoding="utf-8"))
    new = _check_of(schema.schema_sql())
    assert old != new
    accepted = conn.execute(f"SELECT ({old}), ({new}) FROM (SELECT ? AS x)", (text,)).fetchone()
    conn.close()
    assert accepted[0] == accepted[1] == (0 if text == "" or text.isspace() else 1)
    try:
        validation.record(
            tenant="t", record_id="r", revision="v", kind="working", body=text, source="s", expires_at=0
        )
        valid = True
    except Exception:
        valid = False
    assert valid == bool(accepted[1])


@pytest.mark.parametrize(
    ("column", "values"),
    [
        ("body", "'t0', 'v1', 100, 'bad', 'runbook', CAST(x'71ff20' AS TEXT), 's'"),
        ("tenant", "CAST(x'74c3' AS TEXT), 'v1', 100, 'bad', 'runbook', 'q', 's'"),
        ("source", "'t0', 'v1', 100, 'bad', 'runbook', 'q', CAST(x'ed' AS TEXT)"),
    ],
)
def test_text_that_is_not_utf8_from_before_version_4_is_refused_alike_by_both_engines(
    engine: str, tmp_path: Path, column: str, values: str
) -> None:
    """Versions 1-3 stored what raw SQL gave them. The native engine carried such text into
    the new schema, where put() can never write it, and the Python engine failed with "user-
    defined function raised exception"; both now refuse the upgrade, naming the record."""
    path = tmp_path / "old.db"
    path.write_bytes((Path(__file__).parent / "fixtures" / "v1_store.db").read_bytes())
    with sqlite3.connect(path) as conn:
        conn.execute(f"INSERT INTO evidence VALUES ({values})")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(schema.SchemaError) as refused:
        EvidenceStore(path, engine=engine)
    tenant = "t\\xc3" if column == "tenant" else "t0"
    assert str(refused.value) == (
        f"{path} could not be upgraded from pyevidence schema version 1, and is left as it was: the "
        f"{column} of record 'bad' of tenant {tenant!r} (table evidence) is stored text that is not "
        "valid UTF-8, which raw SQL wrote and no later version stores; correct or delete that record "
        "with the release that wrote it, then open the store again"
    )
    assert path.read_bytes() == before
