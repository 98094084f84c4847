-- The token index through raw SQL, and evidence_search(): every SELECT here must return 1.

-- Run after pyevidence/storage/schema.sql (run_sql_tests --init), so this is the shipped schema:
-- these writes go through the index triggers, not pyevidence's batch writer.

INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at) VALUES
  ('team-a', 'rb-queue', 'v1', 'runbook', 'queue backlog: check consumer lag', 'runbook://queue/v1', 1000),
  ('team-a', 'inc-old', 'v1', 'incident', 'queue backlog incident', 'incident://old', 100),
  ('team-a', 'inc-new', 'v1', 'incident', 'Queue LAG incident', 'incident://new', 101),
  ('team-a', 'rb-v2', 'v2', 'runbook', 'queue backlog v2', 'runbook://queue/v2', 1000),
  ('team-b', 'note', 'v1', 'working', 'team-b queue backlog consumer lag', 'note://b', 1000);

-- Docsets: 1..255 numbers listed as little-endian uint16, 256 or more a 512-byte bitset.
SELECT evidence_docset_with(NULL, 7) = x'0700';
SELECT evidence_docset_with(x'0700', 3) = x'03000700';
SELECT evidence_docset_with(x'0700', 7) = x'0700';
SELECT evidence_docset_without(x'03000700', 3) = x'0700';
SELECT evidence_docset_without(x'0700', 7) = x'';
SELECT evidence_docset_union(x'0300', x'0700') = x'03000700';
SELECT evidence_docset_union(NULL, NULL) = x'';
-- error: evidence_docset_with(): a document number in a chunk is an integer from 0 to 4095
SELECT evidence_docset_with(NULL, 4096);
-- error: evidence_docset_union(): not a docset
SELECT evidence_docset_union(x'0700', x'07');
-- error: evidence_docset_union(): not a docset
SELECT evidence_docset_union(x'07000300', NULL);
SELECT evidence_token_list('Queue backlog, queue LAG!') = '["backlog","lag","queue"]';
SELECT evidence_token_list('') = '[]' AND evidence_token_list(NULL) IS NULL;

-- The index after the inserts: scopes in order of first use, documents in order of arrival.
SELECT group_concat(tenant || '/' || revision || '=' || scope || ':' || docs || ':' || next_doc, ',')
       = 'team-a/v1=1:3:3,team-a/v2=2:1:1,team-b/v1=3:1:1'
  FROM (SELECT * FROM evidence_index_scopes ORDER BY scope);
SELECT docs = x'000001000200' FROM evidence_index_postings WHERE scope = 1 AND token = 'queue' AND chunk = 0;

-- evidence_search: retrieve's hits, best first, ties by record_id, only the eligible rows.
SELECT group_concat(record_id || ':' || score, ',') = 'rb-queue:4,inc-new:2'
  FROM evidence_search('team-a', 'v1', 100, 'queue backlog consumer lag', 5);
SELECT group_concat(record_id || ':' || score, ',') = 'rb-queue:4,inc-new:2,inc-old:2'
  FROM evidence_search('team-a', 'v1', 99, 'queue backlog consumer lag', 5);
SELECT group_concat(record_id, ',') = 'rb-queue' FROM evidence_search('team-a', 'v1', 99, 'consumer', 5);
SELECT count(*) = 0 FROM evidence_search('team-a', 'v1', 99, 'nothing matches', 5);
SELECT count(*) = 0 FROM evidence_search('team-c', 'v1', 0, 'queue', 5);
-- The eligible count, also where nothing matches: the rows evidence_eligible yields.
SELECT evidence_eligible_count('team-a', 'v1', 99) = 3 AND evidence_eligible_count('team-a', 'v1', 100) = 2
   AND evidence_eligible_count('team-a', 'v1', 100.0) = 2 AND evidence_eligible_count('team-a', 'v1', 1000) = 0
   AND evidence_eligible_count('team-c', 'v1', 0) = 0
   AND evidence_eligible_count('team-a', 'v1', 99) = (SELECT count(*) FROM evidence_eligible('team-a', 'v1', 99));
-- error: evidence_eligible_count(): revision must be text, got NULL
SELECT evidence_eligible_count('team-a', NULL, 0);
-- error: evidence_eligible_count(): now must be an integer, got real 0.5 (not a whole number)
SELECT evidence_eligible_count('team-a', 'v1', 0.5);
SELECT count(*) = 1 FROM evidence_search('team-a', 'v1', 99, 'queue', 1);
-- Every column, and the eligible count of the scope at now.
SELECT revision = 'v1' AND kind = 'runbook' AND citation = 'runbook://queue/v1'
   AND body = 'queue backlog: check consumer lag' AND expires_at = 1000 AND eligible_count = 2
   AND version = (SELECT version || '-' || content_hash FROM evidence WHERE record_id = 'rb-queue')
  FROM evidence_search('team-a', 'v1', 100, 'consumer', 5);
