"""The two engines against each other: interchange, identical errors, threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from helpers import record, tamper

from pyevidence import EvidenceStore, StoreError, ValidationError, native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="native engine not built")
ENGINE_PAIRS = [("python", "native"), ("native", "python")]


def fill(store: EvidenceStore) -> None:
    for n in range(30):
        store.put(
            **record(
                tenant=("team-a", "team-b")[n % 2],
                record_id=f"r{n:02d}\x00é",
                revision=("v1", "v2", "v1")[n % 3],
                body=" ".join(["queue", "lag", "disk", "İO", "5\u212a"][: 1 + n % 5]),
                source=f"src://{n}",
                expires_at=n,
            )
        )
    store.forget(tenant="team-a", record_id="r04\x00é")


def snapshot(store: EvidenceStore) -> list[object]:
    out: list[object] = []
    for tenant in ("team-a", "team-b"):
        for revision in ("v1", "v2"):
            for now in (-1, 10, 29):
                result = store.retrieve(
                    tenant=tenant, revision=revision, query="queue lag disk io 5k", now=now, limit=10
                )
                out.append(result)
    return out


@pytest.mark.parametrize(("writer", "reader"), ENGINE_PAIRS)
def test_a_database_written_by_one_engine_reads_the_same_on_the_other(
    tmp_path: Path, writer: str, reader: str
) -> None:
    path = tmp_path / "shared.db"
    with EvidenceStore(path, engine=writer) as store:
        fill(store)
        written = snapshot(store)
    with EvidenceStore(path, engine=reader) as store:
        assert snapshot(store) == written
        assert any(len(result) for result in written)  # the comparison is not of empty results


def test_both_engines_create_byte_identical_schemas(tmp_path: Path) -> None:
    dumps = []
    for engine in ("python", "native"):
        path = tmp_path / f"{engine}.db"
        EvidenceStore(path, engine=engine).close()
        with sqlite3.connect(path) as conn:
            dumps.append(
                (
                    conn.execute(
                        "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name"
                    ).fetchall(),
                    conn.execute("PRAGMA user_version").fetchone(),
                    conn.execute("PRAGMA journal_mode").fetchone(),
                )
            )
        conn.close()
    assert dumps[0] == dumps[1]


@pytest.mark.parametrize("engine", ["python", "native"])
def test_sqlite_errors_surface_as_the_same_store_error(tmp_path: Path, engine: str) -> None:
    trigger = (
        "CREATE TRIGGER frozen BEFORE INSERT ON evidence_current"
        " BEGIN SELECT RAISE(ABORT, 'writes frozen'); END"
    )
    path = tmp_path / "frozen.db"
    with EvidenceStore(path, engine=engine) as store:
        # added behind the open store's back (a file holding it would not open at all)
        with sqlite3.connect(path) as conn:
            conn.execute(trigger)
        conn.close()
        with pytest.raises(StoreError, match=r"^put failed: writes frozen$"):
            store.put(**record())
        assert store.retrieve(tenant="team-a", revision="v1", query="queue", now=0).eligible_count == 0


@pytest.mark.parametrize("engine", ["python", "native"])
def test_invalid_utf8_stored_by_raw_sql_is_a_store_error(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "raw.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(record_id="bad", expires_at=9))
    tamper(path, "UPDATE evidence_versions SET body = CAST(x'71ff' AS TEXT) WHERE record_id = 'bad'")
    with EvidenceStore(path, engine=engine) as store:
        with pytest.raises(StoreError, match="UTF-8"):
            store.retrieve(tenant="team-a", revision="v1", query="q", now=0, scorer=_Constant())


class _Constant:
    def score(self, query: str, body: str) -> float:
        return 1.0


@pytest.mark.parametrize("engine", ["python", "native"])
def test_one_store_shared_by_threads(tmp_path: Path, engine: str) -> None:
    """Eight threads put, retrieve and forget their own ids on one store at once."""
    errors: list[BaseException] = []
    with EvidenceStore(tmp_path / "threads.db", engine=engine) as store:

        def work(worker: int) -> None:
            try:
                for n in range(60):
                    rid = f"w{worker}-{n}"
                    store.put(**record(record_id=rid, body=f"queue worker{worker}"))
                    hits = store.retrieve(
                        tenant="team-a", revision="v1", query=f"worker{worker}", now=0, limit=10
                    )
                    assert all(hit.body == f"queue worker{worker}" for hit in hits)
                    if n % 3 == 0:
                        assert store.forget(tenant="team-a", record_id=rid)
            except BaseException as exc:  # reported below, in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert store.retrieve(tenant="team-a", revision="v1", query="", now=0).eligible_count == 8 * 40


@pytest.mark.parametrize("engine", ["python", "native"])
def test_backup_is_a_consistent_copy_while_a_writer_runs(tmp_path: Path, engine: str) -> None:
    source = tmp_path / "live.db"
    with EvidenceStore(source, engine=engine) as store:
        store.put_many([record(record_id=f"base-{n}", body="queue") for n in range(200)])
        stop = threading.Event()

        def writer() -> None:  # another connection, committing while the backup runs
            with EvidenceStore(source, engine=engine) as other:
                n = 0
                while not stop.is_set():
                    other.put_many([record(record_id=f"live-{n}-{i}", body="queue") for i in range(10)])
                    n += 1

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            copies = [tmp_path / f"copy-{k}.db" for k in range(3)]
            for copy in copies:
                store.backup(copy)
        finally:
            stop.set()
            thread.join()
        for copy in copies:
            with sqlite3.connect(copy) as raw:
                assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
                live = raw.execute("SELECT count(*) FROM evidence WHERE record_id LIKE 'live-%'").fetchone()[
                    0
                ]
            raw.close()
            assert live % 10 == 0  # whole put_many batches only: a snapshot, never half a transaction
            with EvidenceStore(copy, engine=engine) as restored:
                assert (
                    restored.retrieve(tenant="team-a", revision="v1", query="", now=-1).eligible_count
                    == 200 + live
                )
        with pytest.raises(ValidationError, match="already exists"):
            store.backup(copies[0])


@pytest.mark.parametrize("engine", ["python", "native"])
def test_integrity_check_passes_on_a_written_store(tmp_path: Path, engine: str) -> None:
    """SQLite 3.40-3.41 report false NULL errors for a WITHOUT ROWID table whose key is declared
    out of column order; the schema declares its columns in key order to stay clear of it."""
    path = tmp_path / "ok.db"
    with EvidenceStore(path, engine=engine) as store:
        fill(store)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()
