"""Workload logs in the Standard Workload Format: the real NASA iPSC log, and hostile lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.config.scenario import load_scenario
from osep.errors import ConfigError
from osep.sim import swf

ROOT = Path(__file__).parents[2]
NASA = ROOT / "config" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"
SHARED = ROOT.parent / "shared" / "data" / "traces" / NASA.name
GOOD = "    1        0     -1   1451  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1\n"


def test_the_bundled_log_is_the_archives_as_it_is():
    if SHARED.exists():
        assert NASA.read_bytes() == SHARED.read_bytes()


def test_the_nasa_log_reads_whole():
    work = swf.read(NASA)
    assert work.header["Computer"] == "Intel iPSC/860" and work.header["MaxProcs"] == "128"
    # 18,239 jobs in the log; 173 have no run time (-1 or 0) and are left out, counted.
    assert len(work.jobs) == 18239 - 173 and work.skipped == {"no run time": 173}
    assert {j.cpus for j in work.jobs} == {1, 2, 4, 8, 16, 32, 64, 128}
    assert len({j.owner for j in work.jobs}) == 69
    first = work.jobs[0]
    assert (first.owner, first.submit, first.runtime, first.cpus) == ("user1", 0.0, 1451.0, 128)
    groups = swf.read(NASA, owners="group", until=86400, limit=10)
    assert len(groups.jobs) == 10 and {j.owner for j in groups.jobs} <= {"group1", "group2"}


def test_bad_lines_are_counted_not_fatal():
    lines = [
        "; Computer: test\n", "\n", GOOD, "1 2 3\n", GOOD.replace("1451", "x"), GOOD.replace("1451", "-1"),
        GOOD.replace("128", "-1", 1), GOOD.replace(" 1   1  -1", "-1  -1  -1"),
        GOOD.replace("     0 ", "    -5 ", 1),
    ]
    work = swf.parse(lines)
    assert [j.owner for j in work.jobs] == ["user1", "user-unknown"]
    assert work.skipped == {"3 fields, not 18": 1, "a field that is not a number": 1,
                            "no run time": 1, "no processors": 1, "no submit time": 1}
    assert work.examples[0] == "line 4: 3 fields, not 18"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.lists(st.one_of(st.integers(-5, 10**12), st.floats(allow_nan=True), st.sampled_from(["-1", "x", "1e400"])),
             min_size=16, max_size=20).map(lambda xs: " ".join(map(str, xs))),
), max_size=30))
def test_any_text_is_read_or_accounted_for(lines):
    work = swf.parse(lines)
    data = [line for line in lines if line.strip() and not line.strip().startswith(";")]
    # every data line is a job or a counted skip (nothing is outside the default window but lines
    # the window drops, which need a submit time before 0: skipped as "no submit time" instead)
    assert len(work.jobs) + sum(work.skipped.values()) == len(data)
    assert all(0 < j.runtime < float("inf") and j.cpus > 0 and 0 <= j.submit < float("inf") for j in work.jobs)


def test_unreadable_logs_are_one_clear_error(tmp_path):
    with pytest.raises(swf.TraceError, match="no such file"):
        swf.read(tmp_path / "missing.swf")
    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(gzip.compress(GOOD.encode() * 50)[:40])
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(broken)


def scenario(tmp_path, workload):
    path = tmp_path / "scn.toml"
    # One machine of 128 cores: the log has jobs that large, and a job that fits no slot is refused.
    path.write_text("[pool]\nslots = [{ cpus = 128, partitionable = true }]\n[owners]\nuser1 = 2\n[workload]\n"
                    + workload)
    return path


@pytest.mark.parametrize("workload, key, reason", [
    ('swf = "nope.swf"\n', "workload.swf", "no such file"),
    (f'swf = "{NASA}"\nowners = "site"\n', "workload.owners", "one of user, group"),
    (f'swf = "{NASA}"\nsince = 100\nuntil = 50\n', "workload.until", "must be after since"),
    (f'swf = "{NASA}"\nsince = 99999999\n', "workload.swf", "no jobs"),
    (f'swf = "{NASA}"\ncompress = 0\n', "workload.compress", "greater than 0"),
    (f'swf = "{NASA}"\nlimt = 4\n', "workload.limt", "unknown key"),
])
def test_bad_workload_tables_name_file_key_and_reason(tmp_path, workload, key, reason):
    with pytest.raises(ConfigError) as info:
        load_scenario(scenario(tmp_path, workload))
    assert info.value.key == key and reason in info.value.reason


def test_a_workload_and_submits_together(tmp_path):
    path = scenario(tmp_path, f'swf = "{NASA}"\nlimit = 3\ncompress = 2\n'
                    '[[submit]]\nowner = "user1"\ncount = 1\nruntime = 10\n')
    s = load_scenario(path)
    assert [str(j.id) for j in s.jobs] == ["user1#0.0", "user1#0.1", "user1#0.2", "user1#0.3"]
    assert [j.submit for j in s.jobs[:3]] == [0.0, 730.0, 2599.0]  # 1460 and 5198, halved
    assert s.skipped == {}


def test_the_nasa_scenario_runs_and_osep_serves_the_owners():
    from osep.sim.experiment import run_scenario

    s = load_scenario(ROOT / "config" / "scenarios" / "nasa-ipsc.toml")
    assert len(s.jobs) == 1059 and s.capacity == 128 and s.skipped == {"no run time": 173}
    out = run_scenario(s, ("none", "osep"))
    owners = ("user4", "user2", "user1", "user8")

    def owners_pv(name):
        return sum(o.violation for o in out[name].metrics.owners if o.owner in owners)

    assert out["osep"].metrics.vacates > 0
    assert owners_pv("osep") < 0.8 * owners_pv("none")
