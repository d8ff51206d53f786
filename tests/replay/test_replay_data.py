"""Replay of event logs recorded on the live test pool (tests/data/, re-recorded by
scripts/record_logs.py), against figures worked out by hand from the events in those files, and the
reader against HTCondor's own parser (the bindings') on the same files. Times are seconds after each
log's first event; 4 slots; shares alice 2, bob 2 (carol none).
"""

from __future__ import annotations

import datetime
import io
import re
import shutil
import signal
from pathlib import Path

import htcondor2 as htcondor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.config.policy import load_policy
from osep.core.model import JobId
from osep.errors import LogError, OsepError
from osep.htcondor import event_text
from osep.htcondor.eventlog import read_event_log, read_event_rows
from osep.replay.decisions import read_decisions, vacates_in_order
from osep.replay.study import LogSource, WhatIf, study
from tests.replay.careful_reader import records as careful_records

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
        read_log=read_event_rows,
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
                            what_if=WhatIf(("greedy", "osep"), negotiation_interval=2,
                                           vacate_delay=0))
    doc = result.document
    assert list(doc["policies"]) == ["recorded", "greedy", "osep"]
    # The removed job never finished, so the simulated workload has the 7 others.
    assert (doc["scenario"]["what_if_jobs"], doc["scenario"]["what_if_left_out"]) == (7, 1)
    # bob waits for his share under greedy matching; osep gives it to him.
    assert doc["policies"]["greedy"]["owners"]["bob"]["PV"] > 0
    assert doc["policies"]["osep"]["owners"]["bob"]["PV"] == 0
    assert doc["policies"]["osep"]["vacates"] == 2


def test_the_pool_size_must_be_known():
    with pytest.raises(OsepError, match="--slots"):
        replay_file("no-enforcement")


def test_a_decision_log_that_gives_no_size_is_named(tmp_path):
    log = tmp_path / "osep.log"
    log.write_text('{"event": "started"}\n')
    policy = load_policy(DATA / "share-back.policy.toml")
    with pytest.raises(OsepError, match=f"^{log}: no cycle in this decision log records the pool's "
                                        "size: pass --slots N$"):
        study([LogSource(DATA / "share-back.events.log")], policy.settings, interval=2,
              read_log=read_event_rows, warn=print, decisions=log)


def test_a_what_if_pool_of_too_many_slots_is_refused():
    with pytest.raises(OsepError, match=r"^a what-if pool of 99,999,999,999 slots: at most "
                                        r"1,000,000 are simulated$"):
        replay_file("no-enforcement", slots=99_999_999_999, what_if=WhatIf(("osep",)))


def test_a_what_if_run_of_too_many_cycles_is_refused(tmp_path):
    """A log spanning seventy years (damage, or a clock gone wrong) would keep the simulated pool
    negotiating every minute for ever."""
    path = tmp_path / "long.log"
    path.write_text(
        "000 (001.000.000) 2026-11-22 07:00:00 Job submitted\n...\n"
        "001 (001.000.000) 2026-11-22 07:00:10 Job executing on host: <1.2.3.4:9618>\n...\n"
        "005 (001.000.000) 2096-11-22 07:00:50 Job terminated.\n...\n"
    )
    policy = load_policy(DATA / "share-back.policy.toml")
    with pytest.raises(OsepError, match=f"^{path}: the recorded workload spans 2,209,075,240 s, "
                                        "44,181,505 negotiation and enforcement cycles"):
        study([LogSource(path, "alice")], policy.settings, interval=300, read_log=read_event_rows,
              warn=print, slots=4, what_if=WhatIf(("osep",)))


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
    assert warnings == [f"{damaged}: event 10 (type 777): unknown event type, skipped"]


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
                   read_log=read_event_rows, warn=warnings.append, slots=4)
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


