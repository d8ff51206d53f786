"""What the live tests use to drive a real HTCondor pool (scripts/testpool.py) and osep against it.

Waiting here is on the wall clock by necessity: the pool's daemons keep their own time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from testpool import DEFAULT_SUITE, TestPool, pids_in  # noqa: E402, F401 - conftest and tests import them from here
from testpool import PoolError as TestPoolError  # noqa: E402, F401 - conftest imports it from here

INTERVAL = 5  # seconds between enforcement cycles in these tests


def group(name: str, user: str) -> str:
    """The submit-file lines that charge a job to accounting group ``name`` as ``user``."""
    return f"accounting_group = {name}\naccounting_group_user = {user}\n"


@dataclass
class Live:
    pool: TestPool
    work: Path
    daemons: list[subprocess.Popen] = field(default_factory=list)

    # -- files ------------------------------------------------------------------------------------

    def policy(self, shares: dict[str, int | str], **policy: object) -> Path:
        """A policy file; a share given as a string is written as it is (a TOML table, say)."""
        lines = ["[policy]"] + [f"{k} = {json.dumps(v)}" for k, v in policy.items()]
        lines += ["[owners]"] + [f"{o} = {s}" for o, s in shares.items()]
        path = self.work / "policy.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def config(self, state_file: bool = True, **knobs: object) -> Path:
        """An HTCondor configuration file for osep outside the chroot: where the pool is, the token,
        a state file in this test's directory (unless ``state_file`` is false) and the OSEP_* knobs
        given."""
        lines = [
            "CONDOR_HOST = 127.0.0.1:9618",
            "COLLECTOR_HOST = 127.0.0.1:9618",
            f"SEC_TOKEN_DIRECTORY = {self.pool.token_dir}",
            f"OSEP_INTERVAL = {INTERVAL}",
        ]
        if state_file:
            lines.append(f"OSEP_STATE_FILE = {self.work / 'osep.state'}")
        lines += [f"{k} = {v}" for k, v in knobs.items()]
        path = self.work / "condor_config"
        path.write_text("\n".join(lines) + "\n")
        return path

    @property
    def log(self) -> Path:
        return self.work / "osep.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("_CONDOR_", "CONDOR_"))}
        env["CONDOR_CONFIG"] = str(self.work / "condor_config")
        return env

    # -- the daemon -------------------------------------------------------------------------------

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "osep", "--log-level", "info", "--log-file", str(self.log),
                "run", *args]

    def once(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(self.command("--once", *args), env=self.env(), capture_output=True,
                              text=True, timeout=timeout, check=False)

    def doctor(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``osep doctor``, with this harness's configuration (``config``)."""
        return subprocess.run([sys.executable, "-m", "osep", "doctor", *args], env=self.env(),
                              capture_output=True, text=True, timeout=timeout, check=False)

    def token(self, name: str, identity: str, authz: tuple[str, ...] = ()) -> Path:
        """A token directory of this test's own holding one token made inside the pool for
        ``identity`` (``osep@<UID_DOMAIN>``), limited to the levels ``authz`` (none: every level);
        give it to osep with ``config(SEC_TOKEN_DIRECTORY=...)``."""
        limits = [arg for level in authz for arg in ("-authz", level)]
        token = self.pool.condor(["condor_token_create", "-identity", identity, *limits])
        folder = self.work / f"tokens-{name}"
        folder.mkdir(mode=0o700)
        (folder / "osep").write_text(token)
        (folder / "osep").chmod(0o600)
        return folder

    def user_record(self, identity: str, present: bool = True) -> None:
        """Add (or remove) every schedd's user record of ``identity``, as the pool's administrator (a
        schedd refuses a vacate from a user it has no record of). Through the bindings: 23.9's
        ``condor_qusers -add`` answers that it succeeded and adds nothing."""
        call = "addUserRec" if present else "removeUserRec"
        code = ("import sys, htcondor2 as h\n"
                "for ad in h.Collector().locateAll(h.DaemonType.Schedd):\n"
                f"    print(ad['Name'], dict(h.Schedd(ad).{call}(sys.argv[1])))\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("_CONDOR_", "CONDOR_"))}
        done = subprocess.run([sys.executable, "-c", code, identity], env={**env, **self.pool.env()},
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and "'Result': 0" in done.stdout, (done.stdout, done.stderr)

    def release(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """``osep release``, as an administrator would run it after a stop that left ceilings."""
        return subprocess.run([sys.executable, "-m", "osep", "release", *args], env=self.env(),
                              capture_output=True, text=True, timeout=timeout, check=False)

    def start(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(self.command(*args), env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.daemons.append(proc)
        return proc

    def close(self) -> None:
        """Kill every daemon this harness started that is still running, then stop the pool."""
        for proc in self.daemons:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        self.pool.stop()

    def stop(self, proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        proc.send_signal(sig)
        return proc.wait(timeout=timeout)

    def events(self, name: str | None = None, log: Path | None = None) -> list[dict]:
        """The JSON events named ``name`` (all with None) in osep's log: this harness's own, or
        ``log`` (where an osep the pool's condor_master started writes)."""
        log = self.log if log is None else log
        if not log.exists():
            return []
        out = []
        for line in log.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if name is None or event.get("event") == name:
                out.append(event)
        return out

    # -- the pool ---------------------------------------------------------------------------------

    def osep_ad(self, *attributes: str) -> str:
        """``attributes`` of osep's collector ad, as ``condor_status -af`` prints them ("" while
        there is none)."""
        return self.pool.condor(["condor_status", "-any", "-constraint", 'MyType == "OSEP"',
                                 "-af", *attributes]).strip()

    def submit(self, user: str, count: int, seconds: int = 3600, extra: str = "",
               stock: bool = False, cpus: int = 1, schedd: str | None = None,
               log: str = "jobs.log") -> int:
        return self.pool.submit(user, count, seconds, cpus=cpus, extra=extra, stock=stock,
                                schedd=schedd, log=log)

    def jobs(self) -> list[dict]:
        """Every job in every schedd's queue, as the schedds say (not as osep saw it)."""
        out = self.pool.condor(["condor_q", "-global", "-all", "-af:t", "Owner", "ClusterId",
                                "ProcId", "JobStatus", "JobCurrentStartDate", "RemoteHost",
                                "JobUniverse", "GlobalJobId"])
        rows = []
        for line in out.splitlines():
            if "\t" not in line:  # a blank line, or "All queues are empty"
                continue
            owner, cluster, proc, status, start, host, universe, global_id = line.split("\t")
            rows.append({"owner": owner, "id": f"{cluster}.{proc}", "cluster": int(cluster),
                         "status": int(status), "start": start, "host": host,
                         "universe": int(universe), "schedd": global_id.split("#")[0]})
        return rows

    def running(self, owner: str) -> int:
        """Jobs of ``owner`` running on execute slots (not in the scheduler or local universe)."""
        return sum(1 for j in self.jobs()
                   if j["owner"] == owner and j["status"] == 2 and j["universe"] not in (7, 12))

    def queued(self, owner: str) -> int:
        return sum(1 for j in self.jobs() if j["owner"] == owner)

    def history(self, user: str, log: str = "jobs.log") -> dict[str, list[str]]:
        """Job ids per event kind, from the user's job event log ``log`` (what HTCondor
        recorded)."""
        import htcondor2

        path = self.pool.root / "home" / user / log
        out: dict[str, list[str]] = {"evicted": [], "aborted": [], "executed": []}
        if not path.exists():
            return out
        kinds = {
            htcondor2.JobEventType.JOB_EVICTED: "evicted",
            htcondor2.JobEventType.JOB_ABORTED: "aborted",
            htcondor2.JobEventType.EXECUTE: "executed",
        }
        for event in htcondor2.JobEventLog(str(path)).events(stop_after=0):
            kind = kinds.get(event.type)
            if kind:
                out[kind].append(f"{event.cluster}.{event.proc}")
        return out

    def ceilings(self) -> dict[str, int]:
        out = {}
        for line in self.pool.condor(["condor_userprio", "-allusers", "-af", "Name", "Ceiling"]).splitlines():
            name, _, value = line.partition(" ")
            if "@" in name and value.strip().lstrip("-").isdigit():
                out[name] = int(value)
        return out

    def priority_factors(self) -> dict[str, float]:
        out = self.pool.condor(["condor_userprio", "-allusers", "-af", "Name", "PriorityFactor"])
        pairs = (line.partition(" ") for line in out.splitlines())
        return {name: float(value) for name, _, value in pairs if "@" in name and value}

    def set_priority_factor(self, user: str, factor: float, timeout: float = 90) -> str:
        """Set ``user``'s priority factor and wait until the negotiator reports it. The command is
        fire-and-forget and is lost while the accountant has no record of the user yet, so it is
        sent again until it shows."""
        name = f"{user}@{self.pool.uid_domain()}"

        def applied() -> bool:
            if self.priority_factors().get(name, 0.0) >= factor * 0.999:  # read back as a float
                return True
            self.pool.condor(["condor_userprio", "-setfactor", name, str(factor)])
            time.sleep(2)
            return False

        self.wait_until(applied, timeout, f"{name}'s priority factor to be {factor:g}")
        return name

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> float:
        """Poll ``check`` every second; return the seconds it took, fail the test on timeout."""
        start = time.monotonic()
        while True:
            if check():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(1)

    def fill(self, user: str = "alice", first: int = 10, second: int = 10,
             stock: bool = False) -> list[str]:
        """``user`` fills the pool in two batches; returns the ids of the later, younger batch."""
        self.submit(user, first, stock=stock)
        self.wait_until(lambda: self.running(user) == first, 60, f"{user}'s first batch to run")
        time.sleep(2)  # a distinct start time for the second batch
        cluster = self.submit(user, second, stock=stock)
        self.wait_until(lambda: self.running(user) == first + second, 60,
                        f"{user}'s second batch to run")
        return [f"{cluster}.{k}" for k in range(second)]
