"""Bulk import and export: round trips, every bad record named, dry runs, folders, batches, the CLI."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import record

from pyevidence import EvidenceStore, Limits, StoreError, bulk

CLI = [sys.executable, "-m", "pyevidence"]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True, check=False)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def populate(store: EvidenceStore) -> None:
    """Two tenants, updated records, text that JSON must escape, one record in another revision."""
    store.put(**record(record_id="queue", body="restart the consumer"))
    store.put(**record(record_id="disk", kind="incident", body='disk "full"\non db-3 — again ✓'))
    store.put(**record(record_id="queue", body="restart the consumer, then watch the lag"))
    store.put(**record(record_id="a/b.md", revision="v2", body="notes\r\nwith CRLF", expires_at=0))
    store.put(**record(tenant="team-b", record_id="queue", body="team b's own"))
    store.put(**record(record_id="disk", kind="incident", body="disk full, fixed", expires_at=2**63 - 1))


def export(store: EvidenceStore, *, tenant: str = "team-a", history: bool = False) -> str:
    out = io.StringIO()
    bulk.export_jsonl(store, out, tenant=tenant, history=history)
    return out.getvalue()


def import_text(store: EvidenceStore, text: str, **options: Any) -> bulk.ImportReport:
    return bulk.import_file(store, io.BytesIO(text.encode("utf-8")), format="jsonl", **options)


def test_export_lines_are_records_with_sorted_keys(open_store: Any) -> None:
    store = open_store()
    populate(store)
    lines = export(store).splitlines()
    assert [json.loads(line)["record_id"] for line in lines] == ["a/b.md", "disk", "queue"]
    assert lines[2] == (
        '{"body":"restart the consumer, then watch the lag","expires_at":1000,"kind":"runbook",'
        '"record_id":"queue","revision":"v1","source":"runbook://queue/v1","tenant":"team-a"}'
    )
    assert all(line.isascii() for line in lines)
    assert len(export(store, history=True).splitlines()) == 5


@pytest.mark.parametrize("history", [False, True])
def test_export_import_export_is_byte_identical(open_store: Any, history: bool) -> None:
    original = open_store()
    populate(original)
    first = export(original, history=history)
    copy = open_store()
    report = import_text(copy, first)
    assert (report.read, report.written) == (len(first.splitlines()), len(first.splitlines()))
    assert export(copy, history=history) == first
    assert export(copy, tenant="team-b") == ""  # the lines carry their tenant: only team-a came over
    for record_id in ("queue", "disk", "a/b.md"):
        before = original.history(tenant="team-a", record_id=record_id)
        after = copy.history(tenant="team-a", record_id=record_id)
        if history:  # the same versions: numbers, content hashes and the chain
            assert after == before
        else:  # the current version's content, as version 1
            assert [(v.seq, v.content_hash) for v in after] == [(1, before[-1].content_hash)]
    assert copy.verify(tenant="team-a").ok


def test_a_history_export_leaves_forgotten_versions_out_and_says_where_the_chain_differs(
    open_store: Any,
) -> None:
    original = open_store()
    populate(original)
    original.forget(tenant="team-a", record_id="disk")  # chain positions 2 and 5, and a tombstone at 6
    original.put(**record(record_id="disk", body="disk again"))
    out = io.StringIO()
    report = bulk.export_jsonl(original, out, tenant="team-a", history=True)
    assert (report.written, report.left_out, report.chain_differs_from) == (4, 3, 2)
    copy = open_store()
    import_text(copy, out.getvalue())
    assert export(copy) == export(original)  # the same current records
    assert [v.seq for v in copy.history(tenant="team-a", record_id="disk")] == [1]  # was 4
    assert copy.verify(tenant="team-a").ok


def populate_tenants(store: EvidenceStore) -> None:
    """populate(), a tenant named past ASCII, and one whose only record was forgotten."""
    populate(store)
    store.put(**record(tenant="équipe", record_id="r1", body="l'équipe"))
    store.put(**record(tenant="gone", record_id="r1", body="soon forgotten"))
    store.forget(tenant="gone", record_id="r1")


def export_all(store: EvidenceStore, *, history: bool = False) -> tuple[str, tuple[bulk.ExportReport, ...]]:
    out = io.StringIO()
    reports = bulk.export_all_jsonl(store, out, history=history)
    return out.getvalue(), reports


@pytest.mark.parametrize("history", [False, True])
def test_export_of_every_tenant_is_each_tenants_export_in_tenant_order_and_imports_back(
    open_store: Any, history: bool
) -> None:
    original = open_store()
    populate_tenants(original)
    text, reports = export_all(original, history=history)
    tenants = ["gone", "team-a", "team-b", "équipe"]  # code point order
    assert [report.tenant for report in reports] == tenants
    assert text == "".join(export(original, tenant=tenant, history=history) for tenant in tenants)
    gone = reports[0]
    assert (gone.written, gone.left_out, gone.chain_differs_from) == ((0, 2, 1) if history else (0, 0, None))
    copy = open_store()
    import_text(copy, text)
    assert export_all(copy, history=history)[0] == text
    assert copy.tenants() == ("team-a", "team-b", "équipe")  # the forgotten tenant left nothing to import
    if history:  # every tenant's chain came over: the same versions, numbers and hashes
        for tenant in ("team-a", "team-b", "équipe"):
            assert copy.history(tenant=tenant, record_id="queue" if tenant != "équipe" else "r1") == (
                original.history(tenant=tenant, record_id="queue" if tenant != "équipe" else "r1")
            )
    assert all(copy.verify(tenant=tenant).ok for tenant in copy.tenants())
    assert export_all(open_store()) == ("", ())  # an empty store: no lines, no tenants


@pytest.mark.parametrize("history", [False, True])
def test_export_reads_a_page_at_a_time_from_one_snapshot_of_the_store(
    open_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, history: bool
) -> None:
    """A tenant larger than a page comes out whole and in order, and writes that commit while
    the export runs (here, at its first line) are not in it."""
    path = tmp_path / "paged.db"
    store = open_store(path)
    populate_tenants(store)
    store.put_many([record(record_id=f"r{n:02d}", body=f"page {n}") for n in range(7)])
    before, _ = export_all(store, history=history)
    other = open_store(path)

    class WritesAtFirstLine(io.StringIO):
        def write(self, text: str) -> int:
            if not self.tell():
                other.put(**record(record_id="r03", body="changed meanwhile"))
                other.put(**record(tenant="aaa", record_id="new", body="a tenant added meanwhile"))
                other.forget(tenant="team-b", record_id="queue")
            return super().write(text)

    monkeypatch.setattr(bulk, "_PAGE", 2)
    out = WritesAtFirstLine()
    bulk.export_all_jsonl(store, out, history=history)
    assert out.getvalue() == before
    assert export_all(store, history=history)[0] != before  # the writes did land


def test_each_page_of_an_export_is_a_search_of_an_index_not_a_sort() -> None:
    """A page that sorted the tenant's rows would make an export of n rows cost n * n / 1000."""
    with EvidenceStore(":memory:", engine="python") as store:
        connection = store._engine._conn
        for sql in (bulk._CURRENT_PAGE_SQL, bulk.versions.CHAIN_PAGE_SQL):
            plan = [
                row[-1]
                for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", {"1": "t", "2": "", "3": 2})
            ]
            assert all(step.startswith("SEARCH") for step in plan), plan


