-- token_overlap() and evidence_tokens(): every SELECT here must return 1.
-- Run by run_sql_tests (make test-c, test-asan, test-valgrind).

-- Basics: distinct shared tokens, case folded.
SELECT token_overlap('queue consumer lag', 'Restart the queue CONSUMER') = 2;
SELECT token_overlap('queue queue queue', 'queue queue') = 1;
SELECT token_overlap('a b c', 'c b a a b c') = 3;
SELECT token_overlap('latency', 'response time') = 0;
SELECT token_overlap('restart', 'restarted') = 0;
SELECT typeof(token_overlap('a', 'a')) = 'integer';

-- Empty and token-free texts.
SELECT token_overlap('', '') = 0;
SELECT token_overlap('', 'queue') = 0;
SELECT token_overlap('queue', '') = 0;
SELECT token_overlap('!!! ... ---', '!!! ... ---') = 0;
SELECT evidence_tokens('') = '[]';
SELECT evidence_tokens('  ,;  ') = '[]';

-- Punctuation and underscores separate; digits are token characters.
SELECT evidence_tokens('Queue-Consumer lag!') = '["queue","consumer","lag"]';
SELECT evidence_tokens('snake_case dot.ted') = '["snake","case","dot","ted"]';
SELECT evidence_tokens('HTTP 503s at 10:42') = '["http","503s","at","10","42"]';
SELECT token_overlap('error 503', 'got 503 twice, 5030 once') = 1;

-- Non-ASCII letters separate tokens and never form them.
SELECT evidence_tokens('café naïve') = '["caf","na","ve"]';
SELECT evidence_tokens('日本語 Ελληνικά русский') = '[]';
SELECT evidence_tokens('１２３ ｑｕｅｕｅ') = '[]';
SELECT token_overlap('ß', 'ss') = 0;

-- The special code points: U+0130 adds 'i' and ends the token (its lowercase is
-- i + U+0307); U+212A KELVIN SIGN lowercases to 'k' and continues it.
SELECT evidence_tokens('İstanbul') = '["i","stanbul"]';
SELECT evidence_tokens('xİy') = '["xi","y"]';
SELECT evidence_tokens('İİ') = '["i","i"]';
SELECT evidence_tokens('5K run') = '["5k","run"]';
SELECT evidence_tokens('KKK') = '["kkk"]';
SELECT token_overlap('k8s', 'K8s') = 1;
SELECT token_overlap('i', 'İ') = 1;
-- U+212B ANGSTROM SIGN lowercases to U+00E5, not ASCII: a separator.
SELECT evidence_tokens('aÅb') = '["a","b"]';

-- NUL characters separate tokens and do not end the text.
SELECT token_overlap('lag', 'queue' || char(0) || 'lag') = 1;
SELECT token_overlap('a' || char(0) || 'lag', 'lag') = 1;
SELECT evidence_tokens('x' || char(0) || 'y' || char(0)) = '["x","y"]';

-- Invalid UTF-8 (from SQL casts): bytes are read as Python's
-- bytes.decode("utf-8", "replace") would read them; nothing crashes.
SELECT evidence_tokens(CAST(x'ff61fe62' AS TEXT)) = '["a","b"]';
SELECT evidence_tokens(CAST(x'c4' AS TEXT)) = '[]';
SELECT evidence_tokens(CAST(x'e284' AS TEXT)) = '[]';
SELECT evidence_tokens(CAST(x'61e28461' AS TEXT)) = '["a","a"]';
SELECT evidence_tokens(CAST(x'61c4b062' AS TEXT)) = '["ai","b"]';
SELECT evidence_tokens(CAST(x'f0c4b0' AS TEXT)) = '["i"]';
SELECT evidence_tokens(CAST(x'80808061' AS TEXT)) = '["a"]';
SELECT token_overlap(CAST(x'ff' AS TEXT), CAST(x'ff' AS TEXT)) = 0;

-- NULL in, NULL out; other types are read as their text.
SELECT token_overlap(NULL, 'queue') IS NULL;
SELECT token_overlap('queue', NULL) IS NULL;
SELECT evidence_tokens(NULL) IS NULL;
SELECT token_overlap(503, 'error 503') = 1;
SELECT token_overlap(x'717565756521', 'queue') = 1;

-- Very long texts: a million-character body, a long token, many distinct tokens.
SELECT token_overlap('needle', printf('%.*c', 1000000, 'x') || ' needle') = 1;
SELECT token_overlap(printf('%.*c', 100000, 'a'), printf('%.*c', 100000, 'a')) = 1;
SELECT token_overlap(printf('%.*c', 100000, 'a'), printf('%.*c', 99999, 'a')) = 0;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
SELECT token_overlap((SELECT group_concat('w' || i, ' ') FROM n),
                     (SELECT group_concat('w' || (i * 2), ' ') FROM n)) = 2500;

-- The query's token set is built once per statement, not once per row.
SELECT test_sets_built() >= 0;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
SELECT sum(token_overlap('w1 w2 w3', 'w' || i)) = 3 FROM n;
SELECT test_sets_built() = 1;

-- Wrong number of arguments is SQLite's own error.
-- error: wrong number of arguments to function token_overlap()
SELECT token_overlap('a');

-- The functions are innocuous: allowed in a view used under trusted_schema=OFF.
CREATE VIEW overlap_view AS SELECT token_overlap('a b', 'b c') AS n;
PRAGMA trusted_schema = OFF;
SELECT n = 1 FROM overlap_view;
PRAGMA trusted_schema = ON;

SELECT evidence_version() GLOB '[0-9]*.[0-9]*.[0-9]*';
