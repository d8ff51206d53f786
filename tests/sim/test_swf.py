"""Workload logs in the Standard Workload Format: the real NASA iPSC log, and hostile lines."""

from __future__ import annotations

import gzip
import os
import re
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import job_of
from osep import bounds
from osep.config.scenario import load_scenario
from osep.errors import ConfigError
from osep.sim import swf

ROOT = Path(__file__).parents[2]
NASA = ROOT / "osep" / "data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"
SHARED = ROOT.parent / "shared" / "data" / "traces" / NASA.name
GOOD = "    1        0     -1   1451  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1\n"


def test_the_bundled_log_is_the_archives_as_it_is():
    if SHARED.exists():
        assert NASA.read_bytes() == SHARED.read_bytes()


def test_the_nasa_log_reads_whole():
    work = swf.read(NASA)
    assert work.header["Computer"] == "Intel iPSC/860" and work.header["MaxProcs"] == "128"
    # 18,239 jobs in the log; 173 ran under half a second (run time 0) and are left out, counted.
    assert len(work.jobs) == 18239 - 173 and work.skipped == {swf.ZERO_RUNTIME: 173}
    assert work.records == 18239 and work.header_number("MaxProcs") == 128
    assert {j.cpus for j in work.jobs} == {1, 2, 4, 8, 16, 32, 64, 128}
    assert len({j.owner for j in work.jobs}) == 69
    first = work.jobs[0]
    assert (first.owner, first.submit, first.runtime, first.cpus) == ("user1", 0.0, 1451.0, 128)
    groups = swf.read(NASA, owners="group", until=86400, limit=10)
    assert len(groups.jobs) == 10 and {j.owner for j in groups.jobs} <= {"group1", "group2"}


def record(**fields):
    """A data line: GOOD with some fields (1-based numbers as f2, f11, ...) replaced."""
    parts = GOOD.split()
    for name, value in fields.items():
        parts[int(name[1:]) - 1] = str(value)
    return " ".join(parts) + "\n"


def test_bad_lines_are_counted_not_fatal():
    lines = [
        "; Computer: test\n", "\n", GOOD, "1 2 3\n", record(f4="x"), record(f4=-1), record(f4=0),
        record(f5=-1, f8=16), record(f12=-1, f13=-1), record(f2=-5), record(f4="nan"), record(f2="inf"),
        record(f2="1e400"),
        record(f4="1e400"), record(f5="1e12"), record(f11=2), record(f11=3), record(f11=4), record(f11=7),
        record(f11=5, f4=-1), record(f11=5, f4=0), record(f11=5, f4=60), record(f11=0), record(f11=1),
        record(f5=-1, f8=-1), record(f5=0, f8=4),
    ]
    work = swf.parse(lines)
    assert [(j.owner, j.runtime, j.cpus) for j in work.jobs] == [
        ("user1", 1451, 128), ("user1", 1451, 16), ("user-unknown", 1451, 128),
        ("user1", 60, 128), ("user1", 1451, 128), ("user1", 1451, 128), ("user1", 1451, 4)]
    assert work.skipped == {"3 fields, not 18": 1, swf.NOT_NUMBERS: 3, swf.NO_RUNTIME: 1, swf.ZERO_RUNTIME: 1,
                            swf.NO_PROCESSORS: 1, swf.NO_SUBMIT: 2, swf.TOO_LONG: 1, swf.TOO_MANY: 1,
                            swf.PARTIAL_RUN: 3, swf.UNKNOWN_STATUS: 1, swf.CANCELLED: 2}
    assert work.records == 24 and len(work.jobs) + sum(work.skipped.values()) == work.records
    assert work.examples[0] == "line 4: 3 fields, not 18"
    assert swf.parse([record(f4=3600)], longest=600).skipped == {swf.TOO_LONG: 1}


@pytest.mark.parametrize("naming, owner", [("user", "user1"), ("group", "group2"), ("queue", "queue0"),
                                           ("partition", "partition-unknown"), ("group.user", "group2.user1")])
def test_owners_by_any_field(naming, owner):
    work = swf.parse([record(f13=2, f15=0)], naming)
    assert [j.owner for j in work.jobs] == [owner]


