"""The storage engines behind EvidenceStore. Each one offers the same methods:

- ``put(record)``, ``put_many(records)`` (one transaction), ``forget(tenant, record_id) -> bool``
- ``candidates(tenant, revision, now) -> list[Candidate]``: the eligible rows only, by record_id
- ``backup(dest)``, ``close()``

The native engine also offers ``rank_by_tokens(...)``, the default token ranking run
inside SQLite, and ``run(sql, params, read_only=...)`` for store.query().
"""
