-- Upgrades a pyevidence schema version 1 database to version 2, inside the
-- caller's transaction (pyevidence/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 1 schema).
--
-- Version 1 kept only the current row of each record. Each becomes version 1
-- of its record, chained per tenant in record_id order, through the same
-- evidence_put view every later put uses. The old table is renamed away first
-- so that the new one is created from schema.sql's own text (the schema check
-- compares that text byte for byte).
ALTER TABLE evidence RENAME TO evidence_v1;
DROP INDEX evidence_scope;
-- @include schema.sql
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  SELECT tenant, record_id, revision, kind, body, source, expires_at FROM evidence_v1
   ORDER BY tenant, record_id;
DROP TABLE evidence_v1;
