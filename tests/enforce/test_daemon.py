"""The daemon loop with a fake pool and a fake wait: no HTCondor, no sleeping."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from builders import jid, snap
from osep.config.knobs import DaemonSettings, Overrides, load_run_settings, parse_knobs, run_settings
from osep.config.policy import PolicyFile
from osep.core.policy import PolicySettings
from osep.core.pool import Look
from osep.core.shares import ShareTable
from osep.enforce.daemon import Daemon
from osep.errors import ConfigError, PoolError


class FakeLive:
    def __init__(self) -> None:
        self.current = snap(now=1000.0, running={"a": [0, 1, 2, 3]}, idle={"b": 2})
        self.calls: list[tuple] = []
        self.fail_snapshots = 0
        self.recent: dict = {}
        self.state_problem: str | None = None
        self.ads: list = []  # other osep's ads in the collector
        self.release_failures = 0  # releases that fail before one goes through
        self.left: dict = {"negotiator@cm": {"alice@cm": 10}}  # ceilings in force until a release
        self.lapses = None

    def keep_state(self):
        self.calls.append(("keep_state",))
        return self.state_problem

    def snapshot(self):
        if self.fail_snapshots:
            self.fail_snapshots -= 1
            raise PoolError("schedd down")
        return self.current

    def look(self, job_ids):
        wanted = set(job_ids)
        return Look({j.id: j for j in self.current.jobs if j.id in wanted})

    def vacate(self, job_id):
        self.calls.append(("vacate", job_id))

    def reserve(self, slot, owner, shape):
        self.calls.append(("reserve", slot, owner))

    def hold(self, owners, leaving=()):
        self.calls.append(("hold", tuple(owners)))

    def release(self, quick=False):
        self.calls.append(("release", "quick") if quick else ("release",))
        if self.release_failures:
            self.release_failures -= 1
            raise PoolError("locating the negotiator: Unable to locate local daemon.")
        self.left = {}

    def ceilings_left(self):
        return self.left

    def lapse(self):
        return self.lapses

    def publish(self, attrs):
        self.calls.append(("publish", attrs["OSEPState"], attrs.get("OSEPLastVacates")))
        self.published = attrs

    def withdraw(self):
        self.calls.append(("withdraw",))

    def others(self):
        return list(self.ads)

    def reconfigure(self, settings):
        self.calls.append(("reconfigure", settings))


POLICY = PolicyFile(PolicySettings(ShareTable({"a": 2, "b": 2})), interval=60)


def make(daemon_settings=DaemonSettings(), policy=POLICY, waits=None):
    pool = FakeLive()
    state = {"loaded": run_settings(daemon_settings, policy)}
    waited: list[float] = []

    def wait(seconds):
        waited.append(seconds)
        if waits:
            waits.pop(0)(daemon)

    daemon = Daemon(lambda: state["loaded"], pool, wait=wait, clock=lambda: 0.0)
    return daemon, pool, state, waited


def test_once_runs_one_cycle_and_cleans_up():
    daemon, pool, _, waited = make()
    assert daemon.run(once=True) == 0
    kinds = [c[0] for c in pool.calls]
    assert kinds.count("vacate") == 2 and waited == []
    assert kinds[-2:] == ["release", "withdraw"]
    assert ("publish", "ok", 2) in pool.calls


def test_once_keeps_its_holds_for_the_next_run_when_it_has_a_state_file(tmp_path):
    daemon, pool, _, _ = make(DaemonSettings(state_file=tmp_path / "state"))
    assert daemon.run(once=True) == 0
    assert ("hold", ("a",)) in pool.calls and ("release",) not in pool.calls
    daemon, pool, _, _ = make(DaemonSettings(state_file=tmp_path / "state"))
    daemon._on_term(signal.SIGTERM, None)
    assert daemon.run() == 0 and ("release",) in pool.calls  # a daemon that stops lifts them


def test_once_exit_status_says_the_cycle_failed():
    daemon, pool, _, _ = make()
    pool.fail_snapshots = 1
    assert daemon.run(once=True) == 1
    assert ("publish", "failing", None) in pool.calls


def test_dry_run_touches_nothing_but_what_osep_set_earlier():
    """Dry run sends no vacate, keeps no room, sets no hold and publishes no ad; all it does in the
    pool is lift every ceiling osep set (an empty hold, and the release at the end)."""
    daemon, pool, _, _ = make(DaemonSettings(dry_run=True))
    assert daemon.run(once=True) == 0
    assert [c for c in pool.calls if c[0] not in ("reconfigure",)] == [("hold", ()), ("release",)]


def test_sighup_into_dry_run_lifts_the_holds_and_withdraws_the_ad():
    def to_dry_run(daemon):
        state["loaded"] = run_settings(DaemonSettings(dry_run=True), POLICY)
        hup(daemon)

    daemon, pool, state, _ = make(waits=[to_dry_run, term])
    assert daemon.run() == 0
    second = pool.calls[pool.calls.index(("reconfigure", state["loaded"].live)):]
    assert [c[0] for c in second] == ["reconfigure", "hold", "withdraw", "release"]
    assert second[1] == ("hold", ())  # the holds of the real cycle are lifted, not frozen
    assert ("hold", ("a",)) in pool.calls[:pool.calls.index(second[0])]


def test_a_state_file_that_cannot_be_written_makes_the_cycle_stand_aside(verbose_logs):
    """No vacate (its hold could not be set), no ceiling, osep's own lifted; one line per cycle."""
    daemon, pool, _, _ = make(DaemonSettings(state_file=Path("/x/state")), waits=[lambda d: None, term])
    pool.state_problem = "/x/state: cannot be written: No space left on device"
    with capture_logs() as logs:
        assert daemon.run() == 0
    assert not [c for c in pool.calls if c[0] in ("vacate", "reserve")]
    assert [c for c in pool.calls if c[0] == "hold"] == [("hold", ())] * 2
    lines = [e for e in logs if e["event"] == "state_unwritable"]
    assert len(lines) == 2 and "No space left" in lines[0]["problem"]
    assert {e["outcome"] for e in logs if e["event"] == "action"} == {"dry-run"}
    # With --once, the exit status says the cycle could not act.
    daemon, pool, _, _ = make(DaemonSettings(state_file=Path("/x/state")))
    pool.state_problem = "/x/state: cannot be written: Permission denied"
    assert daemon.run(once=True) == 1
    pool.state_problem = None
    daemon, pool, _, _ = make(DaemonSettings(state_file=Path("/x/state")))
    assert daemon.run(once=True) == 0 and ("vacate", jid("a.3")) in pool.calls