def test_an_event_is_read_from_its_header_and_an_unreadable_one_is_skipped(tmp_path):
    path = tmp_path / "bad.log"
    path.write_text(
        "000 (001.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "005 (001.000.000) 2026-11-22 07:00:50 Job terminated.\n"
        "\t(1) Normal termination (return value 0)\n...\n"  # no usage lines: replay needs none
        "000 (00x.000.000) 2026-11-22 07:01:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "000 (003.000.000) 2026-11-22 25:01:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "000 (004.000.000) 2026-11-22 07:01:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
    )
    events, warnings = read(path)
    assert [(str(e.job), e.kind.value) for e in events] == [
        ("1.0", "submit"), ("1.0", "terminate"), ("4.0", "submit")]
    assert warnings == [
        f"{path}: event 3, byte 183: not a readable event (its first line is not an event header), "
        "skipped",
        f"{path}: event 4, byte 267: submit event with a date out of bounds, skipped",
    ]


# -- the reader against HTCondor's own parser, and on what that parser cannot take --------------

HAND_WRITTEN = (  # the other header formats: ISO_DATE, UTC, SUB_SECOND; a checkpointed eviction
    "000 (007.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
    "028 (007.000.000) 2026-11-22 07:00:00 Job ad information event triggered.\n"
    'AcctGroup = "group_physics.alice"\nOwner = "alice"\n...\n'
    "001 (007.000.000) 2026-11-22 07:00:10.250Z Job executing on host: <127.0.0.1:9618>\n"
    "\tSlotName: slot1@vm\n...\n"
    "004 (007.000.000) 2026-11-22 07:01:10.999 Job was evicted.\n"
    "\t(1) Job was checkpointed.\n"
    "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
    "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
    "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n...\n"
    "001 (007.000.000) 11/22 07:02:00 Job executing on host: <127.0.0.2:9618>\n...\n"
)


def as_htcondor_reads_it(path: Path) -> list[tuple]:
    """What HTCondor's parser makes of a good log, in the reader's terms."""
    out: list[tuple] = []
    for raw in htcondor.JobEventLog(str(path)).events(0):
        number = int(raw["EventTypeNumber"])
        if number == event_text.AD_INFORMATION:
            if out and out[-1][1:3] == (raw.cluster, raw.proc):
                group = raw.get("AcctGroup")
                out[-1] = (*out[-1][:-1], group if isinstance(group, str) else raw["Owner"])
            continue
        kind = event_text.EVENT_KINDS.get(number)
        if kind is None:
            continue
        when = datetime.datetime.fromisoformat(str(raw["EventTime"])).timestamp()
        slot = (raw.get("SlotName") or raw.get("ExecuteHost")) if kind.value == "execute" else None
        ckpt = bool(raw.get("Checkpointed", False)) if kind.value == "evict" else False
        out.append((kind, raw.cluster, raw.proc, when, slot, ckpt, None))
    return out


@pytest.mark.parametrize("name", ["share-back.events.log", "no-enforcement.events.log", "hand"])
def test_the_reader_reads_what_htcondor_reads(tmp_path, name):
    path = DATA / name
    if name == "hand":
        path = tmp_path / "hand.log"
        path.write_text(HAND_WRITTEN)
    events, warnings = read(path)
    assert warnings == []
    assert [(e.kind, e.job.cluster, e.job.proc, e.time, e.slot, e.checkpointed, e.owner)
            for e in events] == as_htcondor_reads_it(path)


def test_the_hand_written_log_reads_as_written(tmp_path):
    path = tmp_path / "hand.log"
    path.write_text(HAND_WRITTEN)
    events, _ = read(path)
    utc = datetime.datetime(2026, 11, 22, 7, 0, 10, 250_000, datetime.UTC).timestamp()
    assert events[1].time == utc  # Z: UTC (the tests run in UTC, but this holds anywhere)
    assert events[2].time - events[0].time == pytest.approx(70.999)
    assert events[0].owner == "group_physics.alice"  # the accounting group, as owner_of takes it
    assert (events[2].checkpointed, events[3].slot) == (True, "<127.0.0.2:9618>")


