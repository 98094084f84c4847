"""Installing the package as a user would: from the tracked sources into a fresh venv.

A wheel built normally carries the schema, the native engine and the loadable
extension. Without a working C compiler the install still succeeds, with the
Python engine only, and the native engine says how to get it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of exactly the tracked files for each test: setuptools builds in
    the source tree and reuses what it finds there, so nothing may be shared."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to know the tracked files")
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    dest = tmp_path_factory.mktemp("src")
    for name in filter(None, files):
        path = REPO / os.fsdecode(name)
        if path.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / os.fsdecode(name))
    return dest


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_wheel_carries_schema_engine_and_extension(source: Path, tmp_path: Path) -> None:
    pip("wheel", "--no-deps", "-w", str(tmp_path), str(source))
    (wheel,) = tmp_path.glob("pyevidence-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "pyevidence/schema.sql" in names
    assert any(n.startswith("pyevidence/_native") and n.endswith((".so", ".pyd")) for n in names)
    assert any(n.startswith("pyevidence/evidence.") for n in names)


def test_install_without_a_compiler_falls_back_to_python(source: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = dict(os.environ, CC="false", CXX="false")
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", str(source)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doctor = subprocess.run(
        [str(python), "-m", "pyevidence", "doctor"], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    report = json.loads(doctor.stdout)
    assert report["engines"]["native"]["available"] is False
    assert "libsqlite3-dev" in report["engines"]["native"]["why_not"]
    assert report["engines"]["auto_chooses"] == "python"
    assert report["loadable_extension"] is None
    assert report["vectors"]["native_vector_ranking"] is False
    demo = subprocess.run(
        [str(python), "-m", "pyevidence", "demo"], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert demo.stdout == (REPO / "tests" / "golden" / "demo.json").read_text()
