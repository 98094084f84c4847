"""Arbitrary values for every argument of the public API: only pyevidence's documented
exceptions escape, and a rejected call leaves the database exactly as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import EvidenceError, EvidenceStore

ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(
        alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1
    ),  # lone surrogates
    st.sampled_from(["", " ", "\x00", "'; DROP TABLE evidence; --", "x" * 5000, "runbook", "team-a", "v1"]),
    st.binary(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
PUT_FIELDS = ["tenant", "record_id", "revision", "kind", "body", "source", "expires_at"]


def dump(path: Path) -> list[Any]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM evidence ORDER BY tenant, record_id").fetchall()
    conn.close()
    return rows


@pytest.fixture
def fuzzed(tmp_path: Path, engine: str) -> Any:
    path = tmp_path / "fuzz.db"
    with EvidenceStore(path, engine=engine) as store:
        store.put(**record(record_id="keep", body="queue lag"))
        yield store, path


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(data=st.data())
def test_arbitrary_arguments_raise_only_documented_errors(fuzzed: Any, data: st.DataObject) -> None:
    store, path = fuzzed
    before = dump(path)
    call = data.draw(st.sampled_from(["put", "retrieve", "forget", "put_many", "query"]))
    changed_ok = False
    try:
        if call == "put":
            args = {f: data.draw(ANY | st.just(record()[f]), label=f) for f in PUT_FIELDS}
            store.put(**args)
            changed_ok = True
        elif call == "retrieve":
            store.retrieve(
                **{f: data.draw(ANY, label=f) for f in ("tenant", "revision", "query", "now", "limit")}
            )
        elif call == "forget":
            changed_ok = bool(store.forget(tenant=data.draw(ANY), record_id=data.draw(ANY)))
        elif call == "put_many":
            store.put_many(data.draw(st.lists(ANY | st.just(record()), max_size=3) | ANY))
            changed_ok = True
        else:
            store.query(data.draw(ANY), data.draw(st.lists(ANY, max_size=2) | ANY))
    except EvidenceError:
        assert dump(path) == before  # rejected: nothing changed
        return
    if not changed_ok:
        assert dump(path) == before


WORDS = st.sampled_from(
    [
        "put",
        "retrieve",
        "forget",
        "sql",
        "demo",
        "--db",
        "--tenant",
        "--record-id",
        "--revision",
        "--kind",
        "--body",
        "--body-file",
        "--source",
        "--expires-at",
        "--query",
        "--now",
        "--limit",
        "--engine",
        "runbook",
        "python",
        "-1",
        "99999999999999999999999",
        "",
        " ",
        "\x00x",
        "'; DROP TABLE evidence; --",
    ]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200, deadline=None)
@given(argv=st.lists(WORDS | st.text(max_size=8), max_size=14))
def test_cli_never_crashes_and_rejected_calls_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    from pyevidence.cli import main

    path = tmp_path / "cli-fuzz.db"
    if not path.exists():
        with EvidenceStore(path, engine="python") as store:
            store.put(**record(record_id="keep"))
    before = dump(path)
    # Point every --db at the fuzz database, so nothing else on disk is touched.
    argv = [str(path) if i > 0 and argv[i - 1] == "--db" else a for i, a in enumerate(argv)]
    if argv and argv[0] == "sql" and len(argv) > 1:
        argv[1] = str(path)
    if argv[:1] == ["put"] and "--body-file" in argv:
        return  # reading arbitrary paths or stdin is not what this test is about
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        assert exit_.code in (0, 2)
        code = int(exit_.code or 0)
    capsys.readouterr()
    assert code in (0, 1, 2)
    if code != 0 or (argv[:1] != ["put"] and argv[:1] != ["forget"]):
        assert dump(path) == before