@pytest.fixture
def guard():
    """Fails a test still running after 20 s (HTCondor's parser sleeps a second on every event it
    cannot read)."""

    def alarm(signum, frame):
        raise TimeoutError("still reading after 20 s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_one_changed_byte_inside_a_value_is_counted(damaged, guard):
    """The issue's case: a byte that is not UTF-8 inside an attribute value ended replay with a
    UnicodeDecodeError from the bindings."""
    text = damaged.read_bytes()
    at = text.index(b'Owner = "bob"') + 10
    damaged.write_bytes(text[:at] + b"\xff" + text[at + 1:])
    events, warnings = read(damaged)
    assert len(events) == 22
    assert warnings == [f"{damaged}: event 27: job ad information with an Owner or AcctGroup "
                        "that is not a name, ignored"]
    assert next(e.owner for e in events if str(e.job) == "2.0") is None


def test_many_damaged_events_are_read_at_once(damaged, guard):
    """Fifty events HTCondor's parser cannot read would take it fifty seconds."""
    text = damaged.read_text()
    damaged.write_text(text.replace(" 11/22 07:", " 99/99 07:").replace(") 99/99", ") 11/22", 6)
                       * 3)
    events, warnings = read(damaged)
    assert len(events) < 22 and len(warnings) == 4  # one line per kind of event
    assert all(" times: " in w and "event with a date out of bounds" in w for w in warnings)


@pytest.mark.parametrize("date, readable", [
    ("1970-01-01 00:00:00", True),
    ("2099-12-31 23:59:59", True),
    ("1969-12-31 23:59:59", False),
    ("2100-01-01 00:00:00", False),
    ("9999-12-31 23:59:59", False),
    ("2026-02-30 12:00:00", False),
    ("2026-11-22 24:00:00", False),
    ("13/01 12:00:00", False),
    ("00/00 00:00:00", False),
])
def test_dates_are_bounded(tmp_path, date, readable):
    path = tmp_path / "dates.log"
    path.write_text(f"000 (001.000.000) 2026-11-22 07:00:00 Job submitted\n...\n"
                    f"000 (002.000.000) {date} Job submitted\n...\n")
    events, warnings = read(path)
    assert len(events) == (2 if readable else 1)
    assert warnings == ([] if readable else
                        [f"{path}: event 2, byte 56: submit event with a date out of bounds, skipped"])


@pytest.mark.parametrize("job, readable", [
    ("000.000.000", True),
    ("2147483647.2147483647.000", True),
    ("2147483648.000.000", False),
    ("-1.000.000", False),
    ("001.-5.000", False),
])
def test_job_ids_are_bounded(tmp_path, job, readable):
    path = tmp_path / "ids.log"
    path.write_text(f"000 ({job}) 2026-11-22 07:00:00 Job submitted\n...\n")
    if readable:
        assert len(read(path)[0]) == 1
    else:
        with pytest.raises(LogError, match="job id out of bounds"):
            read(path)


def test_events_that_lost_their_end_lines_are_read(damaged):
    whole, _ = read(damaged)
    damaged.write_text(damaged.read_text().replace("\n...\n", "\n", 10))
    events, warnings = read(damaged)
    assert events == whole
    assert warnings == [f"{damaged}: 10 times: an event not ended by a '...' line (read all the "
                        "same) (event 1; event 2; event 3; ...)"]


@pytest.mark.parametrize("attributes, owner, bad", [
    ('Owner = "alice"', "alice", False),
    ('AcctGroup = "physics"\nOwner = "alice"', "physics", False),
    ('AcctGroup = undefined\nOwner = "alice"', "alice", False),
    ('AcctGroup = ""\nOwner = "alice"', "alice", False),
    # As the live daemon takes them: the identity the negotiator charges.
    ('AccountingGroup = "group_x.alice"\nAcctGroup = "group_x"\nOwner = "alice"', "group_x", False),
    ('AccountingGroup = "carol"\nOwner = "alice"', "carol", False),
    ("Owner = 5", None, True),
    ('Owner = "a\\"b"', None, True),  # escaped: no name has that
    ('Owner = "' + "x" * 2000 + '"', None, True),
    ('Owner = "\x1b[31m"', None, True),
    ("Cluster = 1", None, False),  # no owner named: the file's (OWNER=FILE) counts
])
def test_owners_from_ad_information(tmp_path, attributes, owner, bad):
    path = tmp_path / "owners.log"
    path.write_text("000 (001.000.000) 2026-11-22 07:00:00 Job submitted\n...\n"
                    f"028 (001.000.000) 2026-11-22 07:00:00 Job ad information\n{attributes}\n...\n")
    events, warnings = read(path)
    assert events[0].owner == owner
    assert bool(warnings) is bad


def test_an_event_longer_than_the_bound_is_skipped(damaged):
    whole, _ = read(damaged)
    text = damaged.read_bytes()
    at = text.index(b'Owner = "bob"') + 9
    damaged.write_bytes(text[:at] + b"b" * (5 << 20) + text[at:])
    events, warnings = read(damaged)
    assert len(events) == len(whole)
    start, end = text.rindex(b"\n...\n", 0, at) + 5, text.index(b"\n...\n", at) + 5 + (5 << 20)
    assert warnings == [f"{damaged}: bytes {start} to {end}: an event longer than 4 MiB, skipped"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"...", b"\r", b"x", b"\n...\n", b"\n...\r\n", b"....",
                                 b"...\n", b"000 (1.0.0) 11/22 07:00:00 J\n"]), max_size=60),
       st.integers(1, 40), st.integers(1, 40))
