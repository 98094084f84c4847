// From Node: pyevidence's SQLite extension in better-sqlite3 (npm install better-sqlite3@12).
// Plain JavaScript numbers work where the schema wants integers: a whole number is taken
// as that integer, while 100.5, NaN or Infinity are refused.
const Database = require("better-sqlite3");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

// The extension pip installed with pyevidence, and the schema in the package's storage/ folder.
const extension = execFileSync(process.env.PYTHON || "python3", [
  "-c",
  "import pyevidence; print(pyevidence.loadable_path())",
]).toString().trim();
const db = new Database("evidence.db");
db.loadExtension(extension);
if (db.pragma("user_version", { simple: true }) === 0) {
  db.exec(fs.readFileSync(path.join(path.dirname(extension), "storage", "schema.sql"), "utf8"));
}

const put = db.prepare(
  "INSERT INTO evidence_put (tenant, record_id, revision, kind, body, source, expires_at)" +
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
);
put.run("team-a", "rb-queue", "v1", "runbook", "queue backlog: check consumer lag", "runbook://queue/v1", 1000);
put.run("team-a", "inc-7", "v1", "incident", "queue lag after the deploy", "incident://7", 2000);
put.run("team-b", "note", "v1", "working", "queue backlog consumer lag", "note://b", 1000);

// Eligibility first (team-a, v1, not expired at now = 100), then lexical overlap.
const hits = db
  .prepare(
    `SELECT record_id, source, token_overlap(?, body) AS score
       FROM evidence_eligible(?, ?, ?)
      WHERE score > 0 ORDER BY score DESC, record_id LIMIT 5`
  )
  .all("queue backlog consumer lag", "team-a", "v1", 100);
console.log(hits);
// [
//   { record_id: 'rb-queue', source: 'runbook://queue/v1', score: 4 },
//   { record_id: 'inc-7', source: 'incident://7', score: 2 }
// ]
db.close();
