"""The pyevidence command line: subcommands mirror the Python API and print JSON.

Exit codes: 0 success; 1 the store could not do it (missing or foreign database,
engine unavailable, I/O); 2 bad input (usage errors and rejected arguments); 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import signal
import stat
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from .. import __version__, tool
from ..core import jsonout, validation
from ..core.errors import EngineFallbackWarning, EvidenceError, SchemaError, UpgradeNeeded, ValidationError
from ..core.limits import ANY_SIZE, DEFAULT_LIMITS
from ..core.records import KINDS
from ..storage import paths
from ..store import ENGINES, EvidenceStore
from . import bulk_cli, cluster_node, db_args, demo, doctor, mcp_server, number_args, restore
from .progress import IndexProgress, announce_upgrade
from .web import serve as web_serve

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

EXIT_OK, EXIT_STORE, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
DEFAULT_BENCH_SIZES = "1000,10000,100000"


# Where _Once notes the options given so far, on the namespace being parsed; removed after parsing.
_GIVEN = "_options_given"


class _Once(argparse.Action):
    """An option given twice is a usage error naming it, as evidence_node says of its own
    options: the last value silently winning would let 'put --tenant t --tenant other' write
    where nobody looked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        if self.option_strings:
            given = namespace.__dict__.setdefault(_GIVEN, set())
            if self.dest in given:
                raise argparse.ArgumentError(self, "is given twice; give it once")
            given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _OnceStore(_Once, argparse._StoreAction):
    pass


class _OnceStoreConst(_Once, argparse._StoreConstAction):
    pass


class _OnceStoreTrue(_Once, argparse._StoreTrueAction):
    pass


