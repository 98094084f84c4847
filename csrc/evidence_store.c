/*
** evidence_store.c: the native engine's store API (see evidence_store.h).
**
** A thin layer over one SQLite connection: open it, register the extension's
** functions on it directly (this file is built with -DSQLITE_CORE into the
** Python module, no load_extension needed), and run put, forget and retrieve
** as prepared statements that are kept for the connection's lifetime.
** Retrieve ranks inside SQLite, over evidence_eligible only. Puts go through
** the batch writer (evidence_batch.c), which writes the rows the evidence_put
** view's trigger would; forget goes through the schema's delete trigger.
*/
#include "evidence_store.h"

#include <string.h>

#include "evidence_batch.h"
#include "evidence_search.h"
#include "evidence_sigint.h"
#include "evidence_sqlite.h"
#include "evidence_stmt_cache.h"

/* The text columns a row of STMT_RANK and STMT_CANDIDATES starts with. */
#define N_ROW_TEXTS 6

/* The statements, prepared once on first use. */
enum { STMT_FORGET, STMT_RANK, STMT_CANDIDATES, STMT_HIT, N_STMT };

static const char *const azStmtSql[N_STMT] = {
    /* STMT_FORGET: the delete trigger erases the versions; pyevidence/storage/schema.py:FORGET_SQL
    ** (the table, not the view evidence, whose deletes sqlite3_changes() does not count) */
    "DELETE FROM evidence_current WHERE tenant = ?1 AND record_id = ?2",
    /* STMT_RANK: the ranking order of pyevidence/ranking/scoring.py:rank, in SQL, over eligible rows only.
    ** The inner query scores; OFFSET 0 keeps SQLite from flattening it, which would
    ** compute every score twice (once for WHERE, once for the result). Only
    ** (record_id, score) go through the top-k sort; the join then reads the few
    ** winning rows whole, in the same statement and so the same snapshot. */
    "SELECT e.record_id, e.revision, e.kind, e.body, e.source, e.content_hash, e.expires_at, e.version,"
    " top.score"
    " FROM (SELECT record_id, score FROM ("
    "  SELECT record_id, token_overlap(?4, body) AS score"
    "  FROM evidence_eligible(?1, ?2, ?3) LIMIT -1 OFFSET 0)"
    "  WHERE score > 0 ORDER BY score DESC, record_id LIMIT ?5) AS top"
    " JOIN evidence AS e ON e.tenant = ?1 AND e.record_id = top.record_id"
    " ORDER BY top.score DESC, top.record_id",
    /* STMT_CANDIDATES */
    "SELECT record_id, revision, kind, body, source, content_hash, expires_at, version, 0"
    " FROM evidence_eligible(?1, ?2, ?3) ORDER BY record_id",
    /* STMT_HIT: one hit of the index search, read whole, with its score */
    "SELECT record_id, revision, kind, body, source, content_hash, expires_at, version, ?3"
    " FROM evidence WHERE tenant = ?1 AND record_id = ?2",
};

struct EvidenceStore {
  sqlite3 *db;
  EvidenceScanStats *pStats; /* evidence_eligible's per-connection row count */
  sqlite3_stmt *aStmt[N_STMT];
  EvidenceBatch *pBatch;       /* the batch writer: its statements and its vouching flag */
  EvidenceSearcher *pSearcher; /* retrieve through the token index */
  char *zErr;                  /* the last error message, or 0 */
  char *zDenied;               /* why the read-only gate refused the current query, or 0 */
  sqlite3_str *pSchemaNames;   /* the schema's tables and views while a read-only query runs */
  EvidenceStmtCache queries;   /* evidence_store_query's statements run without the gate */
};

/* Records an error message; returns rc so callers can `return storeError(...)`. */
static int storeError(EvidenceStore *p, int rc, const char *zMsg) {
  sqlite3_free(p->zErr);
  p->zErr = sqlite3_mprintf("%s", zMsg);
  return rc;
}

static int storeDbError(EvidenceStore *p, int rc) {
  return storeError(p, rc, p->db ? sqlite3_errmsg(p->db) : sqlite3_errstr(rc));
}

/* SQLite reads a name beginning with "file:" as a URI when it is built with
** SQLITE_USE_URI (as Debian's is), whatever the open flags say. Such a name is
** opened as the plain file name it also is, by writing it "./file:...". Returns
** a copy to sqlite3_free, or 0 when the name can be used as it is (or on OOM, with
** *pNoMem set). The Python side refuses such names before they get here
** (pyevidence/storage/paths.py); this guards every other caller of the C API. */
static char *plainName(const char *path, int *pNoMem) {
  char *z;
  *pNoMem = 0;
  if (strncmp(path, "file:", 5) != 0) return 0;
  z = sqlite3_mprintf("./%s", path);
  *pNoMem = z == 0;
  return z;
}

static int openPlain(const char *path, sqlite3 **pDb, int flags) {
  int noMem;
  char *zPlain = plainName(path, &noMem);
  int rc;
  if (noMem) return SQLITE_NOMEM;
  rc = sqlite3_open_v2(zPlain ? zPlain : path, pDb, flags, 0);
  sqlite3_free(zPlain);
  return rc;
}

int evidence_store_open(const char *path, int read_only, EvidenceStore **out) {
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
  EvidenceStore *p = sqlite3_malloc(sizeof(*p));
  int rc;
  *out = p;
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  rc = openPlain(path, &p->db, flags);
  if (rc == SQLITE_NOMEM && p->db == 0) return storeError(p, rc, "out of memory");
  if (rc == SQLITE_OK) rc = sqlite3_extended_result_codes(p->db, 1);
  if (rc == SQLITE_OK) rc = evidenceRegisterWithStats(p->db, &p->pStats);
  if (rc == SQLITE_OK) rc = evidenceBatchOpen(p->db, &p->pBatch);
  if (rc == SQLITE_OK) rc = evidenceSearcherOpen(p->db, "main", &p->pSearcher);
  return rc == SQLITE_OK ? SQLITE_OK : storeDbError(p, rc);
}

