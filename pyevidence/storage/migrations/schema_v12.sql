-- pyevidence schema, version 12. The one definition of the storage layout:
-- both engines execute this file as-is, and so can a plain SQL user whose
-- connection has the pyevidence extension loaded (the triggers call its
-- evidence_sha256(), evidence_hash_bytes() and evidence_utf8_valid()):
--   sqlite3 evidence.db '.load ./evidence' '.read schema.sql'
--
-- The records. evidence_versions is the history: every put of a (tenant,
-- record_id) appends an immutable version, and every forget appends a
-- tombstone; each tenant's versions form a hash chain. It holds the one copy of
-- every body. evidence_current points each live record at its latest version
-- (stored by the token index's scope and number, see below), evidence_forgotten each forgotten record at its
-- tombstone, and the view evidence shows the current records with their content,
-- read from the history. Writes go through the view
-- evidence_put (INSERT = put) and DELETE FROM evidence (= forget); the
-- triggers keep the tables consistent and refuse anything else, under every
-- conflict policy (INSERT OR IGNORE, OR REPLACE, ...; tests/test_raw_sql.py). evidence_vectors
-- holds an optional embedding of each current record, for vector ranking.
--
-- The CHECK constraints of evidence_versions repeat the put() validation rules as
-- a guard, so a raw-SQL writer cannot store a row the API would reject (NULL
-- passes a CHECK: a forgotten version has no content left to check); a current
-- row must point at such a version, with the same revision and expires_at.
-- "Non-empty" means "not empty after trimming whitespace", where whitespace is
-- exactly the set of characters Python's str.isspace() accepts
-- (tests/test_schema.py proves the two agree).
-- A CHECK alone is not enough for a write through evidence_put: an outer
-- INSERT OR IGNORE / OR FAIL overrides the conflict policy of the trigger's
-- statements, and a refused current row would leave its version behind. So the
-- put trigger refuses every bad value itself, with RAISE(ABORT), which no
-- conflict policy overrides, before it writes anything. Text must also be valid
-- UTF-8 (evidence_utf8_valid(), registered by the extension and by the Python
-- engine): a CAST of other bytes to TEXT would store what put() cannot.
-- Emptiness is tested with <> '' rather than length(), because length() stops
-- counting at the first NUL character. A text that starts with a printable ASCII
-- character (code points 33 to 126) is not blank, and the CHECKs accept it from
-- unicode() alone: trim() copies the whole text, and on the bodies that copy was a
-- sixth of put_many's time (schema version 6 added this shortcut; same rule).
-- The columns are declared in primary-key order first: SQLite 3.40.0-3.41.0
-- report false "NULL value" errors in PRAGMA integrity_check for a WITHOUT ROWID
-- table whose primary key is declared in another order than its columns.

-- The history. One row per put (operation 'put') or forget ('forget') of a
-- record, never changed afterwards except that forget erases the content of
-- the record's earlier versions (revision, kind, body, source, expires_at
-- become NULL; the hashes stay, so the chain can still be verified).
--   chain_seq     position in the tenant's chain: 1, 2, 3, ...
--   seq           the record's own version number: 1, 2, 3, ...
--   previous      chain_seq of the record's version before this one (NULL for its
--                 first): the versions of a record are a list linked backwards from
--                 its latest, which evidence_current or evidence_forgotten names. Not
--                 hashed: verify() checks each link against the chain itself.
--   content_hash  put: evidence_sha256('pyevidence content 2', tenant, record_id,
--                      revision, kind, body, source, expires_at)
--                 forget: evidence_sha256('pyevidence forget 2', tenant, record_id, seq)
--   chain_hash    evidence_sha256('pyevidence chain 2', <chain_hash of chain_seq - 1,
--                 or '' for the first>, chain_seq, record_id, seq, operation, content_hash)
-- pyevidence/storage/versions.py verifies exactly these formulas. evidence_sha256()
-- gives 64 lowercase hex digits, and the formulas hash the hashes they chain in that
-- form; the table stores the 32 bytes they stand for (evidence_hash_bytes(); schema
-- version 8: 64 bytes less a version than the hex text, 136.3 -> 121.3 MB for the
-- benchmark's 100,000 records), and every reader sees the hex again: the view
-- evidence, versions.py and the writers turn them back with lower(hex(...)).
CREATE TABLE IF NOT EXISTS evidence_versions (
  tenant       TEXT    NOT NULL CHECK (CASE WHEN unicode(tenant) BETWEEN 33 AND 126 THEN 1 ELSE trim(tenant,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> '' END),
  chain_seq    INTEGER NOT NULL CHECK (chain_seq >= 1),
  record_id    TEXT    NOT NULL CHECK (CASE WHEN unicode(record_id) BETWEEN 33 AND 126 THEN 1 ELSE trim(record_id, char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> '' END),
  seq          INTEGER NOT NULL CHECK (seq >= 1),
  previous     INTEGER          CHECK (previous >= 1 AND previous < chain_seq),
  operation    TEXT    NOT NULL CHECK (operation IN ('put', 'forget')),
  revision     TEXT             CHECK (CASE WHEN unicode(revision) BETWEEN 33 AND 126 THEN 1 ELSE trim(revision,  char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> '' END),
  kind         TEXT             CHECK (kind IN ('working', 'incident', 'runbook')),
  body         TEXT             CHECK (CASE WHEN unicode(body) BETWEEN 33 AND 126 THEN 1 ELSE trim(body,      char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> '' END),
  source       TEXT             CHECK (CASE WHEN unicode(source) BETWEEN 33 AND 126 THEN 1 ELSE trim(source,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) <> '' END),
  expires_at   INTEGER          CHECK (expires_at >= 0),
  content_hash BLOB    NOT NULL CHECK (length(content_hash) = 32),
  chain_hash   BLOB    NOT NULL CHECK (length(chain_hash) = 32),
  -- A version has all of its content or none of it (forgotten, or a tombstone).
  CHECK ((revision IS NULL) = (body IS NULL) AND (kind IS NULL) = (body IS NULL)
     AND (source IS NULL) = (body IS NULL) AND (expires_at IS NULL) = (body IS NULL)),
  CHECK (operation = 'put' OR body IS NULL),
  CHECK ((seq = 1) = (previous IS NULL)),
  PRIMARY KEY (tenant, chain_seq)
) STRICT, WITHOUT ROWID;

-- The latest version of each record that has versions but no current row: a
-- forgotten record's tombstone (and, for a moment inside forget's trigger, the put
-- being forgotten). With evidence_current, whose rows point at the latest version of
-- each live record, it names the head of every record's list of versions, which
-- each version's `previous` links back to its first (schema version 11; before it,
-- UNIQUE (tenant, record_id, seq) found them: a tree keyed by record, 43 bytes a
-- version, that a batch wrote at random places). Its rows are written by forget's
-- trigger and dropped by the next put of the record; the triggers below refuse any
-- other write, by what the tenant's chain holds at that moment.
CREATE TABLE IF NOT EXISTS evidence_forgotten (
  tenant    TEXT    NOT NULL,
  record_id TEXT    NOT NULL,
  chain_seq INTEGER NOT NULL,
  PRIMARY KEY (tenant, record_id)
) STRICT, WITHOUT ROWID;

-- The current pointer: one row per live record, naming its latest version by its
-- place in the tenant's chain, and its document number in the token index (doc; see
-- "The token index" below). The rows are small: the bodies stay in evidence_versions
-- (schema version 6; before it, this table held a second copy of each body). They are
-- stored by scope and number, (tenant, revision, doc) (schema version 12), so that:
--   * a number leads to its record by the key: the index needs no table of its own
--     from numbers to records (until version 12, evidence_index_docs);
--   * a scope numbers the rows it gains upwards, so a batch's new rows go at the end
--     of their scope's range, not at random places all over the table (at a million
--     records, a batch of 10,000 dirtied most of the table's pages);
--   * the eligible rows of a (tenant, revision) are still one range of the table,
--     read with expires_at > now checked on each row.
-- expires_at and record_id end the key. The index by record below holds the key's
-- columns, so a walk of a scope's records in record_id order (the token search's, for
-- many tied documents) reads their expiry and number from that index alone. And a
-- number is unique in its scope by the rules that give it (the triggers below, the
-- writers), not by the key: the rebuild renumbers a scope in one statement, during
-- which two rows may briefly hold the same number.
CREATE TABLE IF NOT EXISTS evidence_current (
  tenant     TEXT    NOT NULL,
  revision   TEXT    NOT NULL,
  doc        INTEGER NOT NULL CHECK (doc BETWEEN 0 AND 4294967295),
  expires_at INTEGER NOT NULL,
  record_id  TEXT    NOT NULL,
  chain_seq  INTEGER NOT NULL,
  PRIMARY KEY (tenant, revision, doc, expires_at, record_id)
) STRICT, WITHOUT ROWID;

-- The identity of a record: one row per (tenant, record_id). An index of its own rather
-- than a UNIQUE constraint of the table: SQLite 3.40 reads the key's columns from the
-- index it makes for a constraint only after a seek of the row, and from this one
-- without, so a walk of a tenant's records in record_id order (the token search's, for
-- many tied documents) reads their revision, number and expiry from the index alone.
CREATE UNIQUE INDEX IF NOT EXISTS evidence_current_by_record ON evidence_current (tenant, record_id);

