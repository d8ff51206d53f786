"""The release as a user installs it: ``python -m build`` makes the sdist and, from the sdist, the
wheel (so what the wheel holds, the sdist carried); the wheel is installed into an empty virtual
environment outside the repository, and with pipx, and ``osep`` runs from a folder that is not the
repository, with nothing but what was installed. Its dependencies come from the package index, so
this needs the network; one build and one install serve every test here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import osep

ROOT = Path(__file__).parents[2]
DATA = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "osep" / "data").rglob("*") if p.is_file())
NAME = f"osep-{osep.__version__}"


def run(args, cwd, env=None, stdout=None):
    """``args`` run in ``cwd`` with an environment that points at no virtual environment or source
    tree (plus ``env``); a failure shows their output. ``stdout``: a file for it instead."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=clean | (env or {}), text=True, timeout=900,
                            check=False, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE)
    assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr}"
    return result


def outside(path: Path) -> Path:
    assert not path.resolve().is_relative_to(ROOT.resolve()), f"{path} is inside the repository"
    return path


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, as ``python -m build`` makes them (the wheel from the sdist)."""
    out = outside(tmp_path_factory.mktemp("dist"))
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=out)
    assert sorted(p.name for p in out.iterdir()) == [f"{NAME}-py3-none-any.whl", f"{NAME}.tar.gz"]
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty virtual environment outside the repository with the wheel pip-installed into it."""
    where = outside(tmp_path_factory.mktemp("venv"))
    run([sys.executable, "-m", "venv", where], cwd=where)
    run([where / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check",
         dist / f"{NAME}-py3-none-any.whl"], cwd=where)
    return where


def test_the_wheel_and_the_sdist_carry_the_data_and_the_licence(dist):
    with zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        metadata = wheel.read(f"{NAME}.dist-info/METADATA").decode()
        licence = wheel.read(f"{NAME}.dist-info/licenses/LICENSE")
    assert set(DATA) <= set(names)
    assert {"osep/data/condor/50-osep.config", "osep/data/traces/NASA-iPSC-1993-3.1-cln.swf.gz"} <= set(DATA)
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert licence.split()[:4] == [b"Apache", b"License", b"Version", b"2.0,"]
    assert f"Version: {osep.__version__}\n" in metadata and "License-Expression: Apache-2.0\n" in metadata
    assert not [n for n in names if n.startswith("tests/")]
    with tarfile.open(dist / f"{NAME}.tar.gz") as sdist:
        files = {n.removeprefix(f"{NAME}/") for n in sdist.getnames()}
    assert {*DATA, "LICENSE", "README.md", "pyproject.toml", "mkdocs.yml"} <= files
    # The README's links into the documentation resolve in the sdist as in a clone.
    linked = set(re.findall(r"\]\((docs/[^)#]+)", (ROOT / "README.md").read_text()))
    assert linked and linked <= files
    # So do the pages' own links: every file of the documentation is in it.
    docs = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    assert "docs/studies/lcg-2005-vos.toml" in docs and docs <= files


def test_the_installed_command_runs_the_bundled_files_from_any_folder(venv, tmp_path):
    osep_ = venv / "bin" / "osep"
    where = run([venv / "bin" / "python", "-c", "import osep; print(osep.__file__)"], cwd=tmp_path).stdout
    assert Path(where.strip()).is_relative_to(venv)  # the installed package, not the source tree
    assert run([osep_, "--version"], cwd=tmp_path).stdout == f"osep, version {osep.__version__}\n"

    doc = json.loads(run([osep_, "simulate", "paper-general", "--format", "json"], cwd=tmp_path).stdout)
    assert doc["scenario"]["name"] == "paper-general"
    assert list(doc["policies"]) == ["greedy", "fairshare", "osep", "osep-ckpt"]
    assert "nasa-ipsc" in run([osep_, "validate", "nasa-ipsc"], cwd=tmp_path).stdout  # its log found

    with open(tmp_path / "policy.toml", "w") as out:
        run([osep_, "example", "policy"], cwd=tmp_path, stdout=out)  # osep example policy > policy.toml
    checked = run([osep_, "validate", "policy.toml"], cwd=tmp_path).stdout
    assert checked.startswith("policy.toml: policy: 3 owners")
    assert "condor-config" in run([osep_, "example"], cwd=tmp_path).stdout


def test_pipx_installs_it(dist, tmp_path):
    home = outside(tmp_path / "pipx")
    env = {"PIPX_HOME": str(home), "PIPX_BIN_DIR": str(home / "bin"), "PIPX_MAN_DIR": str(home / "man")}
    run([sys.executable, "-m", "pipx", "install", "--pip-args=--no-compile", dist / f"{NAME}-py3-none-any.whl"],
        cwd=tmp_path, env=env)
    assert run([home / "bin" / "osep", "--version"], cwd=tmp_path).stdout == f"osep, version {osep.__version__}\n"