class _Parser(argparse.ArgumentParser):
    """Every parser of the command line: an option is named in full (no prefixes: --ten is
    no --tenant) and at most once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})
        self.register("action", None, _OnceStore)  # an argument that names no action
        self.register("action", "store", _OnceStore)
        self.register("action", "store_const", _OnceStoreConst)
        self.register("action", "store_true", _OnceStoreTrue)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:  # a command's own parser: its usage comes with the error
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if file is sys.stdout:  # --help: the command's output, which fails as any output does
            _write_output(message)
        else:
            super()._print_message(message, file)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pyevidence",
        description="Scoped evidence memory on SQLite: store records, retrieve only in-scope ones.",
    )
    parser.add_argument("--version", action="version", version=f"pyevidence {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, *, db: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if db:
            p.add_argument("--db", required=True, metavar="FILE", help="the database file")
        # the cluster engine only opens a cluster's URL, which only --db can name
        engines = ENGINES if db else tuple(e for e in ENGINES if e != "cluster")
        p.add_argument("--engine", choices=engines, default="auto", help="engine (default: auto)")
        return p

    p = command("demo", "run the eligibility-before-ranking demonstration", db=False)
    p.add_argument(
        "--semantic",
        action="store_true",
        help="lexical, vector and hybrid scorers on one query (needs the embeddings extra: "
        "pip install '.[embeddings]' in the pyevidence checkout)",
    )
    sub.add_parser("doctor", help="show what this installation can do (engines, SQLite, extension loading)")

    p = sub.add_parser(
        "bench",
        help="benchmark retrieve: the token index beside the scan, the Python engine, the floor, FTS5",
    )
    p.add_argument("--sizes", default=DEFAULT_BENCH_SIZES, help="eligible rows per run, comma-separated")
    p.add_argument("--full", action="store_true", help="also run 1,000,000 eligible rows")
    p.add_argument("--out", default="bench-results", metavar="DIR", help="where to write the results")
    p.add_argument("--seed", type=number_args.whole_number, default=7)
    p.add_argument(
        "--writes",
        default="100000",
        metavar="N[,N...]",
        help="eligible records for the write section (put_many beside FTS5 and plain SQLite), "
        "comma-separated to compare sizes; 0: skip it",
    )
    p.add_argument(
        "--vectors",
        action="store_true",
        help="benchmark vector ranking instead (1,000 and 10,000 rows unless --sizes is given)",
    )
    p.add_argument(
        "--web",
        action="store_true",
        help="the search page's server time beside retrieve (100,000 rows unless --sizes is given; "
        "needs the web extra: pip install '.[web]' in the pyevidence checkout)",
    )

    p = sub.add_parser(
        "node",
        help=f"run one node of a replicated cluster: {cluster_node.SYNOPSIS}; list its members: "
        f"{cluster_node.MEMBERS_SYNOPSIS}; remove a member that is down: {cluster_node.REMOVE_SYNOPSIS}",
        add_help=False,
    )
    p.add_argument("node_args", nargs=argparse.REMAINDER, help="the node's options (see --help)")

    p = sub.add_parser("sql", help="run one read-only SQL statement where pyevidence's functions exist")
    p.add_argument("db", metavar="DB", help="the database file")
    p.add_argument("statement", metavar="SQL")
    p.add_argument("params", nargs="*", metavar="PARAM", help="positional parameters, passed as text")

    p = command("put", "store a new version of one record (creates the database if absent)")
    p.add_argument("--tenant", required=True)
    p.add_argument("--record-id", required=True)
    p.add_argument("--revision", required=True)
    p.add_argument("--kind", required=True, choices=KINDS)
    body = p.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", help="the record text")
    body.add_argument("--body-file", metavar="PATH", help="read the text from PATH (- for stdin)")
    p.add_argument("--source", required=True, help="the citation to show for this record")
    p.add_argument(
        "--expires-at", required=True, type=number_args.whole_number, metavar="N", help="logical expiry time"
    )

    p = command("retrieve", "rank the in-scope records for a query")
    p.add_argument("--tenant", required=True)
    p.add_argument("--revision", required=True)
    p.add_argument("--query", required=True)
    p.add_argument(
        "--now", required=True, type=number_args.whole_number, metavar="N", help="the caller's logical time"
    )
    p.add_argument(
        "--limit",
        type=number_args.whole_number,
        default=5,
        metavar="N",
        help="at most N hits, 1..10 (default 5)",
    )
    p.add_argument(
        "--method",
        choices=("index", "scan"),
        default=None,
        help="index: read the token index (default); scan: score every eligible record (same hits)",
    )

    p = command("forget", "forget one record of one tenant (its current row and its versions' content)")
    p.add_argument("--tenant", required=True)
    p.add_argument("--record-id", required=True)

    p = command("history", "list the versions of one record, oldest first")
    p.add_argument("--tenant", required=True)
    p.add_argument("--record-id", required=True)

    p = command("get-version", "resolve a cited version (Hit.version) to its exact body and fields")
    p.add_argument("--tenant", required=True)
    p.add_argument("--record-id", required=True)
    p.add_argument("--version", required=True, metavar="SEQ-HASH")

    p = command("verify", "recompute a tenant's hash chain; exit 1 and name the first break if broken")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--tenant")
    which.add_argument(
        "--all-tenants", action="store_true", help="every tenant of the store, each in its own snapshot"
    )

    command("reindex", "rebuild the token index from the stored records, in one transaction")
    p = command("backup", "copy the whole store to a new file: one consistent snapshot, while it is in use")
    p.add_argument("--out", required=True, metavar="FILE", help="the new file (must not exist)")
    p = command("restore", "put a backup in place of a store (never by copying the file: see docs/cli.md)")
    p.add_argument("--from", dest="source", required=True, metavar="FILE", help="the backup file")
    command("check", "check that the token index matches the stored records; exit 1 if it does not")

    mcp_server.add_arguments(command("mcp", mcp_server.DESCRIPTION))
    web_serve.add_arguments(command("serve", web_serve.DESCRIPTION))
    bulk_cli.add_import_arguments(command("import", bulk_cli.IMPORT_DESCRIPTION))
    bulk_cli.add_export_arguments(command("export", bulk_cli.EXPORT_DESCRIPTION))
    return parser


def _read_body(args: argparse.Namespace) -> str:
    """The body as given: --body's text, or the bytes of --body-file (- for stdin) as UTF-8,
    line endings kept, as import --from-dir reads a document. At most one byte more than a
    body may hold is read (--body-file /dev/zero must not fill the memory)."""
    if args.body is not None:
        return str(args.body)
    limit = DEFAULT_LIMITS.max_body_bytes  # as validation.record() checks the body below
    size = None
    if args.body_file == "-":
        if sys.stdin is None:  # <&-
            raise ValidationError("body_file", "is - but standard input is closed; pipe the text in")
        data, shown = sys.stdin.buffer.read(limit + 1), "standard input"
    else:
        with open(args.body_file, "rb") as handle:
            data, shown = handle.read(limit + 1), args.body_file
            found = os.fstat(handle.fileno())
            size = found.st_size if stat.S_ISREG(found.st_mode) else None
    if len(data) > limit:
        said = f"{size:,}" if size is not None and size > limit else f"more than {limit:,}"
        raise ValidationError("body", f"is {said} bytes, over this store's limit of {limit:,} (see Limits)")
    try:
        # A leading byte order mark is an editor's mark of the encoding, not text: dropped, as
        # import --from-dir drops it, so that one file is one body (and one content hash) by both.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            "body_file", f"{shown} is not UTF-8 (byte {exc.start}); save it as UTF-8 text"
        ) from None


def _read_as_it_is(path: str) -> EvidenceStore:
    """sql is read-only: it opens the store as it is (no schema written, no upgrade)."""
    try:
        return EvidenceStore(path, engine="native", read_only=True)
    except UpgradeNeeded:
        raise  # _main says how to upgrade it
    except SchemaError as exc:
        raise SchemaError(f"{exc}; 'pyevidence sql' reads a store as it is and never changes it") from None


def _open(path: str, engine: str) -> EvidenceStore:
    """A writable store; opening it may upgrade an older file, which is said on stderr,
    and whose token index is then built with a progress bar there."""
    announce_upgrade(db_args.writable(path))
    return EvidenceStore(path, engine=engine, progress=IndexProgress())


def _open_to_read(path: str, engine: str) -> EvidenceStore:
    """For retrieve and check, which only read: a file this user may not write is opened
    read-only (an older one then cannot be upgraded, and the error says so); any other as
    _open does, so that an older store is upgraded on the way."""
    if not paths.is_cluster_url(path) and os.path.isfile(path) and not os.access(path, os.W_OK):
        return EvidenceStore(path, engine=engine, read_only=True)
    return _open(path, engine)


def _jsonable(value: Any) -> Any:
    """SQL values as JSON: a blob becomes {"blob": "<hex>"}."""
    return {"blob": value.hex()} if isinstance(value, bytes) else value


def _numbers(field: str, text: str) -> list[int]:
    """A comma-separated list of whole numbers, as --sizes and --writes take them."""
    numbers = [validation.whole_number_text(n) for n in text.split(",") if n.strip()]
    if None in numbers:
        raise ValidationError(field, f"must be comma-separated whole numbers, got {text!r}")
    return [n for n in numbers if n is not None]


def _bench(args: argparse.Namespace) -> Any:
    from ..bench import report, run, vectors

    sizes = _numbers("sizes", args.sizes)
    if not sizes or min(sizes) < 10:
        raise ValidationError("sizes", "must name at least one size of 10 rows or more")
    writes_of = _numbers("writes", args.writes)
    if not writes_of or min(writes_of) < 0 or (0 in writes_of and len(writes_of) > 1):
        raise ValidationError("writes", f"must be 0 or sizes of 1 record or more, got {args.writes!r}")
    _results_directory(args.out)  # before a run that may take an hour, not after it
    if args.web:
        from .web import bench as web_bench

        chosen = sorted(sizes) if args.sizes != DEFAULT_BENCH_SIZES else [100_000]
        results = web_bench.run(chosen, seed=args.seed)
        out = Path(args.out)
        sys.stderr.write(web_bench.markdown(results))
        (out / "web.json").write_text(jsonout.dumps(results))
        (out / "web.md").write_text(web_bench.markdown(results))
        return {"written": [str(out / "web.json"), str(out / "web.md")]}
    if args.vectors:
        chosen = sorted(sizes) if args.sizes != DEFAULT_BENCH_SIZES else [1_000, 10_000]
        results = vectors.run(chosen, seed=args.seed)
        out = Path(args.out)
        sys.stderr.write(vectors.markdown(results))
        (out / "vectors.json").write_text(jsonout.dumps(results))
        (out / "vectors.md").write_text(vectors.markdown(results))
        return {"written": [str(out / "vectors.json"), str(out / "vectors.md")]}
    if args.full and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    results = run.run(sorted(sizes), seed=args.seed, writes_of=sorted(n for n in writes_of if n))
    sys.stderr.write(report.markdown(results))  # first: the figures are shown whatever happens next
    written = report.write(results, Path(args.out))
    return {"written": [str(p) for p in written]}


def _results_directory(out: str) -> None:
    """--out: a directory this user can write, made if missing."""
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValidationError("out", f"{out} is not a directory; name a directory for the results") from None
    except OSError as exc:
        raise ValidationError("out", f"{out} cannot be made: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValidationError("out", f"{out} is a directory this user cannot write; name another")


# Options that hold text, not a path: a byte of the command line that is not UTF-8 reaches
# Python as a lone surrogate (U+DC80..U+DCFF, PEP 383), which is said here as the byte it was.
_TEXT_ARGUMENTS = ("tenant", "record_id", "revision", "kind", "body", "source", "query", "version")


def _utf8_arguments(args: argparse.Namespace) -> None:
    # restore's --from is a path, kept as args.source: a backup's name need not be UTF-8
    texts = [name for name in _TEXT_ARGUMENTS if not (args.command == "restore" and name == "source")]
    values = [(name, getattr(args, name, None)) for name in texts]
    if args.command == "sql":
        values += [("statement", args.statement)] + [(f"params[{i}]", v) for i, v in enumerate(args.params)]
    for name, value in values:
        if isinstance(value, str):
            for index, char in enumerate(value):
                if "\udc80" <= char <= "\udcff":
                    at = len(value[:index].encode("utf-8", "surrogateescape"))
                    raise ValidationError(
                        name, f"is not UTF-8 text (the byte 0x{ord(char) - 0xDC00:02x} at byte {at})"
                    )


def _run(args: argparse.Namespace) -> Any:
    _utf8_arguments(args)
    if args.command == "demo":
        return demo.run_semantic(engine=args.engine) if args.semantic else demo.run(engine=args.engine)
    if args.command == "doctor":
        return doctor.report()
    if args.command == "bench":
        return _bench(args)
    if args.command == "sql":
        # One statement runs in C, where Python never sees Ctrl-C; it only reads, so Ctrl-C
        # may end the process at once.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if paths.is_cluster_url(args.db):
            raise ValidationError(
                "DB",
                "pyevidence sql runs on a database file, not on a cluster: its read-only gate is the "
                "native engine's; on a cluster use retrieve, history or get-version",
            )
        with _read_as_it_is(db_args.existing(args.db, field="DB")) as store:
            rows = store.query(args.statement, list(args.params))
        return {"columns": list(rows.columns), "rows": [[_jsonable(v) for v in row] for row in rows]}
    if args.command == "put":
        db = db_args.database(args.db)
        # Checked before the store is opened: a refused put creates no database.
        record = validation.record(
            tenant=args.tenant,
            record_id=args.record_id,
            revision=args.revision,
            kind=args.kind,
            body=_read_body(args),
            source=args.source,
            expires_at=args.expires_at,
        )
        with _open(db, args.engine) as store:
            store.put(**asdict(record))
        return {"put": {"tenant": args.tenant, "record_id": args.record_id}}
    if args.command == "retrieve":
        if args.query.isspace() or not args.query:
            # The API takes it and finds nothing; on a command line it is an unset variable.
            raise ValidationError("query", "must not be empty or only whitespace (an unset shell variable?)")
        with _open_to_read(db_args.existing(args.db), args.engine) as store:
            result = store.retrieve(
                tenant=args.tenant,
                revision=args.revision,
                query=args.query,
                now=args.now,
                limit=args.limit,
                method=args.method,
            )
        # No hits: the note the MCP tool and the web page give, as the JSON's "note"
        return tool.retrieve_output(
            query=args.query, tenant=args.tenant, revision=args.revision, now=args.now, result=result
        )
    if args.command == "forget":
        with _open(db_args.existing(args.db), args.engine) as store:
            deleted = store.forget(tenant=args.tenant, record_id=args.record_id)
            if not store.finish_erasure(timeout=5.0):
                _note("another connection stayed inside a read transaction, so the forgotten text stays "
                      "in the database file until a checkpoint can run: the next forget that erases a "
                      "record, or the last connection to the store closing (docs/python-api.md, "
                      "\"What forget keeps\")")  # fmt: skip
        if not deleted:
            _nothing_found(f"no current record {args.record_id!r} of tenant {args.tenant!r} in this store "
                           "(never put, or forgotten already): nothing was forgotten")  # fmt: skip
        return {"forget": {"tenant": args.tenant, "record_id": args.record_id, "deleted": deleted}}
    if args.command == "reindex":
        with _open(db_args.existing(args.db), args.engine) as store:
            return store.reindex().to_dict()
    if args.command == "check":
        with _open_to_read(db_args.existing(args.db), args.engine) as store:
            return store.check_index().to_dict()
    if args.command == "backup":
        db = db_args.existing(args.db)
        try:
            try:  # a backup never upgrades the store it copies: its version read first, read-only
                if not paths.is_cluster_url(db):
                    paths.check_schema(db)
            except UpgradeNeeded as exc:  # an older release's store: copied as it is
                restore.copy_as_it_is(db, args.out)
                _note(f"{exc.older()}; the backup is a copy of it as it is")
            except EvidenceError:  # the store's own read-only open says what is wrong, or copies it
                with EvidenceStore(db, engine=args.engine, read_only=True) as store:
                    store.backup(args.out)
            else:
                with _open_to_read(db, args.engine) as store:
                    store.backup(args.out)
        except ValidationError as exc:  # the API's argument is dest; here it is --out
            raise ValidationError("out", exc.reason) if exc.field == "dest" else exc from None
        return {"backup": {"db": args.db, "out": args.out, "bytes": os.path.getsize(args.out)}}
    if args.command == "restore":
        if paths.is_cluster_url(args.db):
            raise ValidationError("db", "restore puts a backup in place of a database file, not of a cluster")
        restore.restore(args.source, db_args.database(args.db))
        return {"restore": {"db": args.db, "from": args.source}}
    if args.command == "mcp":
        return mcp_server.main(args)  # stdout carries the protocol only: nothing is printed after it
    if args.command == "serve":
        return web_serve.main(args)  # serves until Ctrl-C; nothing is printed on stdout
    if args.command == "import":
        return bulk_cli.run_import(args)
    if args.command == "export":
        return bulk_cli.run_export(args)  # the JSONL went to stdout or --out; a summary to stderr
    if args.command in ("history", "get-version", "verify"):
        # verify opens with no Limits: a tenant stored under larger ones than the defaults verifies too
        limits = ANY_SIZE if args.command == "verify" else DEFAULT_LIMITS
        db = db_args.existing(args.db)
        with EvidenceStore(db, engine=args.engine, read_only=True, limits=limits) as store:
            if args.command == "verify" and args.all_tenants:
                return _verified_tenants(store)
            if args.command == "history":
                found = store.history(tenant=args.tenant, record_id=args.record_id)
                if not found:
                    _nothing_found(f"no versions of record {args.record_id!r} of tenant {args.tenant!r} "
                                   "in this store")  # fmt: skip
                return {
                    "tenant": args.tenant,
                    "record_id": args.record_id,
                    "versions": [v.to_dict() for v in found],
                }
            if args.command == "get-version":
                lookup = store.get_version(tenant=args.tenant, record_id=args.record_id, version=args.version)
                if lookup.status == "unknown":
                    _nothing_found(f"no version {args.version} of record {args.record_id!r} of tenant "
                                   f"{args.tenant!r} in this store")  # fmt: skip
                return lookup.to_dict()
            report = store.verify(tenant=args.tenant)
            if report.versions_checked == 0:
                _nothing_found(f"no versions of tenant {args.tenant!r} in this store: nothing was verified")
            return report.to_dict()
    raise AssertionError(f"unhandled command {args.command}")


def _verified_tenants(store: EvidenceStore) -> dict[str, Any]:
    """verify --all-tenants: every tenant's chain, each in its own snapshot (a chain is a
    tenant's own), summed up, with the report of each tenant that does not verify, or what
    stopped its check (a row that cannot be read), in tenant order."""
    tenants = store.tenants()
    if not tenants:
        _note("no records in this store: nothing was verified")
    versions_checked = current_checked = 0
    broken: list[dict[str, Any]] = []
    for tenant in tenants:
        try:
            report = store.verify(tenant=tenant)
        except EvidenceError as exc:  # said for this tenant, and the other tenants still checked
            broken.append({"tenant": tenant, "ok": False, "error": str(exc)})
            continue
        versions_checked += report.versions_checked
        current_checked += report.current_checked
        if not report.ok:
            broken.append(report.to_dict())
    return {
        "ok": not broken,
        "tenants_checked": len(tenants),
        "versions_checked": versions_checked,
        "current_checked": current_checked,
        "broken": broken,
    }


def _note(what: str) -> None:
    print(f"pyevidence: note: {what}", file=sys.stderr)


def _nothing_found(what: str) -> None:
    """A note on stderr where a command succeeds on nothing, which a mistyped tenant or record id
    also gives; the exit code stays 0 (forget is idempotent), the JSON says it for scripts."""
    print(f"pyevidence: note: {what}; check the spelling", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    shown_before = warnings.showwarning
    warnings.showwarning = _one_line_note(shown_before)
    stderr_before = sys.stderr
    if sys.stderr is None:  # 2>&-: messages and progress are dropped, as into /dev/null; stdout still works
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    else:  # 2>/dev/full, a reader gone: the same, once a message cannot be written
        sys.stderr = cast(TextIO, _LosesMessages(sys.stderr))
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt as exc:
        # Ctrl-C: the transaction in progress is rolled back; a note says what stays (import
        # --batch-size keeps the batches it committed)
        print("; ".join(["pyevidence: interrupted", *getattr(exc, "__notes__", ())]), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of stdout went away (| head): stop quietly, as other command-line tools do
        _drop_stdout()
        return EXIT_STORE
    finally:
        warnings.showwarning = shown_before
        if sys.stderr is not stderr_before:
            sys.stderr.close()
            sys.stderr = stderr_before


class _LosesMessages:
    """sys.stderr for a command: a message that cannot be written (a full disk, a reader that
    went away) is lost, as with a closed stderr, instead of raising where it is printed: a note
    raised past the command's JSON (history of an unknown tenant printed nothing, exit 1), and
    an error's message past its exit code (bad input exited 1, not 2)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._drop()

    def _drop(self) -> None:
        """Points the descriptor at the null device, so that what the stream still holds is
        not written again, and fails again, when Python flushes it at exit (exit 120)."""
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
            self._stream.flush()
        except (OSError, ValueError):
            pass  # a stream with no descriptor (a test's), or one already closed

    def close(self) -> None:
        pass  # the process's stderr, which main() puts back

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # isatty(), fileno(), encoding: the stream's