def test_a_reload_cannot_move_the_state_file(verbose_logs, tmp_path):
    daemon, _pool, state, _ = make(DaemonSettings(state_file=tmp_path / "one"), waits=[hup, term])
    state["loaded"] = run_settings(DaemonSettings(state_file=tmp_path / "two"), POLICY)
    with capture_logs() as logs:
        assert daemon.run() == 0
    assert daemon.loaded.daemon.state_file == tmp_path / "one"
    assert [e["problem"] for e in logs if e["event"] == "reload_rejected"] == [
        "OSEP_STATE_FILE cannot change while osep runs; restart it"]


def test_a_failed_cycle_is_survived_and_sigterm_finishes_cleanly():
    daemon, pool, _, waited = make(waits=[lambda d: None, term])
    pool.fail_snapshots = 1
    assert daemon.run() == 0
    assert daemon.enforcer.cycles == 2 and daemon.last_ok is True
    assert waited == [60, 60]  # the interval, less the (fake) time the cycle took
    assert pool.calls[-2:] == [("release",), ("withdraw",)]


def test_a_fault_of_osep_s_own_fails_one_cycle_not_the_daemon(verbose_logs):
    daemon, pool, _, _ = make(waits=[lambda d: None, term])
    broken = iter([ZeroDivisionError("division by zero")])

    def snapshot():
        for exc in broken:
            raise exc
        return pool.current

    pool.snapshot = snapshot
    with capture_logs() as logs:
        assert daemon.run() == 0
    failed = [e for e in logs if e["event"] == "cycle_failed"]
    assert [e["problem"] for e in failed] == ["internal error: ZeroDivisionError: division by zero"]
    assert any(e["event"] == "internal_error" and e.get("exc_info") for e in logs)
    assert daemon.enforcer.cycles == 2 and daemon.last_ok is True  # the next cycle went through
    assert pool.calls[-2:] == [("release",), ("withdraw",)]


