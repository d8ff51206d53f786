"""Replay of event logs recorded on the live test pool (tests/data/, re-recorded by
scripts/record_logs.py), read through the real HTCondor bindings, against figures worked out by hand
from the events in those files. Times are seconds after each log's first event; 4 slots; shares alice
2, bob 2 (carol none).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from osep.config.policy import load_policy
from osep.errors import LogError, OsepError
from osep.htcondor.eventlog import read_event_log
from osep.replay.study import LogSource, WhatIf, study

DATA = Path(__file__).parents[1] / "data"


def replay_file(name: str, decisions: bool = True, slots: int | None = None,
                interval: float | None = None, **kwargs):
    warnings: list[str] = []
    log = DATA / f"{name}.decisions.jsonl"
    policy = load_policy(DATA / f"{name}.policy.toml")
    result = study(
        [LogSource(DATA / f"{name}.events.log")],
        policy.settings,
        interval=interval if interval is not None else policy.interval,
        read_log=read_event_log,
        warn=warnings.append,
        decisions=log if decisions and log.exists() else None,
        slots=slots,
        **kwargs,
    )
    return result, warnings


def owners(result) -> dict:
    return {o.owner: o for o in result.replay.metrics.owners}


def test_share_back_matches_the_hand_calculation():
    """alice's 4 jobs of 40 s run from 8 on slots 1-4. bob submits 2 jobs of 20 s at 18; osep
    vacates alice's 1.0 and 1.1 at 20 (the decision log's vacate and the evictions share a second);
    bob runs on slots 1-2 from 23 to 43; alice's 1.2 and 1.3 end at 48, when 1.0 and 1.1 start again
    on slots 3-4 and run to 88.

    Feasible shares: alice 4 until bob arrives at 18, then 2 each until bob's jobs end at 43, then
    alice 4 (2 running, 2 idle) until 48, then 2.
    PV: alice 4 x 8 (nothing ran yet) + 2 x 5 (43 to 48) = 42; bob 2 x 5 (18 to 23) = 10; total 52.
    LC: slots 1 and 2 idle from the evictions at 20 to bob's start at 23: 3 + 3 = 6.
    PC: two runs of 12 s (8 to 20) lost, no time between signal and eviction: 24.
    A_US: bob 20 / 25 = 80% for both jobs; alice (40/48 x 2 + 40/88 x 2) / 4 = 64.39%.
    """
    result, warnings = replay_file("share-back")
    m = result.replay.metrics
    assert warnings == []
    assert result.capacity == 4  # from the decision log
    assert (m.violation, m.capacity_loss, m.cost) == (52, 6, 24)
    assert (m.lost_work, m.vacate_time, m.saved_work, m.vacates) == (24, 0, 0, 2)
    assert m.makespan == 88
    by = owners(result)
    assert (by["alice"].violation, by["bob"].violation) == (42, 10)
    assert by["alice"].satisfaction == pytest.approx((40 / 48 * 2 + 40 / 88 * 2) / 4 * 100)
    assert by["bob"].satisfaction == pytest.approx(80.0)
    assert (by["alice"].vacated, by["alice"].lost_work) == (2, 24)
    assert result.replay.osep_evictions == {"alice": 2}
    assert result.document["policies"]["recorded"]["evicted_by_osep"] == 2
    assert result.replay.unfinished == 0


def test_no_enforcement_matches_the_hand_calculation():
    """No osep. alice's 4 jobs of 30 s run from 8 (1.1 ends at 38, the rest at 39). At 14 bob
    submits 2 jobs of 15 s and carol 2 of 5 s; carol's 3.0 is held at 16 and released at 19, her 4.0
    removed at 16. bob's jobs and carol's 3.0 run from 43; carol's ends at 48, bob's at 58.

    Feasible shares: alice 4 until 14, then alice 2 and bob 2 (carol, with no share, gets nothing
    while they use it all) until alice's demand ends at 39; then bob 2 and carol 1 until 48.
    PV: alice 4 x 8 = 32; bob 2 x 29 (14 to 43) = 58; carol 1 x 4 (39 to 43) = 4; total 94.
    A_US: alice (30/38 + 3 x 31/39) / 4 = 79.35%; bob 15/44 = 34.09%; carol 5/34 = 14.71% (the
    removed job does not count).
    """
    result, warnings = replay_file("no-enforcement", slots=4)
    m = result.replay.metrics
    assert warnings == []
    assert (m.violation, m.capacity_loss, m.cost, m.vacates) == (94, 0, 0, 0)
    by = owners(result)
    assert {o: by[o].violation for o in by} == {"alice": 32, "bob": 58, "carol": 4}
    assert by["alice"].satisfaction == pytest.approx((30 / 38 + 3 * 31 / 39) / 4 * 100)
    assert by["bob"].satisfaction == pytest.approx(15 / 44 * 100)
    assert by["carol"].satisfaction == pytest.approx(5 / 34 * 100)
    assert (by["carol"].jobs, by["carol"].finished) == (2, 1)
    assert m.makespan == 58
    assert "evicted_by_osep" not in result.document["policies"]["recorded"]


def test_what_if_runs_the_recorded_workload():
    result, _ = replay_file("no-enforcement", slots=4, interval=2,
                            what_if=WhatIf(("none", "osep"), negotiation_interval=2,
                                           vacate_delay=0))
    doc = result.document
    assert list(doc["policies"]) == ["recorded", "none", "osep"]
    # The removed job never finished, so the simulated workload has the 7 others.
    assert (doc["scenario"]["what_if_jobs"], doc["scenario"]["what_if_left_out"]) == (7, 1)
    # bob waits for his share under first-come-first-served; osep gives it to him.
    assert doc["policies"]["none"]["owners"]["bob"]["PV"] > 0
    assert doc["policies"]["osep"]["owners"]["bob"]["PV"] == 0
    assert doc["policies"]["osep"]["vacates"] == 2


def test_the_pool_size_must_be_known():
    with pytest.raises(OsepError, match="--slots"):
        replay_file("no-enforcement")


# -- damaged logs ------------------------------------------------------------------------------


@pytest.fixture
def damaged(tmp_path) -> Path:
    path = tmp_path / "events.log"
    shutil.copyfile(DATA / "share-back.events.log", path)
    return path


def read(path: Path) -> tuple[list, list[str]]:
    warnings: list[str] = []
    return list(read_event_log(path, warnings.append)), warnings


def test_a_cut_off_last_event_is_reported_and_the_rest_read(damaged):
    whole, _ = read(damaged)
    text = damaged.read_bytes()
    damaged.write_bytes(text[: text.rindex(b"\n005 (") + 40])  # into the last terminate event
    events, warnings = read(damaged)
    assert len(events) == len(whole) - 1
    assert len(warnings) == 1
    assert str(damaged) in warnings[0] and "byte" in warnings[0] and "cut off" in warnings[0]


def test_an_unknown_event_type_is_reported_and_skipped(damaged):
    whole, _ = read(damaged)
    text = damaged.read_text()
    at = text.index("\n001 (")
    damaged.write_text(text[: at + 1] + "777" + text[at + 4:])
    events, warnings = read(damaged)
    assert len(events) == len(whole) - 1
    # Event 1 is the log's header (a generic event), 2-9 the submits and their ad information.
    assert warnings == [f"{damaged}: event 10: unknown event type 777, skipped"]


def test_text_that_is_not_an_event_is_skipped(damaged):
    whole, _ = read(damaged)
    text = damaged.read_text()
    at = text.index("\n004 (")
    damaged.write_text(text[: at + 1] + "this line is noise\n...\n" + text[at + 1:])
    events, warnings = read(damaged)
    assert [(e.kind, e.job, e.time) for e in events] == [(e.kind, e.job, e.time) for e in whole]
    assert len(warnings) == 1 and "not an event" in warnings[0] and str(damaged) in warnings[0]


def test_a_job_with_no_submit_event_is_reported_and_counted(damaged):
    text = damaged.read_text()
    start = text.index("000 (002.000.000)")
    end = text.index("...\n", text.index("028 (002.000.000)", start)) + 4
    damaged.write_text(text[:start] + text[end:])
    warnings: list[str] = []
    policy = load_policy(DATA / "share-back.policy.toml")
    result = study([LogSource(damaged)], policy.settings, interval=policy.interval,
                   read_log=read_event_log, warn=warnings.append, slots=4)
    assert len(warnings) == 1
    assert f"{damaged}: event" in warnings[0] and "(job 2.0): no submit event" in warnings[0]
    assert owners(result)["bob"].jobs == 2


def test_a_checkpointed_eviction_is_read(tmp_path):
    path = tmp_path / "ckpt.log"
    path.write_text(
        "000 (007.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "001 (007.000.000) 2026-11-22 07:00:10 Job executing on host: <127.0.0.1:9618>\n"
        "\tSlotName: slot1@vm\n...\n"
        "004 (007.000.000) 2026-11-22 07:01:10 Job was evicted.\n"
        "\t(1) Job was checkpointed.\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n...\n"
    )
    events, warnings = read(path)
    assert warnings == []
    assert [e.kind.value for e in events] == ["submit", "execute", "evict"]
    assert events[1].slot == "slot1@vm" and events[2].checkpointed
    assert events[2].time - events[0].time == 70


def test_a_missing_log_is_an_error_naming_it(tmp_path):
    with pytest.raises(LogError, match=str(tmp_path / "nope.log")):
        list(read_event_log(tmp_path / "nope.log", print))


def test_owner_names_come_from_the_ad_information_events():
    events, _ = read(DATA / "share-back.events.log")
    assert {e.owner for e in events} == {"alice", "bob"}


def test_an_event_the_bindings_cannot_parse_is_skipped(tmp_path):
    path = tmp_path / "bad.log"
    path.write_text(
        "000 (001.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "005 (001.000.000) 2026-11-22 07:00:50 Job terminated.\n"
        "\t(1) Normal termination (return value 0)\n...\n"  # its usage lines are missing
        "000 (002.000.000) 2026-11-22 07:01:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
    )
    events, warnings = read(path)
    assert [str(e.job) for e in events] == ["1.0", "2.0"]
    assert warnings == [f"{path}: event 2, before byte 183: not a readable event, skipped"]
