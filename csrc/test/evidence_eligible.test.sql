-- evidence_eligible(tenant, revision, now): every SELECT here must return 1.

-- Run after pyevidence/storage/schema.sql (run_sql_tests --init), so this is the shipped schema.

INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at) VALUES
  ('team-a', 'rb-queue', 'v1', 'runbook', 'queue backlog: check consumer lag', 'runbook://queue/v1', 1000),
  ('team-a', 'inc-old', 'v1', 'incident', 'queue backlog incident', 'incident://old', 100),
  ('team-a', 'inc-new', 'v1', 'incident', 'queue lag incident', 'incident://new', 101),
  ('team-a', 'rb-v2', 'v2', 'runbook', 'queue backlog v2', 'runbook://queue/v2', 1000),
  ('team-b', 'note', 'v1', 'working', 'team-b queue backlog consumer lag', 'note://b', 1000),
  ('Team-A', 'case', 'v1', 'working', 'queue', 'note://case', 1000);

-- Scope: tenant and revision exact, expiry strictly after now.
SELECT group_concat(record_id, ',') = 'inc-new,rb-queue'
  FROM (SELECT record_id FROM evidence_eligible('team-a', 'v1', 100) ORDER BY record_id);
SELECT count(*) = 3 FROM evidence_eligible('team-a', 'v1', 99);
SELECT count(*) = 1 FROM evidence_eligible('team-a', 'v1', 101);
SELECT count(*) = 0 FROM evidence_eligible('team-a', 'v1', 1000);
SELECT count(*) = 1 FROM evidence_eligible('team-a', 'v2', 0);
SELECT count(*) = 0 FROM evidence_eligible('team-a', 'v3', 0);
SELECT count(*) = 0 FROM evidence_eligible('team-c', 'v1', 0);
SELECT count(*) = 0 FROM evidence_eligible('team', 'v1', 0);
SELECT count(*) = 0 FROM evidence_eligible('%', 'v1', 0);
SELECT count(*) = 1 FROM evidence_eligible('Team-A', 'v1', 0);
SELECT count(*) = 3 FROM evidence_eligible('team-a', 'v1', -9223372036854775808);

-- Every column comes through unchanged; the hidden columns echo the arguments.
SELECT tenant = 'team-a' AND revision = 'v1' AND kind = 'runbook' AND source = 'runbook://queue/v1'
   AND body = 'queue backlog: check consumer lag' AND expires_at = 1000
  FROM evidence_eligible('team-a', 'v1', 500);
SELECT scope_tenant = 'team-a' AND scope_revision = 'v1' AND scope_now = 500
  FROM evidence_eligible('team-a', 'v1', 500);

-- The query docs/sql.md shows: rank inside SQLite, over eligible rows only.
SELECT group_concat(record_id || ':' || score, ',') = 'rb-queue:4,inc-new:2'
  FROM (SELECT record_id, source, token_overlap('queue backlog consumer lag', body) AS score
          FROM evidence_eligible('team-a', 'v1', 100)
         WHERE score > 0 ORDER BY score DESC, record_id LIMIT 5);

-- Only the columns a query uses are read; any subset gives the same rows.
SELECT (SELECT count(*) FROM evidence_eligible('team-a', 'v1', 100))
     = (SELECT count(body) FROM evidence_eligible('team-a', 'v1', 100));
SELECT (SELECT group_concat(record_id || expires_at, ',') FROM evidence_eligible('team-a', 'v1', 99))
     = (SELECT group_concat(record_id || expires_at, ',')
          FROM (SELECT record_id, expires_at, body FROM evidence_eligible('team-a', 'v1', 99)));
SELECT (SELECT kind || source FROM evidence_eligible('team-a', 'v1', 500)) = 'runbookrunbook://queue/v1';
SELECT (SELECT count(*) FROM evidence_eligible('team-a', 'v1', 0) WHERE record_id IS NULL OR body IS NULL) = 0;

-- An OR in the WHERE clause: SQLite plans each OR term alone, without the
-- arguments; such partial plans must not turn into a "missing argument" error.
SELECT count(*) = 1 FROM evidence_eligible('team-a', 'v1', 100) WHERE record_id = 'rb-queue' OR kind = 'x';
SELECT count(*) = 2 FROM evidence_eligible('team-a', 'v1', 100) WHERE record_id = 'rb-queue' OR body LIKE '%lag%';

-- Arguments as bound-style expressions and from a join.
SELECT count(*) = 2 FROM (SELECT 'team-a' AS t) AS s, evidence_eligible(s.t, 'v1', 100);
SELECT count(*) = 3 FROM (SELECT 'team-a' AS t UNION ALL SELECT 'team-b') AS s
  JOIN evidence_eligible(s.t, 'v1', 100);