def test_the_window_and_the_peak():
    lines = [record(f2=t, f3=w, f4=r, f5=c) for t, w, r, c in
             [(0, -1, 100, 2), (50, 10, 100, 3), (100, 0, 50, 1), (500, -1, 10, 8)]]
    work = swf.parse(lines, since=50, until=500)
    assert [j.submit for j in work.jobs] == [0, 50] and list(work.starts) == [60, 100]
    assert work.records == 4 and work.skipped == {}
    assert swf.peak_cores(swf.parse(lines)) == 8
    # 2 + 3 from 60 s; at 100 s the first ends as the third starts: 3 + 1, not 2 + 3 + 1
    assert swf.peak_cores(swf.parse(lines[:3])) == 5
    assert swf.parse(["; MaxProcs: lots\n"]).header_number("MaxProcs") is None


@pytest.mark.parametrize(("fields", "reason"), [
    ({"f2": -1}, swf.NO_SUBMIT), ({"f2": "-1e300"}, swf.NO_SUBMIT), ({"f2": "1e999"}, swf.NO_SUBMIT),
    ({"f2": "-inf"}, swf.NOT_NUMBERS), ({"f2": "nan"}, swf.NOT_NUMBERS),
    ({"f4": -5}, swf.NO_RUNTIME), ({"f4": "-1e999"}, swf.NO_RUNTIME), ({"f4": "-0"}, swf.ZERO_RUNTIME),
    ({"f4": "1e999"}, swf.TOO_LONG), ({"f4": "NaN"}, swf.NOT_NUMBERS),
    ({"f5": -3, "f8": -3}, swf.NO_PROCESSORS), ({"f5": "-1e999", "f8": "0.5"}, swf.NO_PROCESSORS),
    ({"f5": "1e300"}, swf.TOO_MANY), ({"f5": -1, "f8": "1e999"}, swf.TOO_MANY),
])
def test_negative_nan_and_huge_values_are_counted_skips(fields, reason):
    work = swf.parse([record(**fields)])
    assert work.jobs == [] and work.skipped == {reason: 1} and work.examples == [f"line 1: {reason}"]


def test_what_a_log_gives_is_always_fit_to_be_a_job():
    """A negative zero submit time, a fraction of a processor and a huge finite time are read, and each
    makes a Job (which refuses negative requests and times that are not finite)."""
    work = swf.parse([record(f2="-0"), record(f5="1.9"), record(f2="1e300", f3="1e300")])
    assert [(j.submit, j.cpus) for j in work.jobs] == [(0.0, 128), (0.0, 1), (1e300, 128)]
    assert all(job_of(j).submit_time == j.submit for j in work.jobs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=80),
    st.lists(st.one_of(st.integers(-5, 10**12), st.floats(allow_nan=True),
                       st.sampled_from(["-1", "x", "1e400", "nan", "-inf", "5", "2", "0", "+1", ".5", "1."])),
             min_size=16, max_size=20).map(lambda xs: " ".join(map(str, xs))),
), max_size=30))
def test_any_text_is_read_or_accounted_for(lines):
    work = swf.parse(lines)
    data = [line for line in lines if line.strip() and not line.strip().startswith(";")]
    # every data line is a job or a counted skip (nothing is outside the default window but lines
    # the window drops, which need a submit time before 0: skipped as "no submit time" instead)
    assert len(work.jobs) + sum(work.skipped.values()) == len(data) == work.records
    assert all(0 < j.runtime < float("inf") and j.cpus > 0 and 0 <= j.submit < float("inf") for j in work.jobs)
    for spec in work.jobs:
        job_of(spec)  # fit to be a Job: no negative request, no time off the clock


def test_unreadable_logs_are_one_clear_error(tmp_path):
    with pytest.raises(swf.TraceError, match="no such file"):
        swf.read(tmp_path / "missing.swf")
    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(gzip.compress(GOOD.encode() * 50)[:40])
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(broken)
    junk = tmp_path / "junk.swf.gz"
    junk.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(junk)
    corrupt = tmp_path / "corrupt.swf.gz"
    data = bytearray(gzip.compress(GOOD.encode() * 500))
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(corrupt)
    with pytest.raises(swf.TraceError, match="a directory, not a workload log"):
        swf.read(tmp_path)
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(tmp_path / ("x" * 300))
    binary = tmp_path / "binary.swf"
    binary.write_bytes(bytes(range(256)) * 10 + b"\n" + GOOD.encode())
    work = swf.read(binary)
    assert len(work.jobs) == 1 and sum(work.skipped.values()) >= 1


