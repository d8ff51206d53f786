"""osep report and osep replay against the real test pool: the operator's view of a pool where one
owner holds another's share, and the replay of a history the pool has just recorded; and every
```console-live example of the docs, run in the situation its page describes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time

import pytest

from docexamples import examples, files, plain
from harness import Live, group
from recordings import SLOTS, record

SHARES = {"alice": 10, "bob": 10}

# The situation each ```console-live example of the docs runs in, keyed by the example's command: the
# test named sets it up as the page's prose says, and runs the example there (`as_the_page_shows`).
SITUATIONS = {
    "osep report --policy-file policy.toml": "test_report_shows_who_is_over_and_what_would_go_next",
    "osep example owner-tree -o tree.toml": "test_report_shows_who_is_over_and_what_would_go_next",
    "osep report --tree --policy-file tree.toml": "test_report_shows_who_is_over_and_what_would_go_next",
}
# What varies between runs of the same situation, and only that, is normalised on both sides: the time
# stamp in the report's title, the run times of the jobs the next cycle would vacate, the date a
# ceiling was set, and the pool's memory and disk in GiB (the only figures with a decimal before
# "in the pool"), which the test pool's slots take from the machine it runs on.
VARYING = [
    (re.compile(r" +\d+\.\d in the pool\b"), " X.X in the pool"),
    (re.compile(r"^(osep report(?: --tree)? at )[^ ]+: "), r"\1TIME: "),
    (re.compile(r"\b\d+\+\d\d:\d\d:\d\d\b"), "D+HH:MM:SS"),
    (re.compile(r"\bsince \d{4}-\d\d-\d\d \d\d:\d\d UTC\b"), "since DATE"),
]


def osep(live: Live, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "osep", *args], env=env or live.env(),
                          capture_output=True, text=True, timeout=120, check=False)


def normalised(text: str) -> str:
    for pattern, stands_for in VARYING:
        text = "\n".join(pattern.sub(stands_for, line) for line in text.splitlines())
    return plain(text)


def as_the_page_shows(live: Live, *commands: str) -> None:
    """Run ``commands``, ```console-live examples of the docs, one after the other in a directory
    holding the files their page shows, with the harness's configuration (``config``), and compare
    what each prints (stdout and stderr as a terminal shows them) with what the page shows."""
    test = os.environ["PYTEST_CURRENT_TEST"].split("::")[-1].split(" ")[0].split("[")[0]
    cwd = live.work / "docs"
    cwd.mkdir(exist_ok=True)
    for command in commands:
        assert SITUATIONS[command] == test, f"{command}: its situation is {SITUATIONS[command]}, not {test}"
        example, = (e for e in examples("console-live") if e.command == command)
        for name, text in files(example.page).items():
            (cwd / name).write_text(text)
        words = shlex.split(command)
        done = subprocess.run([sys.executable, "-m", "osep", *words[1:]], cwd=cwd, env=live.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                              check=False)
        print(f"$ {command}\n{done.stdout}")
        assert normalised(done.stdout) == normalised(example.shown), f"{example.id}: $ {command}"


def test_every_live_example_of_the_docs_has_a_situation():
    assert sorted(e.command for e in examples("console-live")) == sorted(SITUATIONS)


def test_report_shows_who_is_over_and_what_would_go_next(live: Live):
    younger = live.fill("alice")  # alice holds all 20 cores
    live.submit("bob", 10, stock=True)  # a submit file with no request_* lines
    policy = live.policy(SHARES)
    live.config(state_file=False)  # as on the page: Held is only the next cycle's plan
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
    as_the_page_shows(live, "osep report --policy-file policy.toml")
    # Read-only: nothing was vacated, nobody was held.
    assert live.history("alice")["evicted"] == []
    assert all(value == -1 for value in live.ceilings().values())

    # The page's owner tree on the same 20 slots: carol's group_chem holds more than its share while
    # bob of group_physics.cms waits.
    start = time.monotonic()
    live.pool.condor(["condor_rm", "-all"])
    live.submit("carol", 14, extra=group("group_chem", "carol"), stock=True)
    live.wait_until(lambda: live.running("carol") == 14 and live.queued("alice") == 0, 60,
                    "carol's 14 jobs to run in place of alice's")
    live.submit("alice", 9, extra=group("group_physics.cms", "alice"), stock=True)
    live.wait_until(lambda: live.running("alice") == 6, 60, "alice to run 6 jobs")
    live.submit("bob", 6, extra=group("group_physics.cms", "bob"), stock=True)
    print(f"MEASURED seconds to set up the tree: {time.monotonic() - start:.1f}")
    as_the_page_shows(live, "osep example owner-tree -o tree.toml", "osep report --tree --policy-file tree.toml")


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
