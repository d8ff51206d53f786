"""Operator reports: the pool now (from a snapshot) and the loop's history (from its decision log)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from builders import snap
from osep.act.records import Outcome
from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.core.shares import ShareTable
from osep.replay.decisions import read_decisions
from osep.ui import render
from osep.ui.reports import history_report, parse_time, pool_report

DATA = Path(__file__).parents[1] / "data"


def settings(shares, **kw) -> PolicySettings:
    return PolicySettings(shares=ShareTable(shares), **kw)


def test_pool_report_rows_are_the_policys_figures():
    # alice runs 6 (started at 0..5), bob owed 3 of his share with 4 idle; p = 2.
    pool = snap(100.0, running={"alice": [0, 1, 2, 3, 4, 5]}, idle={"bob": 4})
    doc = pool_report(pool, settings({"alice": 3, "bob": 3}, max_vacates=2))
    rows = {r["owner"]: r for r in doc["owners"]}
    alice, bob = rows["alice"], rows["bob"]
    assert (alice["share"], alice["feasible"], alice["running_jobs"], alice["demand"]) == (3, 3, 6, 6)
    assert (alice["using"], alice["kept"]) == (6, 0)
    assert alice["gap"] == -3 and bob["gap"] == 3
    # The next cycle vacates the 2 youngest of alice's jobs (p = 2), with their run times.
    assert [(v["job"], v["run_time"]) for v in alice["vacate_next"]] == [
        ("alice#0.5", 95.0), ("alice#0.4", 96.0)]
    assert bob["vacate_next"] == [] and not bob["held"]
    assert doc["totals"] == {"owners": 2, "share": 6, "feasible": 6, "demand": 10, "using": 6, "kept": 0,
                             "running_jobs": 6, "idle_jobs": 4, "vacating_jobs": 0, "owed": 3,
                             "vacate_next": 2}


def test_pool_report_table_is_aligned_with_a_totals_row():
    pool = snap(100.0, running={"alice": [0, 1, 2, 3, 4, 5]}, idle={"bob": 4})
    text = render.report_table(pool_report(pool, settings({"alice": 3, "bob": 3}, max_vacates=2)))
    lines = text.splitlines()
    header = lines[2]
    assert header.split()[:8] == ["Owner", "Share", "Feasible", "Demand", "Using", "Kept", "Gap", "Jobs"]
    alice = next(line for line in lines if line.startswith("alice"))
    assert "2: 0+00:01:35, 0+00:01:36" in alice
    total = next(line for line in lines if line.startswith("Total (2 owners)"))
    # Numbers are right-aligned under their headings.
    for word in ("Share", "Demand", "Using", "Gap", "run/idle"):
        end = header.index(word) + len(word)
        for line in (alice, total):
            assert line[end - 1] != " " and line[end] == " ", (word, line)


def test_pool_report_scales_to_ten_thousand_owners():
    owners = {f"group{k:05d}.user{k % 97}": 1 for k in range(10_000)}
    running = {o: [float(k)] for k, o in enumerate(list(owners)[:5_000])}
    pool = snap(20_000.0, running=running, idle=dict.fromkeys(list(owners)[5000:], 1), free=0)
    doc = pool_report(pool, settings(owners), sort="gap")
    text = render.report_table(doc)
    lines = text.splitlines()
    assert len(lines) == 3 + 1 + 10_000 + 2
    widths = {len(re.match(r"^\S+\s+\S+", line).group(0)) for line in lines[4:-2]}
    assert len(widths) == 1  # the share column ends at the same place on every row
    assert doc["owners"][0]["gap"] <= doc["owners"][-1]["gap"]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_pool_report_machine_formats(fmt):
    pool = snap(100.0, running={"alice": [0, 1]}, idle={"bob": 1})
    doc = pool_report(pool, settings({"alice": 1, "bob": 1}))
    text = render.REPORT_RENDERERS[fmt](doc)
    if fmt == "json":
        assert json.loads(text)["owners"][0]["owner"] == "alice"
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [r["owner"] for r in rows] == ["alice", "bob"]
        assert rows[0]["vacate_next"] == "1" and rows[0]["vacate_next_run_times"] == "99"


def test_history_joins_each_action_to_its_reason():
    log = read_decisions(DATA / "share-back.decisions.jsonl", pytest.fail)
    doc = history_report(log, None, None)
    assert doc["cycles"] == 47 and doc["runs"] == 1
    owners = {r["owner"]: r for r in doc["owners"]}
    assert (owners["alice"]["vacated"], owners["alice"]["lost_work"]) == (2, 24.0)
    assert owners["bob"]["gained"] == 2
    assert [a["job"] for a in doc["actions"]] == ["vm#1.0", "vm#1.1"]
    assert all(a["reason"].startswith("vacate for the owner furthest below") for a in
               doc["actions"])
    assert "beneficiary holds 0 of target 2" in doc["actions"][0]["reason"]
    assert "beneficiary holds 1 of target 2" in doc["actions"][1]["reason"]


def decision_log(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "osep.log"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def vacate(cycle: int, time: float, job: str, outcome: str = "done", **extra):
    base = {"cycle": cycle, "time": time, "kind": "vacate", "job": job, "owner": "a",
            "beneficiary": "b", "run_time": 60.0, "lost_work": 60.0}
    return [{**base, "event": "decision", "reason": f"reason {job}"},
            {**base, "event": "action", "outcome": outcome, **extra}]


def test_history_keeps_daemon_runs_apart_and_windows_by_time(tmp_path):
    # Two daemon runs both have a cycle 1 vacating job 1.0: each action gets its own run's reason.
    path = decision_log(tmp_path, [
        {"event": "started"},
        *vacate(1, 100.0, "s#1.0"),
        {"event": "cycle", "cycle": 1, "time": 100.0, "capacity": 8},
        "not json at all",
        {"event": "started"},
        *vacate(1, 200.0, "s#1.0", outcome="skipped-rate-limit",
                detail="cycle cap of 0 reached"),
        {"event": "cycle", "cycle": 1, "time": 200.0, "capacity": 10},
        '{"event": "action", "cut off',
    ])
    warnings: list[str] = []
    log = read_decisions(path, warnings.append)
    # Counted: one line per kind of damage, with where it was.
    assert warnings == [f"{path}: 2 times: not a JSON log event, skipped (line 5; line 10)"]
    assert (log.runs, log.cycles, log.capacity) == (2, 2, 10)
    assert [(a.run, a.outcome, a.reason) for a in log.actions] == [
        (1, Outcome.DONE, "reason s#1.0"), (2, Outcome.RATE_LIMITED, "reason s#1.0")]
    assert log.vacates_sent() == {JobId("", 1, 0): [100.0]}
    later = history_report(read_decisions(path, warnings.append, since=150.0), 150.0, None)
    assert later["totals"]["vacated"] == 0 and later["totals"]["not_done"] == 1
    assert later["actions"][0]["detail"] == "cycle cap of 0 reached"


def test_an_action_the_schema_does_not_know_is_a_warning(tmp_path):
    path = decision_log(tmp_path, [*vacate(1, 100.0, "s#1.0", outcome="exploded"),
                                   *vacate(1, 100.0, "not an id")])
    warnings: list[str] = []
    assert read_decisions(path, warnings.append).actions == []
    assert warnings == [f"{path}: line 2: action event with a bad outcome, skipped",
                        f"{path}: line 4: action event with a bad job, skipped"]


def test_history_of_a_missing_log_is_an_error(tmp_path):
    from osep.errors import LogError

    with pytest.raises(LogError, match=r"nope\.log"):
        read_decisions(tmp_path / "nope.log", print)


@pytest.mark.parametrize("text, seconds", [
    ("1795331988", 1795331988.0),
    ("2026-11-22T07:19:48", 1795331988.0),
    ("2026-11-22T08:19:48+01:00", 1795331988.0),
    ("2026-11-22 07:19:48Z", 1795331988.0),
])
def test_times_are_iso_or_epoch(text, seconds):
    assert parse_time(text) == seconds


def test_the_report_shows_share_usage_and_gap_per_resource():
    from builders import machines
    from osep.core.resources import Unit
    from osep.ui.render import report_csv, report_table
    from osep.ui.reports import pool_report

    gib = 1024 * 1024  # KiB
    gpu, core = (1, 1024, 1, 4 * gib), (1, 1024, 0, 6 * gib)
    snapshot = machines({"m0": (10, 10240, 2, 100 * gib), "m1": (10, 10240, 2, 100 * gib)},
                        [("a", "m0", gpu, 0.0), ("a", "m0", gpu, 1.0), ("a", "m1", gpu, 2.0),
                         ("b", "m1", core, 3.0)],
                        idle=[("b", gpu)])
    shares = ShareTable({"a": {"cpus": 10, "gpus": 2}, "b": {"cpus": 10, "memory": 10240, "gpus": 2}})
    doc = pool_report(snapshot, PolicySettings(shares, unit=Unit.DOMINANT))
    assert doc["unit"] == "dominant"
    assert doc["pool"] == {"cpus": 20, "memory": 20480, "gpus": 4, "disk": 200 * gib}
    a = next(r for r in doc["owners"] if r["owner"] == "a")
    assert a["share"] == 1.0 and a["gap"] == pytest.approx(-0.5)  # 3 GPUs of its 2
    assert a["resources"]["gpus"] == {"share": 2, "using": 3, "gap": -1}
    assert a["resources"]["memory"] == {"share": None, "using": 3072, "gap": None}
    table = report_table(doc)
    assert "GPUs used/share" in table and "fractions of the owner's share" in table
    assert "3/10" in table and "3/2" in table and "4 in the pool" in table
    # Disk in GiB: a's three jobs hold 12 GiB; b's one 6 GiB; the pool has 200.
    assert "Disk (GiB) used/share" in table and "12.0" in table and "200.0 in the pool" in table
    assert "gpus_using,gpus_share,gpus_gap" in report_csv(doc).splitlines()[0]


def test_names_from_the_pool_cannot_break_a_table_or_drive_the_terminal():
    names = ["a\nosep: error: forged", "\x1b[2J\x1b[31mred", "evil\u202egnp.exe", "plain"]
    snapshot = snap(running={n: [0.0] * (k + 1) for k, n in enumerate(names)}, idle={"plain": 3})
    table = render.report_table(pool_report(snapshot, PolicySettings(ShareTable({"plain": 4}))))
    assert all(c.isprintable() for line in table.splitlines() for c in line)
    assert not any(line.startswith("osep: error") for line in table.splitlines())
    assert "a\\nosep: error: forged" in table and "\\x1b[2J" in table and "\\u202e" in table


def test_tree_report_lists_groups_and_owners_depth_first_like_sshare():
    from builders import TWO_LEVELS, policy_from

    policy = policy_from(TWO_LEVELS)
    pool = snap(running={"chem": [100.0 * k for k in range(7)], "physics.cms": [0.0] * 3},
                idle={"physics.cms": 5, "physics.bio": 1})
    doc = pool_report(pool, policy)
    names = [(r["name"], r["depth"]) for r in doc["tree"]]
    assert names == [("chem", 0), ("physics", 0), ("physics.atlas", 1), ("physics.bio", 1),
                     ("physics.cms", 1)]
    rows = {r["name"]: r for r in doc["tree"]}
    assert rows["physics"]["usage"] == 3 and rows["physics"]["target"] == 6
    assert rows["physics"]["running_jobs"] == 3 and rows["physics"]["idle_jobs"] == 6
    assert rows["chem"]["gap"] == -3 and rows["physics"]["normalized"] == 0.6
    assert rows["physics.bio"]["share"] == 0  # an unlisted member: no share of its own
    text = render.tree_table(doc)
    lines = text.splitlines()
    assert lines[2].split()[:3] == ["Group", "/", "owner"]
    assert any(line.startswith("  cms ") for line in lines)
    csv_text = render.tree_csv(doc)
    assert csv_text.splitlines()[0].startswith("name,kind,depth,share,normalized")
    assert json.loads(render.as_json(doc))["tree"][1]["kind"] == "group"


# -- whom osep holds: the ceilings its state file records -------------------------------------------

HOLD_START = 1_795_651_200.0  # 2026-11-26 00:00 UTC


def held_report(held):
    pool = snap(HOLD_START + 600, running={"alice": [0, 1, 2, 3, 4, 5], "carol": [0]}, idle={"bob": 4})
    return pool_report(pool, settings({"alice": 3, "bob": 3, "carol": 1}), held=held)


def test_held_shows_the_ceilings_on_record_per_owner_with_since_when():
    from osep.ui.reports import Held

    held = Held("/var/lib/osep/state", {"alice@site": (6, HOLD_START + 60), "g.alice@site": (2, HOLD_START),
                                        "dave@site": (3, None)},
                {"alice@site": {"alice"}, "g.alice@site": {"alice"}})
    doc = held_report(held)
    rows = {r["owner"]: r for r in doc["owners"]}
    assert rows["alice"]["ceilings"] == [
        {"submitter": "alice@site", "ceiling": 6, "since": "2026-11-26T00:01:00+00:00"},
        {"submitter": "g.alice@site", "ceiling": 2, "since": "2026-11-26T00:00:00+00:00"}]
    assert rows["bob"]["ceilings"] == [] and rows["carol"]["ceilings"] == []
    # A ceiling on a name no job in the pool is charged to now: under the table.
    assert doc["held_elsewhere"] == [{"submitter": "dave@site", "ceiling": 3, "since": None}]
    assert doc["state_file"] == {"path": "/var/lib/osep/state", "problem": None}
    lines = render.report_table(doc).splitlines()
    header = lines[2]
    alice = next(line for line in lines if line.startswith("alice"))
    # The owner's ceilings (several accounting names: added up, since the earliest), in Held.
    at = header.index("Held")
    assert alice[at:].startswith("6+2 since 2026-11-26 00:00 UTC ")
    assert lines[-1] == "held, with no job in the pool now: dave@site at 3"
    rows = {r["owner"]: r for r in csv.DictReader(io.StringIO(render.report_csv(doc)))}
    assert (rows["alice"]["ceiling"], rows["alice"]["held_since"]) == ("8", "2026-11-26T00:00:00+00:00")
    assert (rows["bob"]["ceiling"], rows["bob"]["held_since"]) == ("", "")


def test_without_ceilings_on_record_held_says_whom_the_next_cycle_holds_and_why_there_are_none():
    from osep.ui.reports import Held

    doc = held_report(Held("/x/state", problem="/x/state: no such state file, so no ceiling osep set is on record"))
    lines = render.report_table(doc).splitlines()
    header = lines[2]
    rows = {line.split()[0]: line for line in lines[4:7]}
    # alice is over her share with bob waiting: the next cycle holds her; carol (no idle jobs) not.
    assert rows["alice"][header.index("Held"):].startswith("next cycle")
    assert rows["carol"][header.index("Held"):].strip().startswith("0/1") is False
    assert lines[-1] == "held: /x/state: no such state file, so no ceiling osep set is on record"
    assert not any(line.startswith("held") for line in render.report_table(held_report(None)).splitlines())