-- It equals the scan over evidence_eligible, query for query.
SELECT (SELECT group_concat(record_id || ':' || score, ',') FROM evidence_search('team-a', 'v1', 0, 'queue lag', 10))
     = (SELECT group_concat(record_id || ':' || score, ',')
          FROM (SELECT record_id, token_overlap('queue lag', body) AS score FROM evidence_eligible('team-a', 'v1', 0)
                 WHERE score > 0 ORDER BY score DESC, record_id LIMIT 10));

-- A new version in the same scope keeps its document; a move and a forget free it.
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at) VALUES
  ('team-a', 'inc-old', 'v1', 'incident', 'disk full', 'incident://old', 5000);
SELECT doc = 1 AND expires_at = 5000 FROM evidence_current WHERE tenant = 'team-a' AND record_id = 'inc-old';
SELECT group_concat(record_id, ',') = 'inc-old' FROM evidence_search('team-a', 'v1', 1000, 'disk queue', 5);
INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at) VALUES
  ('team-a', 'rb-queue', 'v2', 'runbook', 'queue backlog moved', 'runbook://queue/v2b', 1000);
DELETE FROM evidence WHERE tenant = 'team-a' AND record_id = 'inc-new';
SELECT docs = 1 AND next_doc = 3 FROM evidence_index_scopes WHERE scope = 1;
SELECT NOT EXISTS (SELECT 1 FROM evidence_index_postings WHERE scope = 1 AND token IN ('queue', 'lag', 'consumer'));
SELECT group_concat(record_id || ':' || eligible_count, ',') = 'rb-queue:2,rb-v2:2'
  FROM evidence_search('team-a', 'v2', 0, 'moved queue', 5);

-- Arguments: evidence_eligible's rules, and retrieve's limit of 1 to 10.
-- error: evidence_search(): argument limit is missing; call it as evidence_search(tenant, revision, now, query, limit)
SELECT * FROM evidence_search('team-a', 'v1', 0, 'queue');
-- error: evidence_search(): tenant must be text, got NULL
SELECT * FROM evidence_search(NULL, 'v1', 0, 'queue', 5);
-- error: evidence_search(): now must be an integer, got real 0.5 (not a whole number)
SELECT * FROM evidence_search('team-a', 'v1', 0.5, 'queue', 5);
-- error: evidence_search(): query must be text, got integer
SELECT * FROM evidence_search('team-a', 'v1', 0, 5, 5);
-- error: evidence_search(): limit must be from 1 to 10, got 11
SELECT * FROM evidence_search('team-a', 'v1', 0, 'queue', 11);
SELECT count(*) = 1 FROM evidence_search('team-a', 'v1', 100.0, 'disk', 5.0);

-- Index tables that read evidence_search or evidence_eligible_count themselves (not
-- schema.sql's) are an error, not an endless recursion that overflows the stack.
DROP TABLE evidence_index_expiry;
CREATE VIEW evidence_index_expiry (scope, level, bucket, rows) AS
  SELECT 1, 0, 0, count(*) FROM evidence_search('team-a', 'v1', 0, 'queue', 5);
-- error: evidence_search(): reentered while reading the store
SELECT * FROM evidence_search('team-a', 'v1', 0, 'disk', 5);
DROP VIEW evidence_index_expiry;
CREATE VIEW evidence_index_expiry (scope, level, bucket, rows) AS
  SELECT 1, 0, 0, evidence_eligible_count('team-a', 'v1', 0);
-- error: evidence_eligible_count(): reentered while reading the store
SELECT evidence_eligible_count('team-a', 'v1', 0);
-- error: evidence_eligible_count(): reentered while reading the store
SELECT * FROM evidence_search('team-a', 'v1', 0, 'disk', 5);
-- Through evidence_eligible: the view evidence reads evidence_search, which reads evidence.
DROP VIEW evidence_index_expiry;
CREATE TABLE evidence_index_expiry (scope, level, bucket, rows);
DROP VIEW evidence_index_add;
DROP VIEW evidence_index_remove;
DROP VIEW evidence_put;
DROP VIEW evidence;
CREATE VIEW evidence AS
  SELECT 'team-a' AS tenant, revision, expires_at, record_id, kind, body, citation AS source, 1 AS version,
         '' AS content_hash
    FROM evidence_search('team-a', 'v1', 0, 'disk', 5);
-- error: reentered while reading
SELECT * FROM evidence_eligible('team-a', 'v1', 0);
-- error: reentered while reading
SELECT * FROM evidence_search('team-a', 'v1', 0, 'disk', 5);
