"""The scripts under scripts/ as a user starts them: each executable with the same shebang, its --help
working with the project's Python (the one running the tests, .venv/bin/python under scripts/test),
and, on a Python without the project's dependencies (this one with -S: no site-packages), one line
naming the Python to use and exit status 2 (scripts/_env.py), not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(path for path in (ROOT / "scripts").glob("*.py") if not path.name.startswith("_"))
STDLIB_ONLY = {"testpool.py", "debpackage.py"}  # run on any Python 3.11, as sudo starts them: no check


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_every_script_is_found():
    assert len(SCRIPTS) >= 9


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_executable_with_one_shebang(script):
    assert script.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(script, os.X_OK)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_help_with_the_projects_python(script):
    done = run(str(script.relative_to(ROOT)), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")
    assert done.stderr == ""


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.name not in STDLIB_ONLY], ids=lambda path: path.name)
def test_one_line_without_the_dependencies(script):
    done = run("-S", str(script.relative_to(ROOT)), "--help")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"scripts/{script.name}: run it with .venv/bin/python (scripts/setup makes it);")
    assert "structlog" in lines[0]


@pytest.mark.parametrize("script", sorted(STDLIB_ONLY))
def test_the_test_pool_scripts_need_no_dependencies(script):
    done = run("-S", f"scripts/{script}", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")
