"""cffi build script for pyevidence.storage._native (API mode, out-of-line).

setup.py names it in cffi_modules; it compiles the same csrc/ sources as the
loadable extension, with -DSQLITE_CORE so they call the linked libsqlite3
directly, plus the store API (csrc/evidence_store.c). The C declarations are
read from csrc/evidence_store.h, between its CDEF markers, so they exist once.
"""

from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

# Paths relative to the project root, where setup.py runs the build.
SOURCES = [
    "csrc/evidence_store.c",
    "csrc/evidence_sigint.c",
    "csrc/evidence_stmt_cache.c",
    "csrc/evidence_batch.c",
    "csrc/evidence_index_write.c",
    "csrc/evidence_docset.c",
    "csrc/evidence_search.c",
    "csrc/evidence_search_vtab.c",
    "csrc/evidence_ext.c",
    "csrc/evidence_overlap.c",
    "csrc/evidence_eligible.c",
    "csrc/evidence_hash.c",
    "csrc/evidence_utf8.c",
    "csrc/evidence_tokens.c",
    "csrc/evidence_tokenset.c",
]
HEADER = Path(__file__).resolve().parents[2] / "csrc" / "evidence_store.h"


def cdef_from_header(header: Path) -> str:
    match = re.search(r"/\* BEGIN CDEF \*/(.*)/\* END CDEF \*/", header.read_text(), re.S)
    if match is None:
        raise RuntimeError(f"{header} has no BEGIN CDEF / END CDEF markers")
    return match.group(1)


ffibuilder = FFI()
ffibuilder.cdef(cdef_from_header(HEADER))
# Python's side of evidence_store_reindex's progress callback (native_engine.py).
ffibuilder.cdef('extern "Python" int evidence_reindex_progress(void *, int64_t, int64_t);')
ffibuilder.set_source(
    "pyevidence.storage._native",
    '#include "evidence_store.h"',
    sources=SOURCES,
    include_dirs=["csrc"],
    define_macros=[("SQLITE_CORE", "1")],
    libraries=["sqlite3"],
    # Not optional: setup.py's build_native decides when to build (a working compiler) and
    # makes a failure with one an install failure.
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
