"""Bulk import and export: JSONL and CSV files, a directory of documents, a tenant's or the store's JSONL.

    from pyevidence import EvidenceStore, bulk
    with EvidenceStore("evidence.db") as store:
        bulk.import_file(store, "records.jsonl")              # all records, or none
        bulk.import_dir(store, "docs/", tenant="team-a", kind="runbook", revision="v1", expires_at=N)
        with open("team-a.jsonl", "w", encoding="utf-8") as out:
            bulk.export_jsonl(store, out, tenant="team-a", history=True)
        bulk.export_all_jsonl(store, "everything.jsonl")   # every tenant, one snapshot

Every record of a file is read and checked before the first one is written, so a
bad record (reported with its line and field, every one of them) leaves the store
as it was. The checked records are then written with put_many: in one transaction
by default (the whole file or nothing), or in transactions of ``batch_size``
records, for files too big for one; then a failure while writing (disk full, a
lock held too long) leaves the batches before it written, and the error says how
many records that was, and that the same import again with ``skip_unchanged`` writes the
rest: it skips each record whose version before it (the same record earlier in the file, else
its current version in the store) already holds exactly its fields, as import_dir always does.
import_file and import_dir are check_file / check_dir (no
store needed) followed by write; the CLI calls the two in turn, so a refused import
never creates a database. A file is read in pieces, and a line or CSV record longer than
max_record_bytes(limits) (the longest record the limits accept) is a bad record, found
before anything is written: memory stays bounded whatever the file holds.

An export line is a record in put()'s fields with sorted keys. The plain export
has each current record, by record_id; with ``history`` every stored version, in
the order it was written, so importing it into an empty tenant replays the same
puts: the same version numbers, content hashes and chain hashes, provided nothing
of the tenant was ever forgotten. Forgotten versions have no content left to
export; see ExportReport.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from .core import strict_json, validation, visible
from .core.errors import StoreError, ValidationError
from .core.limits import DEFAULT_LIMITS, Limits
from .core.records import KINDS, Record, Version
from .storage import versions
from .storage.engines.cluster_engine import NUL_REFUSED, fields_with_nul
from .store import EvidenceStore

FORMATS = ("jsonl", "csv")
COLUMNS = validation.RECORD_FIELDS  # tenant, record_id, revision, kind, body, source, expires_at
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".text")
SHOWN_PROBLEMS = 20  # the error message lists this many bad records; ImportRefused.problems has all

# The most bytes JSON spells one byte of text with: \u0000 (json.dumps writes a control character
# so, and a writer may write any character so; a character of 2 to 4 bytes takes one or two).
# CSV needs at most 2 (a quote, doubled).
_MOST_BYTES_A_BYTE = len(json.dumps("\x00")) - len('""')


def max_record_bytes(limits: Limits = DEFAULT_LIMITS) -> int:
    """The most bytes one record may take in a JSONL or CSV file under ``limits``, its line
    ending included: a body and the four identifying fields each at its limit, the longest
    kind, the keys and punctuation, and a number as long as strict_json reads, every byte of
    it spelled with the longest JSON escape. A record longer than this is more than any the
    limits accept: reading stops there, so an import's memory stays bounded (a line of
    gigabytes, or /dev/zero, is refused after this many bytes)."""
    texts = limits.max_body_bytes + 4 * limits.max_field_bytes + max(map(len, KINDS))
    frame = len(json.dumps(dict.fromkeys(COLUMNS, ""), indent=1)) + strict_json.MAX_NUMBER_CHARS
    return _MOST_BYTES_A_BYTE * (texts + frame)


# progress(phase, records done, fraction of the work done or None when unknown). The phases:
CHECKING, WRITING, WRITING_AT_ONCE = "checking", "writing", "writing in one transaction"
Progress = Callable[[str, int, float | None], None]


@dataclass(frozen=True)
class Problem:
    """A bad record: where it is ("line 4", or a file's path), the field, and what is wrong."""

    where: str
    field: str | None
    reason: str

    def __str__(self) -> str:
        # A document's path is a name someone else chose: an escape code or a line break in it
        # must not reach the terminal, or add a line that reads as another problem.
        return f"{visible.one_line(self.where)}: {self.field + ': ' if self.field else ''}{self.reason}"


class ImportRefused(ValidationError):
    """Some records are bad; nothing was written. ``problems`` lists every bad record."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        shown = [f"  {problem}" for problem in problems[:SHOWN_PROBLEMS]]
        if len(problems) > SHOWN_PROBLEMS:
            shown.append(f"  ... and {len(problems) - SHOWN_PROBLEMS} more")
        count = f"{len(problems)} bad record{'s' if len(problems) != 1 else ''}"
        super().__init__(visible.one_line(source), f"{count}, nothing was written:\n" + "\n".join(shown))
        self.problems = tuple(problems)


class ImportInterrupted(StoreError):
    """Writing batch number ``batch`` failed; the ``written`` records before it, up to and
    including the one at ``last_written`` ("line 812"), stay written; none after them was.
    ``repeats``: the file holds a record more than once with different fields, so the message
    says to import the records after ``last_written`` rather than the same import with
    --skip-unchanged (which would store those records' earlier versions again)."""

    def __init__(
        self, batch: int, written: int, last_written: str | None, cause: Exception, *, repeats: bool = False
    ) -> None:
        super().__init__(f"batch {batch} failed: {cause}; {_kept(batch, written, last_written, repeats)}")
        self.batch = batch
        self.written = written
        self.last_written = last_written


def _kept(batch: int, written: int, last_written: str | None, repeats: bool) -> str:
    """What stays written when batch number ``batch`` (2 or more) does not commit, and how to
    write the rest."""
    through = f", through {last_written}" if last_written else ""
    if repeats and last_written:
        # "the one at": a CSV record can span lines, and its place is the line it starts on
        rest = (
            f"to write the rest, import only the records after the one at {last_written} (a CSV "
            "file with its header line): the file holds a record more than once with different "
            "fields, which --skip-unchanged would store again"
        )
    else:
        rest = "to write the rest, run the same import again with --skip-unchanged"
    return (
        f"the first {written:,} records (batches 1 to {batch - 1}{through}) were written and stay; "
        f"none after them was; {rest}"
    )


@dataclass(frozen=True)
class ImportReport:
    """``read``: records checked; ``written``: versions stored; ``unchanged``: records skipped
    because the version they would follow already holds exactly their fields (import_dir, and
    import_file with ``skip_unchanged``)."""

    read: int
    written: int
    unchanged: int
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExportReport:
    """``written``: lines written. ``left_out``: forgotten versions (and forget
    tombstones) a history export could not include; when there are any,
    ``chain_differs_from`` is the first chain position whose chain hash an import
    will not reproduce (the records forgotten and stored again also restart their
    version numbers at 1)."""

    tenant: str
    written: int
    history: bool
    left_out: int
    chain_differs_from: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Checked:
    """Records read and checked, not yet written (check_file, check_dir; then write).
    ``wheres[i]`` says where ``records[i]`` came from ("line 4", or a file's path);
    ``from_dir``: they are documents, and write skips the unchanged ones."""

    records: list[Record]
    wheres: list[str]
    from_dir: bool = False
    source: str = "input"  # the file or folder, as ImportRefused names it


def import_file(
    store: EvidenceStore,
    source: str | os.PathLike[str] | IO[bytes],
    *,
    tenant: str | None = None,
    format: str | None = None,
    dry_run: bool = False,
    batch_size: int | None = None,
    skip_unchanged: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the records of a JSONL or CSV file (a path, "-" for stdin, or a binary file).

    ``format`` is "jsonl" or "csv", else told by the file's suffix (.jsonl, .ndjson,
    .csv). A record without a tenant gets ``tenant``; one whose tenant differs from
    ``tenant`` is bad. Raises ImportRefused listing every bad record, with nothing
    written; with ``dry_run`` checks everything and writes nothing. With
    ``skip_unchanged``, a record whose version before it already holds exactly its
    fields is not written (see write).
    """
    _options(dry_run=dry_run, batch_size=batch_size, skip_unchanged=skip_unchanged, progress=progress)
    checked = check_file(source, tenant=tenant, format=format, limits=store._limits, progress=progress)
    return write(
        store,
        checked,
        dry_run=dry_run,
        batch_size=batch_size,
        skip_unchanged=skip_unchanged,
        progress=progress,
    )


def import_dir(
    store: EvidenceStore,
    directory: str | os.PathLike[str],
    *,
    tenant: str,
    kind: str,
    revision: str,
    expires_at: int,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """One record per Markdown or text file under ``directory`` (.md, .markdown, .txt,
    .text; hidden files and folders skipped), in one transaction.

    ``record_id`` is the file's path relative to ``directory`` with / separators,
    ``source`` its absolute ``file://`` URI, ``body`` its UTF-8 text. A file whose
    record's current version already holds exactly these fields is skipped: importing
    an unchanged directory again stores nothing.
    """
    _options(dry_run=dry_run, progress=progress)
    checked = check_dir(
        directory,
        tenant=tenant,
        kind=kind,
        revision=revision,
        expires_at=expires_at,
        limits=store._limits,
        progress=progress,
    )
    return write(store, checked, dry_run=dry_run, progress=progress)


def check_file(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    tenant: str | None = None,
    format: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> Checked:
    """Read and check every record of a file, as import_file does, without a store."""
    validation.callback("progress", progress, "(phase, done, fraction)")
    if source == "-":
        name = "stdin"
    elif isinstance(source, (str, os.PathLike)):
        name = os.fsdecode(source)
    elif isinstance(source, io.TextIOBase) or not callable(getattr(source, "read", None)):
        got = "a text stream" if isinstance(source, io.TextIOBase) else type(source).__name__
        raise ValidationError(
            "source", f"must be a file path, '-' for stdin, or a file opened in binary mode ('rb'); got {got}"
        )
    else:
        name = str(getattr(source, "name", "input"))
    chosen = _format_of(name, format)
    if tenant is not None:
        tenant = validation.tenant(tenant, limits)
    with _opened(source) as handle:
        size = _size_of(handle)
        lines = _Lines(handle, max_record_bytes(limits))
        rows = _jsonl_rows(lines) if chosen == "jsonl" else _csv_rows(lines)
        records, wheres, problems = _checked(limits, rows, tenant, handle, size, progress)
    if problems:
        raise ImportRefused(name, problems)
    return Checked(records, wheres, source=name)


def check_dir(
    directory: str | os.PathLike[str],
    *,
    tenant: str,
    kind: str,
    revision: str,
    expires_at: int,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> Checked:
    """Read and check every document of a folder, as import_dir does, without a store."""
    validation.callback("progress", progress, "(phase, done, fraction)")
    # The fields every document shares are checked before the folder is read, once.
    validation.record(
        tenant=tenant,
        record_id="-",
        revision=revision,
        kind=kind,
        body="-",
        source="-",
        expires_at=expires_at,
        limits=limits,
    )
    if os.fspath(directory) == "":  # an unset shell variable; Path("") is the current folder
        raise ValidationError(
            "directory", "is empty; name the folder of documents (an empty name would import the current one)"
        )
    root = Path(directory)
    if not root.is_dir():
        raise ValidationError("directory", f"{root} is not a directory")
    files, problems = _documents(root)
    records: list[Record] = []
    wheres: list[str] = []
    for number, path in enumerate(files, start=1):
        relative = path.relative_to(root).as_posix()
        try:
            data = _read_document(root, path, limits.max_body_bytes)
            body = data.decode("utf-8").removeprefix(_BYTE_ORDER_MARK)
        except _NotADocument as exc:
            problems.append(Problem(relative, None, str(exc)))
            continue
        except ValidationError as exc:
            problems.append(Problem(relative, exc.field, exc.reason))
            continue
        except UnicodeDecodeError as exc:
            problems.append(Problem(relative, "body", f"is not UTF-8 text (byte {exc.start})"))
            continue
        fields = dict(
            tenant=tenant,
            record_id=relative,
            revision=revision,
            kind=kind,
            body=body,
            source=path.resolve().as_uri(),
            expires_at=expires_at,
        )
        try:
            records.append(validation.record(**fields, limits=limits))
            wheres.append(relative)
        except ValidationError as exc:
            problems.append(Problem(relative, exc.field, exc.reason))
        if progress is not None:
            progress(CHECKING, number, number / len(files))
    if problems:
        raise ImportRefused(str(root), problems)
    return Checked(records, wheres, from_dir=True, source=str(root))


def write(
    store: EvidenceStore,
    checked: Checked,
    *,
    dry_run: bool = False,
    batch_size: int | None = None,
    skip_unchanged: bool = False,
    progress: Progress | None = None,
    cluster: bool | None = None,
) -> ImportReport:
    """Write checked records with put_many: in one transaction, or ``batch_size`` at a
    time (see ImportInterrupted). With ``dry_run`` nothing is written (the report says
    what would be). ``cluster``: the records go to a cluster (by default: ``store`` is
    one), which refuses text holding a NUL character; every such record is named before
    any batch is written.

    With ``skip_unchanged`` (always, for documents), a record is skipped when the version
    it would follow already holds exactly its fields (the same content hash): the record
    before it with the same tenant and record_id, else that record's current version in
    the store. An absent or forgotten record is written. The store is read once, before
    the first batch: what another writer changes meanwhile is not seen."""
    _options(dry_run=dry_run, batch_size=batch_size, skip_unchanged=skip_unchanged, progress=progress)
    if store.engine == "cluster" if cluster is None else cluster:
        _refuse_what_a_cluster_cannot_store(checked)
    records, wheres = checked.records, checked.wheres
    if skip_unchanged or checked.from_dir:
        skipped = _unchanged(store, records)
        records = [record for record, skip in zip(records, skipped, strict=True) if not skip]
        wheres = [where for where, skip in zip(wheres, skipped, strict=True) if not skip]
    unchanged = len(checked.records) - len(records)
    written = 0 if dry_run else _write(store, records, batch_size, progress, wheres, checked.records)
    return ImportReport(read=len(checked.records), written=written, unchanged=unchanged, dry_run=dry_run)


def _refuse_what_a_cluster_cannot_store(checked: Checked) -> None:
    problems = [
        Problem(where, field, NUL_REFUSED)
        for record, where in zip(checked.records, checked.wheres, strict=True)
        for field in fields_with_nul(record)
    ]
    if problems:
        raise ImportRefused(checked.source, problems)


def _options(
    *,
    dry_run: bool,
    batch_size: int | None = None,
    skip_unchanged: bool = False,
    progress: Progress | None = None,
) -> None:
    """The options every import takes, checked before any record is read."""
    validation.flag("dry_run", dry_run)
    validation.flag("skip_unchanged", skip_unchanged)
    if batch_size is not None:
        validation.integer("batch_size", batch_size, minimum=1, maximum=2**31)
    validation.callback("progress", progress, "(phase, done, fraction)")


def export_jsonl(
    store: EvidenceStore, out: IO[str] | str | os.PathLike[str], *, tenant: str, history: bool = False
) -> ExportReport:
    """Write ``tenant``'s current records (by record_id) or, with ``history``, every
    stored version (in the order written) to ``out`` as JSONL, from one snapshot.

    ``out`` is a text stream, or the path of a new file: it must not exist (FileExistsError),
    and a failed export removes it again, so a partial file never passes for a whole one.
    Vectors are not exported; a store opened with an embedder computes them again on import."""
    tenant = validation.tenant(tenant, store._limits)
    validation.flag("history", history)
    (report,) = _export_to(out, lambda stream: _export(store, stream, [tenant], history))
    return report


def export_all_jsonl(
    store: EvidenceStore, out: IO[str] | str | os.PathLike[str], *, history: bool = False
) -> tuple[ExportReport, ...]:
    """export_jsonl of every tenant of the store, in tenant order (code points), into one
    file, from one snapshot of the whole store: one report per tenant. Each line names its
    tenant, so importing the file into an empty store gives every tenant back."""
    validation.flag("history", history)
    return _export_to(out, lambda stream: _export(store, stream, None, history))


def _export_to(
    out: IO[str] | str | os.PathLike[str], export: Callable[[IO[str]], tuple[ExportReport, ...]]
) -> tuple[ExportReport, ...]:
    if isinstance(out, (str, os.PathLike)):
        with open(out, "x", encoding="utf-8", newline="\n") as new_file:
            try:
                reports = export(new_file)
                new_file.flush()  # the last lines fail here on a full disk, not unnoticed at close
                return reports
            except BaseException:
                try:
                    new_file.close()
                except OSError:
                    pass  # it flushes the lines that could not be written: they fail again, and it closes
                os.unlink(out)
                raise
    if isinstance(out, (io.RawIOBase, io.BufferedIOBase)) or not callable(getattr(out, "write", None)):
        got = "a binary stream" if isinstance(out, (io.RawIOBase, io.BufferedIOBase)) else type(out).__name__
        raise ValidationError(
            "out", f"must be a new file's path or a text stream opened for writing; got {got}"
        )
    return export(out)


def _export(
    store: EvidenceStore, out: IO[str], tenants: list[str] | None, history: bool
) -> tuple[ExportReport, ...]:
    """The lines of ``tenants`` (None: every tenant of the store), read a page at a time
    inside one snapshot, so memory stays bounded whatever a tenant holds."""
    with store._engine_locked() as engine, engine.snapshot():
        if tenants is None:
            tenants = [tenant for (tenant,) in engine.select(versions.TENANTS_SQL)]
        if engine.name != "cluster":
            return tuple(
                _export_tenant(out, tenant, _rows(engine, tenant, history), history) for tenant in tenants
            )
        # A cluster's open read transaction keeps every writer out ("database is locked"), so
        # its rows are all read first (the engine keeps them anyway, to check a new leader's
        # answers against) and the lines written after the snapshot ends, however slowly
        # their reader takes them.
        read = [(tenant, list(_rows(engine, tenant, history))) for tenant in tenants]
    return tuple(_export_tenant(out, tenant, rows, history) for tenant, rows in read)


def _rows(engine: Any, tenant: str, history: bool) -> Iterator[tuple[Any, ...]]:
    """The tenant's current rows by record_id, or with ``history`` its versions in chain
    order, a page at a time: each page those after the last one's."""
    page_sql = versions.CHAIN_PAGE_SQL if history else _CURRENT_PAGE_SQL
    after: str | int = 0 if history else ""  # before the first chain position, the first record_id
    while True:
        rows = engine.select(page_sql, (tenant, after, _PAGE))
        yield from rows
        if len(rows) < _PAGE:
            return
        after = Version(*rows[-1]).chain_seq if history else rows[-1][0]  # the last row's place


def _export_tenant(out: IO[str], tenant: str, rows: Iterable[tuple[Any, ...]], history: bool) -> ExportReport:
    written = left_out = 0
    differs_from = None
    for row in rows:
        if history:
            version = Version(*row)
            if version.body is None:  # forgotten, or the tombstone of a forget: no content left
                left_out += 1
                differs_from = differs_from or version.chain_seq
                continue
            fields = (version.record_id, version.revision, version.kind, version.body, version.source)
            record = dict(zip(_EXPORTED[:5], fields, strict=True), expires_at=version.expires_at)
        else:
            record = dict(zip(_EXPORTED, row, strict=True))
        out.write(json.dumps({**record, "tenant": tenant}, sort_keys=True, separators=(",", ":")) + "\n")
        written += 1
    return ExportReport(
        tenant=tenant, written=written, history=history, left_out=left_out, chain_differs_from=differs_from
    )


_EXPORTED = ("record_id", "revision", "kind", "body", "source", "expires_at")
# The current records a page at a time, by the index by record: those after record_id ?2.
_CURRENT_PAGE_SQL = (
    f"SELECT {', '.join(_EXPORTED)} FROM evidence"
    " WHERE tenant = ?1 AND record_id > ?2 ORDER BY record_id LIMIT ?3"
)
_PAGE = 1000  # rows a statement: a few hundred KB of a corpus like the benchmark's


def _format_of(name: str, format: str | None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise ValidationError("format", f"must be one of {', '.join(FORMATS)}; got {format!r}")
        return format
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValidationError("format", f"cannot tell the format of {name}; name it (jsonl or csv)")


class _opened:
    """The source as a binary file; closed afterwards only when opened here."""

    def __init__(self, source: str | os.PathLike[str] | IO[bytes]) -> None:
        self._own = isinstance(source, (str, os.PathLike)) and source != "-"
        if source == "-":
            self._handle: IO[bytes] = sys.stdin.buffer
        elif isinstance(source, (str, os.PathLike)):
            self._handle = open(source, "rb")
        else:
            self._handle = source

    def __enter__(self) -> IO[bytes]:
        return self._handle

    def __exit__(self, *exc: object) -> None:
        if self._own:
            self._handle.close()


def _size_of(handle: IO[bytes]) -> int | None:
    try:
        return os.fstat(handle.fileno()).st_size if handle.seekable() else None
    except (OSError, io.UnsupportedOperation):
        return None


# A row: where it starts ("line 4"), and its fields, or the Problem that stops it being a record.
Row = tuple[str, dict[str, Any] | Problem]


# A UTF-8 byte order mark, which spreadsheets and Windows editors put before the first line.
_BOM = b"\xef\xbb\xbf"


class _TooLong(Exception):
    """A record, from line ``start`` on, is longer than ``longest`` bytes (max_record_bytes)."""

    def __init__(self, start: int, longest: int) -> None:
        super().__init__(start, longest)
        self.start, self.longest = start, longest

    def problem(self) -> Row:
        where = f"line {self.start}"
        reason = (
            f"is a record of more than {self.longest:,} bytes, longer than any this store's limits "
            "accept (see Limits); the file was read no further"
        )
        return where, Problem(where, None, reason)


class _Lines:
    """The file's lines, each with its line ending: a line ends at \\n, \\r\\n or \\r (the
    ending of Windows and of old Mac files). The first comes without a byte order mark.

    A record is a line, or the lines since mark() (a CSV record spans lines). The file is
    read in pieces of at most ``longest`` + 1 bytes, and a record longer than ``longest``
    raises _TooLong once that much of it is read: however long a line, at most two pieces
    of it are held. ``number`` is the number of the last line given."""

    def __init__(self, handle: IO[bytes], longest: int) -> None:
        self._handle = handle
        self.longest = longest
        self.number = 0
        self._start = 1  # the line the record starts on
        self._taken = 0  # the bytes of its lines given so far

    def mark(self) -> None:
        """The next line starts a record."""
        self._start, self._taken = self.number + 1, 0

    def _check(self, more: int) -> None:
        if self._taken + more > self.longest:
            raise _TooLong(self._start, self.longest)

    def _line(self, line: bytes) -> bytes:
        self._check(len(line))
        self._taken += len(line)
        self.number += 1
        return line

    def __iter__(self) -> Iterator[bytes]:
        partial = b""  # a line's start, read without its end: a piece ended before it did
        first = True
        while True:
            piece = self._handle.readline(self.longest + 1)  # a piece ends at \n, or at the size
            ended = not piece
            if first:
                piece, first = piece.removeprefix(_BOM), False
            if partial.endswith(b"\r"):  # an old Mac line end, or a Windows one cut in two
                crlf = piece.startswith(b"\n")
                yield self._line(partial + b"\n" if crlf else partial)
                partial, piece = b"", piece[1:] if crlf else piece
            if ended:
                if partial:
                    yield self._line(partial)
                return
            if not piece:
                continue
            *whole, last = piece.splitlines(keepends=True) if b"\r" in piece else [piece]
            for line in whole:
                yield self._line(partial + line)
                partial = b""
            if last.endswith(b"\n"):
                yield self._line(partial + last)
                partial = b""
            else:  # cut at the size, ended by \r (a \n may follow), or the file's end
                partial += last
                self._check(len(partial))


def _jsonl_rows(lines: _Lines) -> Iterator[Row]:
    # JSON escapes a line break inside a string, so no record spans two lines of any ending
    try:
        yield from _jsonl_lines(lines)
    except _TooLong as exc:
        yield exc.problem()


def _jsonl_lines(lines: _Lines) -> Iterator[Row]:
    for raw in lines:
        lines.mark()
        where = f"line {lines.number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield where, Problem(where, None, f"is not UTF-8 (byte {exc.start})")
            continue
        if not line.strip():
            continue  # blank lines (a trailing newline, spacing) are not records
        try:
            value = strict_json.loads(line)
        except strict_json.JsonRefused as exc:
            bad = exc.syntax  # each line is parsed alone: its column says where
            reason = f"is not valid JSON ({bad.reason}, column {bad.column})" if bad else str(exc)
            yield where, Problem(where, None, reason)
            continue
        if not isinstance(value, dict):
            yield where, Problem(where, None, f"must be a JSON object, got {type(value).__name__}")
            continue
        yield where, value


def _text_lines(lines: _Lines, bad: list[tuple[int, int]]) -> Iterator[str]:
    """The file's lines, decoded one at a time, as csv reads them (a line ends at \\n, \\r\\n
    or \\r), the first without a byte order mark. A line that is not UTF-8 is noted in
    ``bad`` as (its number, the offset of its first bad byte) and read with each bad byte
    replaced (U+FFFD), so that its quotes and commas still count: a line inside a quoted cell
    still ends that cell, reading goes on, and every later line keeps its number."""
    for piece in lines:
        try:
            yield piece.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append((lines.number, exc.start))
            yield piece.decode("utf-8", errors="replace")


def _not_utf8(bad: list[tuple[int, int]]) -> Iterator[Row]:
    """The lines _text_lines found not UTF-8 since the last call, as problems."""
    for number, start in bad:
        where = f"line {number}"
        yield where, Problem(where, None, f"is not UTF-8 (byte {start})")
    bad.clear()


def _csv_rows(lines: _Lines) -> Iterator[Row]:
    bad: list[tuple[int, int]] = []
    reader = csv.reader(_text_lines(lines, bad), strict=True)
    try:
        yield from _csv_records(lines, reader, bad)
    except _TooLong as exc:
        yield from _not_utf8(bad)
        yield exc.problem()


def _next_row(reader: Iterator[list[str]], lines: _Lines) -> list[str] | None:
    """The next row, or None at the file's end; the next line starts the record after it.

    csv refuses a field longer than its field_size_limit, which is process-wide: it is set
    only while csv reads, and set back before anything else runs. It is max_record_bytes: no
    field of a record the limits accept is longer (limits count bytes, csv characters), and
    _Lines refuses a record that long, in its own words, before csv would."""
    previous = csv.field_size_limit(min(lines.longest, sys.maxsize))
    try:
        return next(reader, None)
    finally:
        csv.field_size_limit(previous)
        lines.mark()


def _csv_records(lines: _Lines, reader: Iterator[list[str]], bad: list[tuple[int, int]]) -> Iterator[Row]:
    try:
        header = _next_row(reader, lines)
    except csv.Error as exc:
        yield "line 1", Problem("line 1", None, f"cannot be read as CSV: {exc}")
        return
    if bad:
        yield from _not_utf8(bad)  # without its header the file cannot be read
        return
    if header is None:
        return
    unknown = [name for name in header if name not in COLUMNS]
    missing = [name for name in COLUMNS if name not in header and name != "tenant"]
    if unknown or missing or len(set(header)) != len(header):
        reason = "the header must name the columns " + ", ".join(COLUMNS) + " (tenant optional) once each"
        yield "line 1", Problem("line 1", None, f"{reason}; got {', '.join(header)}")
        return
    previous_end = lines.number
    while True:
        where = f"line {previous_end + 1}"
        try:
            cells = _next_row(reader, lines)
        except csv.Error as exc:
            yield from _not_utf8(bad)
            yield where, Problem(where, None, f"cannot be read as CSV: {exc}")
            return
        if bad:  # a record with a line that is not UTF-8 is that line's problem, not its own
            yield from _not_utf8(bad)
            previous_end = lines.number
            continue
        if cells is None:
            return
        previous_end = lines.number
        if not cells:
            continue
        if len(cells) != len(header):
            yield where, Problem(where, None, f"has {len(cells)} cells; the header has {len(header)}")
            continue
        fields: dict[str, Any] = dict(zip(header, cells, strict=True))
        if fields.get("tenant") == "":
            del fields["tenant"]  # an empty tenant cell: the --tenant given, if any
        expires_at = validation.whole_number_text(fields["expires_at"])
        if expires_at is not None:
            fields["expires_at"] = expires_at
        else:
            yield where, Problem(where, "expires_at", validation.not_a_whole_number(fields["expires_at"]))
            continue
        yield where, fields


def _checked(
    limits: Limits,
    rows: Iterator[Row],
    tenant: str | None,
    handle: IO[bytes],
    size: int | None,
    progress: Progress | None,
) -> tuple[list[Record], list[str], list[Problem]]:
    records: list[Record] = []
    wheres: list[str] = []
    problems: list[Problem] = []
    next_report = 0.0
    for count, (where, fields) in enumerate(rows, start=1):
        if isinstance(fields, Problem):
            problems.append(fields)
        else:
            found = _record(limits, where, fields, tenant)
            if isinstance(found, Problem):
                problems.append(found)
            else:
                records.append(found)
                wheres.append(where)
        if progress is not None and time.monotonic() >= next_report:
            next_report = time.monotonic() + 0.1
            progress(CHECKING, count, _fraction(handle, size))
    if progress is not None:
        progress(CHECKING, len(records) + len(problems), 1.0)
    return records, wheres, problems


def _fraction(handle: IO[bytes], size: int | None) -> float | None:
    if not size:
        return None
    try:
        return min(handle.tell() / size, 1.0)
    except (OSError, ValueError):
        return None


def _record(limits: Limits, where: str, fields: dict[str, Any], tenant: str | None) -> Record | Problem:
    unknown = sorted(str(key) for key in fields if key not in COLUMNS)
    if unknown:
        return Problem(where, unknown[0], f"is not a record field; the fields are {', '.join(COLUMNS)}")
    if tenant is not None:
        if "tenant" in fields and fields["tenant"] != tenant:
            return Problem(where, "tenant", f"is {fields['tenant']!r}, but the import is for {tenant!r}")
        fields = {**fields, "tenant": tenant}
    missing = [name for name in COLUMNS if name not in fields]
    if missing:
        hint = " (or give the import a tenant)" if missing == ["tenant"] else ""
        return Problem(where, missing[0], f"is required{hint}")
    try:
        return validation.record(**fields, limits=limits)
    except ValidationError as exc:
        return Problem(where, exc.field, exc.reason)


def _write(
    store: EvidenceStore,
    records: list[Record],
    batch_size: int | None,
    progress: Progress | None,
    wheres: list[str] | None = None,
    whole: list[Record] | None = None,
) -> int:
    """put_many, ``batch_size`` records at a time. ``whole``: every record of the file, the
    skipped ones too, from which a failure's message tells how the rest can be written."""
    if not records:
        return 0
    size = batch_size or len(records)
    written = 0
    # One transaction reports nothing until it commits: its phase says so, and shows the time taken.
    phase = WRITING if size < len(records) else WRITING_AT_ONCE
    if progress is not None:
        progress(phase, 0, 0.0)
    for batch, start in enumerate(range(0, len(records), size), start=1):
        committed = written
        try:
            written += store.put_many(records[start : start + size])
            if progress is not None:
                progress(phase, written, written / len(records))
        except BaseException as exc:
            last = wheres[written - 1] if wheres and written else None
            if isinstance(exc, StoreError) and written == committed:  # this batch failed
                if written == 0:
                    raise
                raise ImportInterrupted(
                    batch, written, last, exc, repeats=_repeats(whole or records)
                ) from exc
            # Ctrl-C, or the caller's progress function failing once its batch committed:
            # the exception stays what it is, with a note saying what was kept.
            if written:
                kept_batch = batch + 1 if written > committed else batch
                exc.add_note(_kept(kept_batch, written, last, _repeats(whole or records)))
            raise
    return written


def _documents(root: Path) -> tuple[list[Path], list[Problem]]:
    """The documents under root, and a problem for each folder that cannot be listed: its
    documents are unknown, so the import cannot be all of the folder."""
    found: list[Path] = []
    unlisted: list[Problem] = []

    def cannot_list(exc: OSError) -> None:
        folder = Path(exc.filename).relative_to(root).as_posix() if exc.filename else "."
        unlisted.append(Problem(f"{folder}/", None, f"is a folder that cannot be read ({exc.strerror})"))

    # A list of folders still to read, not os.walk, which recurses once a level (before Python
    # 3.12) and raised RecursionError, a traceback, in a folder about 1,000 levels deep.
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            cannot_list(exc)
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False  # as os.walk: a document, which reading then says is not one
            if is_folder:
                if not entry.is_symlink():  # a symlink to a folder is not followed
                    folders.append(Path(entry.path))
            elif entry.name.lower().endswith(DOCUMENT_SUFFIXES):
                found.append(Path(entry.path))
    return sorted(found, key=lambda path: path.relative_to(root).as_posix()), unlisted


# A UTF-8 byte order mark is how an editor marked the encoding, not text of the document, as
# JSONL and CSV imports read it: a document saved with one and without one is one body.
_BYTE_ORDER_MARK = "\ufeff"


class _NotADocument(Exception):
    """A folder entry that is not a regular file inside the folder; says why."""


def _read_document(root: Path, path: Path, max_body_bytes: int) -> bytes:
    """The document's bytes; one larger than a body may be is refused before it is read."""
    # Symlinks may not lead outside the folder; FIFOs, sockets and devices are not documents
    # (O_NONBLOCK so that opening a FIFO cannot hang; the type is checked on the opened descriptor).
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise _NotADocument(f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if not target.is_relative_to(root.resolve()):
        raise _NotADocument("is a symlink leading outside the folder; copy the file in instead")
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _NotADocument(f"cannot be read ({exc.strerror})") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise _NotADocument("is not a regular file (a FIFO, socket or device); only files are imported")
        most = max_body_bytes + len(_BYTE_ORDER_MARK.encode("utf-8"))  # a body, after a byte order mark
        if found.st_size > most:
            raise ValidationError(
                "body",
                f"is {found.st_size:,} bytes, over this store's limit of {max_body_bytes:,} (see Limits)",
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(most + 1)  # a file that grew meanwhile is refused by the record's check
    except OSError as exc:
        raise _NotADocument(f"cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _unchanged(store: EvidenceStore, records: list[Record]) -> list[bool]:
    """For each record, whether the version it would follow already holds exactly its fields:
    the record before it with the same tenant and record_id, else the record's current version
    in the store, whose content hashes are read here, 500 a statement, in one snapshot."""
    ids: dict[str, dict[str, None]] = {}  # each tenant's record_ids, once each, in file order
    for record in records:
        ids.setdefault(record.tenant, {})[record.record_id] = None
    with store._engine_locked() as engine, engine.snapshot():
        stored = {
            (tenant, record_id): digest
            for tenant, record_ids in ids.items()
            for record_id, digest in versions.current_content_hashes(engine, tenant, list(record_ids)).items()
        }
    # The content hash encodes each field with its type and length: two records have the same
    # hash exactly when they have the same fields. So a record is compared with the one before it
    # in the file by its fields, and only one that would follow a stored version is hashed.
    before: dict[tuple[str, str], Record] = {}
    unchanged = []
    for record in records:
        key = (record.tenant, record.record_id)
        previous = before.get(key)
        if previous is not None:
            unchanged.append(previous == record)
        else:
            digest = stored.get(key)
            unchanged.append(
                digest is not None and digest == versions.content_hash(*(getattr(record, f) for f in COLUMNS))
            )
        before[key] = record
    return unchanged


def _repeats(records: list[Record]) -> bool:
    """Whether some record comes more than once with different fields: the same import with
    skip_unchanged would then write its earlier versions again, after the last one stored."""
    first: dict[tuple[str, str], Record] = {}
    return any(first.setdefault((r.tenant, r.record_id), r) != r for r in records)