-- The current records with their content: what retrieve, the citations and raw SQL
-- readers see. version is the version's seq. A LEFT JOIN, so that a query that
-- reads no content column (a count of eligible rows) never touches the history:
-- SQLite leaves out a LEFT JOIN on a primary key whose columns nothing reads.
CREATE VIEW IF NOT EXISTS evidence AS
  SELECT c.tenant AS tenant, c.revision AS revision, c.expires_at AS expires_at, c.record_id AS record_id,
         v.kind AS kind, v.body AS body, v.source AS source, v.seq AS version,
         nullif(lower(hex(v.content_hash)), '') AS content_hash
    FROM evidence_current AS c
    LEFT JOIN evidence_versions AS v ON v.tenant = c.tenant AND v.chain_seq = c.chain_seq;

-- forget: DELETE FROM evidence WHERE tenant = ? AND record_id = ? deletes the
-- pointer, and the trigger on evidence_current does the rest. (SQLite's changes()
-- does not count rows deleted through a view: pyevidence's own forget deletes from
-- evidence_current, whose count it reads.)
CREATE TRIGGER IF NOT EXISTS evidence_deletes_forget INSTEAD OF DELETE ON evidence
BEGIN
  DELETE FROM evidence_current WHERE tenant = OLD.tenant AND record_id = OLD.record_id;
END;

CREATE TRIGGER IF NOT EXISTS evidence_is_not_inserted_into INSTEAD OF INSERT ON evidence
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

CREATE TRIGGER IF NOT EXISTS evidence_is_not_updated INSTEAD OF UPDATE ON evidence
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

-- put: INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at).
-- Appends the next version to the tenant's chain; the trigger after it points the
-- current row at it.
CREATE VIEW IF NOT EXISTS evidence_put AS
  SELECT tenant, record_id, revision, kind, body, source, expires_at FROM evidence;

