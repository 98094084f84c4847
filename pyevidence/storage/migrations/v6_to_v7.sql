-- Upgrades a pyevidence schema version 6 database to version 7, inside the
-- caller's transaction (pyevidence/storage/schema.py runs it under BEGIN IMMEDIATE,
-- after checking that the file holds exactly the version 6 schema).
--
-- Version 7 changes two triggers only: the checks that a current row points at its
-- record's latest version now step aside while pyevidence's own batch writer runs
-- (evidence_writer_vouches(), as the history's triggers already did), which spares
-- every put two lookups. No row changes; schema.sql's CREATE ... IF NOT EXISTS
-- statements create the two triggers anew and leave everything else as it is.
DROP TRIGGER evidence_insert_is_the_latest_version;
DROP TRIGGER evidence_update_is_the_latest_version;
-- @include schema.sql
