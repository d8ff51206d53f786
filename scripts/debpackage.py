#!/usr/bin/env python3
"""Builds osep's Debian package (debian/) inside a test pool's root, with Debian's own tools.

Each suite gets a package built in its own root (``dpkg-buildpackage``, pybuild from pyproject.toml),
as Debian builds a package once per release: the two differ only in where the HTCondor bindings
come from. Where the suite's own library is one osep can use (forky's htcondor2 25.x), the package
depends on it; where it is not (trixie's 23.9 ship an early htcondor2), the package carries PyPI's
wheel of it for that suite's python3 (:data:`CARRIABLE`), which :func:`fetch_bindings` downloads once
(it needs the network: outside ``testpool.py isolate``) and keeps beside the root.

    scripts/debpackage.py [--suite trixie|forky] [--out DIR]     # prints the package's path
    scripts/debpackage.py [--suite trixie|forky] --fetch         # only download what it carries

The roots have the build dependencies and osep's run-time dependencies (testpool.py's recipe), so
that a package built there installs there without the network.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testpool import DEFAULT_DIR, DEFAULT_SUITE, SUITES, PoolError, TestPool

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}
# The libraries the package may carry, each with the requirement it is downloaded by and what
# the distribution's copy must have for osep to use it instead: htcondor2's full API (trixie's 23.9
# ships an early one). Every other library osep uses is the distribution's own, on trixie and forky
# alike (constraints/debian-trixie.txt: the versions its tests run with in .venv-oldest).
CARRIABLE = {
    "htcondor": ("htcondor>=24.0,<26", "import htcondor2; htcondor2.HTCondorException; htcondor2.ping"),
}


def lacking(pool: TestPool) -> list[str]:
    """The libraries of :data:`CARRIABLE` whose copy in the root osep cannot use."""
    out = []
    for name, (_, usable) in CARRIABLE.items():
        done = subprocess.run(["chroot", str(pool.root), "python3", "-c", usable], env=ENV,
                              capture_output=True, check=False)
        if done.returncode != 0:
            out.append(name)
    return out


def kept(pool: TestPool, name: str) -> list[Path]:
    return sorted(vendor_dir(pool).glob(f"{name}-*.whl"))


def vendor_dir(pool: TestPool) -> Path:
    return pool.base / "vendor"


def fetch_bindings(pool: TestPool, log=sys.stderr) -> None:
    """Download PyPI's wheel for the root's python3 of each library the root lacks and of which none
    is kept yet. Needs the network."""
    wanted = [CARRIABLE[name][0] for name in lacking(pool) if not kept(pool, name)]
    if not wanted:
        return
    version = subprocess.run(["chroot", str(pool.root), "python3", "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])"],
                             env=ENV, capture_output=True, text=True, check=True).stdout.strip()
    fresh = Path(tempfile.mkdtemp(prefix="osep-bindings-"))
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "--python-version", version,
                        "--platform", "manylinux_2_28_x86_64", "--dest", str(fresh),
                        *wanted], check=True)
        vendor_dir(pool).mkdir(parents=True, exist_ok=True)
        for wheel in fresh.glob("*.whl"):
            shutil.move(str(wheel), vendor_dir(pool) / wheel.name)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    print(f"debpackage: kept PyPI's {', '.join(wanted)} for python {version} in {vendor_dir(pool)}",
          file=log)


def source_files(checkout: Path) -> list[str]:
    """The checkout's files as git sees them (committed or not, never what .gitignore hides)."""
    out = subprocess.run(["git", "-C", str(checkout), "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, text=True, check=True).stdout
    return sorted(name for name in out.split("\0") if name and (checkout / name).is_file())


def build(pool: TestPool, out: Path, checkout: Path = ROOT, log=sys.stderr) -> Path:
    """Build the package from ``checkout`` in ``pool``'s root; return the .deb, moved to ``out``."""
    if not pool.built():
        raise PoolError(f"the {pool.suite} root is not built (scripts/testpool.py --suite {pool.suite} build)")
    work = pool.root / "build"
    shutil.rmtree(work, ignore_errors=True)
    tree = work / "osep"
    for name in source_files(checkout):
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / name, target)
    for name in lacking(pool):
        wheels = kept(pool, name)
        if not wheels:
            raise PoolError(f"the {pool.suite} root's {name} is not one osep can use and no wheel of it "
                            f"is kept in {vendor_dir(pool)} (scripts/debpackage.py --suite {pool.suite} "
                            "--fetch downloads it)")
        (tree / "debian/vendor").mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheels[-1], tree / "debian/vendor" / wheels[-1].name)
    try:
        done = subprocess.run(["chroot", str(pool.root), "sh", "-c",
                               "cd /build/osep && dpkg-buildpackage -b -us -uc"],
                              env=ENV, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise PoolError(f"dpkg-buildpackage failed ({done.returncode}):\n"
                            f"{(done.stdout + done.stderr)[-4000:]}")
        debs = sorted(work.glob("osep_*.deb"))
        if len(debs) != 1:
            raise PoolError(f"dpkg-buildpackage made {len(debs)} packages: {[d.name for d in debs]}")
        out.mkdir(parents=True, exist_ok=True)
        target = out / debs[0].name
        shutil.move(str(debs[0]), target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"debpackage: built {target} ({pool.suite})", file=log)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description="Build osep's Debian package in a test pool's root.")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--suite", choices=SUITES, default=DEFAULT_SUITE)
    parser.add_argument("--fetch", action="store_true",
                        help="only download what the package will carry (needs the network)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the package goes (default: dist/debian/SUITE in this checkout)")
    args = parser.parse_args()
    pool = TestPool(args.dir, args.suite)
    try:
        pool.build()
        fetch_bindings(pool)
        if args.fetch:
            return 0
        print(build(pool, args.out or ROOT / "dist" / "debian" / pool.suite))
    except (PoolError, subprocess.CalledProcessError) as exc:
        print(f"debpackage: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
