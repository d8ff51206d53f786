"""``osep doctor`` against a real pool with two schedds, osep using its own identity and token
(test_rights.OSEP_CONFIG, TOKEN_AUTHZ): every check passes; a right taken away is that right's row
failing; a schedd that stops answering is one failed row, found within a bounded time, not a hang."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from harness import Live
from test_rights import OSEP_CONFIG, as_osep, identity
from test_schedds import schedd_pid

SETUP = {"extra_config": OSEP_CONFIG, "schedds": 2}


def doctor(live: Live) -> tuple[int, dict[tuple[str, str], dict], float]:
    """``osep doctor --format json``: its exit status, its rows by (check, target), and its seconds."""
    started = time.monotonic()
    done = live.doctor("--format", "json")
    took = time.monotonic() - started
    assert done.stderr == "", done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] == (done.returncode == 0)
    rows = {(c["check"], c["target"]): c for c in doc["checks"]}
    assert len(rows) == len(doc["checks"]), "one row per check and target"
    return done.returncode, rows, took


def failed(rows: dict[tuple[str, str], dict]) -> list[tuple[str, str]]:
    return sorted(key for key, row in rows.items() if row["status"] == "fail")


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_doctor_passes_fails_the_missing_right_and_a_schedd_that_does_not_answer(live: Live):
    live.submit("alice", 5)
    live.wait_until(lambda: live.running("alice") == 5, 60, "alice's jobs to run")
    live.policy({"alice": 10, "bob": 10})
    live.user_record(identity(live))
    as_osep(live)
    status, rows, took = doctor(live)
    print(f"MEASURED doctor, all granted: {took:.1f} s; rows: {json.dumps(list(rows.values()), indent=1)}")
    assert status == 0 and failed(rows) == []
    schedds = live.pool.schedd_names()
    assert len(schedds) == 2
    for name in schedds:
        assert rows[("WRITE (ACT_ON_JOBS)", f"schedd {name}")]["status"] == "ok"
        assert rows[("queue super user", f"schedd {name}")]["status"] == "ok"
        assert rows[("version", f"schedd {name}")]["detail"].startswith("HTCondor ")
    assert [k for k in rows if k[0] == "ADMINISTRATOR (SET_CEILING)"]
    assert [k for k in rows if k[0] == "DAEMON (UPDATE_AD_GENERIC)"]
    assert rows[("policy owners", str(live.work / "policy.toml"))]["status"] == "warn"  # bob: no job yet
    assert rows[("state file", str(live.work / "osep.state"))]["status"] == "ok"

    # A token without ADMINISTRATOR: the negotiator's row fails, and only that right's.
    as_osep(live, "no-admin", ("READ", "WRITE", "DAEMON"))
    status, rows, _ = doctor(live)
    assert status == 1
    assert {check for check, target in failed(rows)} <= {"ADMINISTRATOR (SET_CEILING)",
                                                         "ADMINISTRATOR (MANAGE_CEILING)"}
    assert failed(rows) and all(target.startswith("negotiator") for _, target in failed(rows))
    assert "ADMINISTRATOR" in rows[failed(rows)[0]]["detail"] or "not granted" in rows[failed(rows)[0]]["detail"]

    # The second schedd stops answering (SIGSTOP: its ad stays in the collector): its row fails,
    # within a bounded time, and nothing else is probed there.
    as_osep(live, "again")
    second = next(n for n in schedds if n.startswith("schedd2@"))
    pid = schedd_pid("schedd2")
    os.kill(pid, signal.SIGSTOP)
    try:
        status, rows, took = doctor(live)
    finally:
        os.kill(pid, signal.SIGCONT)
    print(f"MEASURED doctor with a schedd stopped: {took:.1f} s; "
          f"{rows[('reachable', f'schedd {second}')]['detail']}")
    assert status == 1 and failed(rows) == [("reachable", f"schedd {second}")]
    assert not [k for k in rows if k[1] == f"schedd {second}" and k[0] not in ("version", "reachable")]
    assert rows[("policy vs pool", str(live.work / "policy.toml"))]["status"] == "warn"
    assert took < 120, f"doctor took {took:.0f} s with one schedd stopped"

    # A running osep holds the state file: a run would not start beside it.
    daemon = live.start("--dry-run")
    live.wait_until(lambda: bool(live.events("cycle")), 60, "the dry run's first cycle")
    status, rows, _ = doctor(live)
    assert status == 1 and failed(rows) == [("state file", str(live.work / "osep.state"))]
    assert "in use by another osep" in rows[failed(rows)[0]]["detail"]
    assert live.stop(daemon) == 0
