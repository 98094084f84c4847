"""The cluster engine's ranking statement, checked where no cluster is needed.

A cluster runs retrieve as one SQL statement (RANK_SQL in storage/engines/cluster_engine.py),
a copy of the native engine's C statement that also counts the eligible rows. Here it runs on
a native store's connection, through store.query(), and must give exactly what retrieve gives:
the same hits in the same order with the same scores, and the same eligible count.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import rich_text

from pyevidence import EvidenceStore, native_available
from pyevidence.storage.engines.cluster_engine import RANK_SQL

pytestmark = pytest.mark.skipif(not native_available(), reason="store.query() needs the native engine")

TENANTS = ["team-a", "team-b"]
# Few words, so that many records share tokens with a query and the top-k cut matters.
plain_text = st.lists(st.sampled_from(["queue", "lag", "disk", "Queue", "k8s", "503"]), min_size=1).map(
    " ".join
)
text = plain_text | rich_text
REVISIONS = ["v1", "v2"]

puts = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.integers(0, 11),
        st.sampled_from(REVISIONS),
        text.filter(lambda body: body.strip() != ""),
        st.integers(0, 20),
    ),
    max_size=40,
)
questions = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.sampled_from(REVISIONS),
        st.integers(-1, 21),
        text,
        st.integers(1, 10),
    ),
    min_size=1,
    max_size=8,
)


@settings(deadline=None)
@given(puts=puts, questions=questions)
def test_the_cluster_ranking_statement_answers_as_retrieve(
    puts: list[tuple[str, int, str, str, int]], questions: list[tuple[str, str, int, str, int]]
) -> None:
    with EvidenceStore(":memory:", engine="native") as store:
        for tenant, number, revision, body, expires_at in puts:
            store.put(
                tenant=tenant,
                record_id=f"r{number}",
                revision=revision,
                kind="runbook",
                body=body,
                source="s",
                expires_at=expires_at,
            )
        for tenant, revision, now, query, limit in questions:
            if not query.strip():
                continue
            expected = store.retrieve(tenant=tenant, revision=revision, query=query, now=now, limit=limit)
            rows = store.query(RANK_SQL, [tenant, revision, now, query, limit]).rows
            hits = [(row[1], row[7], row[8], row[9]) for row in rows if row[1] is not None]
            want = []
            for hit in expected.hits:
                seq, digest = hit.version.split("-")
                want.append((hit.record_id, int(seq), digest, hit.score))
            assert hits == want
            assert rows[0][0] == expected.eligible_count