int evidence_store_load_extension(EvidenceStore *p, const char *path, const char *entry_point) {
  char *zErr = 0;
  int rc = sqlite3_db_config(p->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, (int *)0);
  if (rc != SQLITE_OK) return storeDbError(p, rc);
  rc = sqlite3_load_extension(p->db, path, entry_point, &zErr);
  sqlite3_db_config(p->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
  if (rc != SQLITE_OK) {
    storeError(p, rc, zErr ? zErr : sqlite3_errstr(rc));
    sqlite3_free(zErr);
  }
  return rc;
}

void evidence_store_close(EvidenceStore *p) {
  int i;
  if (p == 0) return;
  evidenceSigintUnwatch(p->db);
  for (i = 0; i < N_STMT; i++) sqlite3_finalize(p->aStmt[i]);
  evidenceStmtCacheClear(&p->queries);
  evidenceBatchFree(p->pBatch);
  evidenceSearcherFree(p->pSearcher);
  sqlite3_close(p->db);
  sqlite3_free(p->zErr);
  sqlite3_free(p->zDenied);
  sqlite3_free(sqlite3_str_finish(p->pSchemaNames));
  sqlite3_free(p);
}

int evidence_store_watch_sigint(EvidenceStore *p) {
  return p ? evidenceSigintWatch(p->db) : 0;
}

int evidence_store_unwatch_sigint(EvidenceStore *p) {
  return p ? evidenceSigintUnwatch(p->db) : 0;
}

const char *evidence_store_errmsg(EvidenceStore *p) {
  if (p == 0) return "out of memory";
  return p->zErr ? p->zErr : "not an error";
}

/* The prepared statement for id, reset and with no bindings left over. */
static int storeStmt(EvidenceStore *p, int id, sqlite3_stmt **ppStmt) {
  if (p->aStmt[id] == 0) {
    int rc = sqlite3_prepare_v3(p->db, azStmtSql[id], -1, SQLITE_PREPARE_PERSISTENT, &p->aStmt[id], 0);
    if (rc != SQLITE_OK) return storeDbError(p, rc);
  }
  *ppStmt = p->aStmt[id];
  return SQLITE_OK;
}

static void storeStmtDone(sqlite3_stmt *pStmt) {
  sqlite3_reset(pStmt);
  sqlite3_clear_bindings(pStmt);
}

static int bindText(sqlite3_stmt *pStmt, int i, const char *z, size_t n) {
  return sqlite3_bind_text64(pStmt, i, z, (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

/* Steps a statement that returns no rows, then resets it. */
static int storeRun(EvidenceStore *p, sqlite3_stmt *pStmt) {
  int rc = sqlite3_step(pStmt);
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK) storeDbError(p, rc);
  storeStmtDone(pStmt);
  return rc;
}

int evidence_store_in_transaction(EvidenceStore *p) {
  return !sqlite3_get_autocommit(p->db);
}

int evidence_store_exec(EvidenceStore *p, const char *sql, size_t sql_len) {
  char *zSql = sqlite3_malloc64(sql_len + 1);
  char *zErr = 0;
  int rc;
  if (zSql == 0) return storeError(p, SQLITE_NOMEM, "out of memory");
  memcpy(zSql, sql, sql_len);
  zSql[sql_len] = 0;
  rc = sqlite3_exec(p->db, zSql, 0, 0, &zErr);
  sqlite3_free(zSql);
  if (rc != SQLITE_OK) storeError(p, rc, zErr ? zErr : sqlite3_errstr(rc));
  sqlite3_free(zErr);
  return rc;
}

/* ---- Generic queries */

static int bindValue(sqlite3_stmt *pStmt, int i, const EvidenceValue *v) {
  switch (v->type) {
    case SQLITE_INTEGER: return sqlite3_bind_int64(pStmt, i, v->i);
    case SQLITE_FLOAT: return sqlite3_bind_double(pStmt, i, v->d);
    case SQLITE_TEXT: return bindText(pStmt, i, v->z, v->n);
    case SQLITE_BLOB: return sqlite3_bind_blob64(pStmt, i, v->z, (sqlite3_uint64)v->n, SQLITE_STATIC);
    case SQLITE_NULL: return sqlite3_bind_null(pStmt, i);
    default: return SQLITE_MISUSE;
  }
}

void evidence_table_free(EvidenceTable *t) {
  size_t i;
  if (t == 0) return;
  for (i = 0; i < t->n_rows * (size_t)t->n_cols; i++) sqlite3_free((void *)t->cells[i].z);
  for (i = 0; t->names && i < (size_t)t->n_cols; i++) sqlite3_free(t->names[i]);
  sqlite3_free(t->names);
  sqlite3_free(t->cells);
  sqlite3_free(t);
}

/* Copies the statement's column names into t. */
static int tableNames(EvidenceTable *t, sqlite3_stmt *pStmt) {
  int j;
  t->names = sqlite3_malloc64((sqlite3_uint64)(t->n_cols ? t->n_cols : 1) * sizeof(char *));
  if (t->names == 0) return SQLITE_NOMEM;
  memset(t->names, 0, (size_t)(t->n_cols ? t->n_cols : 1) * sizeof(char *));
  for (j = 0; j < t->n_cols; j++) {
    const char *zName = sqlite3_column_name(pStmt, j);
    t->names[j] = sqlite3_mprintf("%s", zName ? zName : "");
    if (t->names[j] == 0) return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

/* Copies the current row of pStmt onto the end of t. */
static int tableAppendRow(EvidenceTable *t, sqlite3_stmt *pStmt, size_t *pnAlloc) {
  int j;
  if (t->n_rows * (size_t)t->n_cols + (size_t)t->n_cols > *pnAlloc) {
    size_t nNew = *pnAlloc ? *pnAlloc * 2 : (size_t)t->n_cols * 16;
    EvidenceValue *aNew = sqlite3_realloc64(t->cells, nNew * sizeof(EvidenceValue));
    if (aNew == 0) return SQLITE_NOMEM;
    t->cells = aNew;
    *pnAlloc = nNew;
  }
  for (j = 0; j < t->n_cols; j++) {
    EvidenceValue *v = &t->cells[t->n_rows * (size_t)t->n_cols + (size_t)j];
    memset(v, 0, sizeof(*v));
    v->type = sqlite3_column_type(pStmt, j);
    if (v->type == SQLITE_INTEGER) v->i = sqlite3_column_int64(pStmt, j);
    if (v->type == SQLITE_FLOAT) v->d = sqlite3_column_double(pStmt, j);
    if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) {
      const void *z = v->type == SQLITE_TEXT ? (const void *)sqlite3_column_text(pStmt, j)
                                             : sqlite3_column_blob(pStmt, j);
      char *zCopy;
      v->n = (size_t)sqlite3_column_bytes(pStmt, j);
      zCopy = sqlite3_malloc64(v->n + 1);
      if (zCopy == 0) {
        v->type = SQLITE_NULL; /* keeps the table freeable */
        t->n_rows++;
        return SQLITE_NOMEM;
      }
      if (v->n) memcpy(zCopy, z, v->n);
      zCopy[v->n] = 0;
      v->z = zCopy;
    }
  }
  t->n_rows++;
  return SQLITE_OK;
}

/* ---- The read-only SQL gate
**
** With read_only set, evidence_store_query runs SQL that a user typed
** (store.query(), `pyevidence sql`), possibly on a file someone else wrote.
** sqlite3_stmt_readonly() only says whether the statement itself writes a
** database. It cannot see a function with side effects (fts3_tokenizer() hands
** out, and replaces, a pointer into libsqlite3: the next MATCH crashes) nor a
** pragma that writes through a statement of its own (optimize runs ANALYZE).
** So the gate is an authorizer built of allow-lists: actions, functions and
** pragmas. Whatever is not named below is refused, including whatever a later
** SQLite, or an extension loaded into the connection, adds; each refusal names
** what it refused. tests/test_sql_gate.py sweeps every function and pragma of
** the linked SQLite against these lists. */

/* Functions read-only SQL may call: each computes its result from its arguments
** (or reports a fixed fact such as sqlite_version()), reads nothing but them, and
** writes nothing. Deliberately absent, among everything else:
**   load_extension      runs a library's code;
**   fts3_tokenizer      returns, and with two arguments replaces, a raw pointer;
**   fts5, matchinfo, snippet, offsets, highlight, bm25, optimize, rtreenode,
**   rtreedepth, rtreecheck
**                       FTS and R*Tree internals (pointers, page images, index
**                       merges); pyevidence keeps no such tables;
**   sqlite_log          writes to the process's error log;
**   changes, total_changes, last_insert_rowid
**                       the connection's history of writes, not data;
**   zeroblob            only of use to reserve space for blob I/O, and a
**                       one-call way to ask for a gigabyte;
**   subtype, sqlite_offset
**                       debugging aids (internal flags, file offsets).
** Memory: every value stays within SQLite's length limit (SQLITE_LIMIT_LENGTH). */
static const char *const azReadOnlyFunction[] = {
    /* scalar */
    "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if", "ifnull", "iif", "instr",
    "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "octet_length",
    "printf", "quote", "random", "randomblob", "replace", "round", "rtrim", "sign", "soundex", "substr",
    "substring", "trim", "typeof", "unhex", "unicode", "unlikely", "upper",
    /* the MATCH operator: an error, unless a virtual table (FTS) answers it by searching */
    "match",
    /* facts about the SQLite library, the same for every query */
    "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_source_id", "sqlite_version",
    /* aggregate */
    "avg", "count", "group_concat", "string_agg", "sum", "total",
    /* window */
    "cume_dist", "dense_rank", "first_value", "lag", "last_value", "lead", "nth_value", "ntile",
    "percent_rank", "rank", "row_number",
    /* date and time */
    "current_date", "current_time", "current_timestamp", "date", "datetime", "julianday", "strftime", "time",
    "timediff", "unixepoch",
    /* math */
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees",
    "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh",
    "sqrt", "tan", "tanh", "trunc",
    /* JSON (json_each and json_tree are tables, not functions) */
    "->", "->>", "json", "json_array", "json_array_length", "json_error_position", "json_extract",
    "json_group_array", "json_group_object", "json_insert", "json_object", "json_patch", "json_pretty",
    "json_quote", "json_remove", "json_replace", "json_set", "json_type", "json_valid", "jsonb",
    "jsonb_array", "jsonb_extract", "jsonb_group_array", "jsonb_group_object", "jsonb_insert", "jsonb_object",
    "jsonb_patch", "jsonb_remove", "jsonb_replace", "jsonb_set",
    /* pyevidence's own */
    "evidence_sha256", "evidence_hash_bytes", "evidence_tokens", "evidence_version", "token_overlap",
    "evidence_token_list", "evidence_docset_with", "evidence_docset_without", "evidence_docset_union",
    "evidence_eligible_count",
    /* sqlite-vec's vector arithmetic, once the store has loaded it for vector ranking */
    "vec_add", "vec_bit", "vec_distance_cosine", "vec_distance_hamming", "vec_distance_l1", "vec_distance_l2",
    "vec_f32", "vec_int8", "vec_length", "vec_normalize", "vec_quantize_binary", "vec_quantize_int8",
    "vec_slice", "vec_sub", "vec_to_json", "vec_type", "vec_version"};

/* Pragmas read-only SQL may run, as a statement (PRAGMA page_count) or as a
** table (SELECT * FROM pragma_table_info('evidence')). Each only reports. Given a
** value, most would change the connection (PRAGMA cache_size = 1): a value is
** refused unless bNamesObject, where the argument names the table, index or
** database to describe or check (or, for the checks, a count of errors to list).
** Deliberately absent, among everything else: optimize (runs ANALYZE, which
** writes sqlite_stat1), wal_checkpoint, incremental_vacuum, shrink_memory,
** journal_mode (a query of it switches modes; sqlite3_stmt_readonly refuses it
** too), and the deprecated ones. */
static const struct ReadOnlyPragma {
  const char *zName;
  int bNamesObject;
} aReadOnlyPragma[] = {/* what the database holds */
                       {"table_info", 1},
                       {"table_xinfo", 1},
                       {"table_list", 1},
                       {"index_list", 1},
                       {"index_info", 1},
                       {"index_xinfo", 1},
                       {"foreign_key_list", 1},
                       {"database_list", 0},
                       /* checks that read every page */
                       {"integrity_check", 1},
                       {"quick_check", 1},
                       {"foreign_key_check", 1},
                       /* facts about the file */
                       {"application_id", 0},
                       {"auto_vacuum", 0},
                       {"data_version", 0},
                       {"encoding", 0},
                       {"freelist_count", 0},
                       {"page_count", 0},
                       {"page_size", 0},
                       {"schema_version", 0},
                       {"user_version", 0},
                       /* what this SQLite offers */
                       {"collation_list", 0},
                       {"compile_options", 0},
                       {"function_list", 0},
                       {"module_list", 0},
                       {"pragma_list", 0},
                       /* the connection's settings, read */
                       {"analysis_limit", 0},
                       {"automatic_index", 0},
                       {"busy_timeout", 0},
                       {"cache_size", 0},
                       {"cache_spill", 0},
                       {"cell_size_check", 0},
                       {"checkpoint_fullfsync", 0},
                       {"defer_foreign_keys", 0},
                       {"foreign_keys", 0},
                       {"fullfsync", 0},
                       {"hard_heap_limit", 0},
                       {"ignore_check_constraints", 0},
                       {"journal_size_limit", 0},
                       {"legacy_alter_table", 0},
                       {"locking_mode", 0},
                       {"max_page_count", 0},
                       {"mmap_size", 0},
                       {"query_only", 0},
                       {"read_uncommitted", 0},
                       {"recursive_triggers", 0},
                       {"reverse_unordered_selects", 0},
                       {"secure_delete", 0},
                       {"soft_heap_limit", 0},
                       {"synchronous", 0},
                       {"temp_store", 0},
                       {"threads", 0},
                       {"trusted_schema", 0},
                       {"wal_autocheckpoint", 0}};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Tables read-only SQL may read besides the database's own tables and views (its
** schema, read as each query starts): the schema table, and the table-valued
** functions that only compute from their arguments or read the store. A pragma's
** table (pragma_table_info) follows the pragma's entry above. Refused, among every
** other module a later SQLite or an extension adds: sqlite_stmt (the connection's
** prepared statements and their counters), sqlite_dbpage and dbstat (the file's
** raw pages and their layout), and sqlite-vec's vec_each and vec_npy_each. */
static const char *const azReadOnlyTable[] = {"sqlite_master",      "sqlite_schema",  "sqlite_temp_master",
                                              "sqlite_temp_schema", "json_each",      "json_tree",
                                              "evidence_eligible",  "evidence_search"};

static const char zReadOnlyMessage[] =
    "only read-only statements are allowed here; write with put and forget";

/* Keeps the message of a refusal for the caller; the authorizer cannot return one. */
static int readOnlyDeny(EvidenceStore *p, char *zMsg) {
  sqlite3_free(p->zDenied);
  p->zDenied = zMsg;
  return SQLITE_DENY;
}

static int readOnlyFunction(EvidenceStore *p, const char *zName) {
  size_t i;
  for (i = 0; i < COUNT_OF(azReadOnlyFunction); i++) {
    if (sqlite3_stricmp(zName, azReadOnlyFunction[i]) == 0) return SQLITE_OK;
  }
  return readOnlyDeny(
      p, sqlite3_mprintf("function %s() is not allowed in read-only SQL; it allows only functions"
                         " that cannot write, load code or expose memory (see store.query())",
                         zName));
}

static int readOnlyPragma(EvidenceStore *p, const char *zName, const char *zArg) {
  size_t i;
  for (i = 0; i < COUNT_OF(aReadOnlyPragma); i++) {
    if (sqlite3_stricmp(zName, aReadOnlyPragma[i].zName) != 0) continue;
    if (zArg == 0 || aReadOnlyPragma[i].bNamesObject) return SQLITE_OK;
    return readOnlyDeny(p,
                        sqlite3_mprintf("pragma %s with a value is not allowed in read-only SQL: it changes"
                                        " the connection; only read-only statements are allowed here",
                                        zName));
  }
  return readOnlyDeny(p, sqlite3_mprintf("pragma %s is not allowed in read-only SQL; it allows only pragmas"
                                         " that just read (see store.query())",
                                         zName));
}

/* Whether read-only SQL may read table zName: the schema's own, or one listed. */
static int readOnlyTable(EvidenceStore *p, const char *zName) {
  size_t i;
  if (zName == 0) return readOnlyDeny(p, 0);
  for (i = 0; i < COUNT_OF(azReadOnlyTable); i++) {
    if (sqlite3_stricmp(zName, azReadOnlyTable[i]) == 0) return SQLITE_OK;
  }
  if (sqlite3_strnicmp(zName, "pragma_", 7) == 0) return readOnlyPragma(p, zName + 7, 0);
  if (p->pSchemaNames) { /* each name ends with a NUL byte, which no name can hold */
    const char *zNames = sqlite3_str_value(p->pSchemaNames);
    const char *zEnd = zNames + sqlite3_str_length(p->pSchemaNames);
    while (zNames && zNames < zEnd) {
      if (sqlite3_stricmp(zName, zNames) == 0) return SQLITE_OK;
      zNames += strlen(zNames) + 1;
    }
  }
  return readOnlyDeny(p, sqlite3_mprintf("table %s is not allowed in read-only SQL; it allows the database's"
                                         " own tables and views, and only the table-valued functions that"
                                         " just read (see store.query())",
                                         zName));
}

/* The authorizer of read-only queries, on while they are prepared and stepped:
** reading, functions and pragmas of the lists above, nothing else (transactions,
** savepoints, ATTACH, DETACH, and every write, which sqlite3_stmt_readonly()
** refuses as well). */
static int readOnlyAuthorizer(void *pArg, int op, const char *z1, const char *z2, const char *zDb,
                              const char *zTrigger) {
  EvidenceStore *p = pArg;
  (void)zDb;
  switch (op) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE: return SQLITE_OK;
    case SQLITE_READ: return readOnlyTable(p, z1);
    case SQLITE_FUNCTION: return readOnlyFunction(p, z2);
    case SQLITE_PRAGMA: return readOnlyPragma(p, z1, z2);
    case SQLITE_UPDATE:
      /* Reported, not done, when SQLite sets up an eponymous virtual table such
      ** as json_each or evidence_eligible on first use; a real UPDATE of the
      ** schema table is a write, which sqlite3_stmt_readonly() refuses. */
      return zTrigger == 0 && sqlite3_stricmp(z1, "sqlite_master") == 0 ? SQLITE_OK : readOnlyDeny(p, 0);
    default: return readOnlyDeny(p, 0);
  }
}

/* The message of a refused statement: what the authorizer refused, if it said. */
static int readOnlyRefused(EvidenceStore *p) {
  return storeError(p, SQLITE_AUTH, p->zDenied ? p->zDenied : zReadOnlyMessage);
}

/* Whether the text after the first statement holds another one (comments,
** white space and semicolons do not count). */
static int storeMoreStatements(EvidenceStore *p, const char *zTail, size_t nTail) {
  while (nTail > 0) {
    sqlite3_stmt *pNext = 0;
    const char *zNext = 0;
    int rc = sqlite3_prepare_v2(p->db, zTail, (int)nTail, &pNext, &zNext);
    sqlite3_finalize(pNext);
    if (rc != SQLITE_OK || pNext != 0 || zNext == 0 || zNext <= zTail) return 1;
    nTail -= (size_t)(zNext - zTail);
    zTail = zNext;
  }
  return 0;
}

/* Checks, binds and steps a prepared query into *out; the caller finalizes pStmt. */
static int storeQueryRun(EvidenceStore *p, sqlite3_stmt *pStmt, const char *zTail, size_t nTail,
                         const EvidenceValue *params, int n_params, int read_only, EvidenceTable **out) {
  EvidenceTable *t;
  size_t nAlloc = 0;
  int rc, rcStep, i;
  if (pStmt == 0) return storeError(p, SQLITE_MISUSE, "no SQL statement given");
  if (storeMoreStatements(p, zTail, nTail))
    return storeError(p, SQLITE_MISUSE, "only one SQL statement is allowed");
  if (read_only && !sqlite3_stmt_readonly(pStmt)) return storeError(p, SQLITE_READONLY, zReadOnlyMessage);
  if (n_params != sqlite3_bind_parameter_count(pStmt)) {
    char *zMsg = sqlite3_mprintf("the statement has %d parameter(s), %d value(s) given",
                                 sqlite3_bind_parameter_count(pStmt), n_params);
    storeError(p, SQLITE_RANGE, zMsg ? zMsg : "wrong number of parameters");
    sqlite3_free(zMsg);
    return SQLITE_RANGE;
  }
  for (i = 0; i < n_params; i++) {
    rc = bindValue(pStmt, i + 1, &params[i]);
    if (rc != SQLITE_OK) return storeDbError(p, rc);
  }
  t = sqlite3_malloc(sizeof(*t));
  if (t == 0) return storeError(p, SQLITE_NOMEM, "out of memory");
  memset(t, 0, sizeof(*t));
  /* The columns are read after the first step: a kept statement that SQLite
  ** prepared again for a changed schema may have other columns by then. */
  rcStep = sqlite3_step(pStmt);
  t->n_cols = sqlite3_column_count(pStmt);
  rc = tableNames(t, pStmt);
  while (rc == SQLITE_OK && (rc = rcStep) == SQLITE_ROW) {
    rc = tableAppendRow(t, pStmt, &nAlloc);
    if (rc == SQLITE_OK) rcStep = sqlite3_step(pStmt);
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK) {
    evidence_table_free(t);
    if (rc == SQLITE_NOMEM) return storeError(p, rc, "out of memory");
    /* A refusal while stepping comes from a statement SQLite or a virtual table
    ** prepares of its own (SELECT * FROM pragma_optimize); its rc may be any. */
    return rc == SQLITE_AUTH || p->zDenied ? readOnlyRefused(p) : storeDbError(p, rc);
  }
  *out = t;
  return SQLITE_OK;
}

/* Reads the names of the database's tables and views into p->pSchemaNames, for
** readOnlyTable: the snapshot of one query, taken before the gate is on. */
static int readOnlySchemaNames(EvidenceStore *p) {
  static const char zSql[] =
      "SELECT name FROM main.sqlite_schema WHERE type IN ('table', 'view')"
      " UNION ALL SELECT name FROM temp.sqlite_schema WHERE type IN ('table', 'view')";
  sqlite3_stmt *pNames = 0;
  int rc = sqlite3_prepare_v2(p->db, zSql, -1, &pNames, 0);
  sqlite3_free(sqlite3_str_finish(p->pSchemaNames));
  p->pSchemaNames = sqlite3_str_new(p->db);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(pNames)) == SQLITE_ROW) {
      const char *zName = (const char *)sqlite3_column_text(pNames, 0);
      if (zName) sqlite3_str_append(p->pSchemaNames, zName, (int)strlen(zName) + 1);
    }
  }
  if (rc == SQLITE_DONE) rc = sqlite3_str_errcode(p->pSchemaNames);
  sqlite3_finalize(pNames);
  if (rc == SQLITE_OK) return rc;
  sqlite3_free(sqlite3_str_finish(p->pSchemaNames));
  p->pSchemaNames = 0;
  return rc == SQLITE_NOMEM ? storeError(p, rc, "out of memory") : storeDbError(p, rc);
}

