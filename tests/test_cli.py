"""The command line: the demo's exact bytes, and put / retrieve / forget with exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyevidence import EvidenceStore
from pyevidence.interfaces.cli import main
from pyevidence.storage import versions

GOLDEN_DEMO = (Path(__file__).parent / "golden" / "demo.json").read_text()


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyevidence", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_demo_prints_the_exact_report(engine: str) -> None:
    done = run_cli("demo", "--engine", engine)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == GOLDEN_DEMO


def test_demo_report_content() -> None:
    report = json.loads(GOLDEN_DEMO)
    assert [hit["citation"] for hit in report["hits"]] == ["runbook://queue/v1"]
    assert report["eligible_count"] == 1
    assert report["stored_records"] == 3
    assert "not that no problem exists" in report["note"]
    hit = report["hits"][0]
    assert hit["version"] == "1-" + versions.content_hash(
        "team-a",
        hit["record_id"],
        hit["revision"],
        hit["kind"],
        hit["body"],
        hit["citation"],
        hit["expires_at"],
    )
    assert report["reproducible_citation"] == {
        "cited": f"runbook://queue/v1@{hit['version']}",
        "record_updated_to_version": report["reproducible_citation"]["record_updated_to_version"],
        "cited_version_status": "found",
        "cited_body_unchanged": True,
    }
    assert report["reproducible_citation"]["record_updated_to_version"].startswith("2-")
    assert report["verify"]["ok"] is True


def test_put_retrieve_forget_round_trip(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    common = ["--db", db, "--engine", engine]
    assert (
        main(
            [
                "put",
                *common,
                "--tenant",
                "team-a",
                "--record-id",
                "r1",
                "--revision",
                "v1",
                "--kind",
                "runbook",
                "--body",
                "Restart the queue consumer",
                "--source",
                "runbook://queue/v1",
                "--expires-at",
                "50",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {"put": {"tenant": "team-a", "record_id": "r1"}}

    assert (
        main(
            [
                "retrieve",
                *common,
                "--tenant",
                "team-a",
                "--revision",
                "v1",
                "--query",
                "queue restart",
                "--now",
                "10",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["eligible_count"] == 1
    assert [(h["record_id"], h["score"], h["citation"]) for h in out["hits"]] == [
        ("r1", 2, "runbook://queue/v1")
    ]

    assert main(["forget", *common, "--tenant", "team-b", "--record-id", "r1"]) == 0
    assert json.loads(capsys.readouterr().out)["forget"]["deleted"] is False
    assert main(["forget", *common, "--tenant", "team-a", "--record-id", "r1"]) == 0
    assert json.loads(capsys.readouterr().out)["forget"]["deleted"] is True


def test_put_reads_body_from_stdin(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    done = run_cli(
        "put",
        "--db",
        db,
        "--tenant",
        "t",
        "--record-id",
        "r",
        "--revision",
        "v",
        "--kind",
        "working",
        "--body-file",
        "-",
        "--source",
        "s",
        "--expires-at",
        "9",
        stdin="line one\nqueue line two\n",
    )
    assert done.returncode == 0, done.stderr
    done = run_cli(
        "retrieve", "--db", db, "--tenant", "t", "--revision", "v", "--query", "queue", "--now", "0"
    )
    assert json.loads(done.stdout)["hits"][0]["body"] == "line one\nqueue line two\n"


def test_invalid_input_exits_2_and_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    code = main(
        [
            "put",
            "--db",
            db,
            "--tenant",
            " ",
            "--record-id",
            "r",
            "--revision",
            "v",
            "--kind",
            "working",
            "--body",
            "b",
            "--source",
            "s",
            "--expires-at",
            "1",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == "pyevidence: error: tenant: must not be empty or only whitespace\n"
    assert not Path(db).exists()  # checked before the store is opened
    with EvidenceStore(db) as store:
        store.put(tenant="t", record_id="r", revision="v", kind="working", body="b", source="s", expires_at=1)
    code = main(
        [
            "retrieve",
            "--db",
            db,
            "--tenant",
            "t",
            "--revision",
            "v",
            "--query",
            "q",
            "--now",
            "0",
            "--limit",
            "11",
        ]
    )
    assert code == 2
    assert "limit: must be between 1 and 10, got 11" in capsys.readouterr().err


def test_retrieve_on_a_missing_database_is_an_error_not_an_empty_result(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    done = run_cli(
        "retrieve", "--db", str(missing), "--tenant", "t", "--revision", "v", "--query", "q", "--now", "0"
    )
    assert done.returncode == 1
    assert "no database at" in done.stderr and done.stdout == ""
    assert not missing.exists()


def test_usage_errors_exit_2() -> None:
    done = run_cli("put", "--db", "x.db")
    assert done.returncode == 2
    assert "required" in done.stderr
    assert (
        run_cli(
            "retrieve", "--db", "x", "--tenant", "t", "--revision", "v", "--query", "q", "--now", "soon"
        ).returncode
        == 2
    )


def test_doctor_reports_engines_and_extension_loading() -> None:
    import sqlite3

    import pyevidence

    done = run_cli("doctor")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pyevidence"] == pyevidence.__version__
    assert report["engines"]["python"] == {"available": True, "sqlite_version": sqlite3.sqlite_version}
    native = report["engines"]["native"]
    assert native["available"] is pyevidence.native_available()
    assert report["engines"]["auto_chooses"] == ("native" if native["available"] else "python")
    if native["available"]:
        assert native["sqlite_version"].count(".") == 2
        assert Path(report["loadable_extension"]).is_file()
    else:
        assert "libsqlite3-dev" in native["why_not"]
    can_load = hasattr(sqlite3.connect(":memory:"), "enable_load_extension")
    assert report["python_sqlite3_can_load_extensions"] is can_load
    vectors = report["vectors"]
    import importlib.util

    has_vec = importlib.util.find_spec("sqlite_vec") is not None
    assert (vectors["sqlite_vec"] is not None) is has_vec and vectors["python_vector_ranking"] is True
    assert vectors["native_vector_ranking"] is (has_vec and native["available"])


@pytest.mark.parametrize(
    ("writes", "message"),
    [
        ("lots", "writes: must be comma-separated whole numbers, got 'lots'"),
        ("-5", "writes: must be 0 or sizes of 1 record or more, got '-5'"),
        ("0,1000", "writes: must be 0 or sizes of 1 record or more, got '0,1000'"),
        (",", "writes: must be 0 or sizes of 1 record or more, got ','"),
    ],
)
def test_bench_refuses_write_sizes_it_cannot_run(writes: str, message: str, tmp_path: Path) -> None:
    done = run_cli("bench", "--sizes", "10", "--writes", writes, "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "out").exists()


# For every subcommand that has options: one given twice, with the rest it needs to parse.
TWICE = {
    "put": ["put", "--db", "x.db", "--tenant", "t", "--tenant", "other", "--record-id", "r", "--revision",
            "v", "--kind", "runbook", "--body", "b", "--source", "s", "--expires-at", "9"],
    "retrieve": ["retrieve", "--db", "x.db", "--tenant", "t", "--revision", "v", "--query", "q", "--now", "1",
                 "--method", "scan", "--method", "index"],
    "forget": ["forget", "--db", "a.db", "--db", "x.db", "--tenant", "t", "--record-id", "r"],
    "history": ["history", "--db", "x.db", "--tenant", "t", "--record-id", "r", "--record-id", "s"],
    "get-version": ["get-version", "--db", "x.db", "--tenant", "t", "--record-id", "r", "--version", "1-0",
                    "--version", "2-0"],
    "verify": ["verify", "--db", "x.db", "--tenant", "t", "--engine", "python", "--engine", "native"],
    "reindex": ["reindex", "--db", "x.db", "--db", "y.db"],
    "check": ["check", "--db", "x.db", "--engine", "auto", "--engine", "auto"],
    "import": ["import", "--db", "x.db", "--dry-run", "--dry-run", "x.jsonl"],
    "export": ["export", "--db", "x.db", "--tenant", "t", "--history", "--history"],
    "mcp": ["mcp", "--db", "x.db", "--tenant", "t", "--revision", "v", "--clock", "wall", "--clock", "wall"],
    "serve": ["serve", "--db", "x.db", "--tenant", "t", "--revision", "v", "--port", "1", "--port", "2"],
    "demo": ["demo", "--semantic", "--semantic"],
    "bench": ["bench", "--seed", "1", "--seed", "2"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TWICE))
def test_an_option_given_twice_is_a_usage_error_naming_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ended:
        main(TWICE[name])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: pyevidence {name} "), err  # the command's own usage
    assert err.endswith(": is given twice; give it once\n")
    assert list(tmp_path.iterdir()) == []


def test_an_option_is_not_taken_from_a_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["history", "--db", "x.db", "--ten", "t", "--record-id", "r"])
    assert ended.value.code == 2
    assert (
        "pyevidence history: error: the following arguments are required: --tenant" in capsys.readouterr().err
    )


def test_an_unknown_option_shows_the_commands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["history", "--db", "x.db", "--tenant", "t", "--record-id", "r", "--bogus"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: pyevidence history ") and "unrecognized arguments: --bogus" in err


def test_version_prints_the_version() -> None:
    import pyevidence

    done = run_cli("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"pyevidence {pyevidence.__version__}\n", "")


def test_retrieve_without_hits_says_that_it_is_no_evidence_of_no_problem(tmp_path: Path) -> None:
    from pyevidence import tool

    db = str(tmp_path / "ev.db")
    with EvidenceStore(db) as store:
        store.put(
            tenant="t", record_id="r", revision="v", kind="runbook", body="queue", source="s", expires_at=9
        )
    scope = ["retrieve", "--db", db, "--tenant", "t", "--revision", "v", "--now", "1"]
    done = run_cli(*scope, "--query", "disk")
    assert done.returncode == 0
    found = json.loads(done.stdout)
    assert found["hits"] == [] and found["note"] == tool.NO_EVIDENCE
    assert list(found) == sorted(found)
    found = json.loads(run_cli(*scope, "--query", "queue").stdout)
    assert len(found["hits"]) == 1 and "note" not in found


@pytest.mark.parametrize("query", ["", "  \t"])
def test_retrieve_refuses_an_empty_query_which_the_api_takes(query: str, tmp_path: Path) -> None:
    db = str(tmp_path / "ev.db")
    with EvidenceStore(db) as store:
        store.put(
            tenant="t", record_id="r", revision="v", kind="runbook", body="queue", source="s", expires_at=9
        )
        assert store.retrieve(tenant="t", revision="v", query=query, now=1).hits == ()
    done = run_cli("retrieve", "--db", db, "--tenant", "t", "--revision", "v", "--now", "1", "--query", query)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "pyevidence: error: query: must not be empty or only whitespace (an unset shell variable?)\n"
    )


NOTHING_FOUND = {
    "forget": (["forget", "--tenant", "t", "--record-id", "R"], "no current record 'R' of tenant 't' in this "
               "store (never put, or forgotten already): nothing was forgotten"),
    "history": (["history", "--tenant", "t", "--record-id", "R"],
                "no versions of record 'R' of tenant 't' in this store"),
    "get-version": (["get-version", "--tenant", "t", "--record-id", "R", "--version", "1-" + "0" * 64],
                    f"no version 1-{'0' * 64} of record 'R' of tenant 't' in this store"),
    "verify": (["verify", "--tenant", "T"], "no versions of tenant 'T' in this store: nothing was verified"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NOTHING_FOUND))
def test_a_command_that_finds_nothing_exits_0_with_a_note(name: str, tmp_path: Path) -> None:
    db = str(tmp_path / "ev.db")
    with EvidenceStore(db) as store:
        store.put(
            tenant="t", record_id="r", revision="v", kind="runbook", body="queue", source="s", expires_at=9
        )
    args, note = NOTHING_FOUND[name]
    done = run_cli(args[0], "--db", db, *args[1:])
    assert done.returncode == 0
    assert done.stderr == f"pyevidence: note: {note}; check the spelling\n"
    found = json.loads(done.stdout)  # what a script reads
    said = {"forget": found.get("forget", {}).get("deleted"), "history": found.get("versions"),
            "get-version": found.get("status"), "verify": found.get("versions_checked")}  # fmt: skip
    assert said[name] == {"forget": False, "history": [], "get-version": "unknown", "verify": 0}[name]
    done = run_cli(args[0], "--db", db, *[{"R": "r", "T": "t"}.get(a, a) for a in args[1:]])
    assert done.returncode == 0 and (done.stderr == "") == (name != "get-version"), done.stderr


def test_demo_offers_only_the_engines_it_can_use() -> None:
    assert "cluster" not in run_cli("demo", "--help").stdout
    done = run_cli("demo", "--engine", "cluster")
    assert done.returncode == 2 and "argument --engine: invalid choice: 'cluster'" in done.stderr


@pytest.mark.parametrize(("name", "extra"), [("demo", "embeddings"), ("bench", "web")])
def test_help_says_how_to_install_an_extra_from_the_checkout(name: str, extra: str) -> None:
    said = " ".join(run_cli(name, "--help").stdout.split())  # argparse wraps the lines
    assert f"pip install '.[{extra}]' in the pyevidence checkout" in said
    assert "pyevidence[" not in said  # pyevidence is not on PyPI
