-- Upgrades a pyevidence schema version 5 database to version 6, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 5 schema).
--
-- Version 6 changes only how the CHECKs of evidence and evidence_versions test
-- that a text is not blank: a text that starts with printable ASCII passes
-- without the copy trim() makes (schema.sql says why). The rule is the same
-- (tests/test_upgrade_v6.py proves the two expressions agree), so every stored row
-- keeps it, and the tables' text is edited in place, as SQLite's documentation
-- allows for a change of CHECK constraints ("Making Other Kinds Of Table Schema
-- Changes", lang_altertable.html): no row is read or copied, which at a million
-- records saves a minute and a file twice the size. schema.py then raises
-- PRAGMA schema_version, so every connection reads the new text, and the schema
-- check compares that text with schema.sql's, byte for byte.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(replace(replace(replace(replace(replace(sql,
         'CHECK (trim(tenant,',    'CHECK (CASE WHEN unicode(tenant) BETWEEN 33 AND 126 THEN 1 ELSE trim(tenant,'),
         'CHECK (trim(record_id,', 'CHECK (CASE WHEN unicode(record_id) BETWEEN 33 AND 126 THEN 1 ELSE trim(record_id,'),
         'CHECK (trim(revision,',  'CHECK (CASE WHEN unicode(revision) BETWEEN 33 AND 126 THEN 1 ELSE trim(revision,'),
         'CHECK (trim(body,',      'CHECK (CASE WHEN unicode(body) BETWEEN 33 AND 126 THEN 1 ELSE trim(body,'),
         'CHECK (trim(source,',    'CHECK (CASE WHEN unicode(source) BETWEEN 33 AND 126 THEN 1 ELSE trim(source,'),
         ')) <> '''')',            ')) <> '''' END)')
 WHERE type = 'table' AND name IN ('evidence', 'evidence_versions');
PRAGMA writable_schema = OFF;
PRAGMA user_version = 6;
