/*
** evidence_eligible.c: the eligibility relation, as a table-valued function.
**
**   SELECT record_id, source, token_overlap(:q, body) AS score
**     FROM evidence_eligible('team-a', 'v1', 100)
**    WHERE score > 0 ORDER BY score DESC, record_id LIMIT 5;
**
** evidence_eligible(tenant, revision, now) is the set of rows of the evidence
** view (schema.sql) that belong to that tenant and revision and whose
** expires_at is strictly greater than now, with the view's columns:
** tenant, revision, expires_at, record_id, kind, body, source, version,
** content_hash (the current version of each record). It is the SQL
** form of the rule "eligibility before ranking": a query that ranks over it
** cannot see another tenant's, another revision's or an expired row.
**
** All three arguments are required: tenant and revision must be text, now an
** integer. A missing argument is an error naming it, never a scan of every
** tenant; a NULL or mistyped argument is an error too, not an empty result.
** A real that is a whole number within the 64-bit range counts as that integer,
** as in a STRICT INTEGER column (hosts such as Node's better-sqlite3 bind every
** number as a real): 100.0 is 100, while 100.5, Inf and 2**63 are refused.
** The rows are one range of the current pointer evidence_current, stored in
** (tenant, revision, doc) order, each checked for expires_at > now: no other
** tenant's or revision's rows are touched, and a query that reads no content
** column never reads the history.
**
** How it works: an eponymous-only virtual table (it exists in every database
** without CREATE VIRTUAL TABLE) whose arguments bind to three HIDDEN columns
** scope_tenant, scope_revision and scope_now. xBestIndex insists on an
** equality constraint on each; xFilter runs one prepared SELECT on the
** evidence view of the same database. It is read-only: writes go through
** evidence_put and DELETE FROM evidence.
*/
#include "evidence_sqlite.h"

#include <stdarg.h>
#include <string.h>

/* Column numbers, in the order of the declaration below. */
enum {
  ELIGIBLE_TENANT,
  ELIGIBLE_REVISION,
  ELIGIBLE_EXPIRES_AT,
  ELIGIBLE_RECORD_ID,
  ELIGIBLE_KIND,
  ELIGIBLE_BODY,
  ELIGIBLE_SOURCE,
  ELIGIBLE_VERSION,
  ELIGIBLE_CONTENT_HASH,
  ELIGIBLE_N_TABLE_COLUMNS,
  ELIGIBLE_SCOPE_TENANT = ELIGIBLE_N_TABLE_COLUMNS,
  ELIGIBLE_SCOPE_REVISION,
  ELIGIBLE_SCOPE_NOW
};

#define ELIGIBLE_N_ARGS 3
_Static_assert(ELIGIBLE_N_ARGS <= EVIDENCE_MAX_ARGS,
               "evidencePlanArgs plans at most EVIDENCE_MAX_ARGS arguments");

static const char *const azArgName[ELIGIBLE_N_ARGS] = {"tenant", "revision", "now"};

/* idxNum bits from here up: the arguments a plan lacks (bit i for argument i). */
#define ELIGIBLE_MISSING_SHIFT 16
_Static_assert(ELIGIBLE_N_TABLE_COLUMNS <= ELIGIBLE_MISSING_SHIFT,
               "column bits would overlap the missing-argument bits");

/* The plan (idxNum) is the set of table columns to read: bit i for column i.
** Reading only those lets SQLite answer count(*) and the like from the index. */
static const char *const azColumn[ELIGIBLE_N_TABLE_COLUMNS] = {
    "tenant", "revision", "expires_at", "record_id", "kind", "body", "source", "version", "content_hash"};

static int columnsToRead(sqlite3_uint64 colUsed) {
  int mask = (int)(colUsed & ((1u << ELIGIBLE_N_TABLE_COLUMNS) - 1));
  /* The hidden columns echo the arguments; the row's own tenant and revision equal them. */
  if (colUsed & (1ULL << ELIGIBLE_SCOPE_TENANT)) mask |= 1 << ELIGIBLE_TENANT;
  if (colUsed & (1ULL << ELIGIBLE_SCOPE_REVISION)) mask |= 1 << ELIGIBLE_REVISION;
  return mask;
}

/* The eligibility query reading the columns in mask (NULL in place of the others). */
static char *eligibleSql(const char *zSchema, int mask) {
  sqlite3_str *pSql = sqlite3_str_new(0);
  int i;
  sqlite3_str_appendall(pSql, "SELECT ");
  for (i = 0; i < ELIGIBLE_N_TABLE_COLUMNS; i++) {
    sqlite3_str_appendf(pSql, "%s%s", i ? ", " : "", (mask & (1 << i)) ? azColumn[i] : "NULL");
  }
  sqlite3_str_appendf(pSql, " FROM \"%w\".evidence WHERE tenant = ?1 AND revision = ?2 AND expires_at > ?3",
                      zSchema);
  return sqlite3_str_finish(pSql);
}

