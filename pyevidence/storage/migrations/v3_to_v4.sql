-- Upgrades a pyevidence schema version 3 database to version 4, inside the
-- caller's transaction (pyevidence/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 3 schema).
--
-- Version 4 gives evidence_versions the CHECKs of evidence, and changes
-- triggers: the put trigger refuses bad values under every conflict policy,
-- raw appends to the history are checked, and more. Rather than name what
-- changed, every view, trigger and index of version 3 goes, and schema.sql
-- creates them all again from its own text (the schema check compares that
-- text byte for byte). evidence_versions is rebuilt to get its CHECKs: the
-- old table is renamed away, schema.sql creates the new one, the rows are
-- copied (a row a CHECK refuses fails the upgrade, and the file is left as it
-- was). evidence and evidence_vectors keep their tables and rows.
DROP VIEW evidence_put;  -- and with it its INSTEAD OF trigger, evidence_put_appends
DROP TRIGGER evidence_forget_erases;
DROP TRIGGER evidence_insert_is_a_version;
DROP TRIGGER evidence_update_is_a_version;
DROP TRIGGER evidence_versions_are_immutable;
DROP TRIGGER evidence_versions_are_kept;
DROP TRIGGER evidence_vectors_belong_to_the_current_version;
DROP TRIGGER evidence_vectors_are_not_updated;
DROP TRIGGER evidence_vectors_follow_puts;
DROP TRIGGER evidence_vectors_follow_forgets;
DROP INDEX evidence_scope;
DROP INDEX evidence_vectors_model;
ALTER TABLE evidence_versions RENAME TO evidence_versions_v3;
-- @include schema.sql
-- The copied rows are the chain as it stands, not new links: the triggers on
-- appends would check them as new links and point current rows at them, so they
-- step aside for the copy, and the second include below creates them again.
DROP TRIGGER evidence_versions_are_appended;
DROP TRIGGER evidence_versions_point_the_current_row;
INSERT INTO evidence_versions (tenant, chain_seq, record_id, seq, operation, revision, kind, body, source,
                               expires_at, content_hash, chain_hash)
  SELECT tenant, chain_seq, record_id, seq, operation, revision, kind, body, source,
         expires_at, content_hash, chain_hash
    FROM evidence_versions_v3 ORDER BY tenant, chain_seq;
DROP TABLE evidence_versions_v3;
-- @include schema.sql
