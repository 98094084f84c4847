"""Arbitrary values for every argument of the public API: only pyevidence's documented
exceptions escape, and a rejected call leaves the database exactly as it was."""

from __future__ import annotations

import hashlib
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import Embedder, EvidenceError, EvidenceStore, HybridScorer, VectorScorer

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
# Components of an embedding: every kind of number, far beyond float's range too.
NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([10**400, -(10**400), 2**1024, Fraction(10**400, 3), Fraction(1, 10**400), True]),
    st.fractions(),
    st.decimals(allow_nan=True),
    ANY,
)
EMBEDDING = st.lists(NUMBER, max_size=10) | st.lists(st.floats(-1, 1), min_size=8, max_size=8) | ANY


def toy(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return [(digest[i] - 127.5) / 128 for i in range(8)]


def embedders(draw: st.DrawFn) -> Embedder:
    """An Embedder made of arbitrary arguments, whose function returns arbitrary values."""
    returned = draw(EMBEDDING)
    embed = draw(st.sampled_from([toy, lambda text: returned]) | ANY)
    return Embedder(draw(st.sampled_from(["toy", "\ud800", "", " ", "m\x00"]) | ANY), embed)


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
    call = data.draw(
        st.sampled_from(
            [
                *("put", "retrieve", "forget", "put_many", "query", "history", "get_version", "verify"),
                *("embedding", "embeddings", "embedder", "vector_retrieve"),
            ]
        )
    )
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
        elif call == "query":
            store.query(data.draw(ANY), data.draw(st.lists(ANY, max_size=2) | ANY))
        elif call == "history":
            store.history(tenant=data.draw(ANY), record_id=data.draw(ANY))
        elif call == "get_version":
            version = data.draw(ANY | st.sampled_from(["1-" + "0" * 64, "9" * 30 + "-" + "a" * 64]))
            store.get_version(tenant=data.draw(ANY), record_id=data.draw(ANY), version=version)
        elif call == "verify":
            store.verify(tenant=data.draw(ANY))
        else:
            changed_ok = _vector_call(path, store.engine, call, data)
    except EvidenceError:
        assert dump(path) == before  # rejected: nothing changed
        return
    if not changed_ok:
        assert dump(path) == before


def _vector_call(path: Path, engine: str, call: str, data: st.DataObject) -> bool:
    """Embeddings, embedders and vector ranking with arbitrary values; True if it wrote."""
    embedder = data.draw(st.builds(lambda: Embedder("toy", toy)) | st.composite(embedders)())
    with EvidenceStore(path, engine=engine, embedder=embedder) as store:
        if call == "embedding":
            store.put(**record(), embedding=data.draw(EMBEDDING | st.none()))
            return True
        if call == "embeddings":
            store.put_many(
                [record()], embeddings=data.draw(st.lists(EMBEDDING | st.none(), max_size=2) | ANY)
            )
            return True
        if call == "embedder":
            store.put(**record())
            return True
        scorer = data.draw(
            st.builds(VectorScorer, st.just(embedder) | ANY, min_similarity=ANY | st.floats(-1, 1))
            | st.builds(HybridScorer, st.just(embedder) | ANY)
        )
        store.retrieve(tenant="team-a", revision="v1", query=data.draw(ANY), now=0, scorer=scorer)
        return False


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
    from pyevidence.interfaces.cli import main

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