BAD_JSONL = "\n".join(
    [
        json.dumps(record(record_id="good-1")),
        json.dumps(record(kind="rumour")),
        "{not json",
        "",
        "[1, 2]",
        json.dumps(record(tenant="team-b")),
        json.dumps({k: v for k, v in record().items() if k != "body"}),
        json.dumps(record(expires_at=1.5)),
        json.dumps({**record(), "colour": "red"}),
        json.dumps(record(record_id="good-2")),
    ]
)


def test_every_bad_record_is_named_by_line_and_field_and_nothing_is_written(
    open_store: Any, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    store = open_store(path)
    populate(store)
    before = digest(path)
    with pytest.raises(bulk.ImportRefused) as refused:
        import_text(store, BAD_JSONL, tenant="team-a")
    assert [(p.where, p.field) for p in refused.value.problems] == [
        ("line 2", "kind"),
        ("line 3", None),
        ("line 5", None),
        ("line 6", "tenant"),
        ("line 7", "body"),
        ("line 8", "expires_at"),
        ("line 9", "colour"),
    ]
    assert str(refused.value).splitlines()[:4] == [
        "input: 7 bad records, nothing was written:",
        "  line 2: kind: must be one of working, incident, runbook; got 'rumour'",
        "  line 3: is not valid JSON (expected a key in double quotes, column 2)",
        "  line 5: must be a JSON object, got list",
    ]
    assert "line 6: tenant: is 'team-b', but the import is for 'team-a'" in str(refused.value)
    assert "line 7: body: is required" in str(refused.value)
    assert digest(path) == before
    assert store.history(tenant="team-a", record_id="good-1") == ()


def test_records_need_a_tenant_from_the_line_or_the_import(open_store: Any) -> None:
    store = open_store()
    line = json.dumps({k: v for k, v in record().items() if k != "tenant"})
    with pytest.raises(
        bulk.ImportRefused, match=r"line 1: tenant: is required \(or give the import a tenant\)"
    ):
        import_text(store, line)
    assert import_text(store, line, tenant="team-c").written == 1
    assert len(store.history(tenant="team-c", record_id="r1")) == 1


def test_a_dry_run_checks_everything_and_writes_nothing(open_store: Any, tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    store = open_store(path)
    populate(store)
    before = digest(path)
    good = "\n".join(json.dumps(record(record_id=f"r{i}")) for i in range(50)) + "\n"
    assert import_text(store, good, dry_run=True) == bulk.ImportReport(
        read=50, written=0, unchanged=0, dry_run=True
    )
    with pytest.raises(bulk.ImportRefused):
        import_text(store, BAD_JSONL, dry_run=True)
    assert digest(path) == before


def test_csv_records_with_line_numbers_where_each_record_starts(open_store: Any, tmp_path: Path) -> None:
    store = open_store()
    good = tmp_path / "good.csv"
    good.write_text(
        "record_id,revision,kind,body,source,expires_at\r\n"
        'r1,v1,runbook,"two\r\nlines, with a comma",runbook://1,5\r\n'
        "r2,v1,working,plain,note://2,6\r\n",
        encoding="utf-8",
    )
    assert bulk.import_file(store, good, tenant="team-a").written == 2
    assert store.history(tenant="team-a", record_id="r1")[0].body == "two\r\nlines, with a comma"
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "tenant,record_id,revision,kind,body,source,expires_at\n"
        'team-a,r1,v1,runbook,"multi\nline",s,x\n'
        "team-a,r2,v1,runbook,b,s\n"
        ",r3,v1,runbook,b,s,7\n"
        "team-a,r4,v1,runbook,,s,7\n",
        encoding="utf-8",
    )
    with pytest.raises(bulk.ImportRefused) as refused:
        bulk.import_file(store, bad)
    assert [str(p) for p in refused.value.problems] == [
        "line 2: expires_at: must be a whole number, got 'x'",
        "line 4: has 6 cells; the header has 7",
        "line 5: tenant: is required (or give the import a tenant)",
        "line 6: body: must not be empty or only whitespace",
    ]
    header = tmp_path / "header.csv"
    header.write_text("record_id,body,notes\nr1,b,n\n", encoding="utf-8")
    with pytest.raises(bulk.ImportRefused, match="line 1: the header must name the columns"):
        bulk.import_file(store, header, tenant="team-a")


def test_a_file_of_unknown_format_is_refused_by_name(open_store: Any, tmp_path: Path) -> None:
    path = tmp_path / "records.txt"
    path.write_text("", encoding="utf-8")
    with pytest.raises(bulk.ValidationError, match=r"cannot tell the format of .*records\.txt; name it"):
        bulk.import_file(open_store(), path)


def test_batches_commit_in_turn_and_a_failure_says_what_stays(
    open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    lines = "\n".join(json.dumps(record(record_id=f"r{i:02d}")) for i in range(10))
    assert import_text(store, lines, batch_size=3).written == 10
    calls = []
    real_put_many = store.put_many

    def failing_put_many(records: Any) -> int:
        calls.append(len(records))
        if len(calls) == 3:
            raise StoreError("disk I/O error")
        return int(real_put_many(records))

    monkeypatch.setattr(store, "put_many", failing_put_many)
    with pytest.raises(bulk.ImportInterrupted) as interrupted:
        import_text(store, lines.replace('"team-a"', '"team-z"'), batch_size=4)
    assert (interrupted.value.batch, interrupted.value.written) == (3, 8)
    assert str(interrupted.value) == (
        "batch 3 failed: disk I/O error; the first 8 records (batches 1 to 2, through line 8) were "
        "written and stay; none after them was; to write the rest, run the same import again with "
        "--skip-unchanged"
    )
    assert export(store, tenant="team-z").count("\n") == 8


def write_docs(root: Path) -> None:
    (root / "runbooks" / "db").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "runbooks" / "queue.md").write_text("# Queue lag\nrestart the consumer\n", encoding="utf-8")
    (root / "runbooks" / "db" / "disk.txt").write_text("disk full: rotate the logs\n", encoding="utf-8")
    (root / "README.markdown").write_text("the team's runbooks\n", encoding="utf-8")
    (root / ".git" / "HEAD.md").write_text("hidden\n", encoding="utf-8")
    (root / ".draft.md").write_text("hidden\n", encoding="utf-8")
    (root / "diagram.png").write_bytes(b"\x89PNG")


def test_a_folder_becomes_one_record_per_document(open_store: Any, tmp_path: Path) -> None:
    store = open_store()
    docs = tmp_path / "docs"
    write_docs(docs)
    options = dict(tenant="team-a", kind="runbook", revision="v1", expires_at=100)
    report = bulk.import_dir(store, docs, **options)
    assert (report.read, report.written, report.unchanged) == (3, 3, 0)
    current = [json.loads(line) for line in export(store).splitlines()]
    assert [(r["record_id"], r["source"]) for r in current] == [
        ("README.markdown", (docs / "README.markdown").resolve().as_uri()),
        ("runbooks/db/disk.txt", (docs / "runbooks" / "db" / "disk.txt").resolve().as_uri()),
        ("runbooks/queue.md", (docs / "runbooks" / "queue.md").resolve().as_uri()),
    ]
    assert current[2]["source"].startswith("file:///") and current[2]["body"].startswith("# Queue lag")
    again = bulk.import_dir(store, docs, **options)
    assert (again.read, again.written, again.unchanged) == (3, 0, 3)
    assert len(store.history(tenant="team-a", record_id="runbooks/queue.md")) == 1
    (docs / "runbooks" / "queue.md").write_text("# Queue lag\nscale out\n", encoding="utf-8")
    changed = bulk.import_dir(store, docs, **options)
    assert (changed.written, changed.unchanged) == (1, 2)
    assert len(store.history(tenant="team-a", record_id="runbooks/queue.md")) == 2


def test_a_folder_with_a_bad_document_is_refused_whole(open_store: Any, tmp_path: Path) -> None:
    store = open_store()
    docs = tmp_path / "docs"
    write_docs(docs)
    (docs / "empty.md").write_text("  \n", encoding="utf-8")
    (docs / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(bulk.ImportRefused) as refused:
        bulk.import_dir(store, docs, tenant="team-a", kind="runbook", revision="v1", expires_at=100)
    assert [str(p) for p in refused.value.problems] == [
        "empty.md: body: must not be empty or only whitespace",
        "latin1.txt: body: is not UTF-8 text (byte 3)",
    ]
    assert export(store) == ""


def test_cli_import_and_export_round_trip_through_stdin_and_a_file(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "a.db", engine="python") as store:
        populate(store)
    exported = cli("export", "--db", str(tmp_path / "a.db"), "--tenant", "team-a", "--history")
    assert (exported.returncode, exported.stderr) == (0, "pyevidence: exported 5 versions\n")
    imported = cli("import", "--db", str(tmp_path / "b.db"), "-", stdin=exported.stdout)
    assert (imported.returncode, imported.stderr) == (0, "")  # no progress bar off a terminal
    assert json.loads(imported.stdout) == {
        "import": {"dry_run": False, "read": 5, "unchanged": 0, "written": 5}
    }
    out = tmp_path / "b.jsonl"
    again = cli(
        "export", "--db", str(tmp_path / "b.db"), "--tenant", "team-a", "--history", "--out", str(out)
    )
    assert (again.returncode, again.stdout) == (0, "")
    assert out.read_text(encoding="utf-8") == exported.stdout
    refused = cli("export", "--db", str(tmp_path / "b.db"), "--tenant", "team-a", "--out", str(out))
    assert refused.returncode == 2 and f"out: {out}: File exists" in refused.stderr


def test_cli_exports_every_tenant_or_one_never_both(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "a.db", engine="python") as store:
        populate_tenants(store)
    db = str(tmp_path / "a.db")
    every = cli("export", "--db", db, "--all-tenants", "--history")
    assert (every.returncode, every.stderr) == (
        0,
        "pyevidence: exported 7 versions of 4 tenants; left out 2 forgotten versions (no content left) "
        "of 1 tenant: their chain hashes will differ after an import from their first forgotten version on "
        "(tenant 'gone': position 1)\n",
    )
    imported = cli("import", "--db", str(tmp_path / "b.db"), "-", stdin=every.stdout)
    assert imported.returncode == 0
    assert cli("export", "--db", str(tmp_path / "b.db"), "--all-tenants", "--history").stdout == every.stdout
    plain = cli("export", "--db", db, "--all-tenants")
    assert (plain.returncode, plain.stderr) == (0, "pyevidence: exported 5 records of 4 tenants\n")
    for args in (["--tenant", "team-a", "--all-tenants"], []):
        refused = cli("export", "--db", db, *args)
        assert refused.returncode == 2 and "--tenant" in refused.stderr and "--all-tenants" in refused.stderr
    said = " ".join(cli("export", "--help").stdout.split())  # argparse wraps the lines
    assert "or every tenant's, as JSONL" in said


def test_cli_exports_a_tenant_stored_under_larger_limits_alone_as_among_every_tenant(
    tmp_path: Path, engine: str
) -> None:
    """export reads what the store holds, as verify does: a tenant whose name the default
    Limits refuse, which --all-tenants exports, exports with --tenant too."""
    db = tmp_path / "large.db"
    tenant = "t" * 2000  # over the default 1,024 bytes of an identifying field
    with EvidenceStore(db, engine=engine, limits=Limits(max_field_bytes=4096)) as store:
        store.put(**record(tenant=tenant, record_id="big", body="a tenant named at length"))
        store.put(**record(tenant="small", record_id="r1", body="a tenant of the defaults"))
    every = cli("export", "--db", str(db), "--engine", engine, "--all-tenants")
    assert every.returncode == 0 and every.stderr == "pyevidence: exported 2 records of 2 tenants\n"
    alone = cli("export", "--db", str(db), "--engine", engine, "--tenant", tenant)
    assert (alone.returncode, alone.stderr) == (0, "pyevidence: exported 1 record\n")
    assert alone.stdout == every.stdout.splitlines(keepends=True)[1]


def test_cli_import_reports_bad_lines_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    with EvidenceStore(db, engine="python") as store:
        populate(store)
    before = digest(db)
    source = tmp_path / "bad.jsonl"
    source.write_text(BAD_JSONL, encoding="utf-8")
    for extra in ([], ["--dry-run"], ["--batch-size", "2"]):
        done = cli("import", "--db", str(db), "--tenant", "team-a", str(source), *extra)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.startswith(f"pyevidence: error: {source}: 7 bad records, nothing was written:\n")
        assert "  line 9: colour: is not a record field; the fields are tenant, record_id" in done.stderr
    assert digest(db) == before


def test_cli_import_from_dir_needs_its_fields_and_reimports_nothing(tmp_path: Path) -> None:
    db, docs = tmp_path / "e.db", tmp_path / "docs"
    write_docs(docs)
    base = ["import", "--db", str(db), "--tenant", "team-a", "--from-dir", str(docs), "--kind", "runbook"]
    missing = cli(*base, "--revision", "v1")
    assert (missing.returncode, missing.stderr) == (
        2,
        "pyevidence: error: expires_at: is required with --from-dir (--expires-at)\n",
    )
    first = cli(*base, "--revision", "v1", "--expires-at", "100")
    assert json.loads(first.stdout)["import"]["written"] == 3
    before = digest(db)
    second = cli(*base, "--revision", "v1", "--expires-at", "100")
    assert json.loads(second.stdout)["import"] == {"dry_run": False, "read": 3, "unchanged": 3, "written": 0}
    assert digest(db) == before


def test_cli_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    source = tmp_path / "r.jsonl"
    source.write_text("\n".join(json.dumps(record(record_id=f"r{i}")) for i in range(2000)), encoding="utf-8")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*CLI, "import", "--db", str(tmp_path / "e.db"), str(source)],
            stdout=subprocess.PIPE,
            stderr=follower,
            check=False,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    text = drawn.decode()
    assert "checking 2,000 records" in text and "/s" in text and "100% ETA 0s" in text
    assert "writing in one transaction 2,000 records" in text and text.endswith("\r\n")


def test_cli_dry_run_creates_no_database_and_opens_an_existing_one_read_only(tmp_path: Path) -> None:
    source = tmp_path / "r.jsonl"
    source.write_text(json.dumps(record()) + "\n", encoding="utf-8")
    db = tmp_path / "new.db"
    done = cli("import", "--db", str(db), "--dry-run", str(source))
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["import"] == {"dry_run": True, "read": 1, "unchanged": 0, "written": 0}
    assert not db.exists()
    docs = tmp_path / "docs"
    write_docs(docs)
    base = ["--tenant", "team-a", "--from-dir", str(docs), "--kind", "runbook", "--revision", "v1"]
    done = cli("import", "--db", str(db), *base, "--expires-at", "9", "--dry-run")
    assert json.loads(done.stdout)["import"]["read"] == 3 and not db.exists()
    assert cli("import", "--db", str(db), *base, "--expires-at", "9").returncode == 0
    before = digest(db)
    done = cli("import", "--db", str(db), *base, "--expires-at", "10", "--dry-run")
    assert json.loads(done.stdout)["import"] == {"dry_run": True, "read": 3, "unchanged": 0, "written": 0}
    assert digest(db) == before


def test_a_csv_file_may_start_with_a_byte_order_mark(open_store: Any, tmp_path: Path) -> None:
    store = open_store()
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b"\xef\xbb\xbftenant,record_id,revision,kind,body,source,expires_at\r\nteam-a,r1,v1,runbook,b,s,5\r\n"
    )
    assert bulk.import_file(store, path).written == 1


def test_cli_a_refused_import_creates_no_database(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(BAD_JSONL, encoding="utf-8")
    for args, message in [
        ([str(bad), "--tenant", "team-a"], "7 bad records, nothing was written"),
        ([str(tmp_path / "absent.jsonl")], "No such file or directory"),
        ([], "FILE: name a .jsonl or .csv file, - for stdin, or use --from-dir"),
        ([str(bad), "--batch-size", "0"], "batch_size: must be between 1 and"),
        (["--from-dir", str(tmp_path / "absent")], "tenant: is required with --from-dir"),
    ]:
        done = cli("import", "--db", str(db), *args)
        assert done.returncode in (1, 2) and message in done.stderr, (args, done.stderr)
        assert not db.exists(), args