class Ticking:
    """A clock that moves ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_each_cycle_says_where_its_time_went(verbose_logs):
    """The cycle event has the seconds of each phase (the lease's query, the state file, the
    snapshot, the decision, acting), which add up to the cycle's with what is left over; the ad
    publishes them."""
    pool = FakeLive()
    loaded = run_settings(DaemonSettings(), POLICY)
    daemon = Daemon(lambda: loaded, pool, wait=lambda s: None, clock=Ticking(1.0), cpu=Ticking(0.25))
    with capture_logs() as logs:
        assert daemon.run(once=True) == 0
    cycle = next(e for e in logs if e["event"] == "cycle")
    seconds, cpu = cycle["seconds"], cycle["cpu_seconds"]
    assert set(seconds) == {"query", "state", "snapshot", "decide", "act", "other", "cycle"}
    assert all(v > 0 for k, v in seconds.items() if k != "other")
    assert sum(v for k, v in seconds.items() if k != "cycle") == pytest.approx(seconds["cycle"])
    assert sum(v for k, v in cpu.items() if k != "cycle") == pytest.approx(cpu["cycle"])
    assert seconds["snapshot"] == 1.0 and cpu["snapshot"] == 0.25  # one tick of each clock
    assert cycle["query_seconds"] == {"collector": seconds["query"]}  # the lease: the OSEP ads
    published = pool.published
    assert published["OSEPLastCycleSeconds"] == seconds["cycle"]
    assert published["OSEPLastDecideSeconds"] == seconds["decide"]
    assert "OSEPLastTranslateSeconds" not in published  # this pool does not split its snapshot


def hup(daemon):
    daemon._on_hup(signal.SIGHUP, None)


def term(daemon):
    daemon._on_term(signal.SIGTERM, None)


def test_sighup_with_a_bad_policy_keeps_the_old_one():
    daemon, _pool, _state, _ = make(waits=[hup, term])
    good = daemon.loaded

    def broken():
        raise ConfigError("policy.toml", "owners.a", "a share cannot be negative, got -1")

    daemon._load = broken
    assert daemon.run() == 0
    assert daemon.loaded is good and daemon.enforcer.cycles == 2


def test_sighup_applies_a_good_policy():
    daemon, pool, state, _ = make(waits=[hup, term])
    state["loaded"] = run_settings(DaemonSettings(max_vacates=1, vacate_fast=True), POLICY)
    assert daemon.run() == 0
    seen = [c[1] for c in pool.calls if c[0] == "reconfigure"]
    assert [s.vacate_fast for s in seen] == [True]  # the pool's settings are refreshed too
    assert daemon.enforcer.settings.max_vacates == 1
    assert daemon.enforcer.actuator.limits.max_vacates_per_cycle == 1


def test_sigquit_leaves_at_once_but_still_tries_to_release():
    daemon, pool, _, _ = make(waits=[lambda d: d._on_quit(signal.SIGQUIT, None)])
    assert daemon.run() == 0
    assert daemon.enforcer.cycles == 1
    assert ("release", "quick") in pool.calls  # one unretried attempt


def test_loading_needs_a_policy_file(tmp_path):
    with pytest.raises(ConfigError, match="OSEP_POLICY_FILE"):
        load_run_settings({}, Overrides())
    policy = tmp_path / "p.toml"
    policy.write_text("[policy]\ninterval = 45\n[owners]\na = 2\nb = 2\n")
    loaded = load_run_settings({"OSEP_POLICY_FILE": str(policy), "OSEP_INTERVAL": "30"},
                               Overrides(interval=10.0))
    assert loaded.daemon.policy_file == policy
    assert loaded.interval == 10.0  # the command line wins over the knob
    assert load_run_settings({"OSEP_POLICY_FILE": str(policy)}, Overrides()).interval == 45.0


@pytest.mark.parametrize("knob, option, seconds", [
    (None, None, 900.0),  # the policy file's
    ("0", None, 0.0),  # the knob's, even 0
    ("120", None, 120.0),
    ("120", 30.0, 30.0),  # the command line wins over the knob
    (None, 0.0, 0.0),
])
def test_min_run_time_knob_and_option_over_the_policy_file(tmp_path, knob, option, seconds):
    policy = tmp_path / "p.toml"
    policy.write_text("[policy]\nmin_run_time = 900\n[owners]\na = 2\nb = 2\n")
    knobs = {"OSEP_POLICY_FILE": str(policy), **({"OSEP_MIN_RUN_TIME": knob} if knob is not None else {})}
    loaded = load_run_settings(knobs, Overrides(min_run_time=option))
    assert loaded.limits.min_run_time == seconds


@pytest.mark.parametrize(
    "knobs, field, value",
    [
        ({"OSEP_DRY_RUN": "True"}, "dry_run", True),
        ({"OSEP_DRY_RUN": "no"}, "dry_run", False),
        ({"OSEP_INTERVAL": "120"}, "interval", 120.0),
        ({"OSEP_MAX_VACATES": "0"}, "max_vacates", 0),
        ({"OSEP_MIN_RUN_TIME": "0"}, "min_run_time", 0.0),
        ({}, "min_run_time", None),  # not set: the policy file's
        ({"OSEP_LOG_LEVEL": "DEBUG"}, "log_level", "debug"),
        ({"OSEP_POOL": "cm.example.org:9618"}, "pool", "cm.example.org:9618"),
        ({"SOMETHING_ELSE": "x"}, "pool", None),
    ],
)
def test_knobs(knobs, field, value):
    assert getattr(parse_knobs(knobs), field) == value


@pytest.mark.parametrize(
    "knobs, knob, reason",
    [
        ({"OSEP_DRY_RUN": "maybe"}, "OSEP_DRY_RUN", "true or false"),
        ({"OSEP_INTERVAL": "0"}, "OSEP_INTERVAL", "greater than 0"),
        ({"OSEP_INTERVAL": "5m"}, "OSEP_INTERVAL", "number of seconds"),
        ({"OSEP_MAX_VACATES": "-2"}, "OSEP_MAX_VACATES", "at least 0"),
        ({"OSEP_MAX_VACATES": "2.5"}, "OSEP_MAX_VACATES", "whole number"),
        ({"OSEP_LOG_LEVEL": "loud"}, "OSEP_LOG_LEVEL", "expected one of"),
        ({"OSEP_POLICY_FILE": ""}, "OSEP_POLICY_FILE", "empty"),
    ],
)
def test_bad_knobs(knobs, knob, reason):
    with pytest.raises(ConfigError) as info:
        parse_knobs(knobs)
    assert info.value.key == knob and reason in info.value.reason
    assert str(info.value).startswith("HTCondor configuration: " + knob)


def osep_ad(instance="other:1", started=500.0, heard=990.0, dry_run=False, interval=60.0,
            name="osep@other", state_file=""):
    from osep.htcondor.ads import OsepAd

    return OsepAd(name, instance, started, interval, dry_run, heard, state_file)


@pytest.mark.parametrize("ad, stands_aside", [
    (osep_ad(), True),  # started earlier, heard from 10 s ago: it holds the pool
    (osep_ad(started=2000.0), False),  # started after this one: this one keeps the pool
    (osep_ad(heard=1000.0 - 3 * 60 - 61), False),  # not heard from for 3 intervals and a minute: gone
    (osep_ad(dry_run=True), False),  # a dry run enforces nothing
    (osep_ad(instance="me:1"), False),  # this process's own ad
])
def test_one_osep_per_pool_the_lease_in_the_collector(verbose_logs, ad, stands_aside):
    pool = FakeLive()
    pool.ads = [ad]
    loaded = run_settings(DaemonSettings(), POLICY)
    daemon = Daemon(lambda: loaded, pool, wait=lambda s: None, clock=lambda: 0.0,
                    wall=lambda: 1000.0, instance="me:1")
    with capture_logs() as logs:
        status = daemon.run(once=True)
    vacated = [c for c in pool.calls if c[0] == "vacate"]
    aside = [e for e in logs if e["event"] == "another_osep"]
    if stands_aside:
        assert status == 1 and vacated == [] and len(aside) == 1
        assert "'osep@other' (other:1" in aside[0]["problem"]
        assert not [c for c in pool.calls if c[0] == "publish"]  # its lease is not contested
    else:
        assert status == 0 and vacated and not aside
        assert [c[1] for c in pool.calls if c[0] == "publish"] == ["ok"]


def test_a_policy_excess_is_noted_once_as_simulation_only(verbose_logs):
    from osep.sim.specs import Order

    hybrid = PolicyFile(POLICY.settings, interval=60, excess=Order.SLURM)
    daemon, pool, _, _ = make(policy=hybrid)
    with capture_logs() as logs:
        assert daemon.run(once=True) == 0
    notes = [e for e in logs if e["event"] == "excess_not_live"]
    assert len(notes) == 1 and notes[0]["excess"] == "slurm"
    assert [c[0] for c in pool.calls].count("vacate") == 2  # enforcement itself is unchanged
    daemon, _, _, _ = make()
    with capture_logs() as logs:
        daemon.run(once=True)
    assert not [e for e in logs if e["event"] == "excess_not_live"]


class Clock:
    """A monotonic clock that moves only when the daemon waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waited: list[float] = []

    def wait(self, seconds: float) -> None:
        self.waited.append(seconds)
        self.now += max(0.0, seconds)