CREATE TRIGGER IF NOT EXISTS evidence_put_appends INSTEAD OF INSERT ON evidence_put
BEGIN
  -- Types first, so a mistyped value is refused as a constraint, before it is hashed.
  SELECT RAISE(ABORT, 'evidence_put: tenant, record_id, revision, kind, body and source must be text, expires_at an integer')
   WHERE typeof(NEW.tenant) <> 'text' OR typeof(NEW.record_id) <> 'text' OR typeof(NEW.revision) <> 'text'
      OR typeof(NEW.kind) <> 'text' OR typeof(NEW.body) <> 'text' OR typeof(NEW.source) <> 'text'
      OR typeof(NEW.expires_at) NOT IN ('integer', 'real');
  -- A real that is a whole number is stored and hashed as that integer, as a STRICT
  -- INTEGER column would (hosts such as Node's better-sqlite3 bind every number as a real).
  -- An integer is checked against integers only: SQLite compares an integer with a real
  -- through long double, and under valgrind, which computes that as a double, 2**63 - 1 = 2**63.
  SELECT RAISE(ABORT, 'evidence_put: expires_at must be a whole number from 0 to 9223372036854775807')
   WHERE CASE WHEN typeof(NEW.expires_at) = 'integer' THEN NEW.expires_at < 0
              ELSE NOT (NEW.expires_at >= 0.0 AND NEW.expires_at < 9223372036854775808.0
                        AND NEW.expires_at = CAST(NEW.expires_at AS INTEGER)) END;
  -- Then the values, still before any write (see the top of this file: RAISE(ABORT)
  -- holds under every conflict policy, a CHECK does not).
  SELECT RAISE(ABORT, 'evidence_put: tenant, record_id, revision, kind, body and source must be valid UTF-8 text')
   WHERE NOT (evidence_utf8_valid(CAST(NEW.tenant AS BLOB)) AND evidence_utf8_valid(CAST(NEW.record_id AS BLOB))
              AND evidence_utf8_valid(CAST(NEW.revision AS BLOB)) AND evidence_utf8_valid(CAST(NEW.kind AS BLOB))
              AND evidence_utf8_valid(CAST(NEW.body AS BLOB)) AND evidence_utf8_valid(CAST(NEW.source AS BLOB)));
  SELECT RAISE(ABORT, 'evidence_put: tenant, record_id, revision, body and source must not be empty or only whitespace')
   WHERE trim(NEW.tenant,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) = ''
      OR trim(NEW.record_id, char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) = ''
      OR trim(NEW.revision,  char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) = ''
      OR trim(NEW.body,      char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) = ''
      OR trim(NEW.source,    char(9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8232,8233,8239,8287,12288)) = '';
  SELECT RAISE(ABORT, 'evidence_put: kind must be working, incident or runbook')
   WHERE NEW.kind NOT IN ('working', 'incident', 'runbook');
  -- latest: the record's latest version (NULL: it has none), which the new one follows.
  INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation,
                                 revision, kind, body, source, expires_at, content_hash, chain_hash)
  SELECT NEW.tenant, link.chain_seq, NEW.record_id, link.seq, link.latest, 'put',
         NEW.revision, NEW.kind, NEW.body, NEW.source, CAST(NEW.expires_at AS INTEGER),
         evidence_hash_bytes(link.content_hash),
         evidence_hash_bytes(evidence_sha256('pyevidence chain 2', link.previous, link.chain_seq, NEW.record_id,
                                             link.seq, 'put', link.content_hash))
  FROM (SELECT
          coalesce((SELECT max(chain_seq) FROM evidence_versions WHERE tenant = NEW.tenant), 0) + 1 AS chain_seq,
          coalesce((SELECT seq FROM evidence_versions WHERE tenant = NEW.tenant AND chain_seq = latest), 0) + 1 AS seq,
          latest,
          coalesce((SELECT lower(hex(chain_hash)) FROM evidence_versions
                     WHERE tenant = NEW.tenant ORDER BY chain_seq DESC LIMIT 1), '') AS previous,
          evidence_sha256('pyevidence content 2', NEW.tenant, NEW.record_id, NEW.revision, NEW.kind,
                          NEW.body, NEW.source, CAST(NEW.expires_at AS INTEGER)) AS content_hash
        FROM (SELECT coalesce((SELECT chain_seq FROM evidence_current
                                WHERE tenant = NEW.tenant AND record_id = NEW.record_id),
                              (SELECT chain_seq FROM evidence_forgotten
                                WHERE tenant = NEW.tenant AND record_id = NEW.record_id)) AS latest)) AS link;
END;

-- pyevidence's own writer (put and put_many of both engines: csrc/evidence_batch.c,
-- pyevidence/storage/engines/python_engine.py) appends versions and writes current rows
-- itself, a batch at a time, with the numbers and hashes these triggers would
-- compute (tests/test_write_path.py proves the rows equal). While its statements
-- run, and only then, evidence_writer_vouches() is 1 on its connection, and the
-- triggers that would redo or recheck that work step aside: this one, the check of
-- appended versions and the checks of current rows below, and the token index's.
-- Everywhere else it is 0: the extension and pyevidence.storage.sql_functions
-- register it so, and every raw SQL write is checked in full. (A connection with
-- none of pyevidence's functions cannot write these tables at all: "no such function".)
-- Every put version appended (by the trigger above, or as a raw next link, which
-- evidence_versions_are_appended checks) revives its record if it was forgotten and
-- becomes its record's current row, with its document number: the one it has if it
-- stays in its scope, else its new scope's next (the scope is created first if the
-- index has none yet).
CREATE TRIGGER IF NOT EXISTS evidence_versions_point_the_current_row AFTER INSERT ON evidence_versions
WHEN NEW.operation = 'put' AND NOT evidence_writer_vouches()
BEGIN
  DELETE FROM evidence_forgotten WHERE tenant = NEW.tenant AND record_id = NEW.record_id;
  INSERT INTO evidence_index_scopes (tenant, revision, scope, docs, next_doc)
    SELECT NEW.tenant, NEW.revision, coalesce(max(scope), 0) + 1, 0, 0 FROM evidence_index_scopes WHERE true
    ON CONFLICT (tenant, revision) DO NOTHING;
  INSERT INTO evidence_current (tenant, revision, expires_at, record_id, doc, chain_seq)
  VALUES (NEW.tenant, NEW.revision, NEW.expires_at, NEW.record_id,
          coalesce((SELECT doc FROM evidence_current
                     WHERE tenant = NEW.tenant AND record_id = NEW.record_id AND revision = NEW.revision),
                   (SELECT next_doc FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision)),
          NEW.chain_seq)
  ON CONFLICT (tenant, record_id) DO UPDATE SET
    revision = excluded.revision, expires_at = excluded.expires_at, doc = excluded.doc,
    chain_seq = excluded.chain_seq;
