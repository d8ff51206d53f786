"""The Prometheus endpoint served: the daemon's cycles against a fake pool (tests/fakecondor.py, behind
the real live adapter), scraped over HTTP on 127.0.0.1 as Prometheus would and read with
prometheus_client's own parser; its faults; and ``osep run``'s one-line refusals."""

from __future__ import annotations

import signal
import socket
import urllib.error
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from builders import by_owner, cli_runner, scrape, total
from fakecondor import FakeCondor
from osep.config.knobs import Overrides, load_run_settings
from osep.enforce import exporter as exporter_module
from osep.enforce.daemon import Daemon
from osep.enforce.exporter import Exporter
from osep.htcondor.live import LivePool
from osep.ui.cli import cli


@pytest.fixture
def condor(monkeypatch) -> FakeCondor:
    """alice runs on all four slots but two of carol's; bob waits for two."""
    fake = FakeCondor()
    fake.run("alice", 4)
    fake.run("carol", 2)
    fake.idle("bob", 2)
    fake.install(monkeypatch)
    return fake


def write_policy(where: Path, owners: str) -> Path:
    path = where / "policy.toml"
    path.write_text(f"[policy]\ninterval = 60\n[owners]\n{owners}")
    return path


def daemon_on(where: Path, condor: FakeCondor, waits: list, **knobs: str) -> tuple[Daemon, Exporter, list]:
    """A daemon on ``condor`` with an endpoint on a port the system chooses; ``waits`` are called,
    one per wait between cycles, with the daemon. Returns the daemon, the endpoint and the reports
    of its cycles."""
    policy = write_policy(where, "alice = 2\nbob = 2\ncarol = 2\n")

    def load():
        return load_run_settings({"OSEP_POLICY_FILE": str(policy), "OSEP_STATE_FILE": str(where / "state"),
                                  **knobs}, Overrides())

    loaded = load()
    live = LivePool(loaded.live, clock=lambda: condor.now)
    endpoint = Exporter(loaded)
    reports: list = []

    def wait(seconds: float) -> None:
        condor.now += 60
        waits.pop(0)(daemon)

    daemon = Daemon(load, live, initial=loaded, wait=wait, clock=lambda: 0.0, wall=lambda: float(condor.now),
                    exporter=endpoint)
    cycle = daemon.cycle

    def recorded():
        reports.append(cycle())
        return reports[-1]

    daemon.cycle = recorded
    return daemon, endpoint, reports