def stopping(settings=DaemonSettings(), failures=0, lapses=None):
    pool = FakeLive()
    pool.release_failures, pool.lapses = failures, lapses
    clock = Clock()
    loaded = run_settings(settings, POLICY)
    daemon = Daemon(lambda: loaded, pool, wait=clock.wait, clock=lambda: clock.now)
    daemon._on_term(signal.SIGTERM, None)
    return daemon, pool, clock


def test_a_stop_tries_again_to_lift_the_ceilings_until_it_can(verbose_logs):
    daemon, pool, clock = stopping(failures=3)
    with capture_logs() as logs:
        assert daemon.run() == 0
    assert pool.calls.count(("release",)) == 4 and daemon.left_behind is None
    assert clock.waited == [5.0, 5.0, 5.0]
    assert [e["event"] for e in logs].count("release_failed") == 3
    assert not [e for e in logs if e["event"] == "ceilings_left"]


@pytest.mark.parametrize("timeout, tries", [(60.0, 13), (12.0, 4), (0.0, 1)])
def test_a_stop_that_leaves_a_ceiling_exits_1_and_names_it_and_the_command(verbose_logs, tmp_path,
                                                                          timeout, tries):
    state = tmp_path / "osep.state"
    daemon, pool, clock = stopping(DaemonSettings(state_file=state, release_timeout=timeout, pool="cm:9618"),
                                   failures=10**6)
    with capture_logs() as logs:
        assert daemon.run() == 1
    assert pool.calls.count(("release",)) == tries
    assert sum(clock.waited) <= timeout
    left = [e for e in logs if e["event"] == "ceilings_left"]
    assert len(left) == 1 and left[0]["ceilings"] == {"negotiator@cm": {"alice@cm": 10}}
    assert left[0]["lift"] == f"osep release --state-file {state} --pool cm:9618"
    assert "\n" not in daemon.left_behind
    assert daemon.left_behind == (
        "stopped with ceilings left in force (locating the negotiator: Unable to locate local daemon.): "
        f"alice@cm at 10; they stay until lifted; lift them with: osep release --state-file {state} "
        "--pool cm:9618")


