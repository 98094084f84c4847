"""The storage engines behind EvidenceStore. Each one is opened as
``Engine(where, read_only=...)`` with a path already checked by pyevidence/storage/paths.py
(``where.target`` is what SQLite opens) and offers the same methods:

- ``put(record)``, ``put_many(records, vectors=None, *, operation="put_many")`` (one transaction;
  ``operation`` is the call its errors name: put() of a record with a vector passes "put"),
  ``forget(tenant, record_id) -> bool``
- ``candidates(tenant, revision, now) -> list[Candidate]``: the eligible rows only, by record_id
- ``backup(dest)`` (``dest``: the absolute path of a new empty file, paths.new_file), ``close()``

The native engine also offers ``rank_by_tokens(...)``, the default token ranking run
inside SQLite, and ``run(sql, params, read_only=...)`` for store.query().
"""