def test_a_scrape_shows_the_plan_s_figures_counts_vacates_and_drops_owners_who_left(condor, tmp_path):
    seen: list[dict] = []

    def between(daemon):
        """After the first cycle: alice's two jobs leave, bob starts on their slots, carol is done
        and leaves the policy (a SIGHUP)."""
        seen.append(scrape(endpoint.port))
        condor.finish_vacates()
        condor.match("bob")
        condor.leave("carol")
        write_policy(tmp_path, "alice = 2\nbob = 2\n")
        daemon._on_hup(signal.SIGHUP, None)

    def last(daemon):
        seen.append(scrape(endpoint.port))
        daemon._on_term(signal.SIGTERM, None)

    daemon, endpoint, reports = daemon_on(tmp_path, condor, [between, last])
    before = scrape(endpoint.port)
    try:
        assert daemon.run() == 0
    finally:
        endpoint.close()
    assert not any(name.startswith("osep_owner_") for name in before)
    assert total(before, "osep_vacates_total") == 0 and total(before, "osep_cycles_total") == 0
    first, second = seen
    for samples, report in zip(seen, reports, strict=True):
        plan = report.plan
        assert by_owner(samples, "osep_owner_share") == {v.owner: v.share for v in plan.owners}
        assert by_owner(samples, "osep_owner_target") == {v.owner: v.target for v in plan.owners}
        assert by_owner(samples, "osep_owner_running") == {v.owner: v.holding for v in plan.owners}
        assert by_owner(samples, "osep_owner_gap") == {v.owner: v.gap for v in plan.owners}
        assert by_owner(samples, "osep_owner_running_jobs") == {v.owner: v.running for v in plan.owners}
        assert by_owner(samples, "osep_owner_idle_jobs") == {v.owner: v.idle for v in plan.owners}
        assert by_owner(samples, "osep_owner_held") == {v.owner: float(v.owner in report.held) for v in plan.owners}
        assert all(dict(k)["unit"] == "slots" for k in samples["osep_owner_share"])
    # The first cycle: alice over her share by two, vacated twice for bob and held.
    assert by_owner(first, "osep_owner_running_jobs") == {"alice": 4, "bob": 0, "carol": 2}
    assert by_owner(first, "osep_owner_gap") == {"alice": -2, "bob": 2, "carol": 0}
    assert total(first, "osep_vacates_total") == 2 == len(condor.vacates)
    assert by_owner(first, "osep_owner_held")["alice"] == 1
    assert first["osep_last_cycle_ok"] == {(): 1.0} and first["osep_dry_run"] == {(): 0.0}
    assert first["osep_last_cycle_timestamp_seconds"] == {(): 10_000.0}
    assert first["osep_cycle_seconds_count"] == {(): 1.0}
    assert {dict(k)["phase"] for k in first["osep_cycle_phase_seconds_count"]} >= {"query", "translate", "act"}
    # The second: bob at his share, carol gone from every per-owner figure, the counter where it was.
    assert by_owner(second, "osep_owner_running_jobs") == {"alice": 2, "bob": 2}
    for name in second:
        if name.startswith("osep_owner_"):
            assert "carol" not in by_owner(second, name), name
    assert total(second, "osep_vacates_total") == 2
    assert second["osep_cycles_total"][(("result", "ok"),)] == 2
    assert second["osep_info"] == {(("version", exporter_module.__version__),): 1.0}
    # Stopped: the port is let go.
    with pytest.raises(urllib.error.URLError):
        scrape(endpoint.port)


def test_a_dry_run_is_served_too(condor, tmp_path):
    def last(daemon):
        samples = scrape(endpoint.port)
        assert samples["osep_dry_run"] == {(): 1.0}
        assert total(samples, "osep_vacates_total") == 0 and by_owner(samples, "osep_owner_held")["alice"] == 0
        assert by_owner(samples, "osep_owner_running_jobs") == {"alice": 4, "bob": 0, "carol": 2}
        daemon._on_term(signal.SIGTERM, None)

    daemon, endpoint, _ = daemon_on(tmp_path, condor, [last], OSEP_DRY_RUN="true")
    try:
        assert daemon.run() == 0
    finally:
        endpoint.close()
    assert condor.vacates == []