def test_a_stop_that_leaves_leases_says_when_they_lapse(verbose_logs):
    daemon, _, _ = stopping(DaemonSettings(release_timeout=0.0), failures=1, lapses=239.6)
    assert daemon.run() == 1
    assert "they lapse by themselves within 240 s" in daemon.left_behind


def test_sigquit_while_lifting_stops_trying(verbose_logs):
    daemon, pool, _ = stopping(failures=10**6)

    def quit_now(seconds):
        daemon._on_quit(signal.SIGQUIT, None)

    daemon._wait = quit_now
    with capture_logs() as logs:
        assert daemon.run() == 1
    assert pool.calls.count(("release",)) == 1
    assert [e.get("during") for e in logs if e["event"] == "quit"] == ["lifting the ceilings"]


@pytest.mark.parametrize("ad, alive, stands_aside", [
    # a kill -9 and a restart: this osep's own name, host and state file, and the process gone
    ({"instance": "me:7", "name": "osep@me", "state_file": "STATE"}, False, False),
    ({"instance": "me:7", "name": "osep@me", "state_file": "STATE"}, True, True),  # that process is there
    ({"instance": "me:7", "name": "osep@me", "state_file": "/elsewhere"}, False, True),
    ({"instance": "me:7", "name": "osep@me", "state_file": ""}, False, True),  # an ad that does not say
    ({"instance": "other:7", "name": "osep@me", "state_file": "STATE"}, False, True),  # another host
    ({"instance": "me:7", "name": "osep@other", "state_file": "STATE"}, False, True),
    ({"instance": "me:" + "9" * 5000, "name": "osep@me", "state_file": "STATE"}, False, True),
    ({"instance": "me:0", "name": "osep@me", "state_file": "STATE"}, False, True),
])
def test_a_dead_predecessor_s_ad_blocks_nothing(verbose_logs, tmp_path, ad, alive, stands_aside):
    state = tmp_path / "osep.state"
    fields = {**ad, "state_file": str(state) if ad["state_file"] == "STATE" else ad["state_file"]}
    pool = FakeLive()
    pool.ads = [osep_ad(**fields)]
    loaded = run_settings(DaemonSettings(state_file=state, name="osep@me"), POLICY)
    asked: list[int] = []

    def process_alive(pid):
        asked.append(pid)
        return alive

    daemon = Daemon(lambda: loaded, pool, wait=lambda s: None, clock=lambda: 0.0,
                    wall=lambda: 1000.0, instance="me:1", alive=process_alive)
    with capture_logs() as logs:
        status = daemon.run(once=True)
    aside = [e for e in logs if e["event"] == "another_osep"]
    assert (status, bool(aside)) == ((1, True) if stands_aside else (0, False))
    if not stands_aside:
        assert [e["instance"] for e in logs if e["event"] == "predecessor_ad"] == ["me:7"]
        assert pool.published["OSEPStateFile"] == str(state)


def test_a_process_is_alive_until_it_has_died_zombies_included():
    from osep.enforce.daemon import _process_alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert _process_alive(child.pid) and _process_alive(os.getpid())
    finally:
        child.kill()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
    assert not _process_alive(child.pid)
    child.wait()
    assert not _process_alive(child.pid)
