-- Upgrades a pyevidence schema version 10 database to version 11, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 10 schema).
--
-- Version 11 drops the history's UNIQUE (tenant, record_id, seq), a tree keyed by
-- record: each version names the record's version before it in a new column,
-- previous, and the new table evidence_forgotten names the latest version (the
-- tombstone) of each forgotten record, as evidence_current does for the live ones
-- (schema.sql). The versions, their hashes and every other table keep their rows.
-- A table's constraints cannot be altered in place, so evidence_versions is copied,
-- the way v7_to_v8.sql copies it:
-- 1. Every view and trigger goes (renaming the table would otherwise edit them, and
--    the copy must not run the triggers that check raw appends), and the old table
--    is renamed away.
-- 2. schema.sql creates the new tables and the objects again; the triggers on
--    appends and on evidence_forgotten's inserts are dropped for the copy; every
--    version is copied in chain order with the chain position of the record's
--    version before it (found through the old table's UNIQUE index, one lookup a
--    version); each record whose latest version is a tombstone gets its row in
--    evidence_forgotten; the old table is dropped, and a second include creates the
--    triggers again.
-- The pages of the old table stay in the file as free pages that later writes
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
DROP TRIGGER evidence_vectors_belong_to_the_current_version;
DROP TRIGGER evidence_vectors_are_not_updated;
DROP TRIGGER evidence_vectors_follow_puts;
DROP TRIGGER evidence_vectors_follow_forgets;
DROP TRIGGER evidence_index_follows_inserts;
DROP TRIGGER evidence_index_follows_updates;
ALTER TABLE evidence_versions RENAME TO evidence_versions_v10;
-- @include schema.sql
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_versions_point_the_current_row;
DROP TRIGGER evidence_forgotten_insert_is_forget;
INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, previous, operation, revision, kind, body,
                               source, expires_at, content_hash, chain_hash)
  SELECT v.tenant, v.chain_seq, v.record_id, v.seq,
         (SELECT p.chain_seq FROM evidence_versions_v10 AS p
           WHERE p.tenant = v.tenant AND p.record_id = v.record_id AND p.seq = v.seq - 1),
         v.operation, v.revision, v.kind, v.body, v.source, v.expires_at, v.content_hash, v.chain_hash
    FROM evidence_versions_v10 AS v
   ORDER BY v.tenant, v.chain_seq;
INSERT INTO evidence_forgotten (tenant, record_id, chain_seq)
  SELECT v.tenant, v.record_id, v.chain_seq
    FROM evidence_versions_v10 AS v
   WHERE v.operation = 'forget'
     AND v.seq = (SELECT max(seq) FROM evidence_versions_v10 WHERE tenant = v.tenant AND record_id = v.record_id)
   ORDER BY v.tenant, v.record_id;
DROP TABLE evidence_versions_v10;
-- @include schema.sql
