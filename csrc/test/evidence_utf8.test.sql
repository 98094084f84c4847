-- evidence_utf8_valid() and the put trigger's door: every SELECT here must return 1.
-- tests/test_raw_sql.py checks the C function against Python's decoder on random bytes.

-- Well-formed UTF-8, from one to four bytes a character; NUL is a character.
SELECT evidence_utf8_valid(CAST('queue lag' AS BLOB)) = 1;
SELECT evidence_utf8_valid(x'') = 1;
SELECT evidence_utf8_valid(x'00') = 1;
SELECT evidence_utf8_valid(CAST('İstanbul é 𐐀' AS BLOB)) = 1;
SELECT evidence_utf8_valid(x'f48fbfbf') = 1;  -- U+10FFFF, the last code point
SELECT evidence_utf8_valid(x'ee8080') = 1;    -- U+E000, right after the surrogates

-- Not UTF-8: stray bytes, overlong forms, surrogates, beyond U+10FFFF, cut short.
SELECT evidence_utf8_valid(x'ff') = 0;
SELECT evidence_utf8_valid(x'71ff') = 0;
SELECT evidence_utf8_valid(x'80') = 0;
SELECT evidence_utf8_valid(x'c0af') = 0;
SELECT evidence_utf8_valid(x'c1bf') = 0;
SELECT evidence_utf8_valid(x'e080af') = 0;
SELECT evidence_utf8_valid(x'f08f8080') = 0;
SELECT evidence_utf8_valid(x'eda080') = 0;    -- U+D800
SELECT evidence_utf8_valid(x'edbfbf') = 0;    -- U+DFFF
SELECT evidence_utf8_valid(x'f4908080') = 0;  -- U+110000
SELECT evidence_utf8_valid(x'f5808080') = 0;
SELECT evidence_utf8_valid(x'e282') = 0;
SELECT evidence_utf8_valid(x'c3') = 0;
SELECT evidence_utf8_valid(x'c328') = 0;

-- TEXT is checked as its bytes, as they are: SQLite itself does not check them.
SELECT evidence_utf8_valid(CAST(x'71ff' AS TEXT)) = 0;
SELECT evidence_utf8_valid(42) = 1;
SELECT evidence_utf8_valid(NULL) IS NULL;

-- The put trigger refuses such text before anything is written, under every conflict policy.
-- error: must be valid UTF-8 text
INSERT INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'runbook', CAST(x'71ff' AS TEXT), 's', 9);
-- error: must be valid UTF-8 text
INSERT OR IGNORE INTO evidence_put VALUES (CAST(x'c0af' AS TEXT), 'r1', 'v1', 'runbook', 'b', 's', 9);
-- error: must be valid UTF-8 text
INSERT OR REPLACE INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'runbook', 'b', CAST(x'eda080' AS TEXT), 9);
SELECT count(*) = 0 FROM evidence_versions;

-- So are the other bad values, before the version is written (a CHECK alone would
-- not be: OR IGNORE and OR FAIL would keep the version).
-- error: kind must be working, incident or runbook
INSERT OR IGNORE INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'bogus', 'b', 's', 9);
-- error: must not be empty or only whitespace
INSERT OR FAIL INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'runbook', ' ', 's', 9);
-- error: expires_at must be a whole number from 0 to 9223372036854775807
INSERT OR IGNORE INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'runbook', 'b', 's', -1);
SELECT count(*) = 0 FROM evidence_versions;
INSERT INTO evidence_put VALUES ('team-a', 'r1', 'v1', 'runbook', 'é', 's', 9);
SELECT count(*) = 1 FROM evidence_versions;