END;

-- forget: DELETE FROM evidence (or evidence_current) WHERE tenant = ? AND record_id = ?.
-- Takes the record out of the token index while its body is still there to
-- tokenize; names its latest version in evidence_forgotten, as its current row did;
-- appends a tombstone to the chain, which then becomes the latest; then erases the
-- content of the record's earlier versions, walking back through `previous` to the
-- tombstone before them, if any (what preceded that one was erased then). Only the
-- hashes remain.
CREATE TRIGGER IF NOT EXISTS evidence_forget_erases AFTER DELETE ON evidence_current
BEGIN
  INSERT INTO evidence_index_remove (tenant, revision, record_id, expires_at, doc, body, keep)
  SELECT OLD.tenant, OLD.revision, OLD.record_id, OLD.expires_at, OLD.doc, body, 0
    FROM evidence_versions WHERE tenant = OLD.tenant AND chain_seq = OLD.chain_seq;
  INSERT INTO evidence_forgotten (tenant, record_id, chain_seq) VALUES (OLD.tenant, OLD.record_id, OLD.chain_seq);
  INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation, content_hash, chain_hash)
  SELECT OLD.tenant, link.chain_seq, OLD.record_id, link.seq, OLD.chain_seq, 'forget',
         evidence_hash_bytes(link.content_hash),
         evidence_hash_bytes(evidence_sha256('pyevidence chain 2', link.previous, link.chain_seq, OLD.record_id,
                                             link.seq, 'forget', link.content_hash))
  FROM (SELECT chain_seq, seq, previous,
               evidence_sha256('pyevidence forget 2', OLD.tenant, OLD.record_id, seq) AS content_hash
          FROM (SELECT
                  coalesce((SELECT max(chain_seq) FROM evidence_versions WHERE tenant = OLD.tenant), 0) + 1
                    AS chain_seq,
                  (SELECT seq FROM evidence_versions WHERE tenant = OLD.tenant AND chain_seq = OLD.chain_seq) + 1
                    AS seq,
                  coalesce((SELECT lower(hex(chain_hash)) FROM evidence_versions
                             WHERE tenant = OLD.tenant ORDER BY chain_seq DESC LIMIT 1), '') AS previous))
       AS link;
  UPDATE evidence_forgotten SET chain_seq = (SELECT max(chain_seq) FROM evidence_versions WHERE tenant = OLD.tenant)
   WHERE tenant = OLD.tenant AND record_id = OLD.record_id;
  UPDATE evidence_versions
     SET revision = NULL, kind = NULL, body = NULL, source = NULL, expires_at = NULL
   WHERE tenant = OLD.tenant AND operation = 'put' AND body IS NOT NULL
     AND chain_seq IN (WITH RECURSIVE earlier (chain_seq) AS (
                         SELECT OLD.chain_seq
                         UNION ALL
                         SELECT v.previous FROM earlier
                           JOIN evidence_versions AS v ON v.tenant = OLD.tenant AND v.chain_seq = earlier.chain_seq
                          WHERE v.operation = 'put' AND v.previous IS NOT NULL)
                       SELECT chain_seq FROM earlier);
END;

-- The current row must point at the latest version of its record, a put, with
-- the same revision and expires_at: a write to evidence_current that did not come
-- through evidence_put (or that would point a record back at an older version)
-- is refused. The latest: no later link of the tenant's chain is of the same record.
-- For a put's new row, the chain's last link, that range is empty; an update that
-- keeps the pointer keeps a version that was already checked. AFTER, not BEFORE: by
-- then an INSERT OR REPLACE has deleted the row it replaces, and with recursive
-- triggers on, that delete has run forget's trigger, so the check sees the chain as
-- the statement left it. The engines' batch
-- writer, which has just appended that version itself, vouches for its rows and
-- is spared the two lookups a row (schema version 7: about 6% of put_many).
CREATE TRIGGER IF NOT EXISTS evidence_insert_is_the_latest_version AFTER INSERT ON evidence_current
WHEN NOT evidence_writer_vouches() AND NOT EXISTS (SELECT 1 FROM evidence_versions AS v
                  WHERE v.tenant = NEW.tenant AND v.chain_seq = NEW.chain_seq AND v.record_id = NEW.record_id
                    AND v.operation = 'put' AND v.revision = NEW.revision AND v.expires_at = NEW.expires_at
                    AND (NOT EXISTS (SELECT 1 FROM evidence_versions AS later
                                  WHERE later.tenant = NEW.tenant AND later.chain_seq > NEW.chain_seq
                                    AND later.record_id = NEW.record_id)))
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