int evidence_store_query(EvidenceStore *p, const char *sql, size_t sql_len, const EvidenceValue *params,
                         int n_params, int read_only, EvidenceTable **out) {
  sqlite3_stmt *pStmt = 0;
  const char *zTail = 0;
  int rc;
  *out = 0;
  if (sql_len > 0x7fffffff) return storeError(p, SQLITE_TOOBIG, "SQL text too long");
  /* The authorizer stays on while stepping too: evidence_eligible prepares its
  ** own statement on the first row. */
  sqlite3_free(p->zDenied);
  p->zDenied = 0;
  if (read_only) {
    rc = readOnlySchemaNames(p);
    if (rc != SQLITE_OK) return rc;
    sqlite3_set_authorizer(p->db, readOnlyAuthorizer, p);
  }
  if (!read_only && (pStmt = evidenceStmtCacheFind(&p->queries, sql, sql_len)) != 0) {
    rc = storeQueryRun(p, pStmt, sql + sql_len, 0, params, n_params, read_only, out);
    storeStmtDone(pStmt);
    return rc;
  }
  /* Without the gate the SQL is the store's own, run again and again: kept once it ran. */
  rc =
      sqlite3_prepare_v3(p->db, sql, (int)sql_len, read_only ? 0 : SQLITE_PREPARE_PERSISTENT, &pStmt, &zTail);
  if (rc == SQLITE_OK) {
    rc = storeQueryRun(p, pStmt, zTail, (size_t)(sql + sql_len - zTail), params, n_params, read_only, out);
  } else if (rc == SQLITE_AUTH || p->zDenied) {
    readOnlyRefused(p);
  } else {
    storeDbError(p, rc);
  }
  if (rc == SQLITE_OK && !read_only && pStmt && zTail == sql + sql_len) {
    evidenceStmtCacheKeep(&p->queries, sql, sql_len, pStmt);
  } else {
    sqlite3_finalize(pStmt);
  }
  if (read_only) {
    sqlite3_set_authorizer(p->db, 0, 0);
    sqlite3_free(sqlite3_str_finish(p->pSchemaNames));
    p->pSchemaNames = 0;
  }
  return rc;
}

