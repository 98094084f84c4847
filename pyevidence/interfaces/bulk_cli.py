"""The import and export commands: arguments, the progress bar, and the calls into pyevidence.bulk."""

from __future__ import annotations

import argparse
import errno
import io
import os
import sys
import threading
import time
from typing import Any, TextIO, cast

from .. import bulk
from ..core import validation
from ..core.errors import NoSchema, ValidationError
from ..core.limits import ANY_SIZE
from ..core.records import KINDS
from ..storage import paths
from ..store import EvidenceStore
from . import db_args, number_args
from .progress import IndexProgress, announce_upgrade

IMPORT_DESCRIPTION = "import records from JSONL or CSV (all or none), or one record per document of a folder"
EXPORT_DESCRIPTION = (
    "write one tenant's current records (or, with --history, every version), or every tenant's, as JSONL"
)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE", help="a .jsonl or .csv file, or - for stdin")
    parser.add_argument("--tenant", help="the tenant of records that name none (required with --from-dir)")
    parser.add_argument("--format", choices=bulk.FORMATS, help="the file's format (default: from its suffix)")
    parser.add_argument("--dry-run", action="store_true", help="check every record, write nothing")
    parser.add_argument(
        "--batch-size",
        type=number_args.whole_number,
        metavar="N",
        help="commit every N records instead of the whole file at once (a failure keeps earlier batches)",
    )
    parser.add_argument(
        "--skip-unchanged",
        action="store_true",
        help="write no record whose version before it (earlier in the file, else in the store) already holds "
        "exactly its fields; resumes a failed --batch-size import, unless the file holds a record more "
        "than once with different fields (always on with --from-dir)",
    )
    docs = parser.add_argument_group("a folder of documents (.md, .markdown, .txt, .text)")
    docs.add_argument(
        "--from-dir", metavar="DIR", help="one record per document, record_id its relative path"
    )
    docs.add_argument("--kind", choices=KINDS, help="the documents' kind")
    docs.add_argument("--revision", help="the documents' revision")
    docs.add_argument(
        "--expires-at", type=number_args.whole_number, metavar="N", help="the documents' logical expiry time"
    )


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--tenant")
    which.add_argument(
        "--all-tenants", action="store_true", help="every tenant of the store, in tenant order, one snapshot"
    )
    parser.add_argument("--history", action="store_true", help="every stored version, in the order written")
    parser.add_argument(
        "--out", metavar="FILE", help="write to FILE instead of stdout (FILE must not exist; - is stdout)"
    )


class ProgressBar:
    """records/s and an ETA on a terminal's stderr, redrawn at most ten times a second.

    One transaction tells nothing until it commits: while it runs, a ticker shows the
    seconds spent (--batch-size gives a bar with an ETA instead)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._started = time.monotonic()
        self._phase = ""
        self._drawn = False
        self._last = 0.0
        self._lock = threading.Lock()
        self._ticking = threading.Event()
        self._closed = False

    def __call__(self, phase: str, done: int, fraction: float | None) -> None:
        now = time.monotonic()
        self._ticking.set()  # stops a ticker
        if phase != self._phase:
            self._phase, self._started = phase, now
        finished = fraction is not None and fraction >= 1.0
        if phase == bulk.WRITING_AT_ONCE and not finished:
            self._ticking = threading.Event()
            threading.Thread(target=self._tick, args=(self._ticking,), daemon=True).start()
            return
        if not finished and (now - self._last < 0.1 or now - self._started < 0.1):
            return  # at most ten redraws a second, and no rate from the first instants of a phase
        self._last = now
        elapsed = max(now - self._started, 1e-6)
        line = f"{phase} {done:,} records, {done / elapsed:,.0f}/s"
        if fraction is not None and fraction > 0:
            filled = int(fraction * 20)
            eta = elapsed * (1 - fraction) / fraction
            line += f" [{'#' * filled}{'.' * (20 - filled)}] {fraction:4.0%} ETA {eta:,.0f}s"
        self._draw(line)

    def _tick(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            self._draw(f"{bulk.WRITING_AT_ONCE}: {time.monotonic() - self._started:,.0f}s so far")

    def _draw(self, line: str) -> None:
        with self._lock:
            if self._closed:
                return
            self._drawn = True
            self._stream.write(f"\r{line:<79}")
            self._stream.flush()

    def close(self) -> None:
        self._ticking.set()
        with self._lock:
            self._closed = True
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


def run_import(args: argparse.Namespace) -> dict[str, Any]:
    db = db_args.database(args.db)
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    try:
        checked = _checked(args, bar)  # all of the input, before any database is opened or created
        if args.dry_run:
            opened = _dry_run_store(db, args.engine)
        else:
            # Opening may upgrade an older file and build its token index: shown on stderr.
            if not args.dry_run:
                announce_upgrade(db_args.writable(args.db))
            opened = EvidenceStore(
                args.db, engine=args.engine, read_only=args.dry_run, progress=IndexProgress()
            )
        with opened as store:
            report = bulk.write(
                store,
                checked,
                dry_run=args.dry_run,
                batch_size=args.batch_size,
                skip_unchanged=args.skip_unchanged,  # with --from-dir, what happens anyway
                progress=bar,
                cluster=paths.is_cluster_url(db),  # also for a dry run against an empty local store
            )
    finally:
        if bar is not None:
            bar.close()
    return {"import": report.to_dict()}


def _dry_run_store(db: str, engine: str) -> EvidenceStore:
    """A dry run writes nothing, not even a new database: where none exists yet (no file, or a
    name no put has used on a cluster), it checks against an empty store."""
    if not paths.is_cluster_url(db) and not os.path.lexists(db):
        return EvidenceStore(":memory:", engine=engine)
    try:
        return EvidenceStore(db, engine=engine, read_only=True, progress=IndexProgress())
    except NoSchema:
        if not paths.is_cluster_url(db):
            raise
        # the cluster engine runs only on a cluster: the empty store is a local one
        return EvidenceStore(":memory:", engine="auto" if engine == "cluster" else engine)


def _checked(args: argparse.Namespace, bar: ProgressBar | None) -> bulk.Checked:
    if args.batch_size is not None:
        validation.integer("batch_size", args.batch_size, minimum=1, maximum=2**31)
    if args.from_dir is None:
        if args.file is None:
            raise ValidationError("FILE", "name a .jsonl or .csv file, - for stdin, or use --from-dir")
        for flag in ("kind", "revision", "expires_at"):
            if getattr(args, flag) is not None:
                raise ValidationError(flag, "is for --from-dir; a file's records carry their own")
        if args.file == "-" and sys.stdin is None:  # <&-
            raise ValidationError("FILE", "is - but standard input is closed; pipe the records in")
        chosen = args.format or ("jsonl" if args.file == "-" else None)
        return bulk.check_file(args.file, tenant=args.tenant, format=chosen, progress=bar)
    if args.file is not None:
        raise ValidationError("FILE", "give a file or --from-dir, not both")
    for flag in ("tenant", "kind", "revision", "expires_at"):
        if getattr(args, flag) is None:
            raise ValidationError(flag, f"is required with --from-dir (--{flag.replace('_', '-')})")
    if args.batch_size is not None:
        raise ValidationError("batch_size", "a folder is imported in one transaction; leave --batch-size out")
    return bulk.check_dir(
        args.from_dir,
        tenant=args.tenant,
        kind=args.kind,
        revision=args.revision,
        expires_at=args.expires_at,
        progress=bar,
    )


class OutputError(Exception):
    """Standard output could not be written (a full disk): the export is not whole. It carries
    the OSError, told apart from the store's own errors; the command line reports it as it
    reports any output it could not write."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def write_stdout(text: str) -> None:
    """sys.stdout.write(text), all of it or OSError. Under PYTHONUNBUFFERED=1 (python -u, as
    many containers set it) sys.stdout writes straight to its file descriptor and drops, saying
    nothing, what a short write left (a disk that fills midway, a reader that went away): the
    output was cut short with exit 0. The rest is written here until none is left, so the
    write that fails raises."""
    raw = getattr(sys.stdout, "buffer", None)
    if not isinstance(raw, io.RawIOBase):
        sys.stdout.write(text)  # buffered: its flush writes all or raises
        return
    sys.stdout.flush()
    data = memoryview(text.encode(sys.stdout.encoding, sys.stdout.errors or "strict"))
    while data:
        written = raw.write(data)
        if not written:  # None: a non-blocking descriptor that would block
            raise OSError(errno.EAGAIN, "standard output took no more bytes")
        data = data[written:]


