"""osep report and osep replay against the real test pool: the operator's view of a pool where one
owner holds another's share, and the replay of a history the pool has just recorded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import Live
from recordings import SLOTS, record

SHARES = {"alice": 10, "bob": 10}


def osep(live: Live, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "osep", *args], env=env or live.env(),
                          capture_output=True, text=True, timeout=120, check=False)


def test_report_shows_who_is_over_and_what_would_go_next(live: Live):
    younger = live.fill("alice")  # alice holds all 20 cores
    live.submit("bob", 10, stock=True)  # a submit file with no request_* lines
    policy = live.policy(SHARES)
    live.config()
    # Any user who can read the pool: no token at all.
    anonymous = live.env() | {"_CONDOR_SEC_TOKEN_DIRECTORY": str(live.work / "no-tokens")}
    done = osep(live, "report", "--policy-file", str(policy), "--format", "json", env=anonymous)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # every ad read as it is: no warning
    doc = json.loads(done.stdout)
    rows = {r["owner"]: r for r in doc["owners"]}
    assert doc["slots"] == 20 and doc["max_vacates"] == 10
    assert (rows["alice"]["running_jobs"], rows["alice"]["gap"]) == (20, -10)
    assert (rows["bob"]["idle_jobs"], rows["bob"]["gap"]) == (10, 10)
    # The next cycle would take alice's 10 youngest jobs, the ones started last.
    assert sorted(v["job"].split("#")[1] for v in rows["alice"]["vacate_next"]) == sorted(younger)
    assert all(v["run_time"] >= 0 for v in rows["alice"]["vacate_next"])
    table = osep(live, "report", "--policy-file", str(policy), "--sort", "gap")
    assert table.returncode == 0, table.stderr
    print(table.stdout)
    lines = table.stdout.splitlines()
    assert lines[4].startswith("alice") and lines[5].startswith("bob")
    assert any(line.startswith("Total (2 owners)") for line in lines)
    # Read-only: nothing was vacated, nobody was held.
    assert live.history("alice")["evicted"] == []
    assert all(value == -1 for value in live.ceilings().values())


def test_report_shows_whom_osep_holds_and_a_dry_run_logs_the_holds_it_would_set(live: Live):
    live.fill("alice")
    live.submit("bob", 10)
    live.config(OSEP_POLICY_FILE=live.policy(SHARES))  # and OSEP_STATE_FILE, which report reads too
    dry = live.once("--dry-run")
    assert dry.returncode == 0, dry.stderr
    holds = [e for e in live.events("action") if e.get("kind") == "hold"]
    assert [(e["owners"], e["outcome"], e["dry_run"]) for e in holds] == [(["alice"], "dry-run", True)]
    assert all(value == -1 for value in live.ceilings().values())  # the negotiator: no ceiling set
    done = live.once()
    assert done.returncode == 0, done.stderr
    alice = f"alice@{live.pool.uid_domain()}"
    ceiling = live.ceilings()[alice]
    assert ceiling >= 0
    # Until the slots of the vacated jobs are let go, the report refuses an incomplete view.
    live.wait_until(lambda: osep(live, "report").returncode == 0, 60, "the vacated jobs' slots to be let go")
    report = osep(live, "report", "--format", "json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    rows = {r["owner"]: r for r in doc["owners"]}
    assert [(c["submitter"], c["ceiling"]) for c in rows["alice"]["ceilings"]] == [(alice, ceiling)]
    assert rows["alice"]["ceilings"][0]["since"] is not None and rows["bob"]["ceilings"] == []
    table = osep(live, "report")
    print(table.stdout)
    assert f"{ceiling} since " in next(line for line in table.stdout.splitlines() if line.startswith("alice"))
    assert live.release().returncode == 0


@pytest.mark.parametrize("live", [{"cpus": SLOTS}], indirect=True)
def test_replay_of_what_the_pool_just_recorded(live: Live):
    rec = record(live, "share-back", live.work / "recorded")
    done = osep(live, "replay", str(rec.events), "--policy-file", str(rec.policy),
                "--decisions", str(rec.decisions), "--format", "json",
                "--what-if", "greedy", "--what-if", "osep", "-t", "2", "--negotiation-interval", "2",
                "--plot", str(live.work / "replay.png"))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    doc = json.loads(done.stdout)
    recorded = doc["policies"]["recorded"]
    print(osep(live, "replay", str(rec.events), "--policy-file", str(rec.policy),
               "--decisions", str(rec.decisions)).stdout)
    vacates = [e for e in live.events("action") if e.get("kind") == "vacate"
               and e.get("outcome") == "done"]
    # Every eviction in the pool's log is one osep asked for, and each is in the replay.
    assert recorded["vacates"] == recorded["evicted_by_osep"] == len(vacates) == 2
    assert recorded["unfinished"] == 0 and doc["scenario"]["jobs"] == 6
    # The work lost per eviction is what osep said the job had run when it vacated it (the
    # eviction may land a second or two after the decision).
    assert recorded["owners"]["alice"]["lost_work"] == pytest.approx(
        sum(v["run_time"] for v in vacates), abs=2 * len(vacates) + 1)
    assert recorded["owners"]["bob"]["A_US"] > 50
    assert recorded["PV"] > 0 and recorded["LC"] >= 0
    assert set(doc["policies"]) == {"recorded", "greedy", "osep"}
    # Without enforcement bob waits for alice's jobs to end; the what-if osep run does not.
    assert doc["policies"]["greedy"]["owners"]["bob"]["PV"] > doc["policies"]["osep"]["owners"]["bob"]["PV"]
    assert (live.work / "replay.png").stat().st_size > 10_000