typedef struct EligibleVtab {
  sqlite3_vtab base; /* base class: must be first */
  sqlite3 *db;
  char *zSchema;             /* the database this relation reads: "main", or an attached one */
  EvidenceScanStats *pStats; /* the connection's statistics (the module's client data) */
  int bReading;              /* a cursor's query is stepping: see eligibleFilter */
} EligibleVtab;

typedef struct EligibleCursor {
  sqlite3_vtab_cursor base; /* base class: must be first */
  sqlite3_stmt *pStmt;      /* the eligibility query, prepared on first use */
  sqlite3_int64 iRowid;     /* rows returned so far */
  sqlite3_int64 iNow;       /* the now argument */
  int idxNum;               /* the plan pStmt was prepared for */
  int bEof;
} EligibleCursor;

/* Sets the message the caller will see and returns rc (SQLITE_NOMEM if the
** message itself could not be made). Every error of this file goes through here. */
static int eligibleError(sqlite3_vtab *pVtab, int rc, const char *zFormat, ...) {
  va_list ap;
  va_start(ap, zFormat);
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = sqlite3_vmprintf(zFormat, ap);
  va_end(ap);
  return pVtab->zErrMsg ? rc : SQLITE_NOMEM;
}

static int eligibleConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                           char **pzErr) {
  EligibleVtab *pNew;
  int rc;
  (void)argc;
  (void)pzErr;
  rc = sqlite3_declare_vtab(db,
                            "CREATE TABLE x(tenant TEXT, revision TEXT, expires_at INTEGER, record_id TEXT,"
                            " kind TEXT, body TEXT, source TEXT, version INTEGER, content_hash TEXT,"
                            " scope_tenant HIDDEN, scope_revision HIDDEN, scope_now HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  pNew = sqlite3_malloc(sizeof(*pNew));
  if (pNew == 0) return SQLITE_NOMEM;
  memset(pNew, 0, sizeof(*pNew));
  pNew->db = db;
  pNew->pStats = pAux;
  pNew->zSchema = sqlite3_mprintf("%s", argv[1]);
  if (pNew->zSchema == 0) {
    sqlite3_free(pNew);
    return SQLITE_NOMEM;
  }
  /* Reading rows the caller may read anyway is harmless inside views and triggers. */
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  *ppVtab = &pNew->base;
  return SQLITE_OK;
}

static int eligibleDisconnect(sqlite3_vtab *pVtab) {
  EligibleVtab *p = (EligibleVtab *)pVtab;
  sqlite3_free(p->zSchema);
  sqlite3_free(p);
  return SQLITE_OK;
}

static int eligibleOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  EligibleCursor *pCur = sqlite3_malloc(sizeof(*pCur));
  (void)pVtab;
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  pCur->bEof = 1;
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static int eligibleClose(sqlite3_vtab_cursor *cur) {
  EligibleCursor *pCur = (EligibleCursor *)cur;
  sqlite3_finalize(pCur->pStmt);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static int eligibleNext(sqlite3_vtab_cursor *cur) {
  EligibleCursor *pCur = (EligibleCursor *)cur;
  EligibleVtab *pTab = (EligibleVtab *)cur->pVtab;
  int rc;
  pTab->bReading = 1;
  rc = sqlite3_step(pCur->pStmt);
  pTab->bReading = 0;
  if (rc == SQLITE_ROW) {
    pCur->iRowid++;
    return SQLITE_OK;
  }
  pCur->bEof = 1;
  if (rc != SQLITE_DONE) {
    return eligibleError(cur->pVtab, rc, "evidence_eligible(): %s",
                         sqlite3_errmsg(((EligibleVtab *)cur->pVtab)->db));
  }
  ((EligibleVtab *)cur->pVtab)->pStats->nLastScanRows = pCur->iRowid;
  return SQLITE_OK;
}

const char *evidenceTypeName(int eType) {
  switch (eType) {
    case SQLITE_INTEGER: return "integer";
    case SQLITE_FLOAT: return "real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "blob";
    default: return "NULL";
  }
}

/* The integer a real stands for, if it is a whole number within the 64-bit
** range; the error message's reason otherwise. -0.0 is 0. The bounds are
** exactly -2**63 and 2**63 as doubles, so no conversion below can overflow. */
const char *evidenceRealToInt64(double r, sqlite3_int64 *piOut) {
  sqlite3_int64 i;
  if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) return "outside the 64-bit range";
  i = (sqlite3_int64)r;
  if ((double)i != r) return "not a whole number";
  *piOut = i;
  return 0;
}

int evidenceCheckArgs(const char *zFunc, sqlite3_value **argv, int n, const int *aWant,
                      const char *const *azName, sqlite3_int64 *aInt, char **pzErr) {
  int i;
  *pzErr = 0;
  for (i = 0; i < n; i++) {
    int eType = sqlite3_value_type(argv[i]);
    if (eType == SQLITE_FLOAT && aWant[i] == SQLITE_INTEGER) {
      /* shown as SQLite shows a real, to 15 digits: SQLite 3.40's printf gets more digits
      ** wrong where long double is no wider than double (valgrind) */
      double r = sqlite3_value_double(argv[i]);
      const char *zWhyNot = evidenceRealToInt64(r, &aInt[i]);
      if (zWhyNot) {
        *pzErr = sqlite3_mprintf("%s(): %s must be an integer, got real %!.15g (%s)", zFunc, azName[i], r,
                                 zWhyNot);
        return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      }
    } else if (eType != aWant[i]) {
      *pzErr = sqlite3_mprintf("%s(): %s must be %s, got %s", zFunc, azName[i],
                               aWant[i] == SQLITE_TEXT ? "text" : "an integer", evidenceTypeName(eType));
      return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    } else if (eType == SQLITE_INTEGER) {
      aInt[i] = sqlite3_value_int64(argv[i]);
    }
  }
  return SQLITE_OK;
}

/* Checks the three arguments and reads now into *piNow; returns SQLITE_OK or
** an error with a message. */
static int eligibleCheckArgs(sqlite3_vtab *pVtab, sqlite3_value **argv, sqlite3_int64 *piNow) {
  static const int aWant[ELIGIBLE_N_ARGS] = {SQLITE_TEXT, SQLITE_TEXT, SQLITE_INTEGER};
  sqlite3_int64 aInt[ELIGIBLE_N_ARGS] = {0, 0, 0};
  char *zErr = 0;
  int rc = evidenceCheckArgs("evidence_eligible", argv, ELIGIBLE_N_ARGS, aWant, azArgName, aInt, &zErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(pVtab->zErrMsg);
    pVtab->zErrMsg = zErr;
    return rc;
  }
  *piNow = aInt[2];
  return SQLITE_OK;
}

static int eligibleFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                          sqlite3_value **argv) {
  EligibleCursor *pCur = (EligibleCursor *)cur;
  EligibleVtab *pTab = (EligibleVtab *)cur->pVtab;
  int rc, i;
  (void)idxStr;
  pCur->bEof = 1;
  pCur->iRowid = 0;
  /* Only a view evidence that reads this relation again (not schema.sql's) gets here while a
  ** query of ours steps: each level would nest another statement, until the stack overflows. */
  if (pTab->bReading) {
    /* the outer call's message names the function */
    return eligibleError(cur->pVtab, SQLITE_ERROR,
                         "reentered while reading %s.evidence, which must be the view of schema.sql",
                         pTab->zSchema);
  }
  if (idxNum >> ELIGIBLE_MISSING_SHIFT) {
    int missing = idxNum >> ELIGIBLE_MISSING_SHIFT;
    for (i = 0; (missing & (1 << i)) == 0; i++) {
    }
    return eligibleError(cur->pVtab, SQLITE_ERROR,
                         "evidence_eligible(): argument %s is missing; "
                         "call it as evidence_eligible(tenant, revision, now)",
                         azArgName[i]);
  }
  if (argc != ELIGIBLE_N_ARGS)
    return eligibleError(cur->pVtab, SQLITE_ERROR, "evidence_eligible(): bad plan");
  rc = eligibleCheckArgs(cur->pVtab, argv, &pCur->iNow);
  if (rc != SQLITE_OK) return rc;
  if (pCur->pStmt && pCur->idxNum != idxNum) {
    sqlite3_finalize(pCur->pStmt);
    pCur->pStmt = 0;
  }
  if (pCur->pStmt == 0) {
    char *zSql = eligibleSql(pTab->zSchema, idxNum);
    pCur->idxNum = idxNum;
    if (zSql == 0) return SQLITE_NOMEM;
    rc = sqlite3_prepare_v3(pTab->db, zSql, -1, SQLITE_PREPARE_PERSISTENT, &pCur->pStmt, 0);
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      return eligibleError(cur->pVtab, rc,
                           "evidence_eligible(): %s (create the schema from schema.sql first)",
                           sqlite3_errmsg(pTab->db));
    }
  } else {
    sqlite3_reset(pCur->pStmt);
  }
  rc = sqlite3_bind_value(pCur->pStmt, 1, argv[0]);
  if (rc == SQLITE_OK) rc = sqlite3_bind_value(pCur->pStmt, 2, argv[1]);
  /* now as the integer checked above, also when it came as a real */
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pCur->pStmt, 3, pCur->iNow);
  if (rc != SQLITE_OK) return rc;
  pCur->bEof = 0;
  return eligibleNext(cur);
}