CREATE TRIGGER IF NOT EXISTS evidence_update_is_the_latest_version AFTER UPDATE ON evidence_current
WHEN NOT evidence_writer_vouches() AND NOT EXISTS (SELECT 1 FROM evidence_versions AS v
                  WHERE v.tenant = NEW.tenant AND v.chain_seq = NEW.chain_seq AND v.record_id = NEW.record_id
                    AND v.operation = 'put' AND v.revision = NEW.revision AND v.expires_at = NEW.expires_at
                    AND ((NEW.chain_seq = OLD.chain_seq AND NEW.tenant = OLD.tenant AND NEW.record_id = OLD.record_id)
                         OR NOT EXISTS (SELECT 1 FROM evidence_versions AS later
                                  WHERE later.tenant = NEW.tenant AND later.chain_seq > NEW.chain_seq
                                    AND later.record_id = NEW.record_id)))
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

-- A current row's document number is the token index's to give, as the trigger
-- evidence_versions_point_the_current_row gives it: the number the record has if it
-- stays in its scope, else the scope's next (0 in a scope the index does not hold
-- yet). BEFORE, so that a refused number never reaches the index. The one other
-- change allowed renumbers a row of a scope the index does not hold: the rebuild
-- empties the index, its scopes included, numbers every scope's rows 0, 1, ...
-- anew, then enters them.
CREATE TRIGGER IF NOT EXISTS evidence_current_insert_is_numbered BEFORE INSERT ON evidence_current
WHEN NOT evidence_writer_vouches() AND NEW.doc IS NOT coalesce(
       (SELECT doc FROM evidence_current
         WHERE tenant = NEW.tenant AND record_id = NEW.record_id AND revision = NEW.revision),
       (SELECT next_doc FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision), 0)
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

CREATE TRIGGER IF NOT EXISTS evidence_current_update_is_numbered BEFORE UPDATE ON evidence_current
WHEN NOT evidence_writer_vouches()
 AND NEW.doc IS NOT CASE WHEN NEW.tenant = OLD.tenant AND NEW.record_id = OLD.record_id AND NEW.revision = OLD.revision
                         THEN OLD.doc
                         ELSE coalesce((SELECT next_doc FROM evidence_index_scopes
                                         WHERE tenant = NEW.tenant AND revision = NEW.revision), 0) END
 AND EXISTS (SELECT 1 FROM evidence_index_scopes WHERE tenant = OLD.tenant AND revision = OLD.revision)
BEGIN
  SELECT RAISE(ABORT, 'evidence rows are written through the evidence_put view (INSERT INTO evidence_put ...)');
END;

