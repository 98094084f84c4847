"""Vectors: stored consistently with their records, ranked over the eligible set only,
and ranked identically by sqlite-vec (native engine) and by Python (python engine)."""

from __future__ import annotations

import hashlib
import math
import shutil
import sqlite3
import struct
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyevidence import (
    Embedder,
    EngineUnavailableError,
    EvidenceStore,
    HybridScorer,
    StoreError,
    ValidationError,
    VectorScorer,
    native_available,
)
from pyevidence.core.vectors import cosine_distance, f32, squared_norm
from pyevidence.storage import schema

FIXTURES = Path(__file__).parent / "fixtures"
SCOPE = dict(tenant="team-a", revision="v1", now=100)


def hashed(text: str, dims: int = 8) -> list[float]:
    """A deterministic toy embedding: no meaning at all, just distinct directions."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i] - 127.5) / 128 for i in range(dims)]


TOY = Embedder("toy-sha256", hashed)


def vectors_of(path: str | Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT tenant, record_id, version, model, dims, embedding FROM evidence_vectors")
        found = sorted(rows.fetchall())
    conn.close()
    return found


def open_file(engine: str, tmp_path: Path, embedder: Embedder | None = TOY) -> EvidenceStore:
    return EvidenceStore(tmp_path / "ev.db", engine=engine, embedder=embedder)


def test_put_stores_the_vector_of_the_current_version(engine: str, tmp_path: Path) -> None:
    with open_file(engine, tmp_path) as store:
        store.put(**record(body="first body"))
        store.put(**record(record_id="r2", body="given"), embedding=[1.0, 0.0, 0.5])
    (first, second) = vectors_of(tmp_path / "ev.db")
    assert first == ("team-a", "r1", 1, "toy-sha256", 8, struct.pack("<8f", *hashed("first body")))
    assert second == ("team-a", "r2", 1, "toy-sha256", 3, struct.pack("<3f", 1.0, 0.0, 0.5))


def test_replacing_or_forgetting_a_record_leaves_no_stale_vector(engine: str, tmp_path: Path) -> None:
    with open_file(engine, tmp_path) as store:
        store.put(**record(body="old body"))
        store.put(**record(body="new body"))
        assert [(r[2], r[5]) for r in vectors_of(tmp_path / "ev.db")] == [
            (2, struct.pack("<8f", *hashed("new body")))
        ]
        store.put_many([record(record_id="b1"), record(record_id="b2")], embeddings=[[1.0], None])
        store.forget(tenant="team-a", record_id="b1")
        assert [r[1] for r in vectors_of(tmp_path / "ev.db")] == ["b2", "r1"]
    # A put through a store without an embedder replaces the body: the old vector goes too.
    with open_file(engine, tmp_path, embedder=None) as store:
        store.put(**record(body="newest body, no vector"))
    assert [r[1] for r in vectors_of(tmp_path / "ev.db")] == ["b2"]


def test_raw_sql_cannot_attach_a_vector_to_another_version(engine: str, tmp_path: Path) -> None:
    with open_file(engine, tmp_path) as store:
        store.put(**record(body="v1"))
        store.put(**record(body="v2"))
    conn = sqlite3.connect(tmp_path / "ev.db")
    with pytest.raises(sqlite3.IntegrityError, match="current version of a stored record only"):
        conn.execute(
            "INSERT OR REPLACE INTO evidence_vectors VALUES ('team-a', 'r1', 1, 'm', 1, x'0000803f')"
        )
    with pytest.raises(sqlite3.IntegrityError, match="current version of a stored record only"):
        conn.execute("INSERT INTO evidence_vectors VALUES ('team-a', 'nope', 1, 'm', 1, x'0000803f')")
    with pytest.raises(sqlite3.IntegrityError, match="are not updated"):
        conn.execute("UPDATE evidence_vectors SET embedding = x'0000803f', dims = 1")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("DELETE FROM evidence_vectors")
        conn.execute("INSERT INTO evidence_vectors VALUES ('team-a', 'r1', 2, 'm', 2, x'0000803f')")
    conn.close()


@pytest.mark.parametrize(
    ("embedding", "field"),
    [
        ([], "embedding"),
        ([0.0, 0.0], "embedding"),
        ([1e-30, 0.0], "embedding"),  # its float32 square underflows to zero: no direction
        ([1e-40, 0.0, 0.0], "embedding"),  # not zero in float32 (a subnormal), its square is
        ([1.0, math.nan], "embedding[1]"),
        ([math.inf], "embedding[0]"),
        ([2e9], "embedding[0]"),
        ([True, 1.0], "embedding[0]"),
        (["0.5"], "embedding[0]"),
        ("0.5", "embedding"),
        (3.0, "embedding"),
        ([1.0] * 8193, "embedding"),
        ([1.0, 10**400], "embedding[1]"),  # beyond float's range: no OverflowError
        ([Fraction(-(10**400), 3)], "embedding[0]"),
    ],
)
def test_bad_vectors_are_refused_and_nothing_is_written(
    engine: str, tmp_path: Path, embedding: Any, field: str
) -> None:
    with open_file(engine, tmp_path) as store:
        store.put(**record(body="kept"))
        with pytest.raises(ValidationError) as caught:
            store.put(**record(body="changed"), embedding=embedding)
        assert caught.value.field == field
        if field == "embedding" and isinstance(embedding, list) and 0 < len(embedding) <= 8192:
            assert "has no length in float32" in caught.value.reason
        with pytest.raises(ValidationError) as caught:
            store.put_many([record(record_id="x"), record(record_id="y")], embeddings=[[1.0], embedding])
        assert caught.value.field == field.replace("embedding", "embeddings[1]", 1)
        assert [v.body for v in store.history(tenant="team-a", record_id="r1")] == ["kept"]
        assert store.history(tenant="team-a", record_id="x") == ()
    assert len(vectors_of(tmp_path / "ev.db")) == 1


def test_an_embedder_that_returns_garbage_writes_nothing(engine: str, tmp_path: Path) -> None:
    with open_file(engine, tmp_path, embedder=Embedder("broken", lambda text: [math.nan])) as store:
        with pytest.raises(ValidationError, match=r"embedding\[0\]: must be finite"):
            store.put(**record())
        assert store.history(tenant="team-a", record_id="r1") == ()


def test_an_embedding_needs_an_embedder_to_name_its_model(store: EvidenceStore) -> None:
    with pytest.raises(ValidationError, match="needs the store's embedder"):
        store.put(**record(), embedding=[1.0])
    with pytest.raises(ValidationError, match="one entry per record"):
        store.put_many([record()], embeddings=[[1.0], [2.0]])
    for not_a_sequence in (False, 3, iter([[1.0]]), {"r1": [1.0]}):
        with pytest.raises(
            ValidationError, match=r"^embeddings: must be a sequence holding one entry per record \(1\)$"
        ):
            store.put_many([record()], embeddings=not_a_sequence)  # type: ignore[arg-type]
    assert store.history(tenant="team-a", record_id="r1") == ()


def axis(i: int, dims: int = 4, scale: float = 1.0) -> list[float]:
    return [scale if j == i else 0.0 for j in range(dims)]


def test_vector_ranking_orders_by_similarity_and_counts_the_unranked(engine: str, tmp_path: Path) -> None:
    table = {"query": [1.0, 0.0, 0.0, 0.0]}
    embedder = Embedder("table", lambda text: table[text])
    with open_file(engine, tmp_path, embedder=embedder) as store:
        store.put(**record(record_id="same"), embedding=[2.0, 0.0, 0.0, 0.0])
        store.put(**record(record_id="also-same"), embedding=[5.0, 0.0, 0.0, 0.0])
        store.put(**record(record_id="close"), embedding=[1.0, 0.5, 0.0, 0.0])
        store.put(**record(record_id="orthogonal"), embedding=axis(1))
        store.put(**record(record_id="opposite"), embedding=[-1.0, 0.0, 0.0, 0.0])
        store.put(**record(record_id="other-dims"), embedding=[1.0, 0.0])
    with EvidenceStore(tmp_path / "ev.db", engine=engine) as plain:
        plain.put(**record(record_id="no-vector"))
        result = plain.retrieve(query="query", scorer=VectorScorer(embedder), **SCOPE)  # type: ignore[arg-type]
    assert [h.record_id for h in result] == ["also-same", "same", "close"]
    assert [h.score for h in result][:2] == [1.0, 1.0]
    assert (result.ranked_by, result.eligible_count, result.unranked_count) == ("vector:table", 7, 2)
    assert result.hits[2].score == pytest.approx(2 / math.sqrt(5), abs=1e-6)


def test_hybrid_counts_as_unranked_only_what_neither_ranking_could_place(engine: str, tmp_path: Path) -> None:
    """unranked_count is the eligible records the scorer could not rank. A record without a
    vector that shares words with the query is ranked lexically: a hit, not unranked."""
    embedder = Embedder("t", lambda text: [1.0, 0.0])
    with open_file(engine, tmp_path, embedder=embedder) as store:
        store.put(**record(record_id="with-vector", body="rotate logs"), embedding=[1.0, 0.5])
    with EvidenceStore(tmp_path / "ev.db", engine=engine) as plain:  # no embedder: no vectors
        plain.put(**record(record_id="words-no-vector", body="queue lag runbook"))
        plain.put(**record(record_id="nothing-no-vector", body="rotate logs"))
        results = {
            (lexical, vector): plain.retrieve(
                query="queue lag",
                scorer=HybridScorer(embedder, lexical_weight=lexical, vector_weight=vector),
                **SCOPE,  # type: ignore[arg-type]
            )
            for lexical, vector in ((1.0, 1.0), (0.0, 1.0), (1.0, 0.0))
        }
    both = results[(1.0, 1.0)]
    assert [h.record_id for h in both] == ["with-vector", "words-no-vector"]  # 1/61 each: by id
    assert (both.eligible_count, both.unranked_count) == (3, 1)  # nothing-no-vector only
    vector_only = results[(0.0, 1.0)]  # as VectorScorer: every record without a vector
    assert ([h.record_id for h in vector_only], vector_only.unranked_count) == (["with-vector"], 2)
    lexical_only = results[(1.0, 0.0)]  # vectors play no part: none wants for one
    assert ([h.record_id for h in lexical_only], lexical_only.unranked_count) == (["words-no-vector"], 0)


def test_min_similarity_is_a_strict_floor(engine: str, tmp_path: Path) -> None:
    embedder = Embedder("t", lambda text: [1.0, 1.0])
    with open_file(engine, tmp_path, embedder=embedder) as store:
        store.put(**record(record_id="exact"), embedding=[1.0, 1.0])
        store.put(**record(record_id="half"), embedding=[1.0, 0.0])
        everything = VectorScorer(embedder, min_similarity=-1.0)
        assert len(store.retrieve(query="q", scorer=everything, **SCOPE)) == 2  # type: ignore[arg-type]
        strict = VectorScorer(embedder, min_similarity=0.8)
        assert [h.record_id for h in store.retrieve(query="q", scorer=strict, **SCOPE)] == ["exact"]  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="min_similarity"):
        VectorScorer(embedder, min_similarity=1.0)


def test_eligibility_comes_before_the_distance(engine: str, tmp_path: Path) -> None:
    """The query's nearest neighbours are all out of scope; the in-scope records are far.
    A nearest-neighbour search followed by filtering would return nothing here."""
    embedder = Embedder("t", lambda text: axis(0))
    with open_file(engine, tmp_path, embedder=embedder) as store:
        neighbours = [record(tenant="team-b", record_id=f"b{i:03}") for i in range(300)]
        neighbours += [record(revision="v2", record_id=f"v{i:03}") for i in range(100)]
        neighbours += [record(record_id=f"x{i:03}", expires_at=100) for i in range(100)]
        store.put_many(neighbours, embeddings=[axis(0)] * len(neighbours))
        mine = [record(record_id=f"mine{i}") for i in range(6)]
        store.put_many(mine, embeddings=[[0.1 * (i + 1), 1.0, 0.0, 0.0] for i in range(6)])
        result = store.retrieve(query="q", limit=5, scorer=VectorScorer(embedder), **SCOPE)  # type: ignore[arg-type]
    assert [h.record_id for h in result] == ["mine5", "mine4", "mine3", "mine2", "mine1"]
    assert result.eligible_count == 6 and result.unranked_count == 0


def test_vectors_of_another_model_are_not_compared(engine: str, tmp_path: Path) -> None:
    with open_file(engine, tmp_path, embedder=Embedder("model-a", lambda text: [1.0, 0.0])) as store:
        store.put(**record(record_id="made-by-a"))
    model_b = Embedder("model-b", lambda text: [1.0, 0.0])
    with open_file(engine, tmp_path, embedder=model_b) as store:
        result = store.retrieve(query="q", scorer=VectorScorer(model_b), **SCOPE)  # type: ignore[arg-type]
    assert (result.hits, result.eligible_count, result.unranked_count) == ((), 1, 1)


def test_hybrid_is_reciprocal_rank_fusion(engine: str, tmp_path: Path) -> None:
    table = {"queue lag": [1.0, 0.0]}
    embedder = Embedder("t", lambda text: table[text])
    with open_file(engine, tmp_path, embedder=embedder) as store:
        store.put(**record(record_id="words", body="queue lag queue"), embedding=[0.0, 1.0])  # lexical 1st
        store.put(
            **record(record_id="both", body="queue only"), embedding=[1.0, 0.2]
        )  # lexical 2nd, vector 1st
        store.put(**record(record_id="meaning", body="backlog grows"), embedding=[1.0, 0.5])  # vector 2nd
        store.put(**record(record_id="none", body="rotate logs"), embedding=[-1.0, 0.1])
        store.put(**record(record_id="other-tenant", tenant="team-b", body="queue lag"), embedding=[1.0, 0.0])
        result = store.retrieve(query="queue lag", scorer=HybridScorer(embedder), **SCOPE)  # type: ignore[arg-type]
        weighted = HybridScorer(embedder, lexical_weight=0.0)
        vector_only = store.retrieve(query="queue lag", scorer=weighted, **SCOPE)  # type: ignore[arg-type]
    assert [(h.record_id, h.score) for h in result] == [
        ("both", 1 / 62 + 1 / 61),
        ("words", 1 / 61),
        ("meaning", 1 / 62),
    ]
    assert result.ranked_by == "hybrid:token_overlap+vector:t" and result.eligible_count == 4
    assert [h.record_id for h in vector_only] == ["both", "meaning"]


def test_hybrid_gives_equal_scores_equal_ranks_whatever_the_ids(engine: str, tmp_path: Path) -> None:
    """Records equal on one ranking share its rank (1, 1, 3): the other ranking orders
    them, and the record id only breaks ties of the fused score. Here the lower id is
    the worse one each time, so ranks handed out in id order would put it first."""
    embedder = Embedder("t", lambda text: [1.0, 0.0])
    with open_file(engine, tmp_path, embedder=embedder) as store:
        # Equal lexically ("queue lag" both); "b" is nearer by vector.
        store.put(**record(record_id="a", body="queue lag"), embedding=[1.0, 0.9])
        store.put(**record(record_id="b", body="queue lag"), embedding=[1.0, 0.1])
        # Equal by vector (the same vector); "d" shares more words with the query.
        store.put(**record(record_id="c", body="lag"), embedding=[-1.0, 0.5])
        store.put(**record(record_id="d", body="queue lag now"), embedding=[-1.0, 0.5])
        # Tied on both: equal fused scores, ordered by id.
        store.put(**record(record_id="e", body="queue"), embedding=[-1.0, 0.4])
        store.put(**record(record_id="f", body="queue"), embedding=[-1.0, 0.4])
        result = store.retrieve(
            query="queue lag", limit=10, scorer=HybridScorer(embedder, min_similarity=-1.0), **SCOPE
        )  # type: ignore[arg-type]
    # Lexical ranks: a, b, d 1 (two shared tokens); c, e, f 4. Vector ranks: b 1, a 2, c and d 3, e and f 5.
    assert [(h.record_id, h.score) for h in result] == [
        ("b", 1 / 61 + 1 / 61),
        ("a", 1 / 61 + 1 / 62),
        ("d", 1 / 61 + 1 / 63),
        ("c", 1 / 64 + 1 / 63),
        ("e", 1 / 64 + 1 / 65),
        ("f", 1 / 64 + 1 / 65),
    ]


HYBRID_BODIES = st.sampled_from(["queue lag", "queue", "lag", "backlog", "queue lag backlog"])
HYBRID_VECTORS = st.sampled_from([[1.0, 0.0], [1.0, 0.5], [0.0, 1.0], [-1.0, 0.2], [0.3, 0.3]])


@pytest.mark.skipif(not native_available(), reason="native engine not built in this installation")
@given(
    records=st.lists(st.tuples(HYBRID_BODIES, HYBRID_VECTORS | st.none()), min_size=1, max_size=8),
    renaming=st.permutations(range(8)),
)
def test_renaming_records_never_changes_their_hybrid_scores(
    records: list[tuple[str, list[float] | None]], renaming: list[int]
) -> None:
    """The fused score of a record depends on its text and its vector, never on its id:
    giving the records other ids (the same bodies and vectors, so the same order relations
    between their scores) gives every record the same score, on both engines, and equal
    fused scores are ordered by the new ids. Some records have no vector."""
    embedder = Embedder("h", lambda text: [1.0, 0.25])
    scorer = HybridScorer(embedder, min_similarity=-1.0)

    def scores(ids: list[str], engine: str) -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "ev.db"
            with EvidenceStore(path, engine=engine, embedder=embedder) as store:
                for record_id, (body, vector) in zip(ids, records, strict=False):
                    if vector is not None:
                        store.put(**record(record_id=record_id, body=body), embedding=vector)
            with EvidenceStore(path, engine=engine) as store:  # no embedder: these get no vector
                for record_id, (body, vector) in zip(ids, records, strict=False):
                    if vector is None:
                        store.put(**record(record_id=record_id, body=body))
                result = store.retrieve(query="queue lag", limit=10, scorer=scorer, **SCOPE)  # type: ignore[arg-type]
        got = [(h.record_id, h.score) for h in result]
        assert got == sorted(got, key=lambda pair: (-pair[1], pair[0]))
        return dict(got)

    original = [f"r{i}" for i in range(len(records))]
    renamed = [f"r{renaming[i]}" for i in range(len(records))]
    for engine in ("python", "native"):
        before = scores(original, engine)
        after = scores(renamed, engine)
        assert {renamed[original.index(i)]: score for i, score in before.items()} == after, engine


def test_native_vector_ranking_needs_sqlite_vec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not native_available():
        pytest.skip("native engine not built in this installation")
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # as if it were not installed
    with EvidenceStore(":memory:", engine="native", embedder=TOY) as store:
        store.put(**record())
        with pytest.raises(EngineUnavailableError, match=r"pip install '\.\[vectors\]'"):
            store.retrieve(query="q", scorer=VectorScorer(TOY), **SCOPE)  # type: ignore[arg-type]


def test_a_version_2_database_is_upgraded_to_version_3(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    shutil.copy(FIXTURES / "v2_store.db", path)
    with EvidenceStore(path, engine=engine, embedder=TOY) as store:
        assert store.verify(tenant="team-a").ok and store.verify(tenant="team-b").ok
        assert [v.seq for v in store.history(tenant="team-a", record_id="runbook-queue")] == [1, 2]
        assert store.retrieve(query="queue", **SCOPE)[0].body == "restart the queue consumer, then check lag"  # type: ignore[arg-type]
        store.put(**record(record_id="latency", body="response time runbook"))
        result = store.retrieve(query="q", scorer=VectorScorer(TOY), **SCOPE)  # type: ignore[arg-type]
        assert (result.eligible_count, result.unranked_count) == (2, 1)
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
    assert frozenset(rows.fetchall()) == schema.expected_objects()
    assert conn.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,)
    conn.close()


def test_a_store_opened_read_only_does_not_upgrade_version_2(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    shutil.copy(FIXTURES / "v2_store.db", path)
    with pytest.raises(StoreError, match="open it once without read_only"):
        EvidenceStore(path, engine=engine, read_only=True)


# --- The two engines agree -------------------------------------------------------------

components = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, width=32) | st.sampled_from(
    [0.0, 1e-20]
)


@st.composite
def vector_sets(draw: Any) -> tuple[int, list[list[float]]]:
    dims = draw(st.integers(1, 12))
    vector = st.lists(components, min_size=dims, max_size=dims).filter(lambda v: squared_norm(v) > 0)
    return dims, draw(st.lists(vector, min_size=2, max_size=12))


@pytest.mark.skipif(not native_available(), reason="native engine not built in this installation")
@given(data=vector_sets(), tenants=st.lists(st.sampled_from(["team-a", "team-b"]), min_size=12, max_size=12))
def test_both_engines_rank_vectors_identically(
    data: tuple[int, list[list[float]]], tenants: list[str]
) -> None:
    _dims, vectors = data
    query, stored = vectors[0], vectors[1:]
    embedder = Embedder("h", lambda text: query)
    results = {}
    for engine in ("python", "native"):
        with EvidenceStore(":memory:", engine=engine, embedder=embedder) as store:
            rows = [
                record(
                    tenant=tenants[i],
                    record_id=f"r{i % 5}-{i}",
                    body=f"queue {i % 3}",
                    expires_at=100 + i % 4,
                )
                for i in range(len(stored))
            ]
            store.put_many(rows, embeddings=stored)
            results[engine] = [
                store.retrieve(
                    query="queue 1", limit=10, scorer=scorer, now=101, tenant="team-a", revision="v1"
                )
                for scorer in (VectorScorer(embedder, min_similarity=-1.0), HybridScorer(embedder))
            ]
    assert results["python"] == results["native"]


@pytest.mark.skipif(not native_available(), reason="native engine not built in this installation")
@given(data=vector_sets())
def test_python_cosine_distance_is_sqlite_vec_bit_for_bit(data: tuple[int, list[list[float]]]) -> None:
    dims, vectors = data
    with EvidenceStore(":memory:", engine="native", embedder=TOY) as store:
        store.put(**record())
        store.retrieve(query="q", scorer=VectorScorer(TOY), **SCOPE)  # type: ignore[arg-type]  # loads sqlite-vec
        a, b = (struct.pack(f"<{dims}f", *v) for v in vectors[:2])
        (native,) = store.query("SELECT vec_distance_cosine(?, ?)", [b, a])[0]
    query = [f32(x) for x in vectors[1]]
    python = cosine_distance(query, squared_norm(query), [f32(x) for x in vectors[0]])
    assert struct.pack("<d", python) == struct.pack("<d", native)


@pytest.mark.skipif(not native_available(), reason="native engine not built in this installation")
def test_vectors_written_by_raw_sql_rank_the_same_on_both_engines(tmp_path: Path) -> None:
    """The API refuses such vectors; raw SQL can store them. Neither engine may crash,
    and both must rank them identically (a NaN distance is unranked, as SQLite's NULL)."""
    path = tmp_path / "raw.db"
    odd = {
        "zero": [0.0, 0.0],
        "nan": [math.nan, 1.0],
        "inf": [math.inf, 1.0],
        "huge": [3e38, 3e38],
        "tiny": [1e-40, 0.0],
        "fine": [1.0, 1.0],
    }
    with EvidenceStore(path, engine="python") as store:
        store.put_many([record(record_id=name) for name in odd])
    conn = sqlite3.connect(path)
    for name, values in odd.items():
        conn.execute(
            "INSERT INTO evidence_vectors VALUES ('team-a', ?, 1, 'm', 2, ?)",
            (name, struct.pack("<2f", *values)),
        )
    conn.commit()
    conn.close()
    embedder = Embedder("m", lambda text: [1.0, 0.5])
    results = {}
    for engine in ("python", "native"):
        with EvidenceStore(path, engine=engine) as store:
            results[engine] = [
                store.retrieve(query="queue", scorer=scorer, **SCOPE)  # type: ignore[arg-type]
                for scorer in (VectorScorer(embedder, min_similarity=-1.0), HybridScorer(embedder))
            ]
    assert results["python"] == results["native"]
    # "tiny"'s float32 norm underflows to zero: its distance is -inf, which never ranks.
    assert [h.record_id for h in results["python"][0]] == ["fine"]


EMBEDDING_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.binary(max_size=9),
)
EMBEDDINGS = st.one_of(
    EMBEDDING_VALUES,
    st.lists(EMBEDDING_VALUES, max_size=5),
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=5),
)


