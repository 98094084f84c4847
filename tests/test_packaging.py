"""Installing the package as a user would: the sdist and the wheel, built from the tracked
sources like a release, each installed into a fresh venv.

With a working C compiler every install carries the native engine and the loadable
extension; a compile that fails although a compiler works fails the install, loudly.
Only with no compiler at all does the install succeed with the Python engine alone, and
then pyevidence doctor and one EngineFallbackWarning say so.

The artifacts are built once per session and shared; each install gets its own venv.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

import pyevidence.store
from pyevidence import EngineFallbackWarning, EngineUnavailableError, EvidenceStore

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DEMO = (REPO / "tests" / "golden" / "demo.json").read_text()


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.fail("tests/test_packaging.py needs a git checkout to know the tracked files")
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [os.fsdecode(name) for name in out.split(b"\0") if name and (REPO / os.fsdecode(name)).is_file()]


def copy_of_tracked_files(dest: Path) -> Path:
    """Exactly the tracked files, as a fresh clone has them: setuptools and make build in
    the source tree and reuse what they find there, so the working tree must not leak in."""
    for name in tracked_files():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, dest / name)
    return dest


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built as a release builds them (the wheel from the sdist)."""
    source = copy_of_tracked_files(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, source)
    (sdist,) = out.glob("pyevidence-*.tar.gz")
    (wheel,) = out.glob("pyevidence-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture
def fresh_venv(tmp_path: Path) -> Path:
    """A clean venv (no site packages) on the interpreter running the tests."""
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    run(base, "-m", "venv", venv)
    return venv


def pip_install(venv: Path, target: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "install", str(target)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def doctor(venv: Path, cwd: Path) -> dict[str, object]:
    report = json.loads(run(venv / "bin" / "pyevidence", "doctor", cwd=cwd))
    assert isinstance(report, dict)
    return report


def user_env(**overrides: str) -> dict[str, str]:
    """This environment as a user's shell has it: without the build choice or the variables a
    calling make passes down (make test runs this file)."""
    drop = ("PYEVIDENCE_BUILD_NATIVE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    return {k: v for k, v in os.environ.items() if k not in drop} | overrides


def env_without_a_compiler(venv: Path) -> dict[str, str]:
    """PATH holds only the venv's bin (no cc, gcc or clang) and CC is unset."""
    env = {k: v for k, v in user_env().items() if k not in ("CC", "CXX", "LDSHARED", "CFLAGS")}
    env["PATH"] = str(venv / "bin")
    for compiler in ("cc", "gcc", "clang"):
        assert shutil.which(compiler, path=env["PATH"]) is None
    return env


def assert_native(report: dict[str, object]) -> None:
    engines = report["engines"]
    assert isinstance(engines, dict)
    assert engines["native"]["available"] is True, engines
    assert engines["auto_chooses"] == "native"
    assert "auto_fallback" not in engines
    assert isinstance(report["loadable_extension"], str) and Path(report["loadable_extension"]).is_file()


# --- what the artifacts carry ---


def test_sdist_carries_the_c_sources_and_the_whole_package(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    wanted = [n for n in tracked_files() if n.startswith(("csrc/", "pyevidence/"))]
    assert any(n.startswith("csrc/") and n.endswith(".h") for n in wanted)
    assert [n for n in wanted if n not in names] == []
    assert {"setup.py", "pyproject.toml", "README.md"} <= names


def test_wheel_carries_every_module_the_engine_and_the_extension(dists: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    package = [n for n in tracked_files() if n.startswith("pyevidence/")]
    assert "pyevidence/bench/run.py" in package  # a subpackage, which an explicit list once left out
    assert [n for n in package if n not in names] == []
    assert any(n.startswith("pyevidence/storage/_native.") and n.endswith(".so") for n in names)
    assert any(n.startswith("pyevidence/evidence.") and n.endswith(".so") for n in names)


# --- installing them ---


def test_the_wheel_installs_the_native_engine(
    dists: dict[str, Path], fresh_venv: Path, tmp_path: Path
) -> None:
    done = pip_install(fresh_venv, dists["wheel"], user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert_native(doctor(fresh_venv, tmp_path))
    # cffi came along as a dependency: the engine loads without any extra.
    run(
        fresh_venv / "bin" / "python",
        "-W",
        "error",
        "-c",
        "import pyevidence; pyevidence.EvidenceStore(':memory:')",
    )


def test_the_sdist_with_a_compiler_installs_the_native_engine(
    dists: dict[str, Path], fresh_venv: Path, tmp_path: Path
) -> None:
    assert shutil.which("cc") or shutil.which("gcc"), "this test needs a C compiler on PATH"
    done = pip_install(fresh_venv, dists["sdist"], user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert_native(doctor(fresh_venv, tmp_path))
    demo = run(fresh_venv / "bin" / "pyevidence", "demo", "--engine", "native", cwd=tmp_path)
    assert demo == GOLDEN_DEMO


def test_the_sdist_without_a_compiler_installs_the_python_engine_and_says_so(
    dists: dict[str, Path], fresh_venv: Path, tmp_path: Path
) -> None:
    env = env_without_a_compiler(fresh_venv)
    done = pip_install(fresh_venv, dists["sdist"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = doctor(fresh_venv, tmp_path)
    engines = report["engines"]
    assert isinstance(engines, dict)
    assert engines["native"]["available"] is False
    assert "gcc libsqlite3-dev" in engines["native"]["why_not"]
    assert engines["auto_chooses"] == "python"
    assert engines["auto_fallback"].startswith(
        "engine='auto' runs the Python engine (same results, slower): "
    )
    assert report["loadable_extension"] is None
    assert report["vectors"]["native_vector_ranking"] is False
    # A program opening stores with engine="auto" is told once, as an EngineFallbackWarning.
    script = (
        "import warnings, pyevidence\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    for _ in range(3): pyevidence.EvidenceStore(':memory:').close()\n"
        "print([(w.category.__name__, str(w.message)) for w in caught])\n"
    )
    caught = run(fresh_venv / "bin" / "python", "-c", script, cwd=tmp_path)
    assert caught.count("EngineFallbackWarning") == 1, caught
    assert "runs the Python engine" in caught
    # The CLI's output is unchanged; the warning goes to stderr.
    demo = subprocess.run(
        [str(fresh_venv / "bin" / "pyevidence"), "demo"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert demo.stdout == GOLDEN_DEMO
    # ... as one line, not Python's format with pyevidence's own file, line and source line
    notes = [line for line in demo.stderr.splitlines() if "runs the Python engine" in line]
    assert len(notes) == 1 and notes[0].startswith("pyevidence: note: engine='auto' runs the Python engine")
    assert ".py:" not in demo.stderr


def broken_compiler(tmp_path: Path) -> Path:
    """A compiler that compiles an empty program but not pyevidence's sources: like gcc
    without the SQLite headers."""
    real_cc = shutil.which("gcc") or shutil.which("cc")
    assert real_cc, "this test needs a C compiler on PATH"
    broken_cc = tmp_path / "broken-cc"
    broken_cc.write_text(
        "#!/bin/sh\n"
        'case "$*" in *probe.c*) exec ' + real_cc + ' "$@";; esac\n'
        "echo 'evidence_store.c: fatal error: sqlite3.h: No such file or directory' >&2\nexit 1\n"
    )
    broken_cc.chmod(0o755)
    return broken_cc


def test_a_failing_compile_with_a_working_compiler_fails_the_install(
    dists: dict[str, Path], fresh_venv: Path, tmp_path: Path
) -> None:
    # That must not quietly install the Python engine.
    broken_cc = broken_compiler(tmp_path)
    done = pip_install(fresh_venv, dists["sdist"], user_env(CC=str(broken_cc)))
    assert done.returncode != 0
    assert "failed although a C compiler works here" in done.stdout + done.stderr
    assert "PYEVIDENCE_BUILD_NATIVE=0" in done.stdout + done.stderr
    # ...and the documented way out installs the Python engine on purpose.
    done = pip_install(fresh_venv, dists["sdist"], user_env(CC=str(broken_cc), PYEVIDENCE_BUILD_NATIVE="0"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert doctor(fresh_venv, tmp_path)["engines"]["native"]["available"] is False  # type: ignore[index]


def test_a_checkout_installed_again_builds_again_and_keeps_no_earlier_build(tmp_path: Path) -> None:
    """pip builds in the checkout's build/: an earlier install's compiled parts there must not
    go into an install with PYEVIDENCE_BUILD_NATIVE=0, nor stand in for a compile that fails."""
    checkout = copy_of_tracked_files(tmp_path / "checkout")
    base = getattr(sys, "_base_executable", sys.executable)
    venvs = {name: tmp_path / name for name in ("native", "python-only", "broken")}
    for venv in venvs.values():
        run(base, "-m", "venv", venv)
    done = pip_install(venvs["native"], checkout, user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert_native(doctor(venvs["native"], tmp_path))
    assert list((checkout / "build").glob("lib.*/pyevidence/storage/_native*")), "pip built elsewhere"
    done = pip_install(venvs["python-only"], checkout, user_env(PYEVIDENCE_BUILD_NATIVE="0"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert doctor(venvs["python-only"], tmp_path)["engines"]["native"]["available"] is False  # type: ignore[index]
    done = pip_install(venvs["broken"], checkout, user_env(CC=str(broken_compiler(tmp_path))))
    assert done.returncode != 0
    assert "failed although a C compiler works here" in done.stdout + done.stderr


def test_make_demo_on_a_fresh_clone_runs_the_native_engine(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.fail("this test needs make")
    clone = copy_of_tracked_files(tmp_path / "clone")
    base = getattr(sys, "_base_executable", sys.executable)
    out = run("make", "--no-print-directory", "demo", f"PYTHON={base}", env=user_env(), cwd=clone)
    assert GOLDEN_DEMO in out
    assert "the native engine ran this demo" in out
    assert_native(doctor(clone / ".venv", tmp_path))


# --- the fallback warning, in this process ---


@pytest.fixture
def without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if the native engine were not built, with the warning not yet given."""

    def not_built() -> object:
        raise EngineUnavailableError("the native engine is not built in this installation (test)")

    monkeypatch.setattr(pyevidence.store, "_native_engine_class", not_built)
    monkeypatch.setattr(pyevidence.store, "_fallback_warned", False)


def test_auto_falls_back_with_one_warning_per_process(without_native: None) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stores = [EvidenceStore(":memory:") for _ in range(3)]
    assert [s.engine for s in stores] == ["python"] * 3
    for store in stores:
        store.close()
    assert [(w.category, str(w.message)) for w in caught] == [
        (
            EngineFallbackWarning,
            "engine='auto' runs the Python engine (same results, slower): "
            "the native engine is not built in this installation (test)",
        )
    ]
    assert caught[0].filename == __file__  # it points at the caller's line


@pytest.mark.parametrize("engine", ["python", "native"])
def test_an_engine_chosen_by_name_never_warns(engine: str, without_native: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if engine == "python":
            EvidenceStore(":memory:", engine=engine).close()
        else:
            with pytest.raises(EngineUnavailableError, match="not built"):
                EvidenceStore(":memory:", engine=engine)


def _list_assigned(path: Path, name: str) -> list[str]:
    """The literal list assigned to ``name`` at the top of a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} assigns no {name}")


def test_the_extension_sources_are_the_same_in_every_build() -> None:
    """The loadable extension's C files are named in three builds (make, setup.py's extension,
    the cffi engine, which adds the store API, its batch writer and its Ctrl-C watch): one list,
    proven equal here."""
    root = Path(__file__).resolve().parent.parent
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^EXT_SOURCES\s*:=\s*((?:.*\\\n)*.*)$", makefile, re.M)
    assert match is not None
    make_sources = match.group(1).replace("\\\n", " ").split()
    loadable = _list_assigned(root / "setup.py", "LOADABLE_SOURCES")
    engine = _list_assigned(root / "pyevidence" / "storage" / "_build_native.py", "SOURCES")
    every_c_file = sorted(str(p.relative_to(root)) for p in (root / "csrc").glob("*.c"))
    assert sorted(make_sources) == sorted(loadable)
    store = re.search(r"^STORE_SOURCES\s*:=\s*\$\(EXT_SOURCES\)(.*)$", makefile, re.M)
    engine_only = [
        "csrc/evidence_batch.c",
        "csrc/evidence_index_write.c",
        "csrc/evidence_sigint.c",
        "csrc/evidence_stmt_cache.c",
        "csrc/evidence_store.c",
    ]
    assert store is not None and sorted(store.group(1).split()) == engine_only
    assert sorted(engine) == sorted([*loadable, *engine_only])
    assert sorted(engine) == every_c_file