-- Versions are appended by evidence_put and forget only. A raw INSERT INTO
-- evidence_versions is refused unless it is what those would append: the tenant's
-- next link with their hashes, in valid UTF-8 (the table's CHECKs cover the other
-- rules), following the record's latest version (its current row's, else its
-- evidence_forgotten row's, else none: then it is version 1); a put with its
-- content (it then becomes the current row, as a put does); a tombstone only for a
-- record whose current row is gone and whose latest version still has its content
-- (forget's trigger appends it at that moment).
CREATE TRIGGER IF NOT EXISTS evidence_versions_are_appended BEFORE INSERT ON evidence_versions
WHEN NOT evidence_writer_vouches() AND (NOT (evidence_utf8_valid(CAST(NEW.tenant AS BLOB)) AND evidence_utf8_valid(CAST(NEW.record_id AS BLOB))
          AND coalesce(evidence_utf8_valid(CAST(NEW.revision AS BLOB)), 1)
          AND coalesce(evidence_utf8_valid(CAST(NEW.kind AS BLOB)), 1)
          AND coalesce(evidence_utf8_valid(CAST(NEW.body AS BLOB)), 1)
          AND coalesce(evidence_utf8_valid(CAST(NEW.source AS BLOB)), 1))
  OR NEW.chain_seq IS NOT coalesce((SELECT max(chain_seq) FROM evidence_versions WHERE tenant = NEW.tenant), 0) + 1
  OR NEW.previous IS NOT coalesce((SELECT chain_seq FROM evidence_current
                                     WHERE tenant = NEW.tenant AND record_id = NEW.record_id),
                                   (SELECT chain_seq FROM evidence_forgotten
                                     WHERE tenant = NEW.tenant AND record_id = NEW.record_id))
  OR NEW.seq IS NOT coalesce((SELECT seq FROM evidence_versions
                               WHERE tenant = NEW.tenant AND chain_seq = NEW.previous
                                 AND record_id = NEW.record_id), 0) + 1
  OR NEW.content_hash IS NOT evidence_hash_bytes(CASE NEW.operation
       WHEN 'put' THEN evidence_sha256('pyevidence content 2', NEW.tenant, NEW.record_id, NEW.revision, NEW.kind,
                                       NEW.body, NEW.source, NEW.expires_at)
       ELSE evidence_sha256('pyevidence forget 2', NEW.tenant, NEW.record_id, NEW.seq) END)
  OR NEW.chain_hash IS NOT evidence_hash_bytes(evidence_sha256('pyevidence chain 2',
       coalesce((SELECT lower(hex(chain_hash)) FROM evidence_versions WHERE tenant = NEW.tenant ORDER BY chain_seq DESC LIMIT 1), ''),
       NEW.chain_seq, NEW.record_id, NEW.seq, NEW.operation, lower(hex(NEW.content_hash))))
  OR (NEW.operation = 'put' AND NEW.body IS NULL)
  OR (NEW.operation = 'forget'
      AND (EXISTS (SELECT 1 FROM evidence_current WHERE tenant = NEW.tenant AND record_id = NEW.record_id)
           OR NOT EXISTS (SELECT 1 FROM evidence_versions
                           WHERE tenant = NEW.tenant AND chain_seq = NEW.previous
                             AND operation = 'put' AND body IS NOT NULL))))
BEGIN
  SELECT RAISE(ABORT, 'evidence_versions rows are appended by evidence_put and forget only (INSERT INTO evidence_put ..., DELETE FROM evidence ...)');
END;

-- Versions are immutable. The one change allowed is forget's erasure: the
-- content of a put becomes NULL, everything else stays, and only while the
-- record is forgotten by a tombstone after it.
CREATE TRIGGER IF NOT EXISTS evidence_versions_are_immutable BEFORE UPDATE ON evidence_versions
WHEN NOT (NEW.tenant = OLD.tenant AND NEW.chain_seq = OLD.chain_seq AND NEW.record_id = OLD.record_id
          AND NEW.seq = OLD.seq AND NEW.previous IS OLD.previous
          AND NEW.operation = OLD.operation AND NEW.operation = 'put'
          AND NEW.content_hash = OLD.content_hash AND NEW.chain_hash = OLD.chain_hash
          AND NEW.body IS NULL
          AND EXISTS (SELECT 1 FROM evidence_forgotten AS f
                       JOIN evidence_versions AS t ON t.tenant = f.tenant AND t.chain_seq = f.chain_seq
                      WHERE f.tenant = OLD.tenant AND f.record_id = OLD.record_id
                        AND f.chain_seq > OLD.chain_seq AND t.operation = 'forget'))
BEGIN
  SELECT RAISE(ABORT, 'evidence_versions rows are immutable; only forget erases a version''s content');
END;

CREATE TRIGGER IF NOT EXISTS evidence_versions_are_kept BEFORE DELETE ON evidence_versions
BEGIN
  SELECT RAISE(ABORT, 'evidence_versions rows are never deleted; forget erases their content instead');
END;

-- evidence_forgotten is written by forget's trigger and by the next put of the
-- record, each right after it appended a link, and by nothing else. A row enters
-- naming the put being forgotten: a put with its content, of a record with no
-- current row, which exists only inside forget's trigger (once forget is done, the
-- record's puts have no content). It then moves to the tombstone, which must be the
-- tenant's last link, following it; it goes when the tenant's last link is a put of
-- the record following it. pyevidence's own writer, which revives a batch's
-- forgotten records after appending their versions, vouches for its deletes.
CREATE TRIGGER IF NOT EXISTS evidence_forgotten_insert_is_forget BEFORE INSERT ON evidence_forgotten
WHEN EXISTS (SELECT 1 FROM evidence_current WHERE tenant = NEW.tenant AND record_id = NEW.record_id)
  OR NOT EXISTS (SELECT 1 FROM evidence_versions
                  WHERE tenant = NEW.tenant AND chain_seq = NEW.chain_seq AND record_id = NEW.record_id
                    AND operation = 'put' AND body IS NOT NULL)
BEGIN
  SELECT RAISE(ABORT, 'evidence_forgotten rows are written by forget only (DELETE FROM evidence ...)');
END;

CREATE TRIGGER IF NOT EXISTS evidence_forgotten_update_is_forget BEFORE UPDATE ON evidence_forgotten
WHEN NOT (NEW.tenant = OLD.tenant AND NEW.record_id = OLD.record_id
          AND EXISTS (SELECT 1 FROM evidence_versions
                       WHERE tenant = NEW.tenant AND chain_seq = NEW.chain_seq AND record_id = NEW.record_id
                         AND operation = 'forget' AND previous = OLD.chain_seq
                         AND chain_seq = (SELECT max(chain_seq) FROM evidence_versions WHERE tenant = NEW.tenant)))
BEGIN
  SELECT RAISE(ABORT, 'evidence_forgotten rows are written by forget only (DELETE FROM evidence ...)');
END;

CREATE TRIGGER IF NOT EXISTS evidence_forgotten_delete_is_put BEFORE DELETE ON evidence_forgotten
WHEN NOT evidence_writer_vouches()
 AND NOT EXISTS (SELECT 1 FROM evidence_versions
                  WHERE tenant = OLD.tenant AND record_id = OLD.record_id
                    AND operation = 'put' AND previous = OLD.chain_seq
                    AND chain_seq = (SELECT max(chain_seq) FROM evidence_versions WHERE tenant = OLD.tenant))
BEGIN
  SELECT RAISE(ABORT, 'evidence_forgotten rows go when the record is put again (INSERT INTO evidence_put ...)');
END;

-- One embedding per current record, for VectorScorer: a little-endian float32
-- vector of `dims` components (the layout sqlite-vec reads), made by the
-- embedding model `model` from the body of version `version`. A vector always
-- belongs to the record's current version: put and forget drop it (the
-- triggers below), and a vector for any other version is refused, so a
-- replaced or forgotten record never leaves a stale vector behind.
-- A rowid table, unlike the others: its rows are large (1.5 KiB for 384
-- dimensions), which WITHOUT ROWID stores poorly (measured here: twice the file
-- size and three times the lookup time). The blob comes last, so reading the
-- other columns never touches its overflow pages.
CREATE TABLE IF NOT EXISTS evidence_vectors (
  tenant    TEXT    NOT NULL,
  record_id TEXT    NOT NULL,
  version   INTEGER NOT NULL,
  model     TEXT    NOT NULL CHECK (model <> ''),
  dims      INTEGER NOT NULL CHECK (dims BETWEEN 1 AND 8192),
  embedding BLOB    NOT NULL CHECK (length(embedding) = 4 * dims),
  UNIQUE (tenant, record_id)
) STRICT;