def _one_line_note(show: Any) -> Any:
    """pyevidence's own warnings as one line on stderr: Python's format shows the file, line
    and source line of the call that warned, which is pyevidence's code, not the user's."""

    def shown(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, EngineFallbackWarning):
            print(f"pyevidence: note: {message}", file=sys.stderr)
        else:
            show(message, category, *args, **kwargs)

    return shown


def _drop_stdout() -> None:
    """Points stdout at the null device, so that the output it still holds cannot fail
    again when Python flushes it at exit."""
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _write_output(text: str) -> None:
    """Writes the command's output to stdout, whole, or raises OSError."""
    if sys.stdout is None:  # >&-: Python found no descriptor 1 at startup
        raise OSError(errno.EBADF, "standard output is closed")
    bulk_cli.write_stdout(text)
    sys.stdout.flush()


def _cannot_write(exc: OSError) -> int:
    """A full disk, a closed descriptor: the output is not whole."""
    _drop_stdout()
    print(f"pyevidence: error: could not write the output: {exc}", file=sys.stderr)
    return EXIT_STORE


def _prints_on_stdout(args: argparse.Namespace) -> bool:
    """Whether the command's result goes to stdout: all but serve and export --out FILE."""
    return args.command != "serve" and not (args.command == "export" and args.out not in (None, "-"))