def snapshot(path: Path) -> tuple[list[Any], list[Any]]:
    with sqlite3.connect(path) as conn:
        current = conn.execute("SELECT * FROM evidence ORDER BY tenant, record_id").fetchall()
        stored = conn.execute("SELECT * FROM evidence_vectors ORDER BY tenant, record_id").fetchall()
    conn.close()
    return current, stored


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(embedding=EMBEDDINGS, as_batch=st.booleans())
def test_arbitrary_embeddings_are_stored_or_refused_with_nothing_changed(
    engine: str, tmp_path_factory: pytest.TempPathFactory, embedding: Any, as_batch: bool
) -> None:
    if engine == "native" and not native_available():
        pytest.skip("native engine not built in this installation")
    path = tmp_path_factory.mktemp("fuzz") / "ev.db"
    with EvidenceStore(path, engine=engine, embedder=TOY) as store:
        store.put(**record(body="kept"))
        before = snapshot(path)
        try:
            if as_batch:
                store.put_many([record(body="changed")], embeddings=[embedding])
            else:
                store.put(**record(body="changed"), embedding=embedding)
        except ValidationError:
            assert snapshot(path) == before
        else:
            _current, stored = snapshot(path)
            expected = TOY.vector("changed") if embedding is None else None
            assert [row[1] for row in stored] == ["r1"] and stored[0][2] == 2
            assert expected is None or stored[0][5] == expected.blob


