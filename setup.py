"""Build script. Metadata lives in pyproject.toml; this file adds the compiled parts.

Both compiled parts are optional: without a C compiler or the SQLite headers the
package still installs, with the pure-Python engine only (pyevidence doctor and
EvidenceStore(engine="native") then say what is missing).
"""

from setuptools import Extension, setup

# The loadable SQLite extension, shipped inside the package for loadable_path().
# Its file name starts with "evidence", so SQLite finds sqlite3_evidence_init.
# It must not link libsqlite3: it uses the host's SQLite through sqlite3_api.
LOADABLE_SOURCES = [
    "csrc/evidence_ext.c",
    "csrc/evidence_overlap.c",
    "csrc/evidence_eligible.c",
    "csrc/evidence_hash.c",
    "csrc/evidence_utf8.c",
    "csrc/evidence_tokens.c",
    "csrc/evidence_tokenset.c",
]

setup(
    # The native engine: cffi bindings over csrc/evidence_store.c (see the build script).
    cffi_modules=["pyevidence/_build_native.py:ffibuilder"],
    ext_modules=[
        Extension("pyevidence.evidence", sources=LOADABLE_SOURCES, include_dirs=["csrc"], optional=True),
    ],
)
