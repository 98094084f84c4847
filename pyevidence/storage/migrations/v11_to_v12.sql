-- Upgrades a pyevidence schema version 11 database to version 12, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 11 schema).
--
-- Version 12 stores evidence_current by (tenant, revision, doc, expires_at,
-- record_id): each scope's current rows in the order of their document numbers in
-- the token index. The table is then also the index's map from a number to its
-- record, and evidence_index_docs goes (schema.sql). The rows, their numbers and
-- every other table keep what they hold. A primary key cannot be altered in place,
-- so the table is copied, the way v9_to_v10.sql copied it:
-- 1. Every view and trigger goes (renaming the table would otherwise edit them, and
--    the copy must not run the triggers on evidence_current), and so does the index
--    by record, which would keep its name on the renamed table; the old table is
--    renamed away.
-- 2. schema.sql creates the new table and the objects again; the triggers on
--    evidence_current's inserts are dropped for the copy; every current row is
--    copied in the new key's order; the old table and evidence_index_docs are
--    dropped, and a second include creates the triggers again.
-- The pages of the old tables stay in the file as free pages that later writes
-- reuse; VACUUM gives them back to the file system.
DROP VIEW evidence_put;  -- and with it its INSTEAD OF trigger, evidence_put_appends
DROP VIEW evidence_index_add;  -- and evidence_index_adds
DROP VIEW evidence_index_remove;  -- and evidence_index_removes
DROP VIEW evidence;  -- and its three INSTEAD OF triggers
DROP TRIGGER evidence_versions_point_the_current_row;
DROP TRIGGER evidence_forget_erases;
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_update_is_the_latest_version;
DROP TRIGGER evidence_current_insert_is_numbered;
DROP TRIGGER evidence_current_update_is_numbered;
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_versions_are_immutable;
DROP TRIGGER evidence_versions_are_kept;
DROP TRIGGER evidence_forgotten_insert_is_forget;
DROP TRIGGER evidence_forgotten_update_is_forget;
DROP TRIGGER evidence_forgotten_delete_is_put;
DROP TRIGGER evidence_vectors_belong_to_the_current_version;
DROP TRIGGER evidence_vectors_are_not_updated;
DROP TRIGGER evidence_vectors_follow_puts;
DROP TRIGGER evidence_vectors_follow_forgets;
DROP TRIGGER evidence_index_follows_inserts;
DROP TRIGGER evidence_index_follows_updates;
DROP INDEX evidence_current_by_record;
ALTER TABLE evidence_current RENAME TO evidence_current_v11;
-- @include schema.sql
DROP TRIGGER evidence_current_insert_is_numbered;
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_index_follows_inserts;
INSERT INTO evidence_current (tenant, revision, doc, expires_at, record_id, chain_seq)
  SELECT tenant, revision, doc, expires_at, record_id, chain_seq FROM evidence_current_v11
   ORDER BY tenant, revision, doc, expires_at, record_id;
DROP TABLE evidence_current_v11;
DROP TABLE evidence_index_docs;
-- @include schema.sql
