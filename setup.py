"""Build script. Metadata lives in pyproject.toml; this file adds the compiled parts.

The compiled parts (the native engine and the loadable extension) are built
whenever a working C compiler is found, and then a failure is an install
failure, never a silent fallback. Only without any working compiler does the
package install with the Python engine alone; pyevidence doctor then says so.

PYEVIDENCE_BUILD_NATIVE chooses: "auto" (the default, as above), "1" (a
missing compiler fails the install too) or "0" (Python engine only, for a
machine with a compiler but without the SQLite headers, say).
"""

import os
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError

# The loadable SQLite extension, shipped inside the package for loadable_path().
# Its file name starts with "evidence", so SQLite finds sqlite3_evidence_init.
# It must not link libsqlite3: it uses the host's SQLite through sqlite3_api.
LOADABLE_SOURCES = [
    "csrc/evidence_ext.c",
    "csrc/evidence_overlap.c",
    "csrc/evidence_eligible.c",
    "csrc/evidence_hash.c",
    "csrc/evidence_docset.c",
    "csrc/evidence_search.c",
    "csrc/evidence_search_vtab.c",
    "csrc/evidence_utf8.c",
    "csrc/evidence_tokens.c",
    "csrc/evidence_tokenset.c",
]
CHOICES = ("auto", "1", "0")
HOW_TO_GET_IT = (
    "install a C compiler and the SQLite headers (Debian/Ubuntu: apt-get install gcc libsqlite3-dev) "
    "and reinstall"
)


def say(message: str) -> None:
    print(f"pyevidence: {message}", file=sys.stderr, flush=True)


class build_native(build_ext):
    """Builds both compiled parts, or (only where no C compiler works) neither."""

    def build_extensions(self) -> None:
        choice = os.environ.get("PYEVIDENCE_BUILD_NATIVE", "auto")
        if choice not in CHOICES:
            raise SystemExit(
                f"pyevidence: PYEVIDENCE_BUILD_NATIVE must be {', '.join(CHOICES)}; got {choice!r}"
            )
        if choice == "0":
            say("PYEVIDENCE_BUILD_NATIVE=0: installing the Python engine only")
            self.remove_earlier_builds()
            return
        broken = self.compiler_problem()
        if broken is not None:
            if choice == "1":
                raise SystemExit(f"pyevidence: PYEVIDENCE_BUILD_NATIVE=1, but no C compiler works: {broken}")
            say(f"no working C compiler ({broken}): installing the Python engine only")
            say(f"for the native engine, {HOW_TO_GET_IT}")
            self.remove_earlier_builds()
            return
        # Always compiled anew: an earlier build in this checkout's build/ (another Python, another
        # compiler, other headers) must not stand in for this one, nor hide a failing compile.
        self.force = True
        super().build_extensions()

    def remove_earlier_builds(self) -> None:
        """Without a build, no compiled part may be installed: not one an earlier build left."""
        for ext in self.extensions:
            path = self.get_ext_fullpath(ext.name)
            if os.path.exists(path):
                os.remove(path)
                say(f"removed {path}, left by an earlier build")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError) as exc:
            raise CompileError(
                f"pyevidence: building {ext.name} failed although a C compiler works here: {exc}. "
                "Install the SQLite headers (Debian/Ubuntu: apt-get install libsqlite3-dev) and the "
                "Python headers (python3-dev), or set PYEVIDENCE_BUILD_NATIVE=0 to install the Python "
                "engine only."
            ) from exc

    def compiler_problem(self) -> "str | None":
        """Why the configured C compiler cannot compile a trivial file, or None if it can."""
        with tempfile.TemporaryDirectory(prefix="pyevidence-cc-") as tmp:
            probe = os.path.join(tmp, "probe.c")
            with open(probe, "w") as f:
                f.write("int main(void) { return 0; }\n")
            try:
                self.compiler.compile([probe], output_dir=tmp)
            except (CCompilerError, ExecError, OSError):
                return f"{self.compiler.compiler_so[0]} cannot compile an empty C program"
        return None


setup(
    cmdclass={"build_ext": build_native},
    # The native engine: cffi bindings over csrc/evidence_store.c (see the build script).
    cffi_modules=["pyevidence/storage/_build_native.py:ffibuilder"],
    ext_modules=[Extension("pyevidence.evidence", sources=LOADABLE_SOURCES, include_dirs=["csrc"])],
)