def test_the_python_engine_computes_distances_outside_the_store_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow ranking must not stall the store's other threads, as with custom scorers."""
    from pyevidence.storage.engines import python_engine

    with EvidenceStore(tmp_path / "ev.db", engine="python", embedder=TOY) as store:
        store.put(**record())
        held: list[bool] = []
        real = python_engine.cosine_distance

        def watching(*args: Any) -> float:
            held.append(store._lock.locked())
            return real(*args)

        monkeypatch.setattr(python_engine, "cosine_distance", watching)
        for scorer in (VectorScorer(TOY), HybridScorer(TOY)):
            store.retrieve(query="q", scorer=scorer, **SCOPE)  # type: ignore[arg-type]
    assert held == [False, False]


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Embedder("", hashed), "model"),
        (lambda: Embedder("m", "not callable"), "embed"),
        (lambda: Embedder("model \ud800", hashed), "model"),  # a lone surrogate: not storable text
        (lambda: VectorScorer("not an embedder"), "embedder"),  # type: ignore[arg-type]
        (lambda: VectorScorer(TOY, min_similarity=math.nan), "min_similarity"),
        (lambda: VectorScorer(TOY, min_similarity=True), "min_similarity"),
        (lambda: HybridScorer(TOY, lexical_weight=-1.0), "lexical_weight"),
        (lambda: HybridScorer(TOY, vector_weight=math.inf), "vector_weight"),
        (lambda: HybridScorer(TOY, vector_weight=True), "vector_weight"),
        (lambda: HybridScorer(TOY, lexical_weight=0, vector_weight=0.0), "vector_weight"),
        (lambda: EvidenceStore(":memory:", embedder=hashed), "embedder"),  # type: ignore[arg-type]
    ],
)
def test_bad_vector_configuration_is_refused(make: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make()
    assert caught.value.field == field


def test_a_hybrid_scorer_with_both_weights_zero_is_refused() -> None:
    """Both weights 0 would rank nothing, ever: every retrieve would look like "no evidence
    found". It is refused when the scorer is made, naming both weights."""
    with pytest.raises(ValidationError) as caught:
        HybridScorer(TOY, lexical_weight=0.0, vector_weight=0)
    assert str(caught.value) == (
        "vector_weight: lexical_weight and vector_weight are both 0: at least one must be > 0, "
        "or no record could ever be ranked"
    )
    HybridScorer(TOY, lexical_weight=0.0)  # one of them 0 is fine
    HybridScorer(TOY, vector_weight=0.0)