-- Answers "which eligible records have a vector of this model" without reading
-- the table's large rows (the counts of a vector retrieve).
CREATE INDEX IF NOT EXISTS evidence_vectors_model ON evidence_vectors (tenant, record_id, version, model, dims);

CREATE TRIGGER IF NOT EXISTS evidence_vectors_belong_to_the_current_version BEFORE INSERT ON evidence_vectors
WHEN NOT EXISTS (SELECT 1 FROM evidence AS e
                  WHERE e.tenant = NEW.tenant AND e.record_id = NEW.record_id AND e.version = NEW.version)
BEGIN
  SELECT RAISE(ABORT, 'evidence_vectors: a vector is stored for the current version of a stored record only');
END;

CREATE TRIGGER IF NOT EXISTS evidence_vectors_are_not_updated BEFORE UPDATE ON evidence_vectors
BEGIN
  SELECT RAISE(ABORT, 'evidence_vectors rows are not updated; put the record again with its new vector');
END;

-- A put replaces the current row (an UPDATE through evidence_put's upsert), a
-- forget deletes it: either way the record's vector, made from the old body, goes.
CREATE TRIGGER IF NOT EXISTS evidence_vectors_follow_puts AFTER UPDATE ON evidence_current
WHEN NEW.chain_seq IS NOT OLD.chain_seq
BEGIN
  DELETE FROM evidence_vectors WHERE tenant = OLD.tenant AND record_id = OLD.record_id;
END;

CREATE TRIGGER IF NOT EXISTS evidence_vectors_follow_forgets AFTER DELETE ON evidence_current
BEGIN
  DELETE FROM evidence_vectors WHERE tenant = OLD.tenant AND record_id = OLD.record_id;
END;

-- The token index (schema version 5; docs/token-index.md). Derived data: it holds
-- nothing that evidence does not, and `pyevidence reindex` rebuilds it from
-- evidence alone. It lets retrieve read the postings of the query's tokens
-- instead of every eligible row, with the same hits (tests/test_index_model.py).
-- Every write of evidence changes it in the same statement: the triggers below
-- for raw SQL (and forget), pyevidence's own writer (evidence_writer_vouches()
-- is 1) for put and put_many, by the same rules:
--   * each (tenant, revision) is a scope, numbered 1, 2, ... in order of first
--     use (max + 1); a scope's row stays when its last record goes;
--   * a current row has a document number in its scope (evidence_current.doc),
--     the scope's next_doc when it enters the scope; a new version in the same
--     scope keeps it, a move to another revision or a forget frees it (numbers
--     are not reused: `pyevidence reindex` renumbers each scope's rows 0, 1, ...
--     in (expires_at, record_id) order); evidence_current, stored by number, is
--     also the index's map from a number to its record;
--   * postings: for each distinct token of the body (the token rule,
--     pyevidence/core/tokens.py), the document's bit in the docset of
--     (scope, era, token, chunk) with chunk = doc >> 12 and era = doc >> 15; a
--     docset holds the numbers doc & 4095 of one chunk of 4096 documents, as
--     evidence_docset_*() encode it: 1 to 255
--     numbers as that many little-endian uint16, ascending; 256 or more as a
--     512-byte bitset (bit n is byte n >> 3, bit n & 7); never empty (the row goes);
--   * expiry counts: for each level 0..7, the number of the scope's rows whose
--     expires_at >> (8 * level) is bucket, so that the rows with expires_at <= now
--     are counted from at most 8 * 255 + 1 rows, without reading the records;
--   * a batch (put_many) applies these rules to the last version of each of its
--     records, in (tenant, revision, expires_at, record_id) order.
CREATE TABLE IF NOT EXISTS evidence_index_scopes (
  tenant   TEXT    NOT NULL,
  revision TEXT    NOT NULL,
  scope    INTEGER NOT NULL UNIQUE CHECK (scope >= 1),
  docs     INTEGER NOT NULL CHECK (docs >= 0),      -- current rows in the scope
  next_doc INTEGER NOT NULL CHECK (next_doc >= docs), -- the number the next row gets
  PRIMARY KEY (tenant, revision)
) STRICT, WITHOUT ROWID;

-- The postings are kept in eras of 8 chunks (32,768 documents): era = chunk >> 3
-- leads the key (schema version 9). A scope numbers its new documents upwards, so a
-- batch adds to the docsets of its last era, a region of the table a few MB large,
-- instead of to the rows of every token it has, spread over the whole table: loading
-- 1,250,000 records wrote 25.9 GB instead of 41.2 GB, 1.2x as fast (docs/performance.md,
-- "Schema 9"). A search reads a token's docsets era by era, one range each.
CREATE TABLE IF NOT EXISTS evidence_index_postings (
  scope INTEGER NOT NULL,
  era   INTEGER NOT NULL CHECK (era = chunk >> 3),
  token TEXT    NOT NULL,
  chunk INTEGER NOT NULL CHECK (chunk >= 0),
  docs  BLOB    NOT NULL,
  PRIMARY KEY (scope, era, token, chunk)
) STRICT, WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS evidence_index_expiry (
  scope  INTEGER NOT NULL,
  level  INTEGER NOT NULL CHECK (level BETWEEN 0 AND 7),
  bucket INTEGER NOT NULL CHECK (bucket >= 0),
  rows   INTEGER NOT NULL CHECK (rows >= 1),
  PRIMARY KEY (scope, level, bucket)
) STRICT, WITHOUT ROWID;