/* ---- put and forget */

/* Writes the records inside a transaction: the caller's, or one of its own,
** IMMEDIATE, so the chain heads it reads cannot change before it writes (another
** writer waits, up to the busy timeout). */
static int storePutRecords(EvidenceStore *p, const EvidencePut *aRec, size_t n) {
  const int bOwn = sqlite3_get_autocommit(p->db);
  int rc = bOwn ? sqlite3_exec(p->db, "BEGIN IMMEDIATE", 0, 0, 0) : SQLITE_OK;
  const char *zBatchErr = 0; /* the batch's own message, when the batch failed */
  if (rc == SQLITE_OK) {
    rc = evidenceBatchPut(p->db, p->pBatch, aRec, n);
    if (rc != SQLITE_OK) zBatchErr = evidenceBatchErrmsg(p->pBatch, p->db);
  }
  if (rc == SQLITE_OK && bOwn) rc = sqlite3_exec(p->db, "COMMIT", 0, 0, 0);
  if (rc == SQLITE_OK) return rc;
  if (rc == SQLITE_NOMEM) {
    storeError(p, rc, "out of memory");
  } else if (rc == SQLITE_CORRUPT && evidenceBatchIndexBroken(p->pBatch)) {
    storeError(p, rc,
               "the token index disagrees with the stored records, so nothing was written; "
               "rebuild it with `pyevidence reindex`");
  } else {
    storeError(p, rc, zBatchErr ? zBatchErr : sqlite3_errmsg(p->db));
  }
  if (bOwn && !sqlite3_get_autocommit(p->db)) sqlite3_exec(p->db, "ROLLBACK", 0, 0, 0);
  return rc;
}