def test_a_fault_of_the_endpoint_is_logged_and_counted_and_enforcement_goes_on(condor, tmp_path, monkeypatch,
                                                                            verbose_logs):
    broken = {"after_cycle": 1, "families": 1}

    def breaking(name):
        real = getattr(exporter_module, name)

        def call(*args, **kwargs):
            if broken[name]:
                broken[name] -= 1
                raise ZeroDivisionError(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(exporter_module, name, call)

    breaking("after_cycle")
    breaking("families")
    scraped: list[dict] = []

    def last(daemon):
        scraped.append(scrape(endpoint.port))  # its figures could not be made: the faults alone
        scraped.append(scrape(endpoint.port))
        daemon._on_term(signal.SIGTERM, None)

    daemon, endpoint, _ = daemon_on(tmp_path, condor, [last])
    with capture_logs() as logs:
        try:
            assert daemon.run() == 0
        finally:
            endpoint.close()
    assert len(condor.vacates) == 2  # the cycle went as it would have
    assert scraped[0] == {"osep_metrics_faults_total": {(): 2.0}}
    # The first cycle's figures were lost; the endpoint still serves, and says how many faults.
    assert scraped[1]["osep_metrics_faults_total"] == {(): 2.0}
    assert total(scraped[1], "osep_cycles_total") == 0 and "osep_owner_share" not in scraped[1]
    faults = [e for e in logs if e["event"] == "metrics_failed"]
    assert [e["during"] for e in faults] == ["taking in a cycle", "making the figures of a scrape"]
    assert all(e["consequence"] == "enforcement goes on" and e["exc_info"] for e in faults)


def test_a_reload_that_moves_the_endpoint_says_it_waits_for_a_restart(condor, tmp_path, verbose_logs):
    def move(daemon):
        daemon._load = lambda: load_run_settings({"OSEP_POLICY_FILE": str(tmp_path / "policy.toml"),
                                                  "OSEP_STATE_FILE": str(tmp_path / "state"),
                                                  "OSEP_METRICS_PORT": "9464"}, Overrides())
        daemon._on_hup(signal.SIGHUP, None)

    def last(daemon):
        assert total(scrape(endpoint.port), "osep_cycles_total") == 3  # still where it was
        daemon._on_term(signal.SIGTERM, None)

    daemon, endpoint, _ = daemon_on(tmp_path, condor, [move, lambda d: None, last])
    with capture_logs() as logs:
        try:
            assert daemon.run() == 0
        finally:
            endpoint.close()
    moved = [e for e in logs if e["event"] == "metrics_not_moved"]
    assert len(moved) == 1 and moved[0]["port"] == 9464  # once, not every cycle
    assert moved[0]["serving"] == f"127.0.0.1 port {endpoint.port}"


# -- osep run ---------------------------------------------------------------------------------------


@pytest.fixture
def taken():
    """A port something else listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


@pytest.mark.usefixtures("signals_restored")
@pytest.mark.parametrize("given", ["option", "knob"])
def test_a_port_in_use_stops_the_start_in_one_line(monkeypatch, tmp_path, taken, given):
    fake = FakeCondor(knobs={"OSEP_METRICS_PORT": str(taken)} if given == "knob" else {})
    fake.run("alice", 4)
    fake.idle("bob", 2)
    fake.install(monkeypatch)
    log = tmp_path / "log"
    option = ["--metrics-port", str(taken)] if given == "option" else []
    result = cli_runner().invoke(cli, ["--log-file", str(log), "run", "--policy-file",
                                       str(write_policy(tmp_path, "alice = 2\nbob = 2\n")),
                                       "--state-file", str(tmp_path / "state"), *option])
    line = f"osep: error: cannot serve metrics on 127.0.0.1, metrics port {taken}: address already in use"
    assert (result.exit_code, result.stderr) == (2, line + "\n")
    assert fake.vacates == [] and fake.advertised == []  # nothing done in the pool
    assert '"not_started"' in log.read_text()  # where an administrator under condor_master looks


@pytest.mark.usefixtures("signals_restored")
def test_once_serves_no_metrics_when_the_knob_asks_for_a_port(monkeypatch, tmp_path, taken):
    """A cron entry that shares the daemon's configuration runs as it would without the knob; the
    port (taken here: a start that tried to serve would stop) is not even tried."""
    fake = FakeCondor(knobs={"OSEP_METRICS_PORT": str(taken)})
    fake.run("alice", 4)
    fake.idle("bob", 2)
    fake.install(monkeypatch)
    log = tmp_path / "log"
    result = cli_runner().invoke(cli, ["--log-file", str(log), "--log-level", "info", "run", "--once",
                                       "--policy-file", str(write_policy(tmp_path, "alice = 2\nbob = 2\n")),
                                       "--state-file", str(tmp_path / "state")])
    assert result.exit_code == 0, result.stderr
    assert len(fake.vacates) == 2
    assert '"event": "metrics_not_served"' in log.read_text()