def test_the_logs_read_plain_as_compressed(tmp_path):
    plain = tmp_path / NASA.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(NASA.read_bytes()))
    a, b = swf.read(plain, until=86400), swf.read(NASA, until=86400)
    assert a.jobs == b.jobs and a.skipped == b.skipped and a.header == b.header


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
    from osep.experiment.runs import run_scenario

    s = load_scenario(ROOT / "osep" / "data" / "scenarios" / "nasa-ipsc.toml")
    assert len(s.jobs) == 1059 and s.capacity == 128 and s.skipped == {swf.ZERO_RUNTIME: 173}
    out = run_scenario(s, ("greedy", "osep"))
    owners = ("user4", "user2", "user1", "user8")

    def owners_pv(name):
        return sum(o.violation for o in out[name].metrics.owners if o.owner in owners)

    assert out["osep"].metrics.vacates > 0
    assert owners_pv("osep") < 0.8 * owners_pv("greedy")


def test_long_numbers_are_read_in_linear_time():
    """A line of long digit runs that fails at its end (the reader's pattern must not backtrack)."""
    line = " ".join(["1" * 5000] * 17) + " x"
    assert swf.parse([line]).skipped == {swf.NOT_NUMBERS: 1}


# -- what a hostile log may cost: each bound, and the header numbers -------------------------------

@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1\u00b2", "9" * 5000, "0" * 11 + "64", "-64", "64.0", ""])
def test_a_header_number_is_ascii_digits_or_none(value):
    """``str.isdigit`` takes a superscript two, which ``int`` refuses; ``int`` refuses 5,000 digits."""
    work = swf.parse([f"; MaxProcs: {value}\n", GOOD])
    assert work.header_number("MaxProcs") is None and len(work.jobs) == 1


