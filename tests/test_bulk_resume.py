"""import --skip-unchanged: a failed batched import resumed by running it again, the exact rule
(the version a record would follow: the one before it in the file, else the store's current
one), the store read 500 record_ids a statement, and the same current records as without it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceStore, StoreError, ValidationError, bulk
from pyevidence.interfaces.cli import main
from pyevidence.storage import versions

BODY = record()["body"]


def jsonl(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


def import_records(store: EvidenceStore, *records: dict[str, object], **options: Any) -> bulk.ImportReport:
    return bulk.import_file(store, io.BytesIO(jsonl(*records)), format="jsonl", **options)


def bodies(store: EvidenceStore, tenant: str, record_id: str) -> list[str | None]:
    return [v.body for v in store.history(tenant=tenant, record_id=record_id) if v.operation == "put"]


def current(store: EvidenceStore, tenant: str) -> str:
    """Every field of the tenant's current records."""
    out = io.StringIO()
    bulk.export_jsonl(store, out, tenant=tenant)
    return out.getvalue()


@pytest.mark.parametrize(
    "failure", [StoreError("database or disk is full"), KeyboardInterrupt()], ids=["store error", "ctrl-c"]
)
def test_a_failed_batched_import_is_resumed_by_the_same_command_with_skip_unchanged(
    engine: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failure: BaseException,
) -> None:
    db = str(tmp_path / "ev.db")
    with EvidenceStore(db, engine=engine) as store:
        for i in range(10):  # another tenant's records, with the same record_ids and fields
            store.put(**record(tenant="team-b", record_id=f"r{i:02d}", body=f"body {i}"))
        team_b = current(store, "team-b")
    (tmp_path / "records.jsonl").write_bytes(
        jsonl(*(record(record_id=f"r{i:02d}", body=f"body {i}") for i in range(10)))
    )
    command = ["import", "--db", db, "--engine", engine, "--batch-size", "3", str(tmp_path / "records.jsonl")]
    put_many = EvidenceStore.put_many
    calls = []

    def failing_on_the_third_batch(self: EvidenceStore, records: Any, **kwargs: Any) -> int:
        calls.append(len(records))
        if len(calls) == 3:
            raise failure
        return put_many(self, records, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(EvidenceStore, "put_many", failing_on_the_third_batch)
        code = main(command)
    err = capsys.readouterr().err
    assert code == (130 if isinstance(failure, KeyboardInterrupt) else 1)
    assert (
        "the first 6 records (batches 1 to 2, through line 6) were written and stay; none after them was"
        in err
    )
    assert err.endswith("; to write the rest, run the same import again with --skip-unchanged\n")

    assert main([*command[:-1], "--skip-unchanged", "--dry-run", command[-1]]) == 0
    assert json.loads(capsys.readouterr().out)["import"] == {
        "dry_run": True,
        "read": 10,
        "unchanged": 6,
        "written": 0,
    }
    assert main([*command[:-1], "--skip-unchanged", command[-1]]) == 0
    summary = json.loads(capsys.readouterr().out)["import"]
    assert summary == {"dry_run": False, "read": 10, "unchanged": 6, "written": 4}
    assert summary["written"] + summary["unchanged"] == summary["read"]
    with EvidenceStore(db, engine=engine) as store:
        assert [bodies(store, "team-a", f"r{i:02d}") for i in range(10)] == [[f"body {i}"] for i in range(10)]
        assert current(store, "team-b") == team_b
        assert all(len(store.history(tenant="team-b", record_id=f"r{i:02d}")) == 1 for i in range(10))
        assert store.verify(tenant="team-a").ok and store.verify(tenant="team-b").ok
    # Run once more: nothing is left to write.
    assert main([*command[:-1], "--skip-unchanged", command[-1]]) == 0
    assert json.loads(capsys.readouterr().out)["import"]["written"] == 0


def test_a_file_repeating_a_record_is_told_to_resume_after_its_last_written_line(
    open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same import with --skip-unchanged would store r1's first version again over its
    second: the message gives the line to go on from instead."""
    store = open_store()
    records = [record(record_id="r1", body="A"), record(record_id="r1", body="B"), record(record_id="r2")]
    real_put_many = store.put_many
    calls = []

    def failing_put_many(batch: Any) -> int:
        calls.append(batch)
        if len(calls) == 2:
            raise StoreError("disk I/O error")
        return int(real_put_many(batch))

    monkeypatch.setattr(store, "put_many", failing_put_many)
    with pytest.raises(bulk.ImportInterrupted) as interrupted:
        import_records(store, *records, batch_size=2)
    assert str(interrupted.value) == (
        "batch 2 failed: disk I/O error; the first 2 records (batches 1 to 1, through line 2) were written "
        "and stay; none after them was; to write the rest, import only the records after the one at line 2 "
        "(a CSV file with its header line): the file holds a record more than once with different fields, "
        "which --skip-unchanged would store again"
    )


def test_a_record_follows_the_one_before_it_in_the_file_else_the_current_version(open_store: Any) -> None:
    store = open_store()
    store.put(**record(record_id="r1", body="B"))
    a, b = record(record_id="r1", body="A"), record(record_id="r1", body="B")
    # A differs from the stored B; B then follows A, from which it differs: as without the flag.
    report = import_records(store, a, b, skip_unchanged=True)
    assert (report.read, report.written, report.unchanged) == (2, 2, 0)
    assert bodies(store, "team-a", "r1") == ["B", "A", "B"]
    # B follows the stored B, and the second B the first.
    report = import_records(store, b, b, skip_unchanged=True)
    assert (report.written, report.unchanged) == (0, 2)
    # Without the flag every record is a version.
    assert import_records(store, b).written == 1
    assert bodies(store, "team-a", "r1") == ["B", "A", "B", "B"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("revision", "v2"), ("kind", "incident"), ("body", "other"), ("source", "s://2"), ("expires_at", 1001)],
)
def test_a_record_that_differs_in_any_field_is_written(open_store: Any, field: str, value: object) -> None:
    store = open_store()
    store.put(**record())
    report = import_records(store, record(), record(**{field: value}), record(), skip_unchanged=True)
    assert (report.written, report.unchanged) == (
        2,
        1,
    )  # the first is the stored one; the last follows the change


def test_a_forgotten_record_and_another_tenants_identical_record_are_written(open_store: Any) -> None:
    store = open_store()
    store.put(**record(record_id="gone"))
    store.forget(tenant="team-a", record_id="gone")
    store.put(**record(tenant="team-b", record_id="theirs"))
    report = import_records(store, record(record_id="gone"), record(record_id="theirs"), skip_unchanged=True)
    assert (report.written, report.unchanged) == (2, 0)
    assert bodies(store, "team-a", "gone") == [None, "restart the queue consumer"]  # forgotten, then stored
    assert len(store.history(tenant="team-b", record_id="theirs")) == 1


def test_the_store_is_read_500_record_ids_a_statement(
    open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    store.put_many([record(record_id=f"r{i:04d}") for i in range(1203)])
    lines = [record(record_id=f"r{i:04d}", body="changed" if i % 3 == 0 else BODY) for i in range(1203)]
    statements = []
    real_sql = versions._current_column_sql

    def counted(column: str, n_ids: int) -> str:
        statements.append(n_ids)
        return real_sql(column, n_ids)

    monkeypatch.setattr(versions, "_current_column_sql", counted)
    dry = import_records(store, *lines, skip_unchanged=True, dry_run=True)
    assert (dry.read, dry.written, dry.unchanged, dry.dry_run) == (1203, 0, 802, True)
    assert statements == [500, 500, 203]
    assert len(store.history(tenant="team-a", record_id="r0000")) == 1  # the dry run wrote nothing
    report = import_records(store, *lines, skip_unchanged=True, batch_size=100)
    assert (report.read, report.written, report.unchanged) == (1203, 401, 802)
    assert [len(store.history(tenant="team-a", record_id=f"r{i:04d}")) for i in (0, 1, 2, 1200, 1202)] == [
        2, 1, 1, 2, 1,
    ]  # fmt: skip


def test_skip_unchanged_must_be_true_or_false(open_store: Any) -> None:
    store = open_store()
    with pytest.raises(ValidationError, match=r"^skip_unchanged: must be True or False, got 1$"):
        import_records(store, record(), skip_unchanged=1)
    assert store.history(tenant="team-a", record_id="r1") == ()


def test_cli_from_dir_accepts_skip_unchanged_as_what_it_always_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "queue.md").write_text("restart the consumer\n", encoding="utf-8")
    docs = [
        "--from-dir",
        str(tmp_path / "docs"),
        "--kind",
        "runbook",
        "--revision",
        "v1",
        "--expires-at",
        "100",
    ]
    command = ["import", "--db", str(tmp_path / "ev.db"), "--tenant", "t", *docs]
    assert main(command) == 0
    capsys.readouterr()
    assert main([*command, "--skip-unchanged"]) == 0
    assert json.loads(capsys.readouterr().out)["import"] == {
        "dry_run": False,
        "read": 1,
        "unchanged": 1,
        "written": 0,
    }


TENANTS, RECORD_IDS, BODIES = ("t1", "t2"), ("a", "b", "c"), ("x", "y")
some_records = st.tuples(st.sampled_from(TENANTS), st.sampled_from(RECORD_IDS), st.sampled_from(BODIES))


def as_record(tenant: str, record_id: str, body: str) -> dict[str, object]:
    return record(tenant=tenant, record_id=record_id, body=body)


def changes(sequence: list[str], before: str | None) -> int:
    """How many of ``sequence`` differ from the one before them (the first from ``before``)."""
    return sum(body != previous for body, previous in zip(sequence, [before, *sequence], strict=False))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(
    start=st.lists(st.tuples(some_records, st.booleans()), max_size=8),
    lines=st.lists(some_records, max_size=12),
)
def test_skipping_unchanged_records_stores_the_same_current_records_with_no_more_versions(
    engine: str, start: list[tuple[tuple[str, str, str], bool]], lines: list[tuple[str, str, str]]
) -> None:
    """``start``: puts, each then forgotten or not. The count written is the rule's: a record
    is written when its body differs from the one it follows (all else is the same here)."""
    with (
        EvidenceStore(":memory:", engine=engine) as plain,
        EvidenceStore(":memory:", engine=engine) as skipping,
    ):
        for store in (plain, skipping):
            for (tenant, record_id, body), forget in start:
                store.put(**as_record(tenant, record_id, body))
                if forget:
                    store.forget(tenant=tenant, record_id=record_id)
        stored = {
            key: bodies(plain, *key)[-1] for key in {(t, r) for t, r, _ in lines} if has_current(plain, *key)
        }
        file = [as_record(*line) for line in lines]
        import_records(plain, *file)
        report = import_records(skipping, *file, skip_unchanged=True)

        by_key: dict[tuple[str, str], list[str]] = {}
        for tenant, record_id, body in lines:
            by_key.setdefault((tenant, record_id), []).append(body)
        assert report.written == sum(changes(seq, stored.get(key)) for key, seq in by_key.items())
        assert report.written + report.unchanged == report.read == len(lines)
        for tenant in TENANTS:
            assert current(skipping, tenant) == current(plain, tenant)
            for record_id in RECORD_IDS:
                assert len(skipping.history(tenant=tenant, record_id=record_id)) <= len(
                    plain.history(tenant=tenant, record_id=record_id)
                )
        # Again: a record is written only where the file holds it with different bodies, its
        # first version now following its last one.
        again = import_records(skipping, *file, skip_unchanged=True)
        assert again.written == sum(changes(seq, seq[-1]) for seq in by_key.values())
        if all(len(set(seq)) == 1 for seq in by_key.values()):
            assert again.written == 0
        for tenant in TENANTS:
            assert current(skipping, tenant) == current(plain, tenant)


def has_current(store: EvidenceStore, tenant: str, record_id: str) -> bool:
    """Whether the record has a current version (it was stored and not forgotten since)."""
    history = store.history(tenant=tenant, record_id=record_id)
    return bool(history) and history[-1].operation == "put"