-- Missing arguments are errors that name the argument, never a scan of every tenant.
-- error: evidence_eligible(): argument now is missing; call it as evidence_eligible(tenant, revision, now)
SELECT * FROM evidence_eligible('team-a', 'v1');
-- error: argument revision is missing
SELECT * FROM evidence_eligible('team-a');
-- error: argument tenant is missing
SELECT * FROM evidence_eligible;
-- error: argument tenant is missing
SELECT * FROM evidence_eligible WHERE tenant = 'team-a';

-- Mistyped arguments are errors, not empty results.
-- error: evidence_eligible(): tenant must be text, got NULL
SELECT * FROM evidence_eligible(NULL, 'v1', 0);
-- error: evidence_eligible(): revision must be text, got integer
SELECT * FROM evidence_eligible('team-a', 1, 0);
-- error: evidence_eligible(): now must be an integer, got text
SELECT * FROM evidence_eligible('team-a', 'v1', '100');
-- error: evidence_eligible(): tenant must be text, got blob
SELECT * FROM evidence_eligible(x'00', 'v1', 0);

-- now as a real (JavaScript hosts such as better-sqlite3 bind every number as one):
-- a whole number is that integer, as in a STRICT INTEGER column; anything else is refused.
SELECT group_concat(record_id, ',') = 'inc-new,rb-queue'
  FROM (SELECT record_id FROM evidence_eligible('team-a', 'v1', 100.0) ORDER BY record_id);
SELECT count(*) = 3 FROM evidence_eligible('team-a', 'v1', 99.0);
SELECT count(*) = 3 FROM evidence_eligible('team-a', 'v1', -0.0);
SELECT count(*) = 3 FROM evidence_eligible('team-a', 'v1', -9223372036854775808.0);
SELECT count(*) = 0 FROM evidence_eligible('team-a', 'v1', 9223372036854774784.0);
SELECT scope_now = 500 AND typeof(scope_now) = 'integer' FROM evidence_eligible('team-a', 'v1', 500.0);
SELECT count(*) = 2 FROM evidence_eligible WHERE scope_tenant = 'team-a' AND scope_revision = 'v1'
   AND scope_now = 100.0;
-- error: evidence_eligible(): now must be an integer, got real 100.5 (not a whole number)
SELECT * FROM evidence_eligible('team-a', 'v1', 100.5);
-- error: evidence_eligible(): now must be an integer, got real -0.25 (not a whole number)
SELECT * FROM evidence_eligible('team-a', 'v1', -0.25);
-- error: evidence_eligible(): now must be an integer, got real 9.22337203685478e+18 (outside the 64-bit range)
SELECT * FROM evidence_eligible('team-a', 'v1', 9223372036854775808.0);
-- error: evidence_eligible(): now must be an integer, got real -9.22337203685478e+18 (outside the 64-bit range)
SELECT * FROM evidence_eligible('team-a', 'v1', -9223372036854777856.0);
-- error: now must be an integer, got real Inf (outside the 64-bit range)
SELECT * FROM evidence_eligible('team-a', 'v1', 1e999);
-- error: now must be an integer, got real -Inf (outside the 64-bit range)
SELECT * FROM evidence_eligible('team-a', 'v1', -1e999);
-- A NaN reaches SQLite as NULL.
-- error: evidence_eligible(): now must be an integer, got NULL
SELECT * FROM evidence_eligible('team-a', 'v1', 0.0 / 0.0);

-- Read-only: writes go to the evidence table.
-- error: table evidence_eligible may not be modified
DELETE FROM evidence_eligible WHERE scope_tenant = 'team-a' AND scope_revision = 'v1' AND scope_now = 0;
-- error: may not be modified
INSERT INTO evidence_eligible (tenant) VALUES ('x');

-- Usable inside a view under trusted_schema=OFF (innocuous).
CREATE VIEW team_a_now AS SELECT record_id FROM evidence_eligible('team-a', 'v1', 100);
PRAGMA trusted_schema = OFF;
SELECT count(*) = 2 FROM team_a_now;
PRAGMA trusted_schema = ON;

-- Without the evidence view, the error says what to do.
DROP VIEW team_a_now;
DROP VIEW evidence;
-- error: no such table: main.evidence (create the schema from schema.sql first)
SELECT * FROM evidence_eligible('team-a', 'v1', 0);

-- A database whose evidence view reads evidence_eligible itself (not schema.sql's) is an
-- error, not an endless recursion of nested statements that overflows the stack.
CREATE VIEW evidence AS SELECT * FROM evidence_eligible('team-a', 'v1', 0);
-- error: evidence_eligible(): reentered while reading main.evidence
SELECT count(*) FROM evidence_eligible('team-a', 'v1', 0);
-- error: reentered while reading main.evidence
SELECT count(*) FROM evidence;
