-- Writing through evidence_put (schema.sql's triggers): every SELECT here must return 1.
-- Run after pyevidence/storage/schema.sql (run_sql_tests --init), with this extension's evidence_sha256().

-- expires_at as a real (JavaScript hosts such as better-sqlite3 bind every number as one):
-- a whole number is stored and hashed as that integer, the same bytes as an integer write.
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'as-real', 'v1', 'runbook', 'queue lag', 'runbook://q', 1000.0);
SELECT typeof(expires_at) = 'integer' AND expires_at = 1000
   AND content_hash = evidence_sha256('pyevidence content 2', 'team-a', 'as-real', 'v1', 'runbook',
                                      'queue lag', 'runbook://q', 1000)
  FROM evidence WHERE record_id = 'as-real';
SELECT typeof(expires_at) = 'integer' AND expires_at = 1000
   AND chain_hash = evidence_hash_bytes(evidence_sha256('pyevidence chain 2', '', 1, 'as-real', 1, 'put',
                                                         lower(hex(content_hash))))
   AND typeof(content_hash) = 'blob' AND length(content_hash) = 32
  FROM evidence_versions WHERE record_id = 'as-real';
SELECT count(*) = 1 FROM evidence_eligible('team-a', 'v1', 999) WHERE record_id = 'as-real';

-- -0.0 is 0; large whole reals are exact, up to the largest double below 2**63.
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'minus-zero', 'v1', 'runbook', 'queue', 'runbook://q', -0.0),
         ('team-a', 'two-62', 'v1', 'runbook', 'queue', 'runbook://q', 4611686018427387904.0),
         ('team-a', 'top', 'v1', 'runbook', 'queue', 'runbook://q', 9223372036854774784.0);
SELECT group_concat(record_id || '=' || typeof(expires_at) || ' ' || expires_at, ',')
     = 'minus-zero=integer 0,two-62=integer 4611686018427387904,top=integer 9223372036854774784'
  FROM (SELECT record_id, expires_at FROM evidence_versions WHERE chain_seq > 1 ORDER BY chain_seq);
SELECT count(*) = 4 FROM evidence WHERE typeof(expires_at) = 'integer';

-- Integers are unchanged, up to 2**63 - 1.
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'int-max', 'v1', 'runbook', 'queue', 'runbook://q', 9223372036854775807);
SELECT expires_at = 9223372036854775807 FROM evidence WHERE record_id = 'int-max';

-- Anything else is refused, with nothing written.
-- error: evidence_put: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'half', 'v1', 'runbook', 'queue', 'runbook://q', 1000.5);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'two-63', 'v1', 'runbook', 'queue', 'runbook://q', 9223372036854775808.0);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'inf', 'v1', 'runbook', 'queue', 'runbook://q', 1e999);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'minus-inf', 'v1', 'runbook', 'queue', 'runbook://q', -1e999);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'minus-one', 'v1', 'runbook', 'queue', 'runbook://q', -1.0);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'minus-one', 'v1', 'runbook', 'queue', 'runbook://q', -1);
-- A NaN reaches SQLite as NULL.
-- error: evidence_put: tenant, record_id, revision, kind, body and source must be text, expires_at an integer
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'nan', 'v1', 'runbook', 'queue', 'runbook://q', 0.0 / 0.0);
-- error: must be text, expires_at an integer
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)
  VALUES ('team-a', 'text', 'v1', 'runbook', 'queue', 'runbook://q', '1000');
SELECT count(*) = 5 FROM evidence_versions;
SELECT count(*) = 5 FROM evidence;
