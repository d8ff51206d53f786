"""``osep doctor`` and the rights ``osep run`` checks at start, through the real command line against a
fake pool (tests/fakecondor.py): every right granted, each taken away in turn, a daemon down."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import htcondor2
import pytest
from click.testing import Result

from builders import cli_runner
from fakecondor import SCHEDD, FakeCondor
from osep.htcondor.state import StateFile
from osep.ui.cli import cli

pytestmark = pytest.mark.usefixtures("signals_restored")  # osep run installs its handlers here


@pytest.fixture
def condor(fake_pool) -> FakeCondor:
    return fake_pool


def policy(where: Path, owners: str = "alice = 2\nbob = 2\n", unit: str = "slots") -> Path:
    path = where / "policy.toml"
    path.write_text(f'[policy]\ninterval = 60\nunit = "{unit}"\n[owners]\n{owners}')
    return path


def doctor(where: Path, *extra: str) -> tuple[Result, dict[tuple[str, str], dict[str, Any]]]:
    result = cli_runner().invoke(cli, ["doctor", "--format", "json", "--policy-file", str(policy(where)),
                                       "--state-file", str(where / "state"), *extra])
    doc = json.loads(result.stdout)
    assert doc["ok"] == (result.exit_code == 0)
    return result, {(c["check"], c["target"]): c for c in doc["checks"]}


def failed(rows: dict[tuple[str, str], dict[str, Any]]) -> list[tuple[str, str]]:
    return [k for k, row in rows.items() if row["status"] == "fail"]


def test_every_check_passes_on_a_pool_that_grants_every_right(tmp_path, condor):
    result, rows = doctor(tmp_path)
    assert result.exit_code == 0, result.stderr
    assert failed(rows) == []
    assert [k[0] for k in rows if k[1] == f"schedd {SCHEDD}"] == [
        "version", "reachable", "WRITE (ACT_ON_JOBS)", "queue super user"]
    assert rows[("version", "negotiator negotiator@cm")]["detail"] == "HTCondor 23.9.6; ceilings without leases"
    assert rows[("policy owners", str(tmp_path / "policy.toml"))]["status"] == "ok"
    assert rows[("policy unit", str(tmp_path / "policy.toml"))]["detail"] == "unit 'slots': the pool has 4 slots"
    assert rows[("state file", str(tmp_path / "state"))]["status"] == "ok"
    assert condor.ceiling_commands == [] and condor.vacates == [] and condor.advertised == []


def test_the_table_is_one_row_per_check_and_says_whether_a_run_would_work(tmp_path, condor):
    result = cli_runner().invoke(cli, ["doctor", "--policy-file", str(policy(tmp_path)),
                                       "--state-file", str(tmp_path / "state")])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["Check", "Target", "Status", "Detail"]
    assert lines[-1] == "a real run would work"


@pytest.mark.parametrize(("denied", "row"), [
    (("negotiator", "SET_CEILING"), ("ADMINISTRATOR (SET_CEILING)", "negotiator negotiator@cm")),
    (("collector", "UPDATE_AD_GENERIC"), ("DAEMON (UPDATE_AD_GENERIC)", "collector collector@cm")),
    (("schedd", "ACT_ON_JOBS"), ("WRITE (ACT_ON_JOBS)", f"schedd {SCHEDD}")),
    (("schedd", "QUERY_JOB_ADS"), ("reachable", f"schedd {SCHEDD}")),
])
def test_a_right_taken_away_is_that_rows_failure(tmp_path, condor, denied, row):
    condor.denied.add(denied)
    result, rows = doctor(tmp_path)
    assert result.exit_code == 1
    assert failed(rows) == [row]


def test_condor_itself_needs_no_user_record(tmp_path, condor):
    condor.identity, condor.user_records = "condor@cm", {}  # the schedd takes it for its own account
    result, rows = doctor(tmp_path)
    assert result.exit_code == 0, rows
    assert "no user record needed" in rows[("queue super user", f"schedd {SCHEDD}")]["detail"]


def test_a_disabled_user_record_is_enough(tmp_path, condor):
    condor.user_records["osep@cm"] = 0  # it may not submit, which osep does not
    result, rows = doctor(tmp_path)
    assert result.exit_code == 0 and "with a user record" in rows[("queue super user", f"schedd {SCHEDD}")]["detail"]


@pytest.mark.parametrize(("change", "says"), [
    ({"schedd_config": {"QUEUE_SUPER_USERS": "root, condor", "UID_DOMAIN": "cm"}}, "osep@cm is not one"),
    ({"user_records": {}}, "no user record of osep@cm"),
])
def test_a_schedd_that_would_refuse_osep_s_vacates(tmp_path, condor, change, says):
    for name, value in change.items():
        setattr(condor, name, value)
    result, rows = doctor(tmp_path)
    assert result.exit_code == 1 and failed(rows) == [("queue super user", f"schedd {SCHEDD}")]
    assert says in rows[failed(rows)[0]]["detail"]


def test_a_schedd_down_is_one_failed_row_and_nothing_more_is_asked_of_it(tmp_path, condor):
    condor.queues["schedd2@cm"] = []
    condor.down.add("schedd2@cm")
    result, rows = doctor(tmp_path)
    assert result.exit_code == 1 and failed(rows) == [("reachable", "schedd schedd2@cm")]
    assert [c for name, c in condor.pings if name == "schedd2@cm"] == ["QUERY_JOB_ADS"]
    assert rows[("policy vs pool", str(tmp_path / "policy.toml"))]["status"] == "warn"


def test_the_collector_down_fails_and_says_so(tmp_path, condor):
    condor.down.add("collector")
    result, rows = doctor(tmp_path)
    assert result.exit_code == 1 and failed(rows) == [("reachable", "collector")]
    assert "not located" in rows[("reachable", "collector")]["detail"]


@pytest.mark.parametrize(("owners", "unit", "row", "status", "says"), [
    ("alice = 2\nbob = 2\n", "slots", "policy owners", "ok", "all 2 owner(s) known"),
    ("alice = 2\nbobb = 2\n", "slots", "policy owners", "warn", "1 of 2 owner(s) have no job and no submitter "
     "record in the pool (misspelt?): bobb"),
    ("alice = 2\ncarol = 2\n", "slots", "policy owners", "ok", "all 2 owner(s) known"),  # carol: her record
    ("alice = 2\n", "gpus", "policy unit", "warn", "unit 'gpus': no machine advertises gpus"),
    ("alice = 2\n", "cpus", "policy unit", "ok", "the pool has 4 cpus"),
])
def test_the_policy_against_the_pool(tmp_path, condor, owners, unit, row, status, says):
    condor.ceilings["carol@site"] = -1  # carol: a submitter record, no job
    policy(tmp_path, owners, unit)
    result = cli_runner().invoke(cli, ["doctor", "--format", "json", "--policy-file", str(tmp_path / "policy.toml"),
                                       "--state-file", str(tmp_path / "state")])
    checks = {(c["check"]): c for c in json.loads(result.stdout)["checks"]}
    assert checks[row]["status"] == status and says in checks[row]["detail"], checks[row]
    assert result.exit_code == 0  # warnings do not stop a run


@pytest.mark.parametrize(("content", "says"), [
    ("[owners]\nalice = -4\n", "owners.alice"),
    ("not toml at all [", "bad.toml"),
])
def test_a_bad_policy_file_fails(tmp_path, condor, content, says):
    (tmp_path / "bad.toml").write_text(content)
    result = cli_runner().invoke(cli, ["doctor", "--format", "json", "--policy-file", str(tmp_path / "bad.toml"),
                                       "--state-file", str(tmp_path / "state")])
    assert result.exit_code == 1
    row = next(c for c in json.loads(result.stdout)["checks"] if c["check"] == "policy file")
    assert row["status"] == "fail" and says in row["detail"]


@pytest.mark.parametrize("kind", ["missing", "fifo", "directory"])
def test_a_policy_file_that_cannot_be_read_is_a_failed_check_not_a_hang(tmp_path, condor, kind):
    path = tmp_path / "policy.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    result = cli_runner().invoke(cli, ["doctor", "--format", "json", "--policy-file", str(path),
                                       "--state-file", str(tmp_path / "state")])
    assert result.exit_code == 1 and result.stderr == ""
    row = next(c for c in json.loads(result.stdout)["checks"] if c["check"] == "policy file")
    assert row["status"] == "fail" and "\n" not in row["detail"]


def test_a_state_file_held_by_a_running_osep_fails(tmp_path, condor):
    running = StateFile(tmp_path / "state", holder=lambda: "pid 7 on cm")
    running.open()
    try:
        result, rows = doctor(tmp_path)
    finally:
        running.close()
    assert result.exit_code == 1 and failed(rows) == [("state file", str(tmp_path / "state"))]


def test_a_bad_knob_and_dry_run_are_rows_too(tmp_path, monkeypatch):
    fake = FakeCondor({"OSEP_INTERVAL": "0", "OSEP_DRY_RUN": "true"})
    fake.install(monkeypatch)
    result, rows = doctor(tmp_path)
    assert result.exit_code == 1 and ("configuration", "knobs") in failed(rows)
    fake = FakeCondor({"OSEP_DRY_RUN": "true"})
    fake.install(monkeypatch)
    result, rows = doctor(tmp_path)
    assert rows[("configuration", "OSEP_DRY_RUN")]["status"] == "warn"


# -- osep run, at start ----------------------------------------------------------------------------


def run(where: Path, *extra: str) -> Result:
    return cli_runner().invoke(cli, ["--log-file", str(where / "log"), "--log-level", "info", "run", "--once",
                                     "--policy-file", str(policy(where)), "--state-file", str(where / "state"),
                                     *extra])


def events(where: Path, name: str) -> list[dict[str, Any]]:
    lines = (where / "log").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


@pytest.mark.parametrize(("denied", "line"), [
    (("negotiator", "SET_CEILING"), "osep: error: the negotiator negotiator@cm at <cm:1> does not grant osep@cm "
     "ADMINISTRATOR (needed to set ceilings): Failed to start command."),
    (("collector", "UPDATE_AD_GENERIC"), "osep: error: the collector collector@cm at <cm:0> does not grant "
     "osep@cm DAEMON (needed to publish osep's ad): Failed to start command."),
    (("schedd", "ACT_ON_JOBS"), f"osep: error: the schedd {SCHEDD} at <cm:2> does not grant osep@cm WRITE "
     "(needed to vacate jobs): Failed to start command."),
])
def test_a_run_missing_a_right_stops_at_start_in_one_line_and_touches_nothing(tmp_path, condor, denied, line):
    condor.denied.add(denied)
    result = run(tmp_path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [line]
    assert condor.ceiling_commands == [] and condor.vacates == [] and condor.advertised == []
    [missing] = events(tmp_path, "right_missing")
    assert missing["right"] == denied[1] or missing["command"] == denied[1]
    assert not events(tmp_path, "cycle")
    assert StateFile(tmp_path / "state").open() is not None  # the lock was let go


def test_a_run_with_every_right_acts_and_says_whom_it_probed(tmp_path, condor):
    result = run(tmp_path)
    assert result.exit_code == 0, result.stderr
    [probed] = events(tmp_path, "rights_probed")
    assert probed["identity"] == "osep@cm"
    assert condor.vacates  # alice is over her share: the run acted


def test_a_dry_run_probes_nothing_and_says_why(tmp_path, condor):
    condor.denied |= {("negotiator", "SET_CEILING"), ("schedd", "ACT_ON_JOBS")}
    result = run(tmp_path, "--dry-run")
    assert result.exit_code == 0, result.stderr
    [skipped] = events(tmp_path, "rights_not_probed")
    assert "dry run" in skipped["reason"] and "READ" in skipped["reason"]
    assert condor.pings == []


def test_a_daemon_down_at_start_is_logged_and_the_run_goes_on_as_through_any_outage(tmp_path, condor):
    condor.down.add("negotiator")
    result = run(tmp_path)
    assert result.stderr == ""
    assert [e["daemon"] for e in events(tmp_path, "rights_not_probed")] == ["negotiator"]
    [hold] = [e for e in events(tmp_path, "action") if e["kind"] == "hold"]
    assert hold["outcome"] == "failed" and condor.vacates == []  # no vacate without its hold


@pytest.mark.parametrize("silent", [True, False])
def test_a_right_lost_once_running_fails_the_hold_naming_it_and_no_vacate_goes_without_it(tmp_path, condor,
                                                                                           silent):
    """Granted at start, refused once the run acts: SET_CEILING has no answer, so a negotiator that
    drops it does so in silence (``silent``), and osep asks before each round of ceilings."""
    probes = iter([True])  # the probe at start is granted; the run's own ask is refused

    def ping(ad: Any, command: str) -> Any:
        if command == "SET_CEILING" and not next(probes, False):
            raise htcondor2.HTCondorException("Failed to start command.")
        return condor_ping(ad, command)

    condor_ping = condor.ping
    condor.ping = ping  # type: ignore[method-assign]
    if not silent:
        def refused(submitter: str, value: int) -> None:
            raise htcondor2.HTCondorException("Failed to start command.")

        condor._set_ceiling = refused  # type: ignore[method-assign]
    result = run(tmp_path)
    assert result.exit_code == 0, result.stderr  # the cycle ran: its actions' failures are logged
    holds = [e for e in events(tmp_path, "action") if e["kind"] == "hold"]
    assert holds and holds[0]["outcome"] == "failed"
    assert "needs ADMINISTRATOR at the negotiator negotiator@cm" in holds[0]["detail"]
    assert condor.vacates == [] and condor.ceiling_commands == []
    vacates = [e for e in events(tmp_path, "action") if e["kind"] == "vacate"]
    assert vacates and all(e["outcome"] == "failed" for e in vacates)
    [cycle] = events(tmp_path, "cycle")
    assert cycle["vacated"] == 0 and cycle["skipped"] == len(vacates)  # counted