def test_records_cover_the_file_whatever_the_block(parts, block, limit):
    """The file is cut into the same events whatever the block size, every byte is in one, and
    only one longer than the limit is left out (text None)."""
    data = b"".join(parts)
    records = list(careful_records(io.BytesIO(data), block=block, limit=limit))
    assert records == list(careful_records(io.BytesIO(data), block=10**6, limit=limit))
    assert [r[0] for r in records[1:]] == [r[1] for r in records[:-1]]
    if records:
        assert (records[0][0], records[-1][1]) == (0, len(data))
    for start, end, text, whole in records:
        if text is None:
            assert end - start > limit
        else:
            assert len(text) <= limit and data[start:end].startswith(text)
            assert re.search(rb"\n\.\.\.\r?\n", b"\n" + text) is None  # no end line missed
            assert whole == (data[start + len(text):end].rstrip(b"\r\n") == b"...")


def test_ad_information_gives_the_whole_accounting_name_for_an_owner_tree(tmp_path):
    header = "000 (00{n}.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
    info = "028 (00{n}.000.000) 2026-11-22 07:00:00 Job ad information event triggered.\n{attrs}...\n"
    cases = {
        1: 'AccountingGroup = "group_physics.cms.alice"\nAcctGroup = "group_physics.cms"\nOwner = "alice"\n',
        2: 'Owner = "bob"\n',  # no group logged: the owner is the whole name
        3: 'AcctGroup = "group_chem"\nOwner = "carol"\n',  # a group alone
        4: 'AccountingGroup = "' + "g" * 2000 + '"\nOwner = "dave"\n',  # too long a name: counted, ignored
    }
    path = tmp_path / "groups.log"
    path.write_text("".join(header.format(n=n) + info.format(n=n, attrs=a) for n, a in cases.items()))
    events, warnings = read(path)
    got = {e.job.cluster: (e.owner, e.account) for e in events}
    assert got[1] == ("group_physics.cms", "group_physics.cms.alice")
    assert got[2] == ("bob", "bob")
    assert got[3] == ("group_chem", "group_chem")
    assert got[4] == (None, None)
    assert len(warnings) == 1 and "not a name" in warnings[0]