int evidence_store_put_many(EvidenceStore *p, const char *data, size_t data_len, const size_t *lengths,
                            const int64_t *expires_at, size_t n) {
  EvidencePut *aRec;
  size_t i, nUsed = 0;
  int rc;
  if (n == 0) return SQLITE_OK;
  if (n > (size_t)-1 / sizeof(*aRec)) return storeError(p, SQLITE_NOMEM, "out of memory");
  aRec = sqlite3_malloc64(n * sizeof(*aRec));
  if (aRec == 0) return storeError(p, SQLITE_NOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    const char **apz[6];
    size_t *apn[6];
    int j;
    apz[0] = &aRec[i].tenant, apn[0] = &aRec[i].tenant_len;
    apz[1] = &aRec[i].record_id, apn[1] = &aRec[i].record_id_len;
    apz[2] = &aRec[i].revision, apn[2] = &aRec[i].revision_len;
    apz[3] = &aRec[i].kind, apn[3] = &aRec[i].kind_len;
    apz[4] = &aRec[i].body, apn[4] = &aRec[i].body_len;
    apz[5] = &aRec[i].source, apn[5] = &aRec[i].source_len;
    for (j = 0; j < 6; j++) {
      size_t nField = lengths[6 * i + (size_t)j];
      if (nField > data_len - nUsed) {
        sqlite3_free(aRec);
        return storeError(p, SQLITE_MISUSE, "put_many: the field lengths add up to more than the data");
      }
      *apz[j] = data + nUsed;
      *apn[j] = nField;
      nUsed += nField;
    }
    aRec[i].expires_at = expires_at[i];
  }
  rc = nUsed == data_len
           ? storePutRecords(p, aRec, n)
           : storeError(p, SQLITE_MISUSE, "put_many: the field lengths do not add up to the data");
  sqlite3_free(aRec);
  return rc;
}

