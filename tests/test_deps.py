"""tools/deps: what `make test` and `make demo` check first, on a machine that lacks things.

The machine is simulated by PATH: a directory holding only the commands the script itself
uses, a real Python, and stand-ins for `id` (who runs it) and `apt-get` (which records its
arguments instead of installing anything).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASH = shutil.which("bash") or "/bin/bash"
# What tools/deps and tools/find-python run besides what they check for.
PLUMBING = ("bash", "ls", "sort", "readlink")


def bare_machine(tmp_path: Path, *, uid: int, apt: bool) -> dict[str, str]:
    """PATH with no gcc, make, sqlite3, valgrind, clang-14, node, npm, pkg-config or chromium:
    only the plumbing, python3."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in PLUMBING:
        found = shutil.which(tool)
        assert found, f"{tool} is needed to run tools/deps"
        (bin_dir / tool).symlink_to(found)
    base = getattr(sys, "_base_executable", sys.executable)
    (bin_dir / "python3").symlink_to(os.path.realpath(base))
    (bin_dir / "id").write_text(f"#!{BASH}\necho {uid}\n")
    if apt:
        (bin_dir / "apt-get").write_text(f'#!{BASH}\necho "apt-get $*" >> {tmp_path}/apt.log\n')
    for script in bin_dir.iterdir():
        if not script.is_symlink():
            script.chmod(0o755)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv")}


def deps(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(REPO / "tools" / "deps"), *args], capture_output=True, text=True, env=env, check=False
    )


def expected_missing() -> str:
    """What the bare machine lacks: the commands; headers and libFuzzer are files, found."""
    missing = "gcc make"
    if not Path("/usr/include/sqlite3.h").is_file():
        missing += " libsqlite3-dev"
    missing += " sqlite3 valgrind clang-14"
    if not list(Path("/usr/lib/llvm-14/lib/clang").glob("*/lib/linux/libclang_rt.fuzzer-*.a")):
        missing += " libclang-rt-14-dev"
    missing += " nodejs npm pkg-config"
    if not Path("/usr/include/dqlite.h").is_file():
        missing += " libdqlite-dev"
    return missing + " chromium"


def test_not_root_prints_the_apt_line_to_run_and_fails(tmp_path: Path) -> None:
    done = deps(bare_machine(tmp_path, uid=1000, apt=True), "test", "python3")
    assert done.returncode == 1
    missing = expected_missing()
    assert done.stderr == (
        f"deps: make test needs these Debian/Ubuntu packages, not installed: {missing}\n"
        "deps: run this as root, then make test again:\n"
        f"  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y {missing}\n"
    )
    assert not (tmp_path / "apt.log").exists()


def test_root_installs_with_the_printed_line_then_checks_again(tmp_path: Path) -> None:
    done = deps(bare_machine(tmp_path, uid=0, apt=True), "test", "python3")
    missing = expected_missing()
    assert f"deps: + DEBIAN_FRONTEND=noninteractive apt-get install -y {missing}\n" in done.stderr
    assert (tmp_path / "apt.log").read_text() == f"apt-get update -qq\napt-get install -y {missing}\n"
    # The stand-in installed nothing: the second check says so and fails.
    assert done.returncode == 1
    assert f"deps: still missing after apt-get install: {missing}" in done.stderr


def test_demo_needs_only_the_build_tools(tmp_path: Path) -> None:
    done = deps(bare_machine(tmp_path, uid=1000, apt=True), "build", "python3")
    assert done.returncode == 1
    assert "deps: make demo needs these Debian/Ubuntu packages, not installed: gcc make\n" in done.stderr


def test_a_missing_python_version_stops_with_the_way_to_leave_it_out(tmp_path: Path) -> None:
    env = bare_machine(tmp_path, uid=0, apt=True)
    version = "{}.{}".format(*sys.version_info[:2])
    (Path(env["PATH"]) / f"python{version}").symlink_to(os.path.realpath(sys.executable))
    done = deps(env, "test", "python3", version, "3.97")
    assert done.returncode == 1
    assert done.stderr == (
        "deps: no Python 3.97 here (looked for python3.97 on PATH and in "
        f"{tmp_path}/no-pyenv/versions/3.97.*)\n"
        "deps:   install it (e.g. pyenv install 3.97), or leave it out of the versions make test runs:\n"
        f'deps:   make test PYTHONS="{version}"\n'
        "deps: and these Debian/Ubuntu packages are not installed (as root: apt-get update && "
        f"DEBIAN_FRONTEND=noninteractive apt-get install -y {expected_missing()})\n"
    )
    assert not (tmp_path / "apt.log").exists()  # nothing is installed until everything can be


def test_find_python_skips_a_shim_that_does_not_run(tmp_path: Path) -> None:
    env = bare_machine(tmp_path, uid=0, apt=False)
    shim = Path(env["PATH"]) / "python3.97"
    shim.write_text(f"#!{BASH}\necho 'pyenv: python3.97: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    done = subprocess.run(
        [BASH, str(REPO / "tools" / "find-python"), "3.97"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    version = "{}.{}".format(*sys.version_info[:2])
    (Path(env["PATH"]) / f"python{version}").symlink_to(os.path.realpath(sys.executable))
    done = subprocess.run(
        [BASH, str(REPO / "tools" / "find-python"), version],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{env['PATH']}/python{version}\n")
