"""Hostile import files: each gives a clear per-line or per-file error, no traceback, nothing written."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyevidence import EvidenceStore, bulk
from pyevidence.core.limits import Limits

CLI = [sys.executable, "-m", "pyevidence"]
GOOD = '"tenant":"a","record_id":"r","revision":"v1","kind":"runbook","body":"b","source":"s"'


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=False, timeout=60)


def refused(store: Any, data: bytes, format: str) -> list[str]:
    with pytest.raises(bulk.ImportRefused) as caught:
        bulk.import_file(store, io.BytesIO(data), format=format)
    return [str(p) for p in caught.value.problems]


def test_a_huge_number_or_deep_nesting_in_jsonl_is_a_bad_line(open_store: Any) -> None:
    store = open_store()
    huge = ("{" + GOOD + ',"expires_at":' + "9" * 5000 + "}\n").encode()
    deep = b"[" * 100000 + b"]" * 100000 + b"\n"
    expected = [
        (huge, "line 1: holds a number of 5,000 characters; at most 100 are accepted"),
        (deep, "line 1: nests deeper than 64 levels"),
    ]
    for data, problem in expected:
        assert refused(store, data, "jsonl") == [problem]
    assert store.history(tenant="a", record_id="r") == ()


def test_a_huge_number_in_csv_is_a_bad_field(open_store: Any) -> None:
    store = open_store()
    data = "tenant,record_id,revision,kind,body,source,expires_at\na,r,v1,runbook,b,s," + "9" * 5000 + "\n"
    problems = refused(store, data.encode(), "csv")
    assert len(problems) == 1 and problems[0].startswith("line 2: expires_at: must be a whole number")


def documents(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("restart the consumer\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside\n", encoding="utf-8")
    os.mkfifo(docs / "pipe.md")
    (docs / "broken.md").symlink_to(tmp_path / "nonexistent")
    (docs / "outside.txt").symlink_to(tmp_path / "secret.txt")
    (docs / "inside.md").symlink_to(docs / "good.md")
    return docs


def test_a_folder_imports_regular_files_only_and_no_symlink_out_of_it(
    open_store: Any, tmp_path: Path
) -> None:
    store = open_store()
    docs = documents(tmp_path)
    with pytest.raises(bulk.ImportRefused) as caught:
        bulk.import_dir(store, docs, tenant="a", kind="runbook", revision="v1", expires_at=9)
    problems = [str(p) for p in caught.value.problems]
    assert problems[0].startswith("broken.md: cannot be read (")
    assert problems[1:] == [
        "outside.txt: is a symlink leading outside the folder; copy the file in instead",
        "pipe.md: is not a regular file (a FIFO, socket or device); only files are imported",
    ]
    assert store.history(tenant="a", record_id="good.md") == ()


def test_cli_hostile_files_exit_2_without_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    huge = tmp_path / "huge.jsonl"
    huge.write_text("{" + GOOD + ',"expires_at":' + "9" * 5000 + "}\n", encoding="utf-8")
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b"[" * 100000 + b"]" * 100000 + b"\n")
    big_csv = tmp_path / "big.csv"
    big_csv.write_text(
        "tenant,record_id,revision,kind,body,source,expires_at\na,r,v1,runbook,b,s," + "9" * 5000 + "\n",
        encoding="utf-8",
    )
    docs = documents(tmp_path)
    runs = [[str(p)] for p in (huge, deep, big_csv)]
    runs.append(
        [
            "--from-dir",
            str(docs),
            "--tenant",
            "a",
            "--kind",
            "runbook",
            "--revision",
            "v1",
            "--expires-at",
            "9",
        ]
    )
    for engine in ("python", "native"):
        for args in runs:
            done = cli("import", "--db", str(db), "--engine", engine, *args, "--dry-run")
            assert done.returncode == 2, (engine, args, done.stderr)
            assert "Traceback" not in done.stderr and "nothing was written" in done.stderr
    assert not db.exists()


def test_a_csv_body_under_the_body_limit_is_read_and_the_csv_limit_restored(open_store: Any) -> None:
    import csv

    store = open_store()
    before = csv.field_size_limit()
    body = "x" * 200_000  # over csv's default 131072, under max_body_bytes (1 MiB)
    data = f"tenant,record_id,revision,kind,body,source,expires_at\na,r,v1,runbook,{body},s,9\n"
    report = bulk.import_file(store, io.BytesIO(data.encode()), format="csv")
    assert report.written == 1
    assert store.history(tenant="a", record_id="r")[-1].body == body
    assert csv.field_size_limit() == before


def test_a_jsonl_line_naming_a_key_twice_is_a_bad_line(open_store: Any) -> None:
    store = open_store()
    data = ('{"tenant":"b",' + GOOD + ',"expires_at":9}\n').encode()
    assert refused(store, data, "jsonl") == ["line 1: repeats the key 'tenant' in one object"]


def test_a_jsonl_line_with_nan_or_infinity_is_a_bad_line(open_store: Any) -> None:
    store = open_store()
    for constant in ("NaN", "Infinity", "-Infinity"):
        data = ("{" + GOOD + ',"expires_at":' + constant + "}\n").encode()
        reason = f"is not valid JSON: {constant} is not a number JSON allows"
        assert refused(store, data, "jsonl") == [f"line 1: {reason}"]
    assert store.history(tenant="a", record_id="r") == ()


def test_a_huge_repeated_key_is_quoted_cut_short(open_store: Any) -> None:
    store = open_store()
    key = "k" * 1_000_000
    data = ('{"' + key + '":1,"' + key + '":2}\n').encode()
    (problem,) = refused(store, data, "jsonl")
    assert problem.startswith("line 1: repeats the key 'kkk") and problem.endswith("... in one object")
    assert len(problem) < 200


HEADER = b"tenant,record_id,revision,kind,body,source,expires_at\n"


def test_a_csv_line_that_is_not_utf8_is_named_and_reading_goes_on(open_store: Any) -> None:
    """The line that holds the bad byte is named, not line 1, and later bad lines are named too."""
    store = open_store()
    data = (
        HEADER
        + b"a,r1,v1,runbook,fine,s,5\n"
        + b"a,r2,v1,runbook,caf\xe9 latin-1,s,5\n"
        + b'a,r3,v1,runbook,"two\nlines",s,5\n'
        + b"a,r4,v1,runbook,\xff,s,5\n"
        + b"a,r5,v1,kind?,fine,s,5\n"
    )
    assert refused(store, data, "csv") == [
        "line 3: is not UTF-8 (byte 19)",
        "line 6: is not UTF-8 (byte 16)",
        "line 7: kind: must be one of working, incident, runbook; got 'kind?'",
    ]
    assert refused(store, b"tenant,\xffrecord_id\n", "csv") == ["line 1: is not UTF-8 (byte 7)"]
    assert store.history(tenant="a", record_id="r1") == ()  # nothing written


def test_a_byte_order_mark_and_any_line_ending_are_read_in_both_formats(open_store: Any) -> None:
    store = open_store()
    jsonl = b"\xef\xbb\xbf{" + GOOD.encode() + b',"expires_at":5}\r\n{' + GOOD.replace('"r"', '"r2"').encode()
    assert bulk.import_file(store, io.BytesIO(jsonl + b',"expires_at":5}\n'), format="jsonl").written == 2
    for ending in (b"\n", b"\r\n", b"\r"):
        csv_data = (
            b"\xef\xbb\xbf"
            + HEADER.replace(b"\n", ending)
            + b'a,c1,v1,runbook,"x'
            + ending
            + b'y",s,5'
            + ending
        )
        assert bulk.import_file(store, io.BytesIO(csv_data), format="csv").written == 1
        assert store.history(tenant="a", record_id="c1")[-1].body == f"x{ending.decode()}y"


def _lines(n: int) -> bytes:
    return b"".join(("{" + GOOD.replace('"r"', f'"r{i}"') + ',"expires_at":9}\n').encode() for i in range(n))


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda s, t: bulk.import_file(s, io.BytesIO(_lines(1)), format="jsonl", progress=5),
         "progress: must be a function of (phase, done, fraction) or None, got int"),
        (lambda s, t: bulk.import_file(s, io.BytesIO(_lines(1)), format="jsonl", dry_run=1),
         "dry_run: must be True or False, got 1"),
        (lambda s, t: bulk.import_dir(s, t, tenant="a", kind="runbook", revision="v1", expires_at=9,
                                      dry_run="no"), "dry_run: must be True or False, got 'no'"),
        (lambda s, t: bulk.check_file(io.BytesIO(_lines(1)), format="jsonl", progress="bar"),
         "progress: must be a function of (phase, done, fraction) or None, got str"),
        (lambda s, t: bulk.export_jsonl(s, io.StringIO(), tenant="a", history="yes"),
         "history: must be True or False, got 'yes'"),
        (lambda s, t: bulk.import_dir(s, t, tenant="a", kind="rumour", revision="v1", expires_at=9),
         "kind: must be one of working, incident, runbook; got 'rumour'"),
        (lambda s, t: bulk.import_dir(s, t, tenant="a", kind="runbook", revision="v1", expires_at="9"),
         "expires_at: must be an integer, got str"),
        (lambda s, t: bulk.export_jsonl(s, io.BytesIO(), tenant="a"),
         "out: must be a new file's path or a text stream opened for writing; got a binary stream"),
        (lambda s, t: bulk.export_jsonl(s, 5, tenant="a"),
         "out: must be a new file's path or a text stream opened for writing; got int"),
    ],
)  # fmt: skip
def test_an_option_of_the_wrong_type_is_refused_before_anything_is_read(
    open_store: Any, tmp_path: Path, call: Any, says: str
) -> None:
    store = open_store()
    (tmp_path / "doc.md").write_text("queue lag")
    with pytest.raises(bulk.ValidationError) as caught:
        call(store, tmp_path)
    assert str(caught.value) == says
    assert store.history(tenant="a", record_id="r0") == ()
    assert store.history(tenant="a", record_id="doc.md") == ()


def test_a_progress_function_that_fails_after_a_batch_says_what_was_kept(open_store: Any) -> None:
    """The batch contract holds for the caller's own failure too: the error says which
    records stay, as ImportInterrupted and Ctrl-C do."""
    store = open_store()

    def fails_after_the_first_batch(phase: str, done: int, fraction: float | None) -> None:
        if phase == bulk.WRITING and done >= 2:
            raise RuntimeError("the progress bar broke")

    with pytest.raises(RuntimeError, match="the progress bar broke") as caught:
        bulk.import_file(store, io.BytesIO(_lines(5)), format="jsonl", progress=fails_after_the_first_batch,
                         batch_size=2)  # fmt: skip
    assert caught.value.__notes__ == [
        "the first 2 records (batches 1 to 1, through line 2) were written and stay; none after them was; "
        "to write the rest, run the same import again with --skip-unchanged"
    ]
    kept = [r for r in (f"r{i}" for i in range(5)) if store.history(tenant="a", record_id=r)]
    assert kept == ["r0", "r1"]


def test_a_subfolder_that_cannot_be_read_is_a_bad_record_not_left_out(
    open_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """os.walk drops a folder it cannot list unless told: the import said "read: 1" and left
    the folder's documents out. (Listing is refused here by a stand-in: root reads any folder.)"""
    (tmp_path / "docs" / "locked").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("queue lag")
    (tmp_path / "docs" / "locked" / "b.md").write_text("disk full")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    store = open_store()
    with pytest.raises(bulk.ImportRefused) as caught:
        bulk.import_dir(store, tmp_path / "docs", tenant="a", kind="runbook", revision="v1", expires_at=9)
    assert [str(p) for p in caught.value.problems] == [
        "locked/: is a folder that cannot be read (Permission denied)"
    ]
    assert store.history(tenant="a", record_id="a.md") == ()