def test_a_header_keeps_its_first_keys_and_cuts_long_values(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_TRACE_HEADER_KEYS", 3)
    lines = [f"; K{k}: {k}\n" for k in range(10)] + [GOOD]
    assert swf.parse(lines).header == {"K0": "0", "K1": "1", "K2": "2"}
    work = swf.parse(["; Note: " + "x" * 5000 + "\n", "; " + "k" * 5000 + ": 1\n"])
    assert {len(k): len(v) for k, v in work.header.items()} == {4: 1000, 1000: 1}


def gzip_file(path, chunk, count):
    """A gzip file of ``chunk`` repeated ``count`` times, compressed a piece at a time."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        for _ in range(count):
            out.write(packer.compress(chunk))
        out.write(packer.flush())
    return path


def test_a_line_longer_than_the_bound_is_an_error_naming_it(tmp_path):
    """Read with a bounded readline: a 64 MiB line costs no more memory than a short one."""
    log = gzip_file(tmp_path / "long.swf.gz", GOOD.encode() + b"7" * (1 << 20), 64)
    tracemalloc.start()
    try:
        with pytest.raises(swf.TraceError, match=r"line 2 is longer than 65,536 characters"):
            swf.read(log)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    fits = tmp_path / "fits.swf"
    fits.write_text("; Note: " + "x" * (bounds.MAX_TRACE_LINE - 9) + "\n" + GOOD)
    assert len(swf.read(fits).jobs) == 1


def test_the_bytes_past_the_bound_are_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_TRACE_BYTES", 100 * len(GOOD))
    log = gzip_file(tmp_path / "big.swf.gz", GOOD.encode(), 101)
    with pytest.raises(swf.TraceError, match=r"big\.swf\.gz: more than 9,200 bytes \(uncompressed\), more than "
                                             r"osep reads of a log: give it a part of the log \(such as"):
        swf.read(log)
    assert len(swf.read(gzip_file(tmp_path / "fits.swf.gz", GOOD.encode(), 100)).jobs) == 100
    with pytest.raises(swf.TraceError, match="more than 9,200 bytes"):
        swf.read(gzip_file(tmp_path / "zeros.swf.gz", b"\n" * 1000, 12))


def test_records_past_the_bound_are_an_error(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_TRACE_RECORDS", 5)
    assert len(swf.parse([GOOD] * 5).jobs) == 5
    with pytest.raises(swf.TraceError, match=r"more than 5 records \(data lines\)"):
        swf.parse([GOOD] * 6)
    assert len(swf.parse([GOOD] * 6, limit=3).jobs) == 3  # --limit stops the reading before


def test_lines_that_are_no_record_past_the_bound_are_an_error(monkeypatch):
    """Blank lines, comments and lines that are not 18 numbers: a billion newlines compress to 1 MiB."""
    monkeypatch.setattr(bounds, "MAX_TRACE_OTHER_LINES", 4)
    assert len(swf.parse(["\n", "; c\n", "x\n", GOOD, "1 2\n", GOOD]).jobs) == 2
    with pytest.raises(swf.TraceError, match=r"more than 4 lines that are no record \(blank, comments, or not "
                                             r"18 numbers\) by line 6: is it a log"):
        swf.parse(["\n", "; c\n", "x\n", GOOD, "1 2\n", "\n", GOOD])


def test_a_line_of_many_fields_is_counted_cheaply():
    work = swf.parse([" ".join(["1"] * 30000), " ".join(["1"] * 100), " ".join(["1"] * 101)])
    assert work.skipped == {"more than 100 fields, not 18": 2, "100 fields, not 18": 1}


def test_what_is_no_regular_file_is_refused_unopened(tmp_path):
    fifo = tmp_path / "fifo.swf"
    os.mkfifo(fifo)
    with pytest.raises(swf.TraceError, match=r"fifo\.swf: not a regular file"):
        swf.read(fifo)  # opening a FIFO with no writer would block
    with pytest.raises(swf.TraceError, match="not a regular file"):
        swf.read("/dev/zero")
    loop = tmp_path / "loop.swf"
    loop.symlink_to(loop)
    with pytest.raises(swf.TraceError, match="cannot read: Too many levels of symbolic links"):
        swf.read(loop)
    with pytest.raises(swf.TraceError, match="NUL"):
        swf.read(tmp_path / "a\0b.swf")


def test_gzip_is_read_by_its_name_or_its_first_bytes(tmp_path):
    unnamed = tmp_path / "packed.swf"
    unnamed.write_bytes(gzip.compress(GOOD.encode() * 3))
    assert len(swf.read(unnamed).jobs) == 3
    misnamed = tmp_path / "plain.swf.gz"
    misnamed.write_text(GOOD)
    with pytest.raises(swf.TraceError, match="cannot read: Not a gzipped file"):
        swf.read(misnamed)
    trailing = tmp_path / "trailing.swf.gz"
    trailing.write_bytes(gzip.compress(GOOD.encode()) + b"garbage")
    with pytest.raises(swf.TraceError, match="cannot read"):
        swf.read(trailing)


_OLD_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_OLD_RECORD = re.compile(rf"(?:{_OLD_NUMBER}\s+){{17}}{_OLD_NUMBER}")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["1", "-1", "1.", ".5", "+.5e-3", "1e", "e5", ".", "+", "1..2",
                                           "1e5.5", "\u0663", "\u00b2", "00", "1E+2", "-.e1"]),
                          st.text(alphabet="0123456789+-.eE \t\x1c\u2028\u0663x", max_size=6)),
                min_size=15, max_size=20),
       st.sampled_from([" ", "\t", "\x1c", "\u2028", "  "]))
def test_the_record_pattern_decides_as_the_first_one_did(tokens, sep):
    """The possessive pattern, and its ASCII spelling, match exactly the lines the plain one did."""
    text = sep.join(tokens).strip()
    fast = (swf._ASCII_RECORD if text.isascii() else swf._RECORD).fullmatch(text)
    assert (fast is None) == (_OLD_RECORD.fullmatch(text) is None) == (swf._RECORD.fullmatch(text) is None)
