"""The command line under bad input and interruptions: a refused command says why in one line,
exits with its code, and leaves the disk as it found it (no database, no output file)."""

from __future__ import annotations

import io
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import record

from pyevidence import EvidenceStore, bulk
from pyevidence.bulk import ImportRefused
from pyevidence.core.errors import SchemaError, StoreError, ValidationError
from pyevidence.core.strict_json import shown
from pyevidence.interfaces.cli import main
from pyevidence.storage.schema import SCHEMA_VERSION

PUT = ["--tenant", "t", "--record-id", "r", "--revision", "v", "--kind", "runbook", "--source", "s"]
# Every command that takes --db, with the rest of the arguments it needs to get that far.
DB_COMMANDS = {
    "put": ["put", *PUT, "--body", "b", "--expires-at", "5"],
    "retrieve": ["retrieve", "--tenant", "t", "--revision", "v", "--query", "q", "--now", "1"],
    "forget": ["forget", "--tenant", "t", "--record-id", "r"],
    "history": ["history", "--tenant", "t", "--record-id", "r"],
    "get-version": ["get-version", "--tenant", "t", "--record-id", "r", "--version", "1-00"],
    "verify": ["verify", "--tenant", "t"],
    "reindex": ["reindex"],
    "check": ["check"],
    "export": ["export", "--tenant", "t"],
    "import": ["import", "records.jsonl"],
    "import --dry-run": ["import", "--dry-run", "records.jsonl"],
    "mcp": ["mcp", "--tenant", "t", "--revision", "v"],
    "serve": ["serve", "--tenant", "t", "--revision", "v", "--port", "0"],
}
# The commands that never create a database.
READERS = [name for name in DB_COMMANDS if name not in ("put", "import")]
ONE_RECORD = json.dumps(record(tenant="t")) + "\n"