class _Stdout:
    """sys.stdout for export_jsonl, whose failed writes raise OutputError. A reader that went
    away (BrokenPipeError) is not one: the command stops quietly, as after '| head'."""

    def write(self, text: str) -> int:
        try:
            write_stdout(text)
            return len(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from exc

    def flush(self) -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from exc


def run_export(args: argparse.Namespace) -> None:
    def export(out: Any) -> tuple[bulk.ExportReport, ...]:
        if args.all_tenants:
            return bulk.export_all_jsonl(store, out, history=args.history)
        return (bulk.export_jsonl(store, out, tenant=args.tenant, history=args.history),)

    # No Limits, as verify: an export reads what the store holds, so a tenant stored under larger
    # Limits than the defaults exports alone as it does among every tenant.
    db = db_args.existing(args.db)
    with EvidenceStore(db, engine=args.engine, read_only=True, limits=ANY_SIZE) as store:
        if args.out in (None, "-"):
            stdout = _Stdout()
            reports = export(cast(TextIO, stdout))
            stdout.flush()  # here, not at exit: the summary says the output is whole
        else:
            # A path: a failed export leaves no file behind (a partial one would pass for a whole
            # one, and the retry would find --out taken).
            try:
                reports = export(args.out)
            except OSError as exc:
                if exc.filename is not None:
                    raise  # about the path given (taken, not permitted): said with its option
                raise OutputError(exc) from exc  # a full disk: said as for stdout
    print(_export_summary(reports, history=args.history, all_tenants=args.all_tenants), file=sys.stderr)


def _export_summary(reports: tuple[bulk.ExportReport, ...], *, history: bool, all_tenants: bool) -> str:
    """The line export prints on stderr: what it wrote and, for a history, what it could not."""
    written = sum(report.written for report in reports)
    noun = "version" if history else "record"
    summary = f"pyevidence: exported {written:,} {noun}{'' if written == 1 else 's'}"
    if all_tenants:
        summary += f" of {len(reports):,} tenant{'' if len(reports) == 1 else 's'}"
    short = [report for report in reports if report.left_out]
    if len(short) == 1 and not all_tenants:
        summary += (
            f"; left out {short[0].left_out:,} forgotten versions (no content left): chain hashes from "
            f"position {short[0].chain_differs_from} on will differ after an import"
        )
    elif short:
        left_out = sum(report.left_out for report in short)
        first = short[0]
        summary += (
            f"; left out {left_out:,} forgotten versions (no content left) of {len(short):,} "
            f"tenant{'' if len(short) == 1 else 's'}: their chain hashes will differ after an import from "
            f"their first forgotten version on (tenant {first.tenant!r}: position {first.chain_differs_from})"
        )
    return summary
