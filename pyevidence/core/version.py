"""The release number, in one leaf module so that no module needs to import the package root.

pyproject.toml and csrc/evidence_sqlite.h (evidence_version()) carry the same number; the tests
check that all three agree.
"""

__version__ = "0.4.0.dev0"