static int eligibleEof(sqlite3_vtab_cursor *cur) {
  return ((EligibleCursor *)cur)->bEof;
}

static int eligibleColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int iCol) {
  EligibleCursor *pCur = (EligibleCursor *)cur;
  int iSource = iCol;
  /* The hidden argument columns echo the arguments: the row's own tenant and revision, and now. */
  if (iCol == ELIGIBLE_SCOPE_NOW) {
    sqlite3_result_int64(ctx, pCur->iNow);
    return SQLITE_OK;
  }
  if (iCol == ELIGIBLE_SCOPE_TENANT) iSource = ELIGIBLE_TENANT;
  if (iCol == ELIGIBLE_SCOPE_REVISION) iSource = ELIGIBLE_REVISION;
  sqlite3_result_value(ctx, sqlite3_column_value(pCur->pStmt, iSource));
  return SQLITE_OK;
}

static int eligibleRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  *pRowid = ((EligibleCursor *)cur)->iRowid;
  return SQLITE_OK;
}

int evidencePlanArgs(sqlite3_index_info *pInfo, int iFirst, int nArg, int *pMissing) {
  int aiUsable[EVIDENCE_MAX_ARGS];
  int abSeen[EVIDENCE_MAX_ARGS];
  int i, missing = 0;
  for (i = 0; i < nArg; i++) aiUsable[i] = -1, abSeen[i] = 0;
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *pCons = &pInfo->aConstraint[i];
    int iArg = pCons->iColumn - iFirst;
    if (iArg < 0 || iArg >= nArg || pCons->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    abSeen[iArg] = 1;
    if (pCons->usable && aiUsable[iArg] < 0) aiUsable[iArg] = i;
  }
  for (i = 0; i < nArg; i++) {
    if (!abSeen[i]) missing |= 1 << i;
    if (abSeen[i] && aiUsable[i] < 0) return SQLITE_CONSTRAINT;
  }
  *pMissing = missing;
  if (missing) {
    pInfo->estimatedCost = 1e300;
    pInfo->estimatedRows = (sqlite3_int64)1 << 62;
    return SQLITE_OK;
  }
  for (i = 0; i < nArg; i++) {
    pInfo->aConstraintUsage[aiUsable[i]].argvIndex = i + 1;
    pInfo->aConstraintUsage[aiUsable[i]].omit = 1;
  }
  return SQLITE_OK;
}

