-- evidence_sha256(): every SELECT here must return 1.
-- The expected digests come from pyevidence/core/hashing.py (Python's hashlib);
-- tests/test_versions.py checks the two on random arguments as well.


-- No arguments: SHA-256 of the empty message (FIPS 180-4's own test vector).
SELECT evidence_sha256() = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
SELECT evidence_sha256('abc') = 'ca41623a32be3fe1af34541e4550908d5b0f5c62b894ea4efbd50fd2b304e91c';

-- Length prefixes keep the argument boundaries apart.
SELECT evidence_sha256('ab', 'c') = '63ba993f79ce084a3cfd7e7c002b24e7987087f796e1609560e2110350904bde';
SELECT evidence_sha256('a', 'bc') = 'e58ee81c0edc24d45113a8ff429320d78b8567ac9438b34a02f5cab206561769';

-- NULL, integers and text that looks like an integer all differ.
SELECT evidence_sha256(NULL) = '5e2cc5130f232a437c79d1363dbf012379ee5d000cf6842e5036af99fd1eafc8';
SELECT evidence_sha256(42) = 'a55899d0f7e96fbb0dbaa381c72e97b109ff73d96b5a5a757cfca6139ff5e120';
SELECT evidence_sha256('42') = '2d05ba246b65c2a62777a72d54db3209f71db71b454e3671706d9403078e4986';
SELECT evidence_sha256(-9223372036854775808) = '00fcade7a88c536a9338872369318cdfe6ef0a5bca602fbf55c2f1dc4a536d8b';

-- NUL is part of the text, as everywhere in pyevidence.
SELECT evidence_sha256('a' || char(0) || 'b') = 'e6409ed0aba838bf9629b406da5cf848c86ec13aea5718780dcc83137bff6177';

-- Text is hashed as its UTF-8 bytes.
SELECT evidence_sha256('İstanbul é') = '0717599a4ad29c1bd2416ffafbede8bf888b0b547a93d1e64f725bfd465f9ee5';

-- Lengths around the 64-byte block boundary, and many blocks.
SELECT evidence_sha256(printf('%.55c', 'x')) = '94928017061a9281514a762008dc2846143150726f310b9b2505c81b888ba743';
SELECT evidence_sha256(printf('%.56c', 'x')) = 'a05b21c84bb45979d45ab3d9ead3c6bb6eb6ad84cac985a7add39e4200b14895';
SELECT evidence_sha256(printf('%.64c', 'x')) = '646d3c0b90a6ffbf386f9dbe7f4418a6302222dd4a34afd6183c38ed93591c88';
SELECT evidence_sha256(printf('%.1000c', 'x')) = '618e587a6cc671a2140507597a6db1b7b4683a017da287bedd5bb11a555a4e4b';

-- The encoding's types: only text, integers and NULL.
SELECT typeof(evidence_sha256('x')) = 'text' AND length(evidence_sha256('x')) = 64;
-- error: evidence_sha256(): argument 2 is a float; it takes only text, integers and NULL
SELECT evidence_sha256('x', 1.5);
-- error: evidence_sha256(): argument 1 is a blob; it takes only text, integers and NULL
SELECT evidence_sha256(x'00');
SELECT count(*) = 1 FROM pragma_function_list WHERE name = 'evidence_sha256' AND narg = -1;

-- evidence_hash_bytes(): the 32 bytes a value of evidence_sha256() stands for, and back.
SELECT evidence_hash_bytes('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
       = x'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
SELECT lower(hex(evidence_hash_bytes(evidence_sha256('abc')))) = evidence_sha256('abc');
SELECT typeof(evidence_hash_bytes(evidence_sha256(1))) = 'blob' AND length(evidence_hash_bytes(evidence_sha256(1))) = 32;
SELECT evidence_hash_bytes(NULL) IS NULL;
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes('E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855');
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85');
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555');
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes('g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes(x'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
-- error: evidence_hash_bytes(): takes 64 lowercase hex digits (a value of evidence_sha256())
SELECT evidence_hash_bytes(42);
