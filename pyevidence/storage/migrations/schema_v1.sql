-- pyevidence schema, version 1. The one definition of the storage layout:
-- both engines execute this file as-is, and a plain SQL user can too:
--   sqlite3 evidence.db < schema.sql
--
-- The CHECK constraints repeat the put() validation rules as a guard, so a
-- raw-SQL writer cannot store a row the API would reject. "Non-empty" means
-- "not empty after trimming whitespace", where whitespace is exactly the set
-- of characters Python's str.isspace() accepts (tests/test_schema.py proves
-- the two agree). Emptiness is tested with <> '' rather than length(),
-- because length() stops counting at the first NUL character.
-- The columns are declared in primary-key order first: SQLite 3.40.0-3.41.0
-- report false "NULL value" errors in PRAGMA integrity_check for a WITHOUT ROWID
-- table whose primary key is declared in another order than its columns.
CREATE TABLE IF NOT EXISTS evidence (
  tenant     TEXT    NOT NULL CHECK (trim(tenant,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> ''),
  revision   TEXT    NOT NULL CHECK (trim(revision,  char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> ''),
  expires_at INTEGER NOT NULL CHECK (expires_at >= 0),
  record_id  TEXT    NOT NULL CHECK (trim(record_id, char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> ''),
  kind       TEXT    NOT NULL CHECK (kind IN ('working', 'incident', 'runbook')),
  body       TEXT    NOT NULL CHECK (trim(body,      char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> ''),
  source     TEXT    NOT NULL CHECK (trim(source,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> ''),
  -- The rows are stored in eligibility order, so the eligible rows of a
  -- (tenant, revision) at a time are one contiguous range of the table: the
  -- ranking scan reads them in sequence instead of one lookup per row.
  PRIMARY KEY (tenant, revision, expires_at, record_id),
  -- The identity of a record: one row per (tenant, record_id).
  UNIQUE (tenant, record_id)
) STRICT, WITHOUT ROWID;

-- The same range without the bodies, for counting the eligible rows cheaply.
CREATE INDEX IF NOT EXISTS evidence_scope ON evidence (tenant, revision, expires_at);

PRAGMA user_version = 1;