def test_the_decision_log_read_for_replay_holds_no_actions_and_streams_its_vacates(tmp_path):
    path = DATA / "share-back.decisions.jsonl"
    whole = read_decisions(path, pytest.fail)
    counted = read_decisions(path, pytest.fail, actions=False)
    assert counted.actions == [] and whole.actions
    assert (counted.capacity, counted.cycles, counted.vacates, counted.vacates_ordered) == (
        whole.capacity, whole.cycles, whole.vacates, True)
    streamed: dict = {}
    for when, job in vacates_in_order(path):
        streamed.setdefault(job, []).append(when)
    assert streamed == whole.vacates_sent() and counted.vacates == 2
    # Kept by the first reading, they are what the stream gives; one too many, and none are kept.
    kept = read_decisions(path, pytest.fail, actions=False, keep=2).kept_in_order()
    assert kept is not None and list(kept) == list(vacates_in_order(path))
    assert read_decisions(path, pytest.fail, actions=False, keep=1).kept_in_order() is None
    assert counted.kept_in_order() is None
    # Out of order (a clock set back): replay then reads the log whole.
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join(
        f'{{"event": "action", "kind": "vacate", "cycle": 1, "time": {t}, "job": "{job}", '
        f'"outcome": "done"}}\n' for t, job in ((200, "1.0"), (100, "2.0"))))
    backwards = read_decisions(shuffled, pytest.fail, actions=False)
    assert (backwards.vacates, backwards.vacates_ordered) == (2, False)


def test_the_vacates_streamed_are_those_read_whole_when_lines_are_passed_over_unparsed(tmp_path):
    # The stream parses only lines that hold "vacate" or a backslash: a kind spelled with JSON
    # escapes is still found, and damage and other lines (none of it a vacate) change nothing.
    path = tmp_path / "escaped.jsonl"
    lines = [
        '{"event": "started"}',
        '{"event": "cycle", "cycle": 1, "time": 100, "capacity": 4}',
        '{"event": "action", "kind": "\\u0076acate", "cycle": 1, "time": 100, "job": "cm#1.0", '
        '"outcome": "done"}',
        '{"event": "action", "kind": "claim", "cycle": 1, "time": 100, "slot": "slot1@a", '
        '"outcome": "done"}',
        'not json, not a vacate',
        '{"event": "action", "kind": "vacate", "cycle": 2, "time": 160, "job": "cm#2.0", '
        '"outcome": "done"}',
        '{"event": "action", "kind": "vacate", "cycle": 2, "time": 170, "job": "cm#3.0", '
        '"outcome": "failed"}',
        '{"event": "action", "kind": "vacate", "cycle": 3, "time": "soon", "job": "cm#4.0", '
        '"outcome": "done"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    warnings: list[str] = []
    whole = read_decisions(path, warnings.append)
    assert len(warnings) == 2  # the line that is not JSON, the vacate with a bad time
    streamed: dict = {}
    for when, job in vacates_in_order(path):
        streamed.setdefault(job, []).append(when)
    assert streamed == whole.vacates_sent() == {JobId("", 1, 0): [100.0], JobId("", 2, 0): [160.0]}
    kept = read_decisions(path, lambda _: None, actions=False, keep=10).kept_in_order()
    assert kept is not None and list(kept) == list(vacates_in_order(path))
    # A log whose only objects are lines the stream passes over, with damage it parses, still
    # streams (read_decisions, which runs first, is the one that refuses a file that is not a log).
    quiet = tmp_path / "quiet.jsonl"
    quiet.write_text('{"event": "cycle", "cycle": 1, "time": 100, "capacity": 4}\nvacate?\n')
    assert list(vacates_in_order(quiet)) == []
