"""The storage engines behind EvidenceStore. Each one offers the same methods:

- ``put(record)``, ``forget(tenant, record_id) -> bool``
- ``candidates(tenant, revision, now) -> list[Candidate]``: the eligible rows only
- ``close()``

An engine may also offer ``rank_by_tokens(...)`` to run the default token ranking
itself (the native engine does it inside SQLite).
"""
