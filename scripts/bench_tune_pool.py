#!/usr/bin/env python3
"""How many candidates `osep tune --on-pool` runs per minute on the test pool, on one week of the
LCG 2005 trace: the sweep of scripts/bench_tune.py (the trace's first 7 days, its VOs as owners on
1,580 one-core slots, docs/studies/lcg-2005-vos.toml; p 1, 2, 4, 8 under both victim orders at
t = 300 s, minimum run time 0, and the policy file's settings: 9 candidates).

    sudo scripts/testpool.py isolate -- .venv/bin/python scripts/bench_tune_pool.py [--batch 1]

Starts the test pool (static slots), runs the sweep from an empty journal as alice on the pool's
submit machine, as tests/live/test_tune_pool.py does (this checkout and its Python mounted read-only
inside the pool's root, a directory of hers mounted at the same path, a token of hers), and prints
the candidates, the wall seconds of the whole command (the history read included) and the candidates
per minute; the jobs run on the pool's slots, all on this machine's cores. Then runs the same command
here without --on-pool and stops with an error if the two JSON documents differ (the runs'
bookkeeping aside). The jobs run this checkout's Python too (--pool-python), not the pool's: the
figures are compared to the last bit, and Python 3.12 changed how sum() adds floats. The pool is
stopped, the mount removed and the directory deleted whatever happens. Needs root;
OSEP_TESTPOOL_SUITE picks the pool's HTCondor (trixie: 23.9, forky: 25.x).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from testpool import PoolError, TestPool  # noqa: E402

LCG = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"
POLICY = ROOT / "docs" / "studies" / "lcg-2005-vos.toml"
SLOTS = 20
USER = "alice"
# This checkout and the Python that runs it, seen at the same paths inside the pool's root.
BINDS = tuple(sorted({Path(p).resolve() for p in (sys.base_prefix, sys.prefix, ROOT)}))


def tune_args(journal: Path, p: str, days: float) -> list[str]:
    """``osep tune`` as scripts/bench_tune.py sweeps it, JSON, from an empty journal."""
    return ["tune", "--trace", str(LCG), "--owners", "group", "--cores", "1580", "--days", f"{days:g}",
            "--policy-file", str(POLICY), "-p", p, "-t", "300", "--victim-order", "wallclock,lost-work",
            "--target", "owner", "--min-run-time", "0", "--excess", "fairshare", "--format", "json",
            "--fresh", "--journal", str(journal)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1, help="candidates run by each job")
    parser.add_argument("-p", default="1,2,4,8", help="the values of p to try")
    parser.add_argument("--days", type=float, default=7.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_tune_pool: needs root (the test pool is a chroot)", file=sys.stderr)
        return 1
    pool = TestPool()
    shared = Path(tempfile.mkdtemp(prefix="osep-bench-tune-pool-"))
    target = pool.root / shared.relative_to("/")
    try:
        return bench(pool, shared, target, args)
    except PoolError as exc:
        print(f"bench_tune_pool: {exc}", file=sys.stderr)
        return 1
    finally:
        if target.is_mount():
            subprocess.run(["umount", str(target)], check=False)
        pool.stop()
        shutil.rmtree(shared, ignore_errors=True)
        if target.is_dir() and not target.is_mount():
            target.rmdir()


def bench(pool: TestPool, shared: Path, target: Path, args: argparse.Namespace) -> int:
    pool.start("static", SLOTS, binds=BINDS)
    uid, gid = ids_of(pool, USER)
    os.chown(shared, uid, gid)
    shared.chmod(0o755)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(shared), str(target)], check=True)
    tokens = shared / "tokens"
    tokens.mkdir(mode=0o700)
    # A token of hers: the schedd refuses FS authentication from the PyPI bindings inside the root.
    (tokens / USER).write_text(pool.condor(["condor_token_create", "-identity", f"{USER}@{pool.uid_domain()}"]))
    (tokens / USER).chmod(0o600)
    for path in (tokens, tokens / USER):
        os.chown(path, uid, gid)
    env = ["env", "-i", "PATH=/usr/bin:/bin", f"HOME=/home/{USER}", f"TMPDIR={shared}",
           f"_CONDOR_SEC_TOKEN_DIRECTORY={tokens}"]
    python = str(Path(sys.prefix) / "bin" / "python")
    argv = ["chroot", str(pool.root), "runuser", "-u", USER, "--", *env, python, "-m", "osep",
            *tune_args(shared / "pool.journal", args.p, args.days), "--on-pool", "--batch", str(args.batch),
            "--pool-python", python]
    pooled, wall = timed(argv, cwd="/")
    count = pooled["runs"]["candidates"]
    print(f"on the pool ({pool.suite}, {pool.label()}), --batch {args.batch}: {count} candidates in {wall:.1f} s "
          f"of wall time, {60 * count / wall:.1f} candidates per minute (the jobs on the pool's {SLOTS} "
          f"slots, all on this machine's {os.cpu_count()} cores)", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        local, wall = timed([sys.executable, "-m", "osep", *tune_args(Path(folder) / "local.journal", args.p,
                                                                     args.days)], cwd=str(ROOT))
    print(f"here, without --on-pool ({os.cpu_count()} processes): {wall:.1f} s of wall time")
    pooled, local = without_bookkeeping(pooled), without_bookkeeping(local)
    if pooled != local:
        differ = sorted(k for k in pooled.keys() | local.keys() if pooled.get(k) != local.get(k))
        print(f"bench_tune_pool: --on-pool gave a different document than the local run ({', '.join(differ)} "
              "differ): a bug", file=sys.stderr)
        return 1
    print("the same document either way")
    return 0


def ids_of(pool: TestPool, user: str) -> tuple[int, int]:
    for line in (pool.root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise PoolError(f"no {user} in the pool's root")


def timed(argv: list[str], cwd: str) -> tuple[dict, float]:
    """Run an ``osep tune`` command; its JSON document and its wall seconds. The command is ended
    with its process group if this script is."""
    began = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=120)
    if proc.returncode != 0:
        raise PoolError(f"{' '.join(argv[:12])}... exited with {proc.returncode}")
    return json.loads(out), time.monotonic() - began


def without_bookkeeping(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "runs"}


if __name__ == "__main__":
    sys.exit(main())
