"""osep the way a site runs it: the Debian package built from this checkout (scripts/debpackage.py)
and installed inside the test pool's root, started by that pool's condor_master as the account osep
with a token of its own, enforcing, re-reading its policy on condor_reconfig, stopping on
condor_off, then removed and purged with nothing of it left; and the same package run from cron
with no knobs at all.

The package is built once per module in the suite's own root, as Debian builds one per release.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import debpackage
import pytest

import harness
from harness import INTERVAL, Live

POLICY = Path("/etc/osep/policy.toml")
CONFFILE = Path("/etc/condor/config.d/50-osep.config")
LOG = Path("/var/log/osep/osep.log")
STATE = Path("/var/lib/osep/osep.state")
TOKEN = Path("/var/lib/osep/.condor/tokens.d/osep")
# The levels the snippet's comment tells an administrator to give osep's token.
AUTHZ = ("READ", "WRITE", "ADMINISTRATOR", "DAEMON")
# The lines docs/install.md's cron recipe adds: the rights the package's configuration file grants only
# once a policy file is named there.
CRON_RIGHTS = """\
QUEUE_SUPER_USERS = $(QUEUE_SUPER_USERS) osep
NEGOTIATOR.ALLOW_ADMINISTRATOR = $(ALLOW_ADMINISTRATOR) osep@$(UID_DOMAIN)
COLLECTOR.ALLOW_DAEMON = $(ALLOW_DAEMON) osep@$(UID_DOMAIN)
"""
# What cron gives a command: a near-empty environment, /bin/sh, the account's home.
CRON_ENV = ["env", "-i", "HOME=/var/lib/osep", "LOGNAME=osep", "SHELL=/bin/sh", "PATH=/usr/bin:/bin"]


@pytest.fixture(scope="module")
def deb(request, tmp_path_factory) -> Path:
    suite = request.config.getoption("--testpool-suite") or os.environ.get("OSEP_TESTPOOL_SUITE", "trixie")
    try:
        return debpackage.build(harness.TestPool(suite=suite), tmp_path_factory.mktemp("deb"))
    except (harness.TestPoolError, OSError) as exc:
        pytest.fail(f"the Debian package could not be built: {exc}")


@pytest.fixture
def installed(live: Live, deb: Path):
    """The package installed in the pool's root as an administrator would (``dpkg -i``; its
    dependencies are there already); yields osep's uid, and purges the package at the end whatever
    the test left, since the root outlives the pool."""
    (live.pool.root / "tmp" / deb.name).write_bytes(deb.read_bytes())
    try:
        live.pool.condor(["dpkg", "-i", f"/tmp/{deb.name}"])
        yield int(live.pool.condor(["id", "-u", "osep"]))
    finally:
        live.pool.condor(["dpkg", "--purge", "osep"], check=False)
        (live.pool.root / "tmp" / deb.name).unlink(missing_ok=True)


def give_token(live: Live, uid: int) -> None:
    """osep@UID_DOMAIN's token with only the levels osep uses, in the osep account's own directory,
    and its user record at the schedd, as README.Debian tells an administrator."""
    live.user_record(f"osep@{live.pool.uid_domain()}")
    args = ["condor_token_create", "-identity", f"osep@{live.pool.uid_domain()}"]
    for level in AUTHZ:
        args += ["-authz", level]
    token = live.pool.root / TOKEN.relative_to("/")
    token.write_text(live.pool.condor(args))
    token.chmod(0o600)
    os.chown(token, uid, uid)


def write_policy(live: Live, shares: dict[str, int]) -> None:
    path = live.pool.root / POLICY.relative_to("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[owners]\n" + "".join(f"{o} = {s}\n" for o, s in shares.items()))


def osep_processes(pool: harness.TestPool, uid: int) -> list[int]:
    """Processes in the pool's root running osep as ``uid``."""
    found = []
    for pid in harness.pids_in(pool.root):
        try:
            proc = Path(f"/proc/{pid}")
            if proc.stat().st_uid == uid and b"osep" in (proc / "cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def events(live: Live, name: str) -> list[dict]:
    return live.events(name, log=live.pool.root / LOG.relative_to("/"))


def osep_ad(live: Live) -> str:
    return live.osep_ad("OSEPState", "OSEPVacatesTotal")


def test_the_package_runs_under_condor_master_as_its_own_account(live: Live, installed: int):
    uid = installed
    root = live.pool.root
    assert (root / CONFFILE.relative_to("/")).exists()
    # Installed, nothing named: the master starts nothing and no knob is set.
    assert "OSEP" not in live.pool.condor(["condor_config_val", "DAEMON_LIST"]).split()
    assert live.pool.condor(["condor_config_val", "OSEP_DRY_RUN"], check=False).strip() == ""
    assert osep_processes(live.pool, uid) == []

    give_token(live, uid)
    write_policy(live, {"alice": 10, "bob": 10})
    conffile = root / CONFFILE.relative_to("/")
    text = conffile.read_text()
    for old, new in ((r"^# OSEP_POLICY_FILE = .*$", f"OSEP_POLICY_FILE = {POLICY}"),
                     (r"^    OSEP_DRY_RUN = .*$", "    OSEP_DRY_RUN = false"),
                     (r"^    OSEP_INTERVAL = .*$", f"    OSEP_INTERVAL = {INTERVAL}"),
                     (r"^    OSEP_MIN_RUN_TIME = .*$", "    OSEP_MIN_RUN_TIME = 0")):
        text, count = re.subn(old, new, text, flags=re.M)
        assert count == 1, f"{old} is not in the installed configuration file"
    conffile.write_text(text)
    live.pool.condor(["condor_reconfig"])
    live.wait_until(lambda: events(live, "cycle"), 60, f"the master to start osep (log {LOG})")
    assert osep_processes(live.pool, uid), "osep does not run as the account osep"

    live.fill("alice")
    live.submit("bob", 10)
    live.wait_until(lambda: live.running("bob") == 10, 120, "bob to run his 10 jobs")
    live.wait_until(lambda: osep_ad(live).startswith("ok"), 30, f"the OSEP ad (now {osep_ad(live)!r})")

    # A new policy, read on condor_reconfig: alice's share grows, bob gives five back.
    write_policy(live, {"alice": 15, "bob": 5})
    live.pool.condor(["condor_reconfig"])
    live.wait_until(lambda: events(live, "reloaded"), 30, "osep to reload on condor_reconfig")
    live.wait_until(lambda: live.running("bob") == 5 and live.running("alice") == 15, 120,
                    "bob down to 5 and alice up to 15 under the new policy")

    live.pool.condor(["condor_off", "-daemon", "OSEP"])
    live.wait_until(lambda: events(live, "stopped"), 60, "osep to stop on condor_off")
    live.wait_until(lambda: not osep_processes(live.pool, uid), 30, "osep's process to end")
    assert all(value < 0 for value in live.ceilings().values()), live.ceilings()
    live.wait_until(lambda: osep_ad(live) == "", 30, "the OSEP ad to be withdrawn")

    # Started again, then removed while it runs: the package stops it first, so its ceilings go.
    live.pool.condor(["condor_on", "-daemon", "OSEP"])
    live.wait_until(lambda: osep_processes(live.pool, uid), 60, "osep to start again on condor_on")
    live.pool.condor(["dpkg", "--remove", "osep"])
    assert not osep_processes(live.pool, uid)
    assert all(value < 0 for value in live.ceilings().values()), live.ceilings()
    assert "OSEP" not in live.pool.condor(["condor_config_val", "DAEMON_LIST"]).split()
    time.sleep(2 * INTERVAL)  # the master must not start it again: its command is gone
    assert not osep_processes(live.pool, uid)
    assert conffile.exists()  # a removed package keeps its configuration files until purged
    live.pool.condor(["dpkg", "--purge", "osep"])
    assert not conffile.exists() and not (root / "var/lib/osep").exists()
    assert not (root / "usr/bin/osep").exists()


def test_the_package_runs_from_cron_with_no_knobs(live: Live, installed: int):
    uid = installed
    give_token(live, uid)
    # A cron-only site names no policy in the package's configuration file, so it grants osep's
    # identity its rights itself, with docs/install.md's lines.
    rights = live.pool.root / "etc/condor/config.d/51-osep-cron.config"
    rights.write_text(CRON_RIGHTS)
    try:
        live.pool.condor(["condor_reconfig"])
        time.sleep(3)  # the daemons re-read their configuration
        run_from_cron(live, uid)
    finally:
        rights.unlink()  # the root outlives the pool: the next test's pool must not grant these


def run_from_cron(live: Live, uid: int) -> None:
    write_policy(live, {"alice": 10, "bob": 10})
    line = f"osep run --once --policy-file {POLICY} --state-file {STATE}"
    cron = ["runuser", "-u", "osep", "--", *CRON_ENV, "/bin/sh", "-c", line]

    live.fill("alice")
    live.submit("bob", 10)
    for _ in range(6):  # cron's runs, closer together than a site's
        live.pool.condor(cron)
        if live.running("bob") == 10:
            break
        time.sleep(INTERVAL)
    live.wait_until(lambda: live.running("bob") == 10, 60, "bob to run his 10 jobs between cron runs")
    assert not osep_processes(live.pool, uid)
    # Taking the crontab line out: the ceilings the last run kept are lifted by hand.
    live.pool.condor(["runuser", "-u", "osep", "--", *CRON_ENV, "/bin/sh", "-c",
                      f"osep release --state-file {STATE}"])
    assert all(value < 0 for value in live.ceilings().values()), live.ceilings()
