"""The journal of finished runs: what it keeps, and what it makes of damaged or foreign files."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.plan import Target, VictimOrder
from osep.errors import ConfigError
from osep.sim.specs import Order
from osep.tune.candidates import Candidate
from osep.tune.journal import FORMAT, MAX_LINE, Journal, default_path, fingerprint
from osep.tune.sweep import Figures

A = Candidate(4, 300.0, VictimOrder.WALLCLOCK, Target.OWNER, 0.0, Order.FAIRSHARE)
B = Candidate(None, 60.0, VictimOrder.LOST_WORK, Target.FEASIBLE, 600.0, Order.FAIRSHARE)
F = Figures(10.5, 2.0, 3.0, 4, 2.5, 0.5, 75.0, "alice", 0, 100.0, "cpus")


def warnings():
    said = []
    return said, said.append


def one_run_kept(path, sweep="abc"):
    """A journal of ``sweep`` at ``path`` holding one finished run."""
    journal = Journal(path, sweep, warnings()[1])
    journal.record(("tune", A), F)
    journal.close()


def test_runs_kept_are_read_back_by_the_next_sweep(tmp_path):
    path = tmp_path / "j" / "sweep.jsonl"
    _, warn = warnings()
    first = Journal(path, "abc", warn)
    first.record(("tune", A), F)
    first.record(("check", B), F)
    first.close()
    again = Journal(path, "abc", warn)
    assert again.done == {("tune", A): F, ("check", B): F}


def test_fresh_forgets_what_the_journal_holds(tmp_path):
    path = tmp_path / "sweep.jsonl"
    one_run_kept(path)
    assert Journal(path, "abc", warnings()[1], fresh=True).done == {}


def test_another_sweeps_journal_is_refused(tmp_path):
    path = tmp_path / "sweep.jsonl"
    one_run_kept(path)
    with pytest.raises(ConfigError, match=r"not a journal of this sweep.*--fresh"):
        Journal(path, "other", warnings()[1])


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="a journal is a regular file"):
        Journal(tmp_path, "abc", warnings()[1])


def test_a_line_cut_off_by_an_interrupt_is_counted_and_run_again(tmp_path):
    path = tmp_path / "sweep.jsonl"
    said, warn = warnings()
    one_run_kept(path)
    with open(path, "a") as f:
        f.write('{"period": "tune", "candidate": {"max_vacates": 2')
    again = Journal(path, "abc", warn)
    assert again.done == {("tune", A): F}
    assert said == [f"{path}: 1 line(s) that are not a finished run left out (they run again)"]


def test_a_line_longer_than_any_run_is_never_held_whole(tmp_path):
    path = tmp_path / "sweep.jsonl"
    path.write_text(json.dumps({"format": FORMAT, "sweep": "abc"}) + "\n" + "x" * (10 * MAX_LINE) + "\n")
    said, warn = warnings()
    assert Journal(path, "abc", warn).done == {}
    assert len(said) == 1 and "1 line(s)" in said[0]


@settings(max_examples=200)
@given(st.lists(st.one_of(
    st.binary(max_size=200),
    st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(st.sampled_from(["period", "candidate", "figures"]),
                                                                 st.one_of(st.none(), st.integers(), st.text(),
                                                                           st.dictionaries(st.text(), st.integers())))),
), max_size=10))
def test_any_damage_is_left_out_and_counted_never_an_exception(lines):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "j.jsonl"
        good = json.dumps({"period": "tune", "candidate": A.as_dict(), "figures": F.as_dict()}).encode()
        body = b"\n".join([good, *(line.replace(b"\n", b" ") for line in lines), good])
        path.write_bytes(json.dumps({"format": FORMAT, "sweep": "s"}).encode() + b"\n" + body + b"\n")
        journal = Journal(path, "s", warnings()[1])
        assert journal.done == {("tune", A): F}


def test_the_fingerprint_follows_the_files_contents(tmp_path):
    log = tmp_path / "a.swf"
    log.write_text("1 0 -1 10 1\n")
    before = fingerprint({"kind": "trace"}, [log])
    assert fingerprint({"kind": "trace"}, [log]) == before
    log.write_text("1 0 -1 11 1\n")
    assert fingerprint({"kind": "trace"}, [log]) != before
    assert fingerprint({"kind": "events"}, [log]) != fingerprint({"kind": "trace"}, [log])


def test_the_fingerprint_of_a_missing_file_is_a_one_line_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read it"):
        fingerprint({}, [tmp_path / "gone"])


def test_journals_are_kept_in_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path("f" * 64) == tmp_path / "osep" / "tune" / ("f" * 32 + ".jsonl")
