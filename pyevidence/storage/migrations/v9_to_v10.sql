-- Upgrades a pyevidence schema version 9 database to version 10, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 9 schema).
--
-- Version 10 keeps each current row's document number in evidence_current (its
-- column doc, last in the primary key), and evidence_index_docs becomes one table
-- keyed by (scope, doc): the index no longer keeps a tree of its own keyed by
-- record (schema.sql). The numbers themselves do not change. A primary key cannot
-- be altered in place, so both tables are copied, the way v8_to_v9.sql copies the
-- postings:
-- 1. Every view and trigger goes (renaming the tables would otherwise edit them, and
--    the copy must not run the triggers on evidence_current), and the old tables
--    are renamed away.
-- 2. schema.sql creates the new tables and the objects again; the triggers on
--    evidence_current are dropped for the copy, every current row is copied with
--    the number the index gives it, every document row in the new key's order, the
--    old tables are dropped, and a second include creates the triggers again.
-- A current row the index does not hold (only a raw write to the index leaves one)
-- gets number 0, and the index stays out of step as it was: `pyevidence reindex`
-- numbers it anew. The pages of the old tables stay in the file as free pages that
-- later writes reuse; VACUUM gives them back to the file system.
DROP VIEW evidence_put;  -- and with it its INSTEAD OF trigger, evidence_put_appends
DROP VIEW evidence_index_add;  -- and evidence_index_adds
DROP VIEW evidence_index_remove;  -- and evidence_index_removes
DROP VIEW evidence;  -- and its three INSTEAD OF triggers
DROP TRIGGER evidence_versions_point_the_current_row;
DROP TRIGGER evidence_forget_erases;
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_update_is_the_latest_version;
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_versions_are_immutable;
DROP TRIGGER evidence_versions_are_kept;
DROP TRIGGER evidence_vectors_belong_to_the_current_version;
DROP TRIGGER evidence_vectors_are_not_updated;
DROP TRIGGER evidence_vectors_follow_puts;
DROP TRIGGER evidence_vectors_follow_forgets;
DROP TRIGGER evidence_index_follows_inserts;
DROP TRIGGER evidence_index_follows_updates;
ALTER TABLE evidence_current RENAME TO evidence_current_v9;
ALTER TABLE evidence_index_docs RENAME TO evidence_index_docs_v9;
-- @include schema.sql
DROP TRIGGER evidence_current_insert_is_numbered;
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_index_follows_inserts;
INSERT INTO evidence_current (tenant, revision, expires_at, record_id, doc, chain_seq)
  SELECT c.tenant, c.revision, c.expires_at, c.record_id, coalesce(d.doc, 0), c.chain_seq
    FROM evidence_current_v9 AS c
    LEFT JOIN evidence_index_scopes AS s ON s.tenant = c.tenant AND s.revision = c.revision
    LEFT JOIN evidence_index_docs_v9 AS d ON d.scope = s.scope AND d.record_id = c.record_id
   ORDER BY c.tenant, c.revision, c.expires_at, c.record_id;
INSERT INTO evidence_index_docs (scope, doc, record_id, expires_at)
  SELECT scope, doc, record_id, expires_at FROM evidence_index_docs_v9 ORDER BY scope, doc;
DROP TABLE evidence_current_v9;
DROP TABLE evidence_index_docs_v9;
-- @include schema.sql