def test_a_document_saved_with_a_byte_order_mark_is_the_same_body(open_store: Any, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_bytes(b"\xef\xbb\xbfqueue lag\r\n")
    store = open_store()
    kwargs: dict[str, Any] = dict(tenant="a", kind="runbook", revision="v1", expires_at=9)
    assert bulk.import_dir(store, tmp_path / "docs", **kwargs).written == 1
    assert store.history(tenant="a", record_id="a.md")[-1].body == "queue lag\r\n"  # line ending kept
    (tmp_path / "docs" / "a.md").write_bytes(b"queue lag\r\n")
    assert bulk.import_dir(store, tmp_path / "docs", **kwargs).unchanged == 1


def test_export_to_a_path_makes_a_new_file_and_removes_it_when_it_fails(
    open_store: Any, tmp_path: Path
) -> None:
    store = open_store()
    bulk.import_file(store, io.BytesIO(_lines(2)), format="jsonl")
    out = tmp_path / "out.jsonl"
    assert bulk.export_jsonl(store, out, tenant="a").written == 2
    stream = io.StringIO()
    bulk.export_jsonl(store, stream, tenant="a")
    assert out.read_text(encoding="utf-8") == stream.getvalue() and stream.getvalue().count("\n") == 2
    with pytest.raises(FileExistsError):
        bulk.export_jsonl(store, out, tenant="a")
    assert len(out.read_text().splitlines()) == 2  # never overwritten
    store.close()
    with pytest.raises(bulk.StoreError):
        bulk.export_jsonl(store, tmp_path / "failed.jsonl", tenant="a")
    assert not (tmp_path / "failed.jsonl").exists()


def test_an_import_for_a_cluster_names_every_nul_before_any_batch_is_written(open_store: Any) -> None:
    """The cluster refused a NUL only in its own put_many: a batched import wrote the batches
    before the record's, then said "nothing was written"; a dry run passed it."""
    lines = _lines(10).splitlines(keepends=True)
    lines[7] = lines[7].replace(b'"body":"b"', b'"body":"b\\u0000ad"')
    checked = bulk.check_file(io.BytesIO(b"".join(lines)), format="jsonl")
    store = open_store()
    for dry_run in (True, False):
        with pytest.raises(bulk.ImportRefused) as refused:
            bulk.write(store, checked, dry_run=dry_run, batch_size=3, cluster=True)
        assert [str(p) for p in refused.value.problems] == [
            "line 8: body: holds a NUL character, which a cluster cannot store (dqlite's text ends at a "
            "NUL; a file store keeps it); remove it"
        ]
    assert store.history(tenant="a", record_id="r0") == ()
    assert bulk.write(store, checked, batch_size=3).written == 10  # a file store keeps it


# A record is read in pieces, and refused once it is longer than bulk.max_record_bytes(limits):
# the longest record the limits accept, every byte spelled as a \u0000 escape. Small limits
# make that cap small, so that a line "a few times the cap" is a few kilobytes.
SMALL = Limits(max_body_bytes=300, max_field_bytes=20)
CAP = bulk.max_record_bytes(SMALL)
HEADER = b"tenant,record_id,revision,kind,body,source,expires_at\n"
GOOD_LINE = ("{" + GOOD + ',"expires_at":9}\n').encode()
TOO_LONG = (
    f"is a record of more than {CAP:,} bytes, longer than any this store's limits accept (see Limits); "
)


class Pieces(io.BytesIO):
    """A file that notes the longest piece read from it."""

    longest = 0

    def readline(self, size: int | None = -1) -> bytes:
        piece = super().readline(size)
        self.longest = max(self.longest, len(piece))
        return piece

    def read(self, size: int | None = -1) -> bytes:
        piece = super().read(size)
        self.longest = max(self.longest, len(piece))
        return piece


OVER_LONG = {
    "a JSONL line": ("jsonl", GOOD_LINE + b"a" * (5 * CAP) + b"\n" + GOOD_LINE, 2),
    "a JSONL line without an end": ("jsonl", GOOD_LINE + b"\0" * (5 * CAP), 2),
    "a JSONL line of blanks": ("jsonl", GOOD_LINE + GOOD_LINE + b" " * (5 * CAP) + b"\r\n", 3),
    "old Mac lines, one too long": ("jsonl", GOOD_LINE.replace(b"\n", b"\r") + b"a" * (5 * CAP) + b"\r", 2),
    "a CSV field": ("csv", HEADER + b"a,r,v1,runbook," + b"x" * (5 * CAP) + b",s,9\n", 2),
    "a CSV record of many short lines": ("csv", HEADER + b'a,r,v1,runbook,"' + b"x\n" * (5 * CAP), 2),
    "a CSV record of many cells": ("csv", HEADER + b"a,r,v1,runbook,b,s,9\n" + b'"x\n",' * CAP, 3),
    "a CSV line of many cells": ("csv", HEADER + b"a,r,v1,runbook,b,s,9\n" + b"," * (5 * CAP), 3),
    "a CSV header": ("csv", b"x" * (5 * CAP), 1),
}


@pytest.mark.parametrize(("format", "data", "line"), OVER_LONG.values(), ids=OVER_LONG.keys())
def test_a_record_longer_than_any_the_limits_accept_is_refused_unread(
    format: str, data: bytes, line: int
) -> None:
    source = Pieces(data)
    with pytest.raises(bulk.ImportRefused) as caught:
        bulk.check_file(source, format=format, limits=SMALL)
    assert [str(p) for p in caught.value.problems] == [f"line {line}: {TOO_LONG}the file was read no further"]
    assert source.longest <= CAP + 1  # read in pieces, never the whole line
    assert source.tell() <= 2 * (CAP + 1) + len(GOOD_LINE) * 2 + len(HEADER)  # and read no further


def test_the_longest_record_the_limits_accept_is_within_the_cap() -> None:
    """Every text at its limit and every byte of it a six-byte escape, with spacing: still read."""
    longest = {
        "tenant": "\x01" * SMALL.max_field_bytes,
        "record_id": "\x01" * SMALL.max_field_bytes,
        "revision": "\x01" * SMALL.max_field_bytes,
        "kind": "incident",
        "body": "\x01" * SMALL.max_body_bytes,
        "source": "\x01" * SMALL.max_field_bytes,
        "expires_at": 2**63 - 1,
    }
    line = json.dumps(longest, separators=(" , ", " : ")).encode() + b"\r\n"
    checked = bulk.check_file(io.BytesIO(line + line), format="jsonl", limits=SMALL)
    assert checked.wheres == ["line 1", "line 2"]
    cells = [value if isinstance(value, str) else str(value) for value in longest.values()]
    quoted = ",".join('"' + cell.replace("\x01", '""') + '"' for cell in cells)  # each byte a doubled quote
    checked = bulk.check_file(io.BytesIO(HEADER + quoted.encode() + b"\n"), format="csv", limits=SMALL)
    assert checked.wheres == ["line 2"]


def test_the_cap_follows_the_store_limits(engine: str) -> None:
    """An import into a store reads with that store's limits: the default cap fits a 1 MiB body
    written as escapes, and a store with small limits refuses a line over its own cap."""
    assert bulk.max_record_bytes() == bulk.max_record_bytes(Limits()) > 6 * Limits().max_body_bytes
    assert bulk.max_record_bytes() == 6_317_352  # as docs/bulk.md and docs/cli.md say
    with EvidenceStore(":memory:", engine=engine, limits=SMALL) as store:
        data = GOOD_LINE + b"a" * 3 * CAP
        with pytest.raises(bulk.ImportRefused) as caught:
            bulk.import_file(store, io.BytesIO(data), format="jsonl", batch_size=1)
        assert str(caught.value).endswith(f"line 2: {TOO_LONG}the file was read no further")
        assert store.history(tenant="a", record_id="r") == ()  # nor the batch before it


def test_csv_field_limit_is_the_callers_while_the_import_is_not_reading(open_store: Any) -> None:
    """csv.field_size_limit is process-wide: it is raised only while csv reads a record, not
    while the rows are checked, the progress function runs, or the import waits."""
    import csv

    before = csv.field_size_limit()
    seen: list[int] = []
    data = HEADER + b"a,r,v1,runbook,b,s,9\n" * 3
    bulk.check_file(io.BytesIO(data), format="csv", progress=lambda *_: seen.append(csv.field_size_limit()))
    assert seen and set(seen) == {before}
    assert csv.field_size_limit() == before


def test_an_empty_folder_name_is_refused_not_read_as_the_current_folder(
    open_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Path("") is ".": --from-dir "$UNSET" imported every document under the working folder."""
    (tmp_path / "runbooks").mkdir()
    (tmp_path / "runbooks" / "note.md").write_text("not meant for the store\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    store = open_store()
    shared = dict(tenant="a", kind="runbook", revision="v1", expires_at=9)
    with pytest.raises(bulk.ValidationError, match="directory: is empty; name the folder of documents"):
        bulk.import_dir(store, "", **shared)
    assert store.history(tenant="a", record_id="runbooks/note.md") == ()
    done = subprocess.run(
        [*CLI, "import", "--db", "x.db", "--from-dir", "", "--tenant", "a", "--kind", "runbook",
         "--revision", "v1", "--expires-at", "9"],
        capture_output=True, text=True, check=False, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("pyevidence: error: directory: is empty;") and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.db").exists()


def test_a_folder_a_thousand_levels_deep_is_read_without_a_traceback(open_store: Any, tmp_path: Path) -> None:
    """os.walk recursed once a level: a folder 1,200 levels deep raised RecursionError."""
    docs = deepest = tmp_path / "docs"
    docs.mkdir()
    try:
        for _ in range(1200):  # one by one: mkdir(parents=True) recurses as well
            deepest /= "a"
            deepest.mkdir()
        (deepest / "deep.md").write_text("deep down\n", encoding="utf-8")
        (docs / "top.md").write_text("on top\n", encoding="utf-8")
        store = open_store()
        shared = dict(tenant="a", kind="runbook", revision="v1", expires_at=9)
        with pytest.raises(bulk.ImportRefused) as refused:  # found, and its record_id is too long
            bulk.import_dir(store, docs, **shared)
        deep_id = "/".join(["a"] * 1200) + "/deep.md"
        assert [(p.where, p.field) for p in refused.value.problems] == [(deep_id, "record_id")]
        assert store.history(tenant="a", record_id="top.md") == ()
    finally:  # removed level by level here: pytest's cleanup (shutil.rmtree) recurses too
        (deepest / "deep.md").unlink(missing_ok=True)
        while deepest != docs:
            deepest.rmdir()
            deepest = deepest.parent


def test_a_document_name_with_an_escape_code_or_a_line_break_is_shown_escaped(tmp_path: Path) -> None:
    """A folder's names are someone else's: the import's list of bad records shows each on its
    one line, with no control character reaching the terminal."""
    docs = tmp_path / "docs\x1b]0;title\x07"
    docs.mkdir()
    (docs / "a\x1b[31mRED\nline2.md").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", "import", "--db", str(tmp_path / "x.db"),
         "--from-dir", str(docs), "--tenant", "t", "--kind", "runbook", "--revision", "v1",
         "--expires-at", "5"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert done.stderr.splitlines()[1:] == [
        "  a\\u001b[31mRED\\nline2.md: body: must not be empty or only whitespace"
    ]
    assert done.stderr.startswith(f"pyevidence: error: {tmp_path}/docs\\u001b]0;title\\u0007: 1 bad record")