# The options that name a file to read or to create, and the errors that are about the path
# given (missing, a directory, taken, not permitted), not about the disk or the store.
_PATH_ARGUMENTS = ("body_file", "file", "out", "source")
_PATH_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)


def _path_argument(args: argparse.Namespace, exc: OSError) -> str | None:
    """The option whose path ``exc`` is about, if it is one of _PATH_ERRORS."""
    if not isinstance(exc, _PATH_ERRORS) or exc.filename is None:
        return None
    for name in _PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if value not in (None, "-") and os.fsdecode(value) == os.fsdecode(exc.filename):
            return name
    return None


def _main(argv: list[str]) -> int:
    if argv[:1] == ["node"]:  # every option is the node program's own (cluster_node.py)
        try:
            cluster_node.exec_node(argv[1:])
        except (EvidenceError, OSError) as exc:
            if argv[1:] in (["--help"], ["-h"]):  # the options, and why the program cannot say more
                try:
                    _write_output(
                        f"usage: pyevidence node {cluster_node.SYNOPSIS}\n"
                        f"       pyevidence node {cluster_node.MEMBERS_SYNOPSIS}\n"
                        f"       pyevidence node {cluster_node.REMOVE_SYNOPSIS}\n\n{exc}\n"
                    )
                except BrokenPipeError:
                    raise
                except OSError as failed:
                    return _cannot_write(failed)
                return EXIT_OK
            print(f"pyevidence: error: {exc}", file=sys.stderr)
        return EXIT_STORE
    try:
        args = _parser().parse_args(argv)
        vars(args).pop(_GIVEN, None)
    except BrokenPipeError:
        raise
    except OSError as exc:  # --help could not be written
        return _cannot_write(exc)
    if sys.stdout is None and _prints_on_stdout(args):
        # Before anything is done: a write whose result cannot be reported is not made.
        print(
            "pyevidence: error: could not write the output: standard output is closed; nothing was done",
            file=sys.stderr,
        )
        return EXIT_STORE
    try:
        output = _run(args)
    except ValidationError as exc:
        print(f"pyevidence: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        raise  # not the store's: main() ends quietly
    except bulk_cli.OutputError as exc:  # export's stdout, written as it goes
        return _cannot_write(exc.error)
    except OSError as exc:
        field = _path_argument(args, exc)
        if field is None:
            print(f"pyevidence: error: {exc}", file=sys.stderr)
            return EXIT_STORE
        print(f"pyevidence: error: {field}: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT  # a file named on the command line that is not there, or not a file
    except UpgradeNeeded as exc:  # a command that only reads met an older store
        check = f"pyevidence check --db {shlex.quote(exc.where)}"
        how = f"open it once with a command that writes, such as '{check}'"
        if os.path.isfile(exc.where) and not os.access(exc.where, os.W_OK):
            # retrieve and check read such a file as it is: running check again would not help
            how = f"this user cannot write it, so a user who can must open it once, such as with '{check}'"
        command = args.command + (" --dry-run" if getattr(args, "dry_run", False) else "")
        print(f"pyevidence: error: {exc.older()}; 'pyevidence {command}' only reads: {how}", file=sys.stderr)
        return EXIT_STORE
    except (EvidenceError, UnicodeError) as exc:
        print(f"pyevidence: error: {exc}", file=sys.stderr)
        return EXIT_STORE
    if output is None:
        return EXIT_OK
    try:
        text = jsonout.dumps(output)
    except ValueError as exc:  # an infinite float from SQL: nothing is printed on stdout
        hint = "; select such values as text (CAST(x AS TEXT)) or NULL" if args.command == "sql" else ""
        print(f"pyevidence: error: {exc}{hint}", file=sys.stderr)
        return EXIT_STORE
    try:
        _write_output(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        return _cannot_write(exc)
    if args.command in ("verify", "check") and not output["ok"]:
        if args.command == "check":
            sys.stdout.flush()  # the report first, then what to do about it
            print(f"pyevidence: error: the token index is out of step; {output['fix']}", file=sys.stderr)
        return EXIT_STORE  # a broken chain or index is the store's problem, reported on stdout as JSON
    return EXIT_OK
