-- Upgrades a pyevidence schema version 7 database to version 8, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 7 schema).
--
-- Version 8 stores the two hashes of each version as the 32 bytes their 64 hex
-- digits stand for (content_hash and chain_hash become BLOBs): 64 bytes less a
-- version. The hashes themselves do not change, so every chain still verifies.
-- A column's type cannot be altered in place, so evidence_versions is copied:
-- 1. Every view and trigger goes (renaming the table would otherwise edit them, and
--    the copy must not run the triggers that check raw appends), and the old table
--    is renamed away.
-- 2. schema.sql creates the new table and the objects again; the two triggers on
--    appends are dropped for the copy, every version is copied in chain order with
--    evidence_hash_bytes() turning its hashes into bytes, the old table is dropped,
--    and a second include creates the two triggers again.
-- The current rows, the token index and the vectors keep their rows. The pages of
-- the old table stay in the file as free pages that later writes reuse; VACUUM
-- gives them back to the file system.
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
ALTER TABLE evidence_versions RENAME TO evidence_versions_v7;
-- @include schema.sql
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_versions_point_the_current_row;
INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, operation, revision, kind, body, source,
                               expires_at, content_hash, chain_hash)
  SELECT tenant, chain_seq, record_id, seq, operation, revision, kind, body, source, expires_at,
         evidence_hash_bytes(content_hash), evidence_hash_bytes(chain_hash)
    FROM evidence_versions_v7
   ORDER BY tenant, chain_seq;
DROP TABLE evidence_versions_v7;
-- @include schema.sql