def run_cli(
    *args: str, cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=120,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _with_db(name: str, db: str) -> list[str]:
    args = DB_COMMANDS[name]
    return [args[0], "--db", db, *args[1:]]


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.stdout == ""
    assert done.stderr.startswith("pyevidence: error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


@pytest.mark.parametrize("name", sorted(DB_COMMANDS))
@pytest.mark.parametrize(
    ("db", "says"), [(":memory:", "':memory:' keeps nothing"), ("", "is empty"), ("file:x.db", "as a URI")]
)
def test_every_db_command_refuses_a_name_that_keeps_nothing(
    name: str, db: str, says: str, tmp_path: Path
) -> None:
    (tmp_path / "records.jsonl").write_text(ONE_RECORD)
    done = run_cli(*_with_db(name, db), cwd=tmp_path)
    assert done.returncode == 2
    assert says in _one_line_error(done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]


@pytest.mark.parametrize("name", READERS)
def test_readers_take_an_empty_file_for_no_database_and_leave_it_empty(name: str, tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_text(ONE_RECORD)
    (tmp_path / "empty.db").touch()
    done = run_cli(*_with_db(name, "empty.db"), cwd=tmp_path)
    assert done.returncode == 1
    if name == "import --dry-run":  # it opens the file read-only, as it does any database
        assert "has no pyevidence schema" in _one_line_error(done)
    else:
        assert "empty.db is an empty file, not a pyevidence database" in _one_line_error(done)
    assert (tmp_path / "empty.db").stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "records.jsonl"]


def test_a_refused_put_creates_no_database(tmp_path: Path) -> None:
    for bad in (["--tenant", " "], ["--expires-at", "-1"], ["--body", " "]):
        args = dict(zip(PUT[::2], PUT[1::2], strict=True)) | {"--body": "b", "--expires-at": "5"}
        args.update(dict([bad]))
        done = run_cli("put", "--db", "new.db", *[x for pair in args.items() for x in pair], cwd=tmp_path)
        assert done.returncode == 2
        _one_line_error(done)
        assert list(tmp_path.iterdir()) == []


def test_a_failed_export_leaves_no_output_file(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t"))
    done = run_cli("export", "--db", "ev.db", "--tenant", " ", "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "tenant" in _one_line_error(done)
    assert not (tmp_path / "out.jsonl").exists()
    done = run_cli("export", "--db", "ev.db", "--tenant", "t", "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.jsonl").read_text())["record_id"] == record()["record_id"]


def test_a_body_file_is_stored_byte_for_byte_as_stdin_and_import_from_dir_store_it(tmp_path: Path) -> None:
    text = "queue backlog\r\nold mac line\rlast line\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "body.txt").write_bytes(text.encode())
    put = ["put", "--db", "ev.db", *PUT, "--expires-at", "5"]
    assert run_cli(*put, "--body-file", "docs/body.txt", cwd=tmp_path).returncode == 0
    with EvidenceStore(tmp_path / "ev.db") as store:
        assert store.history(tenant="t", record_id="r")[-1].body == text
    stdin_put = [*put[:6], "r2", *put[7:]]
    assert run_cli(*stdin_put, "--body-file", "-", cwd=tmp_path, stdin=text.encode()).returncode == 0
    done = run_cli(
        "import", "--db", "ev.db", "--from-dir", "docs", "--tenant", "t", "--kind", "runbook",
        "--revision", "v", "--expires-at", "5", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with EvidenceStore(tmp_path / "ev.db") as store:
        bodies = {rid: store.history(tenant="t", record_id=rid)[-1].body for rid in ("r", "r2", "body.txt")}
    assert bodies == {"r": text, "r2": text, "body.txt": text}


def test_a_body_file_with_a_byte_order_mark_is_the_body_import_from_dir_stores(tmp_path: Path) -> None:
    """put --body-file kept the mark that import --from-dir drops: one file, two bodies, and
    the folder's next import stored a new version of a document that had not changed."""
    (tmp_path / "runbooks").mkdir()
    (tmp_path / "runbooks" / "note.md").write_bytes("\ufeffqueue backlog\n".encode())
    put = ["put", "--db", "ev.db", "--tenant", "t", "--record-id", "note.md", "--revision", "v",
           "--kind", "runbook", "--expires-at", "5"]  # fmt: skip
    source = (tmp_path / "runbooks" / "note.md").resolve().as_uri()  # as import --from-dir names it
    assert run_cli(*put, "--source", source, "--body-file", "runbooks/note.md", cwd=tmp_path).returncode == 0
    stdin = (tmp_path / "runbooks" / "note.md").read_bytes()
    put_stdin = [*put[:6], "from-stdin", *put[7:]]
    assert run_cli(*put_stdin, "--source", "s", "--body-file", "-", cwd=tmp_path, stdin=stdin).returncode == 0
    with EvidenceStore(tmp_path / "ev.db") as store:
        bodies = [store.history(tenant="t", record_id=rid)[-1].body for rid in ("note.md", "from-stdin")]
        assert bodies == ["queue backlog\n"] * 2
        folder = bulk.import_dir(
            store, tmp_path / "runbooks", tenant="t", kind="runbook", revision="v", expires_at=5
        )
    assert (folder.written, folder.unchanged) == (0, 1), folder


@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_body_that_is_not_utf8_is_bad_input_named_with_its_byte(where: str, tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"queue\xff")
    put = ["put", "--db", "ev.db", *PUT, "--expires-at", "5", "--body-file"]
    # the locale must not matter: the body is read as UTF-8 bytes whatever stdin's encoding
    env = os.environ | {"PYTHONIOENCODING": "latin-1"}
    if where == "file":
        done = run_cli(*put, "bad.txt", cwd=tmp_path, env=env)
        shown = "bad.txt"
    else:
        done = run_cli(*put, "-", cwd=tmp_path, stdin=b"queue\xff", env=env)
        shown = "standard input"
    assert done.returncode == 2
    assert (
        _one_line_error(done)
        == f"pyevidence: error: body_file: {shown} is not UTF-8 (byte 5); save it as UTF-8 text\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
    done = run_cli(*put, "-", cwd=tmp_path, stdin="café".encode(), env=env)
    assert done.returncode == 0, done.stderr
    with EvidenceStore(tmp_path / "ev.db") as store:
        assert store.history(tenant="t", record_id="r")[-1].body == "café"


# The read system call's number, to see a child blocked on reading its standard input.
_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(platform.machine())


def _reading_stdin(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    return len(fields) > 1 and fields[0] == str(_READ_SYSCALL) and int(fields[1], 16) == 0


def _busy_for(pid: int, seconds: float) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") >= seconds


def _interrupted(args: list[str], cwd: Path, *, ready: Callable[[int], bool]) -> tuple[int, str, float]:
    """Runs the command until ``ready(pid)``, sends it SIGINT, and returns its exit code, its
    stderr and how long it took to end after the signal."""
    child = subprocess.Popen(
        [sys.executable, "-m", "pyevidence", *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready(child.pid):
            assert child.poll() is None and time.monotonic() < deadline, "the command never got there"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    return child.returncode, err.decode(), time.monotonic() - sent


@pytest.mark.skipif(
    _READ_SYSCALL is None or not sys.platform.startswith("linux"), reason="reads Linux's /proc"
)
@pytest.mark.parametrize("name", ["put --body-file -", "import -"])
def test_ctrl_c_while_reading_stdin_says_so_in_one_line_and_writes_nothing(name: str, tmp_path: Path) -> None:
    args = ["put", "--db", "ev.db", *PUT, "--expires-at", "5", "--body-file", "-"]
    if name == "import -":
        args = ["import", "--db", "ev.db", "-"]
    code, err, _ = _interrupted(args, tmp_path, ready=_reading_stdin)
    assert (code, err) == (130, "pyevidence: interrupted\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_ctrl_c_ends_a_long_sql_statement_at_once(tmp_path: Path) -> None:
    EvidenceStore(tmp_path / "ev.db").close()
    endless = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c WHERE x < 0"
    )
    # two seconds of CPU: Python has started and opened the store long before (a fraction of one)
    code, _, took = _interrupted(["sql", "ev.db", endless], tmp_path, ready=lambda pid: _busy_for(pid, 2.0))
    assert code == -signal.SIGINT
    assert took < 5


def test_a_closed_pipe_ends_export_quietly(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put_many([record(tenant="t", record_id=f"r{i}", body="b" * 1000) for i in range(2000)])
    export = subprocess.Popen(
        [sys.executable, "-m", "pyevidence", "export", "--db", "ev.db", "--tenant", "t"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert export.stdout is not None and export.stderr is not None
    export.stdout.readline()
    export.stdout.close()  # as `| head -1` does
    err = export.stderr.read().decode()
    assert export.wait(timeout=60) == 1
    assert err == ""


def test_node_help_lists_the_options_even_when_the_program_is_not_built(tmp_path: Path) -> None:
    env = os.environ | {"PYEVIDENCE_NODE": str(tmp_path / "missing")}
    done = run_cli("node", "--help", cwd=tmp_path, env=env)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: pyevidence node --id N --address HOST:PORT --data DIR")
    assert "is not an executable program" in done.stdout


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("missing", "is not an executable program (no such file)"),
        ("folder", "is not an executable program (a directory)"),
        ("plain", "is not an executable program (not executable by this user)"),
        ("garbage", "could not be run (Exec format error)"),
    ],
)
def test_a_node_program_that_cannot_be_run_is_named_with_what_to_do(
    name: str, why: str, tmp_path: Path
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "plain").write_text("#!/bin/sh\n")
    (tmp_path / "garbage").write_bytes(b"not a program")
    (tmp_path / "garbage").chmod(0o755)
    program = tmp_path / name
    env = os.environ | {"PYEVIDENCE_NODE": str(program)}
    done = run_cli("node", "--members", "--cluster", "127.0.0.1:1", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"pyevidence: error: PYEVIDENCE_NODE={program} {why}; PYEVIDENCE_NODE must name the evidence_node "
        "program, which 'make node' in the pyevidence source tree builds as build/evidence_node\n"
    )


# ---- the Python API's side of the same class


def test_put_many_of_one_record_names_put_many_when_the_database_refuses(tmp_path: Path, engine: str) -> None:
    with EvidenceStore(tmp_path / "ev.db", engine=engine) as store:
        run = getattr(store._engine, "query", None) or store._engine._query
        run(  # a guard a DBA might add (for this connection only): refuse one id
            "CREATE TEMP TRIGGER no_x BEFORE INSERT ON main.evidence_current WHEN NEW.record_id = 'x'"
            " BEGIN SELECT RAISE(ABORT, 'x is reserved'); END"
        )
        with pytest.raises(StoreError, match=r"^put_many failed: x is reserved"):
            store.put_many([record(record_id="x")])
        with pytest.raises(StoreError, match=r"^put failed: x is reserved"):
            store.put(**record(record_id="x"))


def test_a_read_only_open_of_another_applications_database_says_it_is_not_ours(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (n)")
    conn.close()
    with pytest.raises(SchemaError, match="is not a pyevidence database: it already holds invoices"):
        EvidenceStore(db, read_only=True)


def test_import_file_refuses_a_text_stream_and_a_non_file(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        with pytest.raises(ValidationError, match=r"opened in binary mode \('rb'\); got a text stream"):
            bulk.import_file(store, io.StringIO(ONE_RECORD), format="jsonl")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="got int"):
            bulk.import_file(store, 5, format="jsonl")  # type: ignore[arg-type]
        assert bulk.import_file(store, io.BytesIO(ONE_RECORD.encode()), format="jsonl").written == 1


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_jsonl_lines_may_end_in_any_of_the_three_endings(ending: bytes, tmp_path: Path) -> None:
    lines = [json.dumps(record(tenant="t", record_id=f"r{i}")).encode() for i in range(3)]
    lines[1] = b"{not json"
    data = ending.join(lines) + ending
    with EvidenceStore(tmp_path / "ev.db") as store:
        with pytest.raises(ImportRefused) as refused:
            bulk.import_file(store, io.BytesIO(data), format="jsonl")
        assert [p.where for p in refused.value.problems] == ["line 2"]
        good = data.replace(b"{not json", json.dumps(record(tenant="t", record_id="r1")).encode())
        assert bulk.import_file(store, io.BytesIO(good), format="jsonl").written == 3


def test_a_bad_byte_inside_a_quoted_csv_cell_does_not_hide_the_records_after_it(tmp_path: Path) -> None:
    data = (
        b"record_id,revision,kind,body,source,expires_at\n"
        b"r1,v,runbook,fine,s,5\n"
        b'r2,v,runbook,"two\nlines \xff here",s,5\n'
        b"r3,v,runbook,b,s,-1\n"
        b"r4,v,bogus,b,s,5\n"
        b"r5,v,runbook,fine,s,5\n"
    )
    with EvidenceStore(tmp_path / "ev.db") as store:
        with pytest.raises(ImportRefused) as refused:
            bulk.import_file(store, io.BytesIO(data), tenant="t", format="csv")
    found = [(p.where, p.field, p.reason) for p in refused.value.problems]
    assert found == [
        ("line 4", None, "is not UTF-8 (byte 6)"),
        ("line 5", "expires_at", found[1][2]),
        ("line 6", "kind", found[2][2]),
    ]


def test_ctrl_c_between_batches_of_an_import_says_which_records_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = "".join(json.dumps(record(tenant="t", record_id=f"r{i}")) + "\n" for i in range(5))
    (tmp_path / "records.jsonl").write_text(lines)
    calls = []
    put_many = EvidenceStore.put_many

    def interrupted_on_the_third_batch(self: EvidenceStore, records: Any, **kwargs: Any) -> int:
        calls.append(len(records))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return put_many(self, records, **kwargs)

    monkeypatch.setattr(EvidenceStore, "put_many", interrupted_on_the_third_batch)
    db = str(tmp_path / "ev.db")
    code = main(["import", "--db", db, "--batch-size", "2", str(tmp_path / "records.jsonl")])
    assert code == 130
    assert capsys.readouterr().err == (
        "pyevidence: interrupted; the first 4 records (batches 1 to 2, through line 4) were written "
        "and stay; none after them was; to write the rest, run the same import again with --skip-unchanged\n"
    )
    with EvidenceStore(db) as store:
        assert [bool(store.history(tenant="t", record_id=f"r{i}")) for i in range(5)] == [True] * 4 + [False]


def test_ctrl_c_in_the_first_batch_or_one_transaction_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "records.jsonl").write_text(json.dumps(record(tenant="t")) + "\n")

    def interrupted(self: EvidenceStore, records: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(EvidenceStore, "put_many", interrupted)
    code = main(["import", "--db", str(tmp_path / "ev.db"), str(tmp_path / "records.jsonl")])
    assert (code, capsys.readouterr().err) == (130, "pyevidence: interrupted\n")


# Each command that prints its result on stdout, with what it needs to get that far.
PRINTERS = {
    "retrieve": [
        "retrieve",
        "--db",
        "ev.db",
        "--tenant",
        "t",
        "--revision",
        "v1",
        "--query",
        "q",
        "--now",
        "1",
    ],
    "history": ["history", "--db", "ev.db", "--tenant", "t", "--record-id", "r"],
    "verify": ["verify", "--db", "ev.db", "--tenant", "t"],
    "check": ["check", "--db", "ev.db"],
    "sql": ["sql", "ev.db", "SELECT 1"],
    "doctor": ["doctor"],
    "demo": ["demo"],
    "export": ["export", "--db", "ev.db", "--tenant", "t"],
}


def _buffering(unbuffered: bool) -> dict[str, str]:
    """The environment of a run with stdout written at once (PYTHONUNBUFFERED, as some CI sets
    it) or buffered (a write fails only when Python flushes it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return env | {"PYTHONUNBUFFERED": "1"} if unbuffered else env


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill the disk")
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("name", sorted(PRINTERS))
def test_output_that_cannot_be_written_is_one_line_and_exit_1(
    name: str, unbuffered: bool, tmp_path: Path
) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t", record_id="r"))
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", *PRINTERS[name]],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=_buffering(unbuffered),
            check=False,
            timeout=120,
        )
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    # the line docs/cli.md gives, and nothing else: export's summary would say the output is whole
    assert stderr == "pyevidence: error: could not write the output: [Errno 28] No space left on device\n"


# Outputs of 200,000 bytes and more, cut short by a file size limit of 100,000: a write that
# fails part of the way, as on a disk that fills while it is written.
LONG_PRINTERS = {
    "retrieve": ["retrieve", "--tenant", "t", "--revision", "v1", "--query", "queue", "--now", "1"],
    "history": ["history", "--tenant", "t", "--record-id", "r0"],
    "export": ["export", "--tenant", "t"],
    "sql": ["sql", "SELECT body FROM evidence"],
}


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("name", sorted(LONG_PRINTERS))
def test_output_cut_short_midway_is_one_line_and_exit_1(
    name: str, unbuffered: bool, engine: str, tmp_path: Path
) -> None:
    """With PYTHONUNBUFFERED=1, sys.stdout wrote straight to the descriptor and dropped what a
    short write left: the output was cut at the limit and the command exited 0, saying nothing."""
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put_many([record(tenant="t", record_id=f"r{i}", body="queue " * 40_000) for i in range(2)])
    args = LONG_PRINTERS[name]
    args = [*args[:1], "ev.db", *args[1:]] if name == "sql" else [*args[:1], "--db", "ev.db", *args[1:]]
    if name in ("retrieve", "export"):
        args += ["--engine", engine]

    def small_files() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    with open(tmp_path / "out.txt", "wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", *args],
            stdout=out, stderr=subprocess.PIPE, cwd=tmp_path, env=_buffering(unbuffered),
            preexec_fn=small_files, check=False, timeout=120,
        )  # fmt: skip
    assert (tmp_path / "out.txt").stat().st_size == 100_000
    assert done.returncode == 1, done.stderr
    said = done.stderr.decode()
    assert said == "pyevidence: error: could not write the output: [Errno 27] File too large\n"


@pytest.mark.parametrize("text", ["1_000", "\uff11\uff12", "+5", "0x10", "1e3", "5.0", "", "9" * 101])
def test_a_number_option_takes_what_a_csv_cell_takes(text: str, tmp_path: Path) -> None:
    """One rule for a whole number written as text: the command line refuses what CSV import
    refuses, by the same words, and writes nothing."""
    args = dict(zip(PUT[::2], PUT[1::2], strict=True)) | {"--body": "b", "--expires-at": text}
    done = run_cli("put", "--db", "new.db", *[x for pair in args.items() for x in pair], cwd=tmp_path)
    assert done.returncode == 2
    assert f"argument --expires-at: must be a whole number, got {shown(text)}" in done.stderr
    assert list(tmp_path.iterdir()) == []
    line = "tenant,record_id,revision,kind,source,expires_at,body\r\nt,r,v,runbook,s,{},b\r\n"
    (tmp_path / "r.csv").write_text(line.format(f'"{text}"'), encoding="utf-8", newline="")
    done = run_cli("import", "--db", "new.db", "r.csv", cwd=tmp_path)
    assert done.returncode == 2
    assert f"expires_at: must be a whole number, got {shown(text)}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_a_number_option_takes_spaces_around_and_a_minus_sign(tmp_path: Path) -> None:
    done = run_cli("retrieve", "--db", "ev.db", "--tenant", "t", "--revision", "v1", "--query", "q",
                   "--now", " -12 ", "--limit", "3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1 and "no database at ev.db" in done.stderr  # past the numbers
    assert "whole number" not in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["put", "--db", "new.db", *PUT, "--expires-at", "5", "--body-file", "missing.txt"],
         "body_file: missing.txt: No such file or directory"),
        (["put", "--db", "new.db", *PUT, "--expires-at", "5", "--body-file", "adir"],
         "body_file: adir: Is a directory"),
        (["import", "--db", "new.db", "missing.jsonl"], "file: missing.jsonl: No such file or directory"),
        (["import", "--db", "new.db", "--format", "jsonl", "adir"], "file: adir: Is a directory"),
        (["export", "--db", "ev.db", "--tenant", "t", "--out", "taken.jsonl"],
         "out: taken.jsonl: File exists"),
        (["export", "--db", "ev.db", "--tenant", "t", "--out", "nodir/x.jsonl"],
         "out: nodir/x.jsonl: No such file or directory"),
    ],
)  # fmt: skip
def test_a_file_argument_that_is_not_there_or_not_a_file_is_bad_input(
    args: list[str], says: str, tmp_path: Path
) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t"))
    (tmp_path / "adir").mkdir()
    (tmp_path / "taken.jsonl").write_text("kept\n")
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert _one_line_error(done) == f"pyevidence: error: {says}\n"
    # no database made, no output file left (a reader's open may leave ev.db's WAL files)
    assert {p.name for p in tmp_path.iterdir()} - {"ev.db-wal", "ev.db-shm"} == {
        "adir",
        "ev.db",
        "taken.jsonl",
    }
    assert (tmp_path / "taken.jsonl").read_text() == "kept\n"


A_VERSION = "1-" + "0" * 64  # well formed, of no record
READS_ONLY = {
    "history": ["history", "--db", "old.db", "--tenant", "t", "--record-id", "r"],
    "get-version": [
        "get-version",
        "--db",
        "old.db",
        "--tenant",
        "t",
        "--record-id",
        "r",
        "--version",
        A_VERSION,
    ],
    "verify": ["verify", "--db", "old.db", "--tenant", "t"],
    "export": ["export", "--db", "old.db", "--tenant", "t"],
    "sql": ["sql", "old.db", "SELECT 1"],
    "import --dry-run": ["import", "--db", "old.db", "--dry-run", "--tenant", "t", "records.jsonl"],
}


@pytest.mark.parametrize("name", sorted(READS_ONLY))
def test_a_command_that_only_reads_says_how_to_upgrade_an_older_store_from_the_command_line(
    name: str, tmp_path: Path
) -> None:
    """Not the API's "open it once without read_only=True", which a shell user cannot do."""
    fixture = Path(__file__).parent / "fixtures" / "v3_store.db"
    (tmp_path / "old.db").write_bytes(fixture.read_bytes())
    record = '{"record_id":"r","revision":"v1","kind":"runbook","body":"b","source":"s","expires_at":9}'
    (tmp_path / "records.jsonl").write_text(record + "\n")
    done = run_cli(*READS_ONLY[name], cwd=tmp_path)
    assert done.returncode == 1
    assert _one_line_error(done) == (
        f"pyevidence: error: old.db has pyevidence schema version 3, which this release upgrades to "
        f"{SCHEMA_VERSION} when it opens it; 'pyevidence {name}' only reads: open it once with a command "
        "that writes, such as 'pyevidence check --db old.db'\n"
    )
    assert (tmp_path / "old.db").read_bytes() == fixture.read_bytes()
    assert run_cli("check", "--db", "old.db", cwd=tmp_path).returncode == 0  # as it says
    assert run_cli(*READS_ONLY[name], cwd=tmp_path).returncode == 0


def test_upgrade_needed_survives_a_round_trip_through_pickle() -> None:
    """It crosses process boundaries as any exception does (multiprocessing, a test runner)."""
    import pickle

    from pyevidence.core.errors import UpgradeNeeded

    again = pickle.loads(pickle.dumps(UpgradeNeeded("old.db", 3, SCHEMA_VERSION)))
    assert isinstance(again, UpgradeNeeded) and (again.where, again.version) == ("old.db", 3)
    assert str(again).endswith("open it once without read_only=True to upgrade it")


def test_a_text_option_that_is_not_utf8_is_named_by_its_byte(tmp_path: Path) -> None:
    """The shell passes bytes; Python holds one that is not UTF-8 as a lone surrogate (PEP 383),
    which the store's message named as such: the user never typed one."""
    argv = [sys.executable, "-m", "pyevidence", "retrieve", "--db", str(tmp_path / "s.db")]
    argv += ["--tenant", "t", "--revision", "v1", "--now", "1", "--query"]
    done = subprocess.run([*argv, b"ok \xff\xfe alpha"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "pyevidence: error: query: is not UTF-8 text (the byte 0xff at byte 3)\n"
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", "sql", str(tmp_path / "s.db"), "SELECT ?", b"\xe9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "pyevidence: error: params[0]: is not UTF-8 text (the byte 0xe9 at byte 0)\n"
    assert not (tmp_path / "s.db").exists()


def _run_with_closed(fd: int, args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Runs the command line with descriptor ``fd`` closed (as `>&-`, `2>&-` or `<&-` do)."""
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        check=False,
        timeout=120,
        preexec_fn=lambda: os.close(fd),
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


NEW_PUT = [
    "put",
    "--db",
    "ev.db",
    *PUT[:2],
    "--record-id",
    "new",
    *PUT[4:],
    "--body",
    "b",
    "--expires-at",
    "9",
]
CLOSED_STDOUT = {
    "put": NEW_PUT,
    "forget": ["forget", "--db", "ev.db", "--tenant", "t", "--record-id", "r"],
    "import": ["import", "--db", "ev.db", "records.jsonl"],
    "retrieve": PRINTERS["retrieve"],
    "export": PRINTERS["export"],
    "help": ["put", "--help"],
}


@pytest.mark.parametrize("name", sorted(CLOSED_STDOUT))
def test_a_closed_stdout_is_one_line_and_exit_1_before_anything_is_written(name: str, tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t", record_id="r"))
    (tmp_path / "records.jsonl").write_text(json.dumps(record(tenant="t", record_id="imported")) + "\n")
    code, _, stderr = _run_with_closed(1, CLOSED_STDOUT[name], tmp_path)
    assert code == 1, stderr
    assert stderr.startswith("pyevidence: error: could not write the output: ") and stderr.count("\n") == 1
    assert "standard output is closed" in stderr
    with EvidenceStore(tmp_path / "ev.db", read_only=True) as store:  # nothing was written
        assert [v.operation for v in store.history(tenant="t", record_id="r")] == ["put"]
        assert store.history(tenant="t", record_id="new") == ()
        assert store.history(tenant="t", record_id="imported") == ()


def test_export_out_file_needs_no_stdout(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t"))
    code, _, stderr = _run_with_closed(1, [*PRINTERS["export"], "--out", "out.jsonl"], tmp_path)
    assert (code, stderr) == (0, "pyevidence: exported 1 record\n")
    assert json.loads((tmp_path / "out.jsonl").read_text())["tenant"] == "t"


CLOSED_STDERR = {
    "put": (CLOSED_STDOUT["put"], "put"),
    "retrieve": (PRINTERS["retrieve"], "hits"),
    "forget": (CLOSED_STDOUT["forget"], "forget"),
    "reindex": (["reindex", "--db", "ev.db"], "records"),
    "check": (PRINTERS["check"], "ok"),
    "verify": (PRINTERS["verify"], "ok"),
    "import": (CLOSED_STDOUT["import"], "import"),
}


@pytest.mark.parametrize("name", sorted(CLOSED_STDERR))
def test_a_closed_stderr_still_prints_the_json(name: str, tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t", record_id="r"))
    (tmp_path / "records.jsonl").write_text(json.dumps(record(tenant="t", record_id="imported")) + "\n")
    args, key = CLOSED_STDERR[name]
    code, stdout, _ = _run_with_closed(2, args, tmp_path)
    assert code == 0
    assert key in json.loads(stdout)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill the disk")
@pytest.mark.parametrize(
    ("args", "code", "key"),
    [
        (["history", "--db", "ev.db", "--tenant", "nobody", "--record-id", "r"], 0, "versions"),  # a note
        (["forget", "--db", "ev.db", "--tenant", "nobody", "--record-id", "r"], 0, "forget"),  # a note
        (["export", "--db", "ev.db", "--tenant", "t"], 0, "record_id"),  # the summary
        (["put", "--db", "ev.db", *PUT, "--body", "b", "--expires-at", "x"], 2, None),  # usage
        (["put", "--db", "ev.db", "--tenant", " ", *PUT[2:], "--body", "b", "--expires-at", "5"], 2, None),
        (["history", "--db", "missing.db", "--tenant", "t", "--record-id", "r"], 1, None),
    ],
)
def test_a_stderr_that_cannot_be_written_loses_only_the_messages(
    args: list[str], code: int, key: str | None, tmp_path: Path
) -> None:
    """A message that failed to print (2>/dev/full) raised past the command: a note cost the
    JSON it follows (exit 1, nothing printed), an error its exit code (1 for bad input)."""
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t", record_id="r"))
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", *args],
            stdout=subprocess.PIPE, stderr=full, cwd=tmp_path, check=False, timeout=120,
        )  # fmt: skip
    assert done.returncode == code
    if key is None:
        assert done.stdout == b""
    else:
        assert key in json.loads(done.stdout.decode().splitlines()[0] if key == "record_id" else done.stdout)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["put", "--db", "ev.db", *PUT, "--body-file", "-", "--expires-at", "5"], "body_file"),
        (["import", "--db", "ev.db", "-"], "FILE"),
    ],
)
def test_a_closed_stdin_for_dash_is_bad_input(args: list[str], field: str, tmp_path: Path) -> None:
    code, stdout, stderr = _run_with_closed(0, args, tmp_path)
    assert (code, stdout) == (2, "")
    assert stderr == f"pyevidence: error: {field}: is - but standard input is closed; pipe the " + (
        "text in\n" if field == "body_file" else "records in\n"
    )
    assert not (tmp_path / "ev.db").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill the disk")
@pytest.mark.parametrize("args", [["--help"], ["put", "--help"]])
def test_help_that_cannot_be_written_exits_1(args: list[str], tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", *args], stdout=full, stderr=subprocess.PIPE, check=False
        )
    assert done.returncode == 1
    said = done.stderr.decode()
    assert said == "pyevidence: error: could not write the output: [Errno 28] No space left on device\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill the disk")
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_node_help_without_the_program_on_a_full_disk_exits_1(unbuffered: bool, tmp_path: Path) -> None:
    env = _buffering(unbuffered) | {"PYEVIDENCE_NODE": str(tmp_path / "missing")}
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pyevidence", "node", "--help"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
            timeout=120,
        )
    assert (done.returncode, done.stderr.decode()) == (
        1,
        "pyevidence: error: could not write the output: [Errno 28] No space left on device\n",
    )


def _with_little_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_body_file_reads_no_more_than_a_body_may_hold(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "pyevidence", "put", "--db", "ev.db", *PUT, "--expires-at", "5"]
    done = subprocess.run(
        [*args, "--body-file", "/dev/zero"],
        capture_output=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
        preexec_fn=_with_little_memory,
    )
    limit = 1 << 20
    said = f"pyevidence: error: body: is more than {limit:,} bytes, over this store's limit of {limit:,}"
    assert (done.returncode, done.stderr.decode()) == (2, said + " (see Limits)\n")
    (tmp_path / "big.txt").write_bytes(b"a" * (limit + 1))
    with (tmp_path / "big.txt").open("rb") as big:
        done = subprocess.run([*args, "--body-file", "-"], stdin=big, capture_output=True, cwd=tmp_path)
    assert (done.returncode, done.stderr.decode()) == (2, said + " (see Limits)\n")
    done = subprocess.run([*args, "--body-file", "big.txt"], capture_output=True, cwd=tmp_path, check=False)
    said = f"pyevidence: error: body: is {limit + 1:,} bytes, over this store's limit of {limit:,}"
    assert (done.returncode, done.stderr.decode()) == (2, said + " (see Limits)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.txt"]


def test_import_from_dir_does_not_read_a_document_larger_than_a_body(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    with open(tmp_path / "docs" / "huge.md", "wb") as huge:
        huge.truncate(4 << 30)  # sparse: 4 GiB that take no disk, more than the process may hold
    args = ["import", "--db", "ev.db", "--tenant", "t", "--from-dir", "docs", "--kind", "runbook"]
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", *args, "--revision", "v", "--expires-at", "5"],
        capture_output=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
        preexec_fn=_with_little_memory,
    )
    assert done.returncode == 2, done.stderr
    assert (
        f"huge.md: body: is {4 << 30:,} bytes, over this store's limit of 1,048,576" in done.stderr.decode()
    )


def _peak_memory(args: list[str], stdin: Path, cwd: Path) -> tuple[int, str, int]:
    """Run the CLI; its exit status, its stderr and its peak resident memory in KiB (Linux)."""
    with stdin.open("rb") as given:
        child = subprocess.Popen(
            [sys.executable, "-m", "pyevidence", *args],
            stdin=given,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
            preexec_fn=_with_little_memory,
        )
        assert child.stderr is not None
        stderr = child.stderr.read().decode()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, stderr, usage.ru_maxrss


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB is Linux's")
@pytest.mark.parametrize("source", ["-", "zeros.jsonl", "zeros.csv"])
def test_import_holds_no_more_of_a_line_than_a_record_may_take(tmp_path: Path, source: str) -> None:
    """A 48 MiB line of NUL bytes (what /dev/zero gives) was read whole: the line, its text and
    the parser's copies, 150 MB and more; /dev/zero itself until the memory ran out. Now at
    most bulk.max_record_bytes() of it (6 MiB) is read, and refused naming the line."""
    zeros, small = tmp_path / "zeros", tmp_path / "small.jsonl"  # small: refused as well, unopened
    with zeros.open("wb") as sparse:
        sparse.truncate(8 * bulk.max_record_bytes())  # no disk taken
    small.write_bytes(b"x\n")
    for name in ("zeros.jsonl", "zeros.csv"):
        (tmp_path / name).symlink_to(zeros)
    args = ["import", "--db", "ev.db", "--tenant", "t"]
    status, stderr, baseline = _peak_memory([*args, "small.jsonl"], small, tmp_path)
    assert status == 2 and "line 1: is not valid JSON" in stderr, stderr
    status, stderr, peak = _peak_memory([*args, source], zeros, tmp_path)
    cap = bulk.max_record_bytes()
    assert (peak - baseline) * 1024 < 3 * cap, (peak, baseline)
    name = "stdin" if source == "-" else source
    assert (status, stderr) == (
        2,
        f"pyevidence: error: {name}: 1 bad record, nothing was written:\n"
        f"  line 1: is a record of more than {cap:,} bytes, longer than any this store's limits accept "
        "(see Limits); the file was read no further\n",
    )


def test_export_out_dash_is_stdout_as_import_dash_is_stdin(tmp_path: Path) -> None:
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put(**record(tenant="t"))
    done = run_cli("export", "--db", "ev.db", "--tenant", "t", "--out", "-", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "pyevidence: exported 1 record\n")
    assert json.loads(done.stdout)["tenant"] == "t"
    assert not (tmp_path / "-").exists()
    code, _, stderr = _run_with_closed(1, [*PRINTERS["export"], "--out", "-"], tmp_path)
    assert code == 1 and "standard output is closed" in stderr


@pytest.mark.parametrize("short_by", [None, 100])  # a write on the way fails; or only the last, at close
def test_export_out_file_that_cannot_be_written_whole_leaves_no_file(
    tmp_path: Path, engine: str, short_by: int | None
) -> None:
    """A failed write (a full disk; here the file size limit, EFBIG) left the partial file, and
    the last lines, written when the file closed, could fail unnoticed: both passed for a whole
    export."""
    with EvidenceStore(tmp_path / "ev.db") as store:
        store.put_many([record(tenant="t", record_id=f"r{i}", body="b" * 200) for i in range(3000)])
        whole = io.StringIO()
        bulk.export_jsonl(store, whole, tenant="t")
    limit = 100_000 if short_by is None else len(whole.getvalue()) - short_by

    def small_files() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", "export", "--engine", engine, "--db", "ev.db", "--tenant", "t",
         "--out", "out.jsonl"],
        capture_output=True, cwd=tmp_path, text=True, preexec_fn=small_files, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == "pyevidence: error: could not write the output: [Errno 27] File too large\n"
    assert not (tmp_path / "out.jsonl").exists()