-- The two steps every write of a current row is made of, each defined once:
-- INSERT INTO evidence_index_add enters a current row, with its document number,
-- into the index; INSERT INTO evidence_index_remove takes it out (keep = 1: its
-- number stays, because the row's next version enters the same scope at once).
CREATE VIEW IF NOT EXISTS evidence_index_add AS
  SELECT tenant, revision, record_id, expires_at, 0 AS doc, body FROM evidence;

CREATE VIEW IF NOT EXISTS evidence_index_remove AS
  SELECT tenant, revision, record_id, expires_at, 0 AS doc, body, 0 AS keep FROM evidence;

CREATE TRIGGER IF NOT EXISTS evidence_index_adds INSTEAD OF INSERT ON evidence_index_add
BEGIN
  INSERT INTO evidence_index_scopes (tenant, revision, scope, docs, next_doc)
    SELECT NEW.tenant, NEW.revision, coalesce(max(scope), 0) + 1, 0, 0 FROM evidence_index_scopes WHERE true
    ON CONFLICT (tenant, revision) DO NOTHING;
  -- A row given next_doc (a kept one has a smaller number) counts.
  UPDATE evidence_index_scopes SET docs = docs + 1, next_doc = next_doc + 1
   WHERE tenant = NEW.tenant AND revision = NEW.revision AND next_doc = NEW.doc;
  INSERT INTO evidence_index_postings (scope, era, token, chunk, docs)
    SELECT s.scope, NEW.doc >> 15, t.value, NEW.doc >> 12, evidence_docset_with(NULL, NEW.doc & 4095)
      FROM evidence_index_scopes AS s
      JOIN json_each(evidence_token_list(NEW.body)) AS t
     WHERE s.tenant = NEW.tenant AND s.revision = NEW.revision
    ON CONFLICT (scope, era, token, chunk) DO UPDATE SET docs = evidence_docset_union(docs, excluded.docs);
  INSERT INTO evidence_index_expiry (scope, level, bucket, rows)
    SELECT s.scope, l.value, NEW.expires_at >> (8 * l.value), 1
      FROM evidence_index_scopes AS s JOIN json_each('[0,1,2,3,4,5,6,7]') AS l
     WHERE s.tenant = NEW.tenant AND s.revision = NEW.revision
    ON CONFLICT (scope, level, bucket) DO UPDATE SET rows = rows + 1;
END;

CREATE TRIGGER IF NOT EXISTS evidence_index_removes INSTEAD OF INSERT ON evidence_index_remove
BEGIN
  UPDATE evidence_index_postings SET docs = evidence_docset_without(docs, NEW.doc & 4095)
   WHERE scope = (SELECT scope FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision)
     AND era = NEW.doc >> 15 AND chunk = NEW.doc >> 12
     AND token IN (SELECT value FROM json_each(evidence_token_list(NEW.body)));
  DELETE FROM evidence_index_postings
   WHERE scope = (SELECT scope FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision)
     AND era = NEW.doc >> 15 AND chunk = NEW.doc >> 12
     AND token IN (SELECT value FROM json_each(evidence_token_list(NEW.body))) AND docs = x'';
  DELETE FROM evidence_index_expiry
   WHERE scope = (SELECT scope FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision)
     AND (level, bucket) IN (SELECT value, NEW.expires_at >> (8 * value) FROM json_each('[0,1,2,3,4,5,6,7]'))
     AND rows = 1;
  UPDATE evidence_index_expiry SET rows = rows - 1
   WHERE scope = (SELECT scope FROM evidence_index_scopes WHERE tenant = NEW.tenant AND revision = NEW.revision)
     AND (level, bucket) IN (SELECT value, NEW.expires_at >> (8 * value) FROM json_each('[0,1,2,3,4,5,6,7]'));
  UPDATE evidence_index_scopes SET docs = docs - 1
   WHERE NOT NEW.keep AND tenant = NEW.tenant AND revision = NEW.revision;
END;

-- Raw SQL writes (evidence_put's trigger) keep the index in step, in the same
-- statement, with the bodies read from the versions the rows point at; forget's
-- trigger above takes a record out. pyevidence's own writer does the same itself,
-- a batch at a time.
CREATE TRIGGER IF NOT EXISTS evidence_index_follows_inserts AFTER INSERT ON evidence_current
WHEN NOT evidence_writer_vouches()
BEGIN
  INSERT INTO evidence_index_add (tenant, revision, record_id, expires_at, doc, body)
  SELECT NEW.tenant, NEW.revision, NEW.record_id, NEW.expires_at, NEW.doc, body
    FROM evidence_versions WHERE tenant = NEW.tenant AND chain_seq = NEW.chain_seq;
END;

-- A change of the number alone is the rebuild's (see evidence_current_update_is_numbered),
-- which enters the rows itself.
CREATE TRIGGER IF NOT EXISTS evidence_index_follows_updates AFTER UPDATE ON evidence_current
WHEN NOT evidence_writer_vouches()
 AND (NEW.chain_seq <> OLD.chain_seq OR NEW.revision <> OLD.revision OR NEW.expires_at <> OLD.expires_at
      OR NEW.tenant <> OLD.tenant OR NEW.record_id <> OLD.record_id)
BEGIN
  INSERT INTO evidence_index_remove (tenant, revision, record_id, expires_at, doc, body, keep)
  SELECT OLD.tenant, OLD.revision, OLD.record_id, OLD.expires_at, OLD.doc, body,
         OLD.tenant = NEW.tenant AND OLD.revision = NEW.revision AND OLD.record_id = NEW.record_id
    FROM evidence_versions WHERE tenant = OLD.tenant AND chain_seq = OLD.chain_seq;
  INSERT INTO evidence_index_add (tenant, revision, record_id, expires_at, doc, body)
  SELECT NEW.tenant, NEW.revision, NEW.record_id, NEW.expires_at, NEW.doc, body
    FROM evidence_versions WHERE tenant = NEW.tenant AND chain_seq = NEW.chain_seq;
END;

PRAGMA user_version = 12;
