-- Upgrades a pyevidence schema version 5 database to version 6, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 5 schema).
--
-- Version 6 stores each body once. The table evidence, which held a copy of each
-- current record's content, becomes evidence_current, a pointer from each live
-- record to its latest version, and evidence becomes a view of the same columns
-- that reads the content from evidence_versions (schema.sql says why).
--
-- 1. evidence_versions keeps its rows. Its CHECKs get version 6's shortcut for
--    blank text: the same rule (tests/test_upgrade.py proves the expressions
--    agree), so every stored row keeps it, and the table's text is edited in place,
--    as SQLite's documentation allows for a change of CHECK constraints ("Making
--    Other Kinds Of Table Schema Changes", lang_altertable.html): no version is
--    read or copied. schema.py then raises PRAGMA schema_version, and the schema
--    check compares the text with schema.sql's, byte for byte.
-- 2. Every view and trigger goes (a renamed table would take them along), the old
--    evidence is renamed away, schema.sql creates the new objects, each current
--    row's pointer is copied (its chain_seq found through the version it names),
--    with the triggers that would treat the copies as new writes stepped aside, the
--    old table is dropped, and a second include creates those triggers again.
-- The token index and the vectors keep their rows: nothing they hold changes. The
-- pages the old table's bodies took stay in the file as free pages that later
-- writes reuse; VACUUM gives them back to the file system.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(replace(replace(replace(replace(replace(sql,
         'CHECK (trim(tenant,',    'CHECK (CASE WHEN unicode(tenant) BETWEEN 33 AND 126 THEN 1 ELSE trim(tenant,'),
         'CHECK (trim(record_id,', 'CHECK (CASE WHEN unicode(record_id) BETWEEN 33 AND 126 THEN 1 ELSE trim(record_id,'),
         'CHECK (trim(revision,',  'CHECK (CASE WHEN unicode(revision) BETWEEN 33 AND 126 THEN 1 ELSE trim(revision,'),
         'CHECK (trim(body,',      'CHECK (CASE WHEN unicode(body) BETWEEN 33 AND 126 THEN 1 ELSE trim(body,'),
         'CHECK (trim(source,',    'CHECK (CASE WHEN unicode(source) BETWEEN 33 AND 126 THEN 1 ELSE trim(source,'),
         ')) <> '''')',            ')) <> '''' END)')
 WHERE type = 'table' AND name = 'evidence_versions';
PRAGMA writable_schema = OFF;
DROP VIEW evidence_put;  -- and with it its INSTEAD OF trigger, evidence_put_appends
DROP VIEW evidence_index_add;  -- and evidence_index_adds
DROP VIEW evidence_index_remove;  -- and evidence_index_removes
DROP TRIGGER evidence_versions_point_the_current_row;
DROP TRIGGER evidence_forget_erases;
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_update_is_the_latest_version;
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_vectors_belong_to_the_current_version;
DROP TRIGGER evidence_vectors_follow_puts;
DROP TRIGGER evidence_vectors_follow_forgets;
DROP TRIGGER evidence_index_follows_inserts;
DROP TRIGGER evidence_index_follows_updates;
DROP TRIGGER evidence_index_follows_deletes;
DROP INDEX evidence_scope;
ALTER TABLE evidence RENAME TO evidence_v5;
-- @include schema.sql
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_index_follows_inserts;
INSERT INTO evidence_current (tenant, revision, expires_at, record_id, chain_seq)
  SELECT e.tenant, e.revision, e.expires_at, e.record_id, v.chain_seq
    FROM evidence_v5 AS e  -- a row naming no version would copy a NULL chain_seq and fail the upgrade
    LEFT JOIN evidence_versions AS v ON v.tenant = e.tenant AND v.record_id = e.record_id AND v.seq = e.version
   ORDER BY e.tenant, e.revision, e.expires_at, e.record_id;
DROP TABLE evidence_v5;
-- @include schema.sql
