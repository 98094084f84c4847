-- Upgrades a pyevidence schema version 8 database to version 9, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 8 schema).
--
-- Version 9 keeps the token index's postings in eras of 8 chunks: the key of
-- evidence_index_postings becomes (scope, era, token, chunk), era = chunk >> 3, so
-- that a batch of new documents writes into one region of the table (schema.sql).
-- The docsets themselves do not change. A primary key cannot be altered in place,
-- so the table is copied, the way v7_to_v8.sql copies the history:
-- 1. Every view and trigger goes (renaming the table would otherwise edit them),
--    and the old table is renamed away.
-- 2. schema.sql creates the new table and the objects again, every docset is
--    copied in the new key's order, and the old table is dropped.
-- Every other table keeps its rows. The old table's pages stay in the file as free
-- pages that later writes reuse; VACUUM gives them back to the file system.
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
ALTER TABLE evidence_index_postings RENAME TO evidence_index_postings_v8;
-- @include schema.sql
INSERT INTO evidence_index_postings (scope, era, token, chunk, docs)
  SELECT scope, chunk >> 3, token, chunk, docs
    FROM evidence_index_postings_v8
   ORDER BY scope, chunk >> 3, token, chunk;
DROP TABLE evidence_index_postings_v8;