int evidence_store_put(EvidenceStore *p, const char *tenant, size_t tenant_len, const char *record_id,
                       size_t record_id_len, const char *revision, size_t revision_len, const char *kind,
                       size_t kind_len, const char *body, size_t body_len, const char *source,
                       size_t source_len, int64_t expires_at) {
  EvidencePut r;
  r.tenant = tenant, r.tenant_len = tenant_len;
  r.record_id = record_id, r.record_id_len = record_id_len;
  r.revision = revision, r.revision_len = revision_len;
  r.kind = kind, r.kind_len = kind_len;
  r.body = body, r.body_len = body_len;
  r.source = source, r.source_len = source_len;
  r.expires_at = expires_at;
  return storePutRecords(p, &r, 1);
}

int evidence_store_reindex(EvidenceStore *p, int (*progress)(void *, int64_t, int64_t), void *arg) {
  const int bOwn = sqlite3_get_autocommit(p->db);
  int rc = bOwn ? sqlite3_exec(p->db, "BEGIN IMMEDIATE", 0, 0, 0) : SQLITE_OK;
  if (rc == SQLITE_OK) rc = evidenceBatchReindex(p->db, p->pBatch, progress, arg);
  if (rc == SQLITE_OK && bOwn) rc = sqlite3_exec(p->db, "COMMIT", 0, 0, 0);
  if (rc == SQLITE_OK) return rc;
  if (rc == SQLITE_NOMEM) {
    storeError(p, rc, "out of memory");
  } else if (rc == SQLITE_INTERRUPT) {
    storeError(p, rc, "the rebuild of the token index was stopped; nothing was changed");
  } else {
    storeDbError(p, rc);
  }
  if (bOwn && !sqlite3_get_autocommit(p->db)) sqlite3_exec(p->db, "ROLLBACK", 0, 0, 0);
  return rc;
}

