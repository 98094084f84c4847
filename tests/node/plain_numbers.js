// Writes and ranks through the pyevidence extension from Node with plain JavaScript
// numbers, which better-sqlite3 binds as reals, and prints what happened as JSON for
// tests/test_node.py to compare with EvidenceStore on the same file.
//
//   node plain_numbers.js DATABASE EXTENSION
"use strict";
const Database = require("better-sqlite3");

const [databasePath, extensionPath] = process.argv.slice(2);
const db = new Database(databasePath);
db.loadExtension(extensionPath);

const put = db.prepare(
  "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)" +
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
);
const rank = db.prepare(
  "SELECT record_id, source, token_overlap(?, body) AS score FROM evidence_eligible(?, ?, ?)" +
    " WHERE score > 0 ORDER BY score DESC, record_id LIMIT 5"
);
const QUERY = "queue backlog consumer lag";

for (const [recordId, kind, body, source, expiresAt] of [
  ["rb-queue", "runbook", "queue backlog: check consumer lag", "runbook://queue/v1", 1000],
  ["inc-new", "incident", "queue lag incident", "incident://new", 101],
  ["inc-old", "incident", "queue backlog incident", "incident://old", 100],
  ["zero", "working", "queue zero", "note://zero", 0],
  ["big", "working", "backlog far future", "note://big", 2 ** 62],
  ["big-int", "working", "backlog far future as a BigInt", "note://big-int", 2n ** 62n],
]) {
  put.run("team-a", recordId, "v1", kind, body, source, expiresAt);
}
put.run("team-b", "note", "v1", "working", "team-b queue backlog consumer lag", "note://b", 1000);

function refusal(action) {
  try {
    action();
  } catch (error) {
    return error.message;
  }
  return null;
}

const refused = {};
for (const [name, value] of [
  ["half", 100.5],
  ["two_63", 2 ** 63],
  ["infinity", Infinity],
  ["minus_one", -1],
  ["nan", NaN],
]) {
  refused[`expires_at ${name}`] = refusal(() =>
    put.run("team-a", `bad-${name}`, "v1", "working", "queue", "note://bad", value)
  );
  refused[`now ${name}`] = refusal(() => rank.all(QUERY, "team-a", "v1", value));
}

const stored = db.prepare("SELECT count(*) AS n FROM evidence_versions").get().n;
console.log(
  JSON.stringify({
    hits: rank.all(QUERY, "team-a", "v1", 100),
    hits_bigint_now: rank.all(QUERY, "team-a", "v1", 100n),
    refused,
    stored,
  })
);
db.close();
