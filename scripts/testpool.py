#!/usr/bin/env python3
"""A real, personal HTCondor pool for osep's live tests, in a Debian chroot (trixie or forky).

Debian trixie ships HTCondor 23.9 and forky 25.x (packages ``condor`` and ``minicondor``). This script
builds a minimal root of either suite with debootstrap (Debian's own package archive, nothing else),
caches it (``<dir>/<suite>/root``, its run directory beside it), and starts one central manager +
schedd + startd inside it on 127.0.0.1:9618, which the PyPI bindings outside talk to.

The pool runs in a network namespace of its own, so that two pools (one per suite) can run at once,
both on 127.0.0.1:9618, without meeting each other or any other pool on this machine: ``isolate`` runs
a command in new network, mount and PID namespaces (loopback up, the host name mapped to 127.0.0.1 in
an /etc/hosts seen only there); ``start`` refuses to run anywhere else. Whatever the command leaves
running there ends with it, and what was mounted there goes with the namespace.

    scripts/testpool.py build [--suite trixie|forky]        # once per suite, outside: needs the network
    scripts/testpool.py isolate -- COMMAND ...              # COMMAND in namespaces of its own
    scripts/testpool.py start [--layout static|partitionable] [--cpus 20] [--bind DIR ...]  # inside
    scripts/testpool.py env                    # shell lines for the bindings outside the chroot
    scripts/testpool.py submit [--owner alice] [--count N] [--duration S] [--cpus N] [--memory MIB]
                               [--gpus N] [--request NAME=N] [--group GROUP] [--show]  # sleep jobs
    scripts/testpool.py submit [--owner alice] FILE.sub        # a submit file of your own, as it is
    scripts/testpool.py version                # the suite's HTCondor version (condor_version)
    scripts/testpool.py stop

``--suite`` (or OSEP_TESTPOOL_SUITE) picks the suite, trixie by default; ``--dir`` (or
OSEP_TESTPOOL_DIR) the cache. Every start begins from an empty spool (no jobs, no usage history),
empty user job logs and the configuration the root was built with. ``stop`` ends the condor_master
this script started and every process left inside the chroot (all descendants of that master), then
unmounts what ``start`` mounted. Needs root (chroot, mount, unshare) and debootstrap.

The same functions are imported by the pytest fixture in tests/live/conftest.py.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(os.environ.get("OSEP_TESTPOOL_DIR", "/var/cache/osep-testpool"))
MIRROR = os.environ.get("OSEP_TESTPOOL_MIRROR", "http://deb.debian.org/debian")
# Each suite's build recipe; bump one when its recipe changes, so that its cached root is rebuilt.
RECIPES = {"trixie": "3", "forky": "3"}
SUITES = tuple(RECIPES)
DEFAULT_SUITE = os.environ.get("OSEP_TESTPOOL_SUITE", "trixie")
DEBOOTSTRAP_SCRIPTS = Path("/usr/share/debootstrap/scripts")
USERS = ("alice", "bob", "carol")
# Besides HTCondor: what osep's Debian package needs to be built (scripts/debpackage.py) and to run
# in the root, so that it installs there with no network (inside ``isolate`` there is none).
PACKAGING = ("build-essential", "debhelper", "dh-python", "pybuild-plugin-pyproject", "python3-all",
             "python3-setuptools", "python3-click", "python3-structlog", "python3-tenacity",
             "python3-prometheus-client")
ADDRESS = "127.0.0.1:9618"

BASE_CONFIG = """\
# Written by osep's scripts/testpool.py: a personal pool that can run jobs inside a chroot.
# On the loopback interface of the pool's own network namespace (forky's minicondor takes
# $(IP_ADDRESS) and every interface; trixie's says this much already).
CONDOR_HOST = 127.0.0.1
NETWORK_INTERFACE = 127.0.0.1
BIND_ALL_INTERFACES = False
NUM_CPUS = {cpus}
MOUNT_UNDER_SCRATCH =
MOUNT_PRIVATE_DEV_SHM = false
USE_PID_NAMESPACES = false
BASE_CGROUP =
# Quick cycles, so that tests measure seconds, not minutes.
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_CYCLE_DELAY = 2
SCHEDD_INTERVAL = 2
UPDATE_INTERVAL = 2
STARTER_UPDATE_INTERVAL = 2
# Only osep preempts in the test pool: the negotiator itself never does.
PREEMPTION_REQUIREMENTS = False
NEGOTIATOR_CONSIDER_PREEMPTION = False
# One event log for every job in the pool, naming each job's owner: what osep replay reads.
EVENT_LOG = $(LOG)/EventLog
EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner, AcctGroup, AccountingGroup
EVENT_LOG_FORMAT_OPTIONS = ISO_DATE
"""

# A further schedd under the same master, with a spool (job queue), address file and logs of its
# own: what a pool with several submit points looks like to the collector.
EXTRA_SCHEDD = """\
{name} = $(SCHEDD)
{name}_ARGS = -local-name {local}
{name}.SCHEDD_NAME = {local}
{name}.SCHEDD_LOG = $(LOG)/SchedLog.{local}
{name}.SPOOL = $(SPOOL)/{local}
{name}.SCHEDD_ADDRESS_FILE = $(SPOOL)/{local}/.schedd_address
{name}.SCHEDD_DAEMON_AD_FILE = $(SPOOL)/{local}/.schedd_classad
{name}.HISTORY = $(SPOOL)/{local}/history
DAEMON_LIST = $(DAEMON_LIST), {name}
DC_DAEMON_LIST = + {name}
"""

STATIC = "use FEATURE : StaticSlots\n"
PARTITIONABLE = "use FEATURE : PartitionableSlot\n"


class PoolError(RuntimeError):
    pass


def left_behind(status: str) -> bool:
    """Whether dpkg's ``${Status}`` of a package says something of it is on the system: installed,
    half installed, or removed with its conffiles kept ("deinstall ok config-files"), which a later
    install would keep as they were edited. Nothing is left only when dpkg does not know the package
    (empty) or says "not-installed"."""
    words = status.split()
    return bool(words) and "not-installed" not in words


@dataclass(frozen=True)
class TestPool:
    dir: Path = DEFAULT_DIR
    suite: str = DEFAULT_SUITE

    def __post_init__(self) -> None:
        if self.suite not in RECIPES:
            raise PoolError(f"unknown suite {self.suite!r} (one of {', '.join(SUITES)})")

    @property
    def base(self) -> Path:
        """This suite's part of the cache: its root and its run directory."""
        return self.dir / self.suite

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def run(self) -> Path:
        return self.base / "run"

    @property
    def token_dir(self) -> Path:
        return self.run / "tokens"

    @property
    def event_log(self) -> Path:
        """The pool's event log (every job's events, with its owner), as seen from outside."""
        return self.root / "var/log/condor/EventLog"

    @property
    def pidfile(self) -> Path:
        return self.run / "master.pid"

    @property
    def marker(self) -> Path:
        return self.root / ".osep-testpool"

    @property
    def recipe(self) -> str:
        """What the marker of a root built by this recipe says."""
        return f"{self.suite} {RECIPES[self.suite]}"

    # -- building ------------------------------------------------------------------------------

    def built(self) -> bool:
        return self.marker.exists() and self.marker.read_text().strip() == self.recipe

    def build(self, log=sys.stderr) -> None:
        """Create the cached root if it is missing or from an older recipe (atomically). Needs the
        network: run it outside ``isolate``."""
        if self.built():
            return
        if os.geteuid() != 0:
            raise PoolError("building the test pool needs root (debootstrap, chroot)")
        if shutil.which("debootstrap") is None:
            raise PoolError("debootstrap is not installed (apt-get install debootstrap)")
        self.base.mkdir(parents=True, exist_ok=True)
        fresh = self.base / "root.new"
        _remove_tree(fresh)
        started = time.monotonic()
        # A debootstrap older than the suite (bookworm's knows no forky) builds it as it builds sid.
        script = [] if (DEBOOTSTRAP_SCRIPTS / self.suite).exists() else [str(DEBOOTSTRAP_SCRIPTS / "sid")]
        _run(["debootstrap", "--variant=minbase", self.suite, str(fresh), MIRROR, *script], log)
        env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        # A testing suite's Release file has a Valid-Until that a mirror a few weeks behind (or a
        # clock ahead) has passed; this root is built once and thrown away, so it is not checked.
        _run(["chroot", str(fresh), "apt-get", "update", "-qq",
              "-o", "Acquire::Check-Valid-Until=false"], log, env)
        # forky's condor depends on cryptsetup, whose postinst needs /proc: mounted for the install
        # in a mount namespace of its own, so that it is gone with the command however it ends.
        _run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
              'mount -t proc proc "$0/proc" && exec chroot "$0" apt-get install -y -qq '
              f"--no-install-recommends condor minicondor {' '.join(PACKAGING)}", str(fresh)], log, env)
        for user in USERS:
            _run(["chroot", str(fresh), "useradd", "--create-home", user], log, env)
        (fresh / ".osep-testpool").write_text(self.recipe + "\n")
        _remove_tree(self.root)
        fresh.rename(self.root)
        print(f"testpool: built {self.root} ({self.label()}) in {time.monotonic() - started:.0f} s",
              file=log)

    def version(self) -> str:
        """The HTCondor version the suite's root runs (``condor_version``, as ``25.14.1``); needs
        the root built, not the pool running."""
        out = self.condor(["condor_version"])
        found = re.search(r"\$CondorVersion: (\S+)", out)
        if found is None:
            raise PoolError(f"condor_version said no version: {out.strip()!r}")
        return found.group(1)

    def label(self) -> str:
        """``HTCondor 25.14.1 (forky)``: what the tests say they ran on."""
        return f"HTCondor {self.version()} ({self.suite})"

    # -- running -------------------------------------------------------------------------------

    def master_pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text())
        except (OSError, ValueError):
            return None
        try:
            if Path(f"/proc/{pid}/root").resolve() != self.root.resolve():
                return None
        except OSError:
            return None
        return pid

    def start(self, layout: str = "static", cpus: int = 20, timeout: float = 90.0,
              log=sys.stderr, binds: tuple[Path, ...] = (), extra_config: str = "",
              schedds: int = 1) -> None:
        """Start a fresh pool. ``binds`` are host directories mounted at the same path inside the
        chroot (read-only), so that its condor_master can run a program installed outside,
        ``extra_config`` is appended to the pool's configuration, and ``schedds`` > 1 adds schedds
        named ``schedd2``, ``schedd3``... (``condor_submit -name schedd2@<host>``)."""
        if layout not in ("static", "partitionable"):
            raise PoolError(f"unknown layout {layout!r}")
        if not isolated() and os.environ.get("OSEP_TESTPOOL_HOST_NETWORK") != "1":
            raise PoolError("not starting a pool on this machine's network, where it would meet any "
                            "other on 127.0.0.1:9618: start it inside "
                            "'scripts/testpool.py isolate -- COMMAND' (or set "
                            "OSEP_TESTPOOL_HOST_NETWORK=1 to do it anyway)")
        self.build(log)
        if self.master_pid() is not None:
            raise PoolError("the test pool is already running (scripts/testpool.py stop)")
        self.stop(log=log)  # leftovers of a run that died: mounts, stray processes
        root = self.root
        for sub in ("var/spool/condor", "var/log/condor", "var/lib/condor/execute"):
            target = root / sub
            if target.exists():
                for entry in target.iterdir():
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
        self._pristine()
        for user in USERS:  # the users' job event logs belong to the previous run too
            for old in (root / "home" / user).glob("*.log"):
                old.unlink()
        config = BASE_CONFIG.format(cpus=cpus) + (STATIC if layout == "static" else PARTITIONABLE)
        for k in range(2, schedds + 1):
            local = f"schedd{k}"
            config += EXTRA_SCHEDD.format(name=local.upper(), local=local)
            spool = root / "var/spool/condor" / local
            spool.mkdir(parents=True)
            owner = (root / "var/spool/condor").stat()
            os.chown(spool, owner.st_uid, owner.st_gid)
        config += extra_config
        (root / "etc/condor/config.d/99-osep-testpool.conf").write_text(config)
        # No name service inside: the daemons find this host's name where the bindings outside do.
        (root / "etc/hosts").write_text(hosts_file())
        self.run.mkdir(parents=True, exist_ok=True)
        _mount(["-t", "proc", "proc", str(root / "proc")])
        _mount(["--bind", "/dev", str(root / "dev")])
        sources = sorted({b.resolve() for b in binds})
        # A directory inside another one being mounted is visible through it already.
        sources = [b for b in sources if not any(b != o and b.is_relative_to(o) for o in sources)]
        for source in sources:
            target = root / source.relative_to("/")
            target.mkdir(parents=True, exist_ok=True)
            # Every account in the pool must be able to pass through to the mounted directory.
            for parent in target.relative_to(root).parents:
                here = root / parent
                if here != root:
                    here.chmod(here.stat().st_mode | 0o011)
            _mount(["--bind", str(source), str(target)])
            _mount(["-o", "remount,bind,ro", str(target)])
        with (self.run / "master.log").open("ab") as out:
            proc = subprocess.Popen(
                ["chroot", str(root), "/usr/sbin/condor_master", "-f"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
        self.pidfile.write_text(f"{proc.pid}\n")
        want = cpus if layout == "static" else 1
        deadline = time.monotonic() + timeout
        while True:
            ready = (
                self._count(["-schedd"]) >= schedds
                and self._count(["-negotiator"]) >= 1
                and self._count([]) >= want
            )
            if ready:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.run / "master.log").read_text(errors="replace")[-2000:]
                self.stop(log=log)
                raise PoolError(f"the test pool did not come up (layout {layout}):\n{tail}")
            time.sleep(1)
        self._make_token()
        print(f"testpool: running {self.suite} ({layout}, {cpus} cpus) on {ADDRESS}", file=log)

    def _pristine(self) -> None:
        """Undo what an earlier test did to the root, which outlives its pool: osep's Debian package
        purged if dpkg has anything of it (installed, half-installed, or removed with its conffiles
        kept, such as a 50-osep.config a killed test had edited), and every file in config.d that no
        Debian package owns removed (this script writes its own again)."""
        status = self.condor(["dpkg-query", "-W", "-f", "${Status}", "osep"], check=False)
        if left_behind(status):
            self.condor(["dpkg", "--purge", "osep"], check=False)
        folder = self.root / "etc/condor/config.d"
        for entry in folder.iterdir():
            owned = self.condor(["dpkg-query", "-S", f"/etc/condor/config.d/{entry.name}"], check=False)
            if not owned.strip():
                entry.unlink()

    def _count(self, args: list[str]) -> int:
        out = self.condor(["condor_status", *args, "-af", "Name"], check=False)
        return len([line for line in out.splitlines() if line.strip()])

    def _make_token(self) -> None:
        domain = self.condor(["condor_config_val", "UID_DOMAIN"]).strip()
        token = self.condor(["condor_token_create", "-identity", f"condor@{domain}"])
        self.token_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.token_dir, 0o700)
        path = self.token_dir / "osep"
        path.write_text(token)
        os.chmod(path, 0o600)

    def uid_domain(self) -> str:
        return self.condor(["condor_config_val", "UID_DOMAIN"]).strip()

    def condor(self, argv: list[str], user: str | None = None, stdin: str | None = None,
               check: bool = True) -> str:
        """Run an HTCondor tool inside the chroot (as ``user`` if given) and return its output."""
        cmd = ["chroot", str(self.root)]
        if user is not None:
            cmd += ["runuser", "-u", user, "--"]
        cmd += argv
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        if check and done.returncode != 0:
            raise PoolError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def schedd_names(self) -> list[str]:
        """The schedds the collector knows, by name (``vm``, ``schedd2@vm``...)."""
        out = self.condor(["condor_status", "-schedd", "-af", "Name"])
        return sorted(line.strip() for line in out.splitlines() if line.strip())

    def submit(self, user: str, count: int, seconds: int = 3600, cpus: int = 1,
               extra: str = "", stock: bool = False, schedd: str | None = None,
               log: str = "jobs.log") -> int:
        """Queue ``count`` sleep jobs as ``user``; returns the cluster id. ``stock``: a submit file
        as users write it, with no ``request_*`` lines (condor_submit then writes RequestMemory and
        RequestDisk as expressions). ``schedd``: the schedd to queue them in (default: the first);
        ``log``: the job event log, in the user's home directory."""
        requests = {} if stock else {"cpus": cpus, "memory": 32, "disk": 1024}
        description = submit_description(user, count, seconds, requests, log=log, extra=extra)
        return int(self.submit_file(user, description, schedd).split(".")[0])

    def submit_file(self, user: str, description: str, schedd: str | None = None) -> str:
        """Queue the jobs of a submit description as ``user``, from the user's home directory in the
        pool's root (where a relative path in it points); what ``condor_submit -terse`` says (the
        first and last job ids, as ``12.0 - 12.4``)."""
        if user not in USERS:
            raise PoolError(f"no user {user!r} in the test pool (one of {', '.join(USERS)})")
        where = ["-name", schedd] if schedd else []
        return self.condor(["env", "-C", f"/home/{user}", "condor_submit", "-terse", *where, "-"],
                           user=user, stdin=description).strip()

    def env(self) -> dict[str, str]:
        """Environment for the PyPI bindings (and osep) outside the chroot."""
        return {
            "_CONDOR_SEC_TOKEN_DIRECTORY": str(self.token_dir),
            "_CONDOR_SEC_TOKEN_SYSTEM_DIRECTORY": str(self.token_dir),
            "_CONDOR_CONDOR_HOST": ADDRESS,
            "_CONDOR_COLLECTOR_HOST": ADDRESS,
        }

    def stop(self, timeout: float = 30.0, log=sys.stderr) -> None:
        """End our condor_master and everything left in the chroot, then unmount."""
        pid = self.master_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGQUIT)  # fast shutdown of the master and its daemons
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.5)
        for stray in pids_in(self.root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(stray, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pids_in(self.root) and time.monotonic() < deadline:
            time.sleep(0.2)
        _unmount_under(self.root)
        self.pidfile.unlink(missing_ok=True)
        if pid is not None:
            print("testpool: stopped", file=log)


# -- jobs ----------------------------------------------------------------------------------------

RESOURCE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # what request_NAME may name

def submit_description(user: str, count: int = 1, seconds: int = 3600,
                       requests: dict[str, int] | None = None, group: str | None = None,
                       log: str = "jobs.log", extra: str = "") -> str:
    """A submit description as a user writes one: ``count`` jobs of ``user`` that sleep ``seconds``,
    each asking for ``requests`` (``request_cpus``, ``request_memory`` in MiB, ``request_disk`` in
    KiB, ``request_gpus`` or a custom resource's ``request_NAME``, in that order; none given:
    condor_submit's defaults), charged to the accounting ``group`` if given (as ``group.user``),
    its events in ``log`` in the user's home directory; ``extra`` lines go before ``queue``."""
    if count < 1 or seconds < 0:
        raise PoolError(f"a count of at least 1 and a duration of 0 s or more, not {count} and {seconds}")
    lines = ["executable = /bin/sleep", f"arguments = {seconds}"]
    for name, amount in (requests or {}).items():
        if not RESOURCE_NAME.fullmatch(name) or amount < 0:
            raise PoolError(f"not a request: {name} = {amount} (a resource's name, and a count of 0 or more)")
        lines.append(f"request_{name} = {amount}")
    if group is not None:
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.]*", group):
            raise PoolError(f"not an accounting group: {group!r} (letters, digits, _ and . only)")
        lines += [f"accounting_group = {group}", f"accounting_group_user = {user}"]
    lines.append(f"log = /home/{user}/{log}")
    return "\n".join(lines) + "\n" + extra + f"queue {count}\n"


# -- namespaces ----------------------------------------------------------------------------------

def hosts_file() -> str:
    """An /etc/hosts naming this host at 127.0.0.1: inside a network namespace there is no name
    service to ask, and a lookup of the host name that is not answered from this file stalls."""
    name = socket.gethostname()
    # A line of its own, so that the name is the canonical one (as HTCondor names its daemons).
    return (f"127.0.0.1\tlocalhost\n127.0.0.1\t{name}\n"
            "::1\t\tlocalhost ip6-localhost ip6-loopback\n")


def isolated() -> bool:
    """Whether this process is in a network namespace with nothing but a loopback interface (as
    ``isolate`` makes), where 127.0.0.1:9618 is a pool's own."""
    try:
        with open("/proc/self/net/dev") as handle:
            names = [line.split(":")[0].strip() for line in handle.readlines()[2:]]
    except OSError:
        return False
    return names == ["lo"]


def _loopback_up() -> None:
    """``ip link set lo up``, without needing iproute2."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def _parent_dies_kill() -> None:
    """In the ``unshare`` child: SIGKILL it if the process that started it dies (prctl
    PR_SET_PDEATHSIG), so that no namespace outlives ``isolate`` killed with SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def isolate(argv: list[str], directory: Path = DEFAULT_DIR) -> int:
    """Run ``argv`` in new network, mount and PID namespaces and return its exit status.

    Inside, a process of this script is PID 1 (``_init``): it brings the loopback interface up,
    mounts an /etc/hosts naming this host over the real one (in its own mount namespace: nothing
    outside sees it), runs ``argv``, reaps whatever is orphaned, and when ``argv`` has ended stops
    the pools still running there; as it exits, the kernel ends every process left in its PID
    namespace, and the namespaces and their mounts go with them. SIGTERM or SIGHUP to this process
    is passed on to ``argv`` (through PID 1); SIGKILL ends ``unshare``, whose child PID 1 then gets
    SIGTERM (``--kill-child``) and does the same."""
    if os.geteuid() != 0:
        raise PoolError("isolate needs root (unshare)")
    if not argv:
        raise PoolError("isolate: no command given")
    command = ["unshare", "--net", "--mount", "--propagation", "private", "--pid", "--fork",
               "--mount-proc", "--kill-child=SIGTERM", "--",
               sys.executable, str(Path(__file__).resolve()), "--dir", str(directory), "_init", "--",
               *argv]
    proc = subprocess.Popen(command, preexec_fn=_parent_dies_kill)  # noqa: PLW1509 - prctl only

    def forward(signum, frame):
        init = _child_of(proc.pid)
        if init is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(init, signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    # Ctrl-C reaches every process of the terminal's foreground group, COMMAND included: nothing
    # to pass on (unshare blocks it while it waits).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return proc.wait()


def _child_of(parent: int) -> int | None:
    """The one child of ``parent`` (unshare's: PID 1 of the namespace, as this one numbers it)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                return int(entry.name)
    return None


def _init(argv: list[str], directory: Path) -> int:
    """PID 1 of ``isolate``'s namespaces (see there)."""
    _loopback_up()
    with tempfile.NamedTemporaryFile("w", prefix="osep-hosts-", delete=False) as hosts:
        hosts.write(hosts_file())
    os.chmod(hosts.name, 0o644)
    try:
        subprocess.run(["mount", "--bind", hosts.name, os.path.realpath("/etc/hosts")], check=True)
    finally:
        os.unlink(hosts.name)  # the mount keeps the file for as long as the namespace lasts
    child = subprocess.Popen(argv)

    def forward(signum, frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C reaches argv itself
    status = 1
    while True:  # PID 1 reaps every orphan, argv's leftovers included
        try:
            pid, raw = os.wait()
        except ChildProcessError:
            break
        if pid == child.pid:
            status = os.waitstatus_to_exitcode(raw)
            child.returncode = status
            break
    for suite in SUITES:  # what argv left running, stopped as stop does
        pool = TestPool(directory, suite)
        if pool.master_pid() is not None:
            with contextlib.suppress(PoolError, OSError):
                pool.stop()
    return status if status >= 0 else 128 - status


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids_in(root: Path) -> list[int]:
    """Processes whose root directory is ``root``: only ever ones our master started."""
    if not root.exists():
        return []
    target = str(root.resolve())
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "root") == target:
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def _mount(args: list[str]) -> None:
    subprocess.run(["mount", *args], check=True)


def _unmount_under(root: Path) -> None:
    if not root.exists():
        return
    for point in sorted(_mounts_under(root), reverse=True):
        if subprocess.run(["umount", point], check=False).returncode != 0:
            subprocess.run(["umount", "-l", point], check=False)


def _mounts_under(root: Path) -> list[str]:
    target = str(root.resolve())
    with open("/proc/self/mounts") as handle:
        return [line.split()[1] for line in handle if line.split()[1].startswith(target + "/")]


def _remove_tree(root: Path) -> None:
    """Delete a chroot, never following a mount into the host (refuses while one remains)."""
    if not root.exists():
        return
    _unmount_under(root)
    left = _mounts_under(root)
    if left:
        raise PoolError(f"not deleting {root}: still mounted under it: {', '.join(left)}")
    shutil.rmtree(root)


def _run(argv: list[str], log, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise PoolError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}"
                        f"{done.stderr[-2000:]}")


def _request(text: str) -> tuple[str, int]:
    """``NAME=COUNT`` of ``--request``."""
    name, sep, amount = text.partition("=")
    if not sep or not amount.strip().isdigit() or not RESOURCE_NAME.fullmatch(name.strip()):
        raise argparse.ArgumentTypeError(f"expected NAME=COUNT (as gpus=1), not {text!r}")
    return name.strip(), int(amount)


SUBMIT_HELP = """\
Queue jobs in the running test pool as one of its users (alice, bob, carol), as that user would with
condor_submit: either jobs that sleep, described by the options, or a submit FILE of your own, as it
is. Paths in a FILE are inside the pool's root, where /bin/sleep and the users' homes
(/home/alice...) are; a relative path is from the user's home. The job ids are printed (12.0 - 12.4).
Run it where the pool runs: as root, in the shell or the command that 'scripts/testpool.py isolate'
started the pool in."""

SUBMIT_EXAMPLES = """\
examples:
  scripts/testpool.py submit --owner alice --count 20 --duration 3600
  scripts/testpool.py submit --owner alice --group group_physics --cpus 2 --memory 1024 --count 5 --duration 600
  scripts/testpool.py submit --owner bob --request gpus=1 --show
  scripts/testpool.py submit --owner carol my-jobs.sub"""


TRY = """\
a pool to try osep on, by hand (each subcommand has its own --help):
  sudo scripts/testpool.py build                  # once, with the network
  sudo scripts/testpool.py isolate -- bash        # a shell in namespaces of its own; in it:
  scripts/testpool.py start
  eval "$(scripts/testpool.py env)"               # HTCondor's tools and osep find the pool
  scripts/testpool.py submit --owner alice --count 20
  scripts/testpool.py stop                        # or leave the shell: the pool stops with it"""


def _at_least(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""
    def whole(text: str) -> int:
        if not text.strip().isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, not {text!r}")
        return int(text)
    return whole


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="A personal HTCondor pool (Debian trixie's or forky's HTCondor, in a chroot) for "
                    "osep's live tests, and for trying osep: build it once, then start it in "
                    "namespaces of its own and submit jobs to it.",
        epilog=TRY, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help="where the pools are built and run (default: OSEP_TESTPOOL_DIR, else "
                             "/var/cache/osep-testpool)")
    parser.add_argument("--suite", choices=SUITES, default=DEFAULT_SUITE,
                        help="the Debian suite the pool is built from: trixie (HTCondor 23.9) or forky "
                             "(25.x) (default: OSEP_TESTPOOL_SUITE, else trixie)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str | None = None,
                **options: object) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=description or summary, **options)

    command("build", "build the suite's root with debootstrap, once (needs root and the network: run "
                     "it outside isolate); a root built by this recipe is kept")
    isolate_ = command("isolate", "run COMMAND in network, mount and PID namespaces of its own, where "
                                  "start works and the pool has 127.0.0.1:9618 to itself; what COMMAND "
                                  "leaves running ends with it")
    isolate_.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                          help="the command and its arguments (a shell, to work in the pool by hand)")
    init = sub.add_parser("_init")  # PID 1 inside isolate's namespaces
    init.add_argument("argv", nargs=argparse.REMAINDER)
    start = command("start", "start a fresh pool (no jobs, no usage history): a central manager, a "
                             "schedd and a startd on 127.0.0.1:9618, inside isolate's namespaces")
    start.add_argument("--layout", choices=("static", "partitionable"), default="static",
                       help="one slot per core (static), or one partitionable slot of them all "
                            "(default: static)")
    start.add_argument("--cpus", type=int, default=20, help="the cores the pool has (default: 20)")
    start.add_argument("--schedds", type=int, default=1, help="how many schedds (schedd2, ...)")
    start.add_argument("--bind", type=Path, action="append", default=[], metavar="DIR",
                       help="mount this host directory read-only at the same path inside the chroot")
    command("stop", "stop the pool: its condor_master, every process left in its root, and what start "
                    "mounted")
    command("env", "print the shell lines (export ...) that point HTCondor's tools and Python bindings "
                   "outside the root, and osep, at the pool",
            "Print the shell lines that point HTCondor's tools and Python bindings outside the root, "
            "and osep, at the running pool: its collector at 127.0.0.1:9618 and a token of the pool's "
            "administrator (condor@ the pool's UID_DOMAIN). Use them with: "
            "eval \"$(scripts/testpool.py env)\".")
    command("status", "say whether the suite's root is built and its pool running")
    command("version", "print the suite's HTCondor version (its root built, the pool need not run)")
    submit = command("submit", "queue jobs as a user of the pool: sleep jobs the options describe, or "
                               "a submit FILE as it is",
                     SUBMIT_HELP, epilog=SUBMIT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    submit.add_argument("file", nargs="?", type=Path, metavar="FILE",
                        help="a submit file, queued as it is (none of the job options go with it)")
    submit.add_argument("--owner", choices=USERS, default="alice",
                        help="the user who submits the jobs, and owns them (default: alice)")
    submit.add_argument("--count", type=_at_least(1), help="how many jobs (default: 1)")
    submit.add_argument("--duration", type=_at_least(0), metavar="SECONDS",
                        help="how long each job runs, in seconds (default: 3600)")
    submit.add_argument("--cpus", type=_at_least(0), help="request_cpus: the cores each job asks for")
    submit.add_argument("--memory", type=_at_least(0), metavar="MIB", help="request_memory, in MiB")
    submit.add_argument("--disk", type=_at_least(0), metavar="KIB", help="request_disk, in KiB")
    submit.add_argument("--gpus", type=_at_least(0), help="request_gpus (the test pool's slots have none: "
                                                 "such jobs stay idle, and count as demand)")
    submit.add_argument("--request", type=_request, action="append", default=[], metavar="NAME=COUNT",
                        help="request_NAME = COUNT, for a custom resource (again for another)")
    submit.add_argument("--group", metavar="GROUP",
                        help="accounting_group (and accounting_group_user = the owner): the jobs are "
                             "charged to GROUP.OWNER, as an owner tree places them")
    submit.add_argument("--schedd", help="queue the jobs in this schedd (default: the first)")
    submit.add_argument("--show", action="store_true",
                        help="print the submit description instead of submitting it")
    return parser


JOB_OPTIONS = ("count", "duration", "cpus", "memory", "disk", "gpus", "group")


def _description(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """The submit description ``submit`` queues: the FILE as it is, or the one the options make."""
    given = [f"--{name}" for name in JOB_OPTIONS if getattr(args, name) is not None]
    given += ["--request"] if args.request else []
    if args.file is not None:
        if given:
            parser.error(f"submit: not with a FILE, which is queued as it is: {', '.join(given)}")
        try:
            return args.file.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise PoolError(f"submit: cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from None
    requests = {name: getattr(args, name) for name in ("cpus", "memory", "disk", "gpus")
                if getattr(args, name) is not None}
    requests.update(args.request)
    return submit_description(args.owner, 1 if args.count is None else args.count,
                              3600 if args.duration is None else args.duration, requests, args.group)


def main() -> int:
    parser = _parser()
    args = parser.parse_args()
    pool = TestPool(args.dir, args.suite)
    try:
        if args.command in ("isolate", "_init"):
            argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if args.command == "_init":
                return _init(argv, args.dir)
            return isolate(argv, args.dir)
        if args.command == "build":
            pool.build()
        elif args.command == "start":
            pool.start(args.layout, args.cpus, binds=tuple(args.bind), schedds=args.schedds)
        elif args.command == "stop":
            pool.stop()
        elif args.command == "env":
            for key, value in pool.env().items():
                print(f"export {key}={value}")
        elif args.command == "status":
            pid = pool.master_pid()
            print(f"built: {pool.built()}; running: {'pid ' + str(pid) if pid else 'no'}")
        elif args.command == "version":
            print(pool.version())
        elif args.command == "submit":
            description = _description(args, parser)
            if args.show:
                print(description, end="")
            else:
                print(pool.submit_file(args.owner, description, args.schedd))
    except PoolError as exc:
        print(f"testpool: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