int evidence_store_forget(EvidenceStore *p, const char *tenant, size_t tenant_len, const char *record_id,
                          size_t record_id_len, int *deleted) {
  sqlite3_stmt *pStmt;
  int rc = storeStmt(p, STMT_FORGET, &pStmt);
  *deleted = 0;
  if (rc != SQLITE_OK) return rc;
  if ((rc = bindText(pStmt, 1, tenant, tenant_len)) != SQLITE_OK ||
      (rc = bindText(pStmt, 2, record_id, record_id_len)) != SQLITE_OK) {
    storeDbError(p, rc);
    storeStmtDone(pStmt);
    return rc;
  }
  rc = storeRun(p, pStmt);
  if (rc == SQLITE_OK) *deleted = sqlite3_changes(p->db) > 0;
  return rc;
}

/* ---- retrieve and candidates */

void evidence_rows_free(EvidenceRows *r) {
  size_t i;
  if (r == 0) return;
  /* Each row's strings live in one block that starts at its record_id. */
  for (i = 0; i < r->n_rows; i++) sqlite3_free((void *)r->rows[i].record_id);
  sqlite3_free(r->rows);
  sqlite3_free(r);
}

/* Copies the current row (record_id, revision, kind, body, source, content_hash,
** expires_at, version, score). */
static int rowsAppend(EvidenceRows *r, sqlite3_stmt *pStmt, size_t *pnAlloc) {
  const char **apz[N_ROW_TEXTS];
  size_t *apn[N_ROW_TEXTS], nTotal = 0;
  char *zBlock;
  EvidenceRow *pRow;
  int j;
  if (r->n_rows == *pnAlloc) {
    size_t nNew = *pnAlloc ? *pnAlloc * 2 : 8;
    EvidenceRow *aNew = sqlite3_realloc64(r->rows, nNew * sizeof(EvidenceRow));
    if (aNew == 0) return SQLITE_NOMEM;
    r->rows = aNew;
    *pnAlloc = nNew;
  }
  pRow = &r->rows[r->n_rows];
  memset(pRow, 0, sizeof(*pRow));
  apz[0] = &pRow->record_id, apn[0] = &pRow->record_id_len;
  apz[1] = &pRow->revision, apn[1] = &pRow->revision_len;
  apz[2] = &pRow->kind, apn[2] = &pRow->kind_len;
  apz[3] = &pRow->body, apn[3] = &pRow->body_len;
  apz[4] = &pRow->source, apn[4] = &pRow->source_len;
  apz[5] = &pRow->content_hash, apn[5] = &pRow->content_hash_len;
  for (j = 0; j < N_ROW_TEXTS; j++) {
    /* text first, then bytes: the documented order for a correct length */
    if (sqlite3_column_text(pStmt, j) == 0 && sqlite3_errcode(sqlite3_db_handle(pStmt)) == SQLITE_NOMEM) {
      return SQLITE_NOMEM;
    }
    *apn[j] = (size_t)sqlite3_column_bytes(pStmt, j);
    nTotal += *apn[j] + 1;
  }
  zBlock = sqlite3_malloc64(nTotal);
  if (zBlock == 0) return SQLITE_NOMEM;
  for (j = 0; j < N_ROW_TEXTS; j++) {
    const unsigned char *z = sqlite3_column_text(pStmt, j);
    if (*apn[j]) memcpy(zBlock, z, *apn[j]);
    zBlock[*apn[j]] = 0;
    *apz[j] = zBlock;
    zBlock += *apn[j] + 1;
  }
  pRow->expires_at = sqlite3_column_int64(pStmt, N_ROW_TEXTS);
  pRow->version = sqlite3_column_int64(pStmt, N_ROW_TEXTS + 1);
  pRow->score = sqlite3_column_int64(pStmt, N_ROW_TEXTS + 2);
  r->n_rows++;
  return SQLITE_OK;
}

/* Steps pStmt to the end, collecting its rows into *out. */
static int collectRows(EvidenceStore *p, sqlite3_stmt *pStmt, EvidenceRows **out) {
  EvidenceRows *r = sqlite3_malloc(sizeof(*r));
  size_t nAlloc = 0;
  int rc;
  if (r == 0) return storeError(p, SQLITE_NOMEM, "out of memory");
  memset(r, 0, sizeof(*r));
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    rc = rowsAppend(r, pStmt, &nAlloc);
    if (rc != SQLITE_OK) break;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc == SQLITE_NOMEM) {
    storeError(p, rc, "out of memory");
  } else if (rc != SQLITE_OK) {
    storeDbError(p, rc);
  }
  storeStmtDone(pStmt);
  if (rc != SQLITE_OK) {
    evidence_rows_free(r);
    r = 0;
  }
  *out = r;
  return rc;
}

static int bindScope(EvidenceStore *p, sqlite3_stmt *pStmt, const char *tenant, size_t tenant_len,
                     const char *revision, size_t revision_len, int64_t now) {
  int rc;
  if ((rc = bindText(pStmt, 1, tenant, tenant_len)) != SQLITE_OK ||
      (rc = bindText(pStmt, 2, revision, revision_len)) != SQLITE_OK ||
      (rc = sqlite3_bind_int64(pStmt, 3, now)) != SQLITE_OK) {
    storeDbError(p, rc);
    storeStmtDone(pStmt);
  }
  return rc;
}

int evidence_store_retrieve(EvidenceStore *p, const char *tenant, size_t tenant_len, const char *revision,
                            size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                            EvidenceRows **out) {
  sqlite3_stmt *pStmt;
  int rc = storeStmt(p, STMT_RANK, &pStmt);
  *out = 0;
  if (rc == SQLITE_OK) rc = bindScope(p, pStmt, tenant, tenant_len, revision, revision_len, now);
  if (rc == SQLITE_OK) {
    if ((rc = bindText(pStmt, 4, query, query_len)) != SQLITE_OK ||
        (rc = sqlite3_bind_int(pStmt, 5, limit)) != SQLITE_OK) {
      storeDbError(p, rc);
      storeStmtDone(pStmt);
    }
  }
  /* The ranking scans every eligible row once to find the top ones (a sort
  ** needs them all), so the scan's row count is the eligible count: one pass,
  ** one statement, one snapshot. */
  p->pStats->nLastScanRows = -1;
  if (rc == SQLITE_OK) rc = collectRows(p, pStmt, out);
  if (rc == SQLITE_OK && p->pStats->nLastScanRows < 0) {
    rc = storeError(p, SQLITE_INTERNAL, "the ranking did not scan the eligible rows to their end");
    evidence_rows_free(*out);
    *out = 0;
  }
  if (rc == SQLITE_OK) (*out)->eligible_count = p->pStats->nLastScanRows;
  return rc;
}