/* Every argument an equality on its hidden column (evidencePlanArgs); a full plan
** reads only the columns the statement uses. */
static int eligibleBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int missing = 0;
  int rc = evidencePlanArgs(pInfo, ELIGIBLE_SCOPE_TENANT, ELIGIBLE_N_ARGS, &missing);
  (void)pVtab;
  if (rc != SQLITE_OK) return rc;
  if (missing) {
    pInfo->idxNum = missing << ELIGIBLE_MISSING_SHIFT;
    return SQLITE_OK;
  }
  pInfo->idxNum = columnsToRead(pInfo->colUsed);
  pInfo->estimatedCost = 100.0;
  pInfo->estimatedRows = 100;
  return SQLITE_OK;
}

static sqlite3_module eligibleModule = {
    0,                  /* iVersion */
    0,                  /* xCreate: 0 makes it eponymous-only */
    eligibleConnect,    /* xConnect */
    eligibleBestIndex,  /* xBestIndex */
    eligibleDisconnect, /* xDisconnect */
    0,                  /* xDestroy */
    eligibleOpen,       /* xOpen */
    eligibleClose,      /* xClose */
    eligibleFilter,     /* xFilter */
    eligibleNext,       /* xNext */
    eligibleEof,        /* xEof */
    eligibleColumn,     /* xColumn */
    eligibleRowid,      /* xRowid */
    0,                  /* xUpdate: read-only */
    0,                  /* xBegin */
    0,                  /* xSync */
    0,                  /* xCommit */
    0,                  /* xRollback */
    0,                  /* xFindFunction */
    0,                  /* xRename */
    0,                  /* xSavepoint */
    0,                  /* xRelease */
    0,                  /* xRollbackTo */
    0,                  /* xShadowName */
};

int evidenceEligibleRegister(sqlite3 *db, EvidenceScanStats **ppStats) {
  EvidenceScanStats *pStats = sqlite3_malloc(sizeof(*pStats));
  if (pStats == 0) return SQLITE_NOMEM;
  pStats->nLastScanRows = -1;
  if (ppStats) *ppStats = pStats;
  /* The module owns pStats from here on: SQLite frees it with the connection. */
  return sqlite3_create_module_v2(db, "evidence_eligible", &eligibleModule, pStats, sqlite3_free);
}