/* Reads the whole row of each hit of the index search into *out, best first. */
static int searchRows(EvidenceStore *p, const char *tenant, size_t tenant_len,
                      const EvidenceSearchResult *pFound, EvidenceRows **out) {
  EvidenceRows *r = sqlite3_malloc(sizeof(*r));
  sqlite3_stmt *pStmt = 0;
  size_t nAlloc = 0;
  int i, rc = storeStmt(p, STMT_HIT, &pStmt);
  if (r == 0) {
    if (rc == SQLITE_OK) storeStmtDone(pStmt);
    return storeError(p, SQLITE_NOMEM, "out of memory");
  }
  memset(r, 0, sizeof(*r));
  r->eligible_count = pFound->nEligible;
  for (i = 0; rc == SQLITE_OK && i < pFound->nHit; i++) {
    const EvidenceSearchHit *h = &pFound->aHit[i];
    rc = bindText(pStmt, 1, tenant, tenant_len);
    if (rc == SQLITE_OK) rc = bindText(pStmt, 2, h->zRecordId, h->nRecordId);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 3, h->score);
    if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      rc = rowsAppend(r, pStmt, &nAlloc);
    } else if (rc == SQLITE_DONE) {
      rc = storeError(
          p, SQLITE_CORRUPT,
          "the token index disagrees with the stored records; rebuild it with `pyevidence reindex`");
    } else {
      storeDbError(p, rc);
    }
    sqlite3_reset(pStmt);
  }
  if (rc == SQLITE_NOMEM) storeError(p, rc, "out of memory");
  if (pStmt) storeStmtDone(pStmt);
  if (rc != SQLITE_OK) {
    evidence_rows_free(r);
    r = 0;
  }
  *out = r;
  return rc;
}

int evidence_store_search(EvidenceStore *p, const char *tenant, size_t tenant_len, const char *revision,
                          size_t revision_len, int64_t now, const char *query, size_t query_len, int limit,
                          EvidenceRows **out) {
  EvidenceSearchResult found;
  const int bOwn = sqlite3_get_autocommit(p->db);
  char *zErr = 0;
  int rc = bOwn ? sqlite3_exec(p->db, "BEGIN", 0, 0, 0) : SQLITE_OK; /* one snapshot for every read */
  *out = 0;
  if (rc != SQLITE_OK) return storeDbError(p, rc);
  rc = evidenceSearch(p->pSearcher, tenant, tenant_len, revision, revision_len, now, query, query_len, limit,
                      &found, &zErr);
  if (rc == SQLITE_OK) {
    rc = searchRows(p, tenant, tenant_len, &found, out);
  } else {
    storeError(p, rc, zErr ? zErr : sqlite3_errstr(rc));
  }
  sqlite3_free(zErr);
  evidenceSearchResultClear(&found);
  if (bOwn) sqlite3_exec(p->db, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", 0, 0, 0);
  return rc;
}

int evidence_store_candidates(EvidenceStore *p, const char *tenant, size_t tenant_len, const char *revision,
                              size_t revision_len, int64_t now, EvidenceRows **out) {
  sqlite3_stmt *pStmt;
  int rc = storeStmt(p, STMT_CANDIDATES, &pStmt);
  *out = 0;
  if (rc == SQLITE_OK) rc = bindScope(p, pStmt, tenant, tenant_len, revision, revision_len, now);
  if (rc == SQLITE_OK) rc = collectRows(p, pStmt, out);
  if (rc == SQLITE_OK) (*out)->eligible_count = (int64_t)(*out)->n_rows;
  return rc;
}

/* The number of pages in pDest's main database, or -1 if it cannot be read. */
static sqlite3_int64 destPages(sqlite3 *pDest) {
  sqlite3_stmt *pStmt = 0;
  sqlite3_int64 n = -1;
  if (sqlite3_prepare_v2(pDest, "PRAGMA page_count", -1, &pStmt, 0) == SQLITE_OK &&
      sqlite3_step(pStmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(pStmt, 0);
  }
  sqlite3_finalize(pStmt);
  return n;
}

int evidence_store_backup(EvidenceStore *p, const char *dest_path) {
  sqlite3 *pDest = 0;
  sqlite3_backup *pBackup;
  char *zMsg;
  int rc = openPlain(dest_path, &pDest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (rc != SQLITE_OK) {
    zMsg = sqlite3_mprintf("cannot open the destination: %s",
                           pDest ? sqlite3_errmsg(pDest) : sqlite3_errstr(rc));
    storeError(p, rc, zMsg ? zMsg : "out of memory");
    sqlite3_free(zMsg);
    sqlite3_close(pDest);
    return rc;
  }
  /* Never overwrite: the destination must be new (the Python side creates it
  ** empty, exclusively, just before). */
  if (destPages(pDest) != 0) {
    sqlite3_close(pDest);
    return storeError(p, SQLITE_CANTOPEN,
                      "the destination already exists and is not empty; a backup never overwrites a file");
  }
  pBackup = sqlite3_backup_init(pDest, "main", p->db, "main");
  if (pBackup == 0) {
    rc = storeError(p, sqlite3_errcode(pDest), sqlite3_errmsg(pDest));
  } else {
    rc = sqlite3_backup_step(pBackup, -1);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_backup_finish(pBackup);
    if (rc != SQLITE_OK) {
      zMsg = sqlite3_mprintf("writing the copy: %s", sqlite3_errstr(rc));
      storeError(p, rc, zMsg ? zMsg : "out of memory");
      sqlite3_free(zMsg);
    }
  }
  sqlite3_close(pDest);
  return rc;
}
