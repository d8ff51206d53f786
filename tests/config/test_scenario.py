"""Scenario files, good and bad."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cli_runner, job_of
from osep import bounds as B
from osep.config.scenario import load_scenario
from osep.errors import ConfigError
from osep.sim.specs import Checkpointing
from osep.ui.cli import cli

ROOT = Path(__file__).parents[2]
BASE = """
[pool]
slots = 4
[owners]
a = 2
b = 2
[[submit]]
owner = "a"
count = 2
runtime = 100
"""


def write(tmp_path, text):
    path = tmp_path / "scn.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["paper-job-size", "paper-general", "machines"])
def test_bundled_scenarios_load(name):
    scenario = load_scenario(ROOT / "osep" / "data" / "scenarios" / f"{name}.toml")
    assert scenario.policies == ("greedy", "fairshare", "osep", "osep-ckpt")
    assert scenario.pool.checkpointing is Checkpointing.ON_VACATE


def test_paper_general_matches_the_paper():
    s = load_scenario(ROOT / "osep" / "data" / "scenarios" / "paper-general.toml")
    assert s.capacity == 20
    assert s.policy.shares.resolve(20) == {"owner1": 6, "owner2": 8, "owner3": 3, "owner4": 3}
    assert len(s.jobs) == 60
    assert {j.submit for j in s.jobs if j.owner == "owner4"} == {210}
    assert min(j.runtime for j in s.jobs) == 600 and max(j.runtime for j in s.jobs) == 3600


def test_minimal_scenario_defaults(tmp_path):
    s = load_scenario(write(tmp_path, BASE))
    assert [str(j.id) for j in s.jobs] == ["a#0.0", "a#0.1"]
    assert s.pool.negotiation_interval == 60 and s.pool.vacate_delay == 10
    assert s.policies == ("greedy", "fairshare", "osep", "osep-ckpt")


def test_partitionable_machines(tmp_path):
    s = load_scenario(ROOT / "osep" / "data" / "scenarios" / "machines.toml")
    assert [(x.cpus, x.memory, x.gpus, x.partitionable) for x in s.slots] == [(5, 5120, 1, True)] * 4
    assert s.capacity == 20  # one slot per core
    assert {(j.cpus, j.memory) for j in s.jobs if j.owner == "owner2"} == {(4, 2048)}
    bad = BASE.replace("slots = 4", "") + "[[pool.slots]]\ncpus = 4\npartitionable = \"yes\"\n"
    with pytest.raises(ConfigError) as info:
        load_scenario(write(tmp_path, bad))
    assert info.value.key == "pool.slots[0].partitionable"


def test_slot_groups(tmp_path):
    text = (BASE.replace("slots = 4", "")
            + "[[pool.slots]]\ncount = 2\ncpus = 4\nmemory = 8192\n[[pool.slots]]\ncount = 1\n")
    s = load_scenario(write(tmp_path, text))
    assert [(x.cpus, x.memory) for x in s.slots] == [(4, 8192), (4, 8192), (1, None)]


@pytest.mark.parametrize(
    "change, key, reason",
    [
        (lambda t: t.replace("a = 2", "a = -2"), "owners.a", "negative"),
        (lambda t: t.replace("b = 2", 'b = "50%"'), "owners.b", "different kinds"),
        (lambda t: "[scenario]\npolicies = [\"osep\", \"fairshare\", \"osepp\"]\n" + t,
         "scenario.policies", "did you mean 'osep'"),
        (lambda t: "[scenario]\npolicy = [\"osep\"]\n" + t, "scenario.policy", "unknown key"),
        (lambda t: t.replace("runtime = 100", "runtime = -5"), "submit[0].runtime", "greater than 0"),
        (lambda t: t.replace("runtime = 100", "runtimes = [1, 2, 3]"), "submit[0].count", "runtimes has 3"),
        (lambda t: t.replace("runtime = 100", "runtime = 100\nruntimes = [1, 2]"), "submit[0].runtime", "not both"),
        (lambda t: t.replace("runtime = 100", "runtimes = [1, 0]"), "submit[0].runtimes[1]", "greater than 0"),
        (lambda t: t.replace("count = 2", "cuont = 2"), "submit[0].cuont", "did you mean 'count'"),
        (lambda t: t.replace("slots = 4", "slots = 0"), "pool.slots", "greater than 0"),
        (lambda t: t.replace("slots = 4", "negotiation_interval = 60"), "pool.slots", "missing"),
        (lambda t: t.split("[[submit]]")[0], "submit", "no [[submit]]"),
        (lambda t: t + "[checkpoint]\nmode = \"periodic\"\n", "checkpoint.interval", "needs an interval"),
        (lambda t: t + "[checkpoint]\nmode = \"always\"\n", "checkpoint.mode", "expected one of"),
        (lambda t: t + "[fairshare]\nusage = { a = -1 }\n", "fairshare.usage.a", "at least 0"),
        (lambda t: t + "[policy]\ntarget = \"fair\"\n", "policy.target", "expected one of"),
        # Bounds, and names and values from the file shown escaped.
        (lambda t: t.replace("slots = 4", "slots = 1000000000"), "pool.slots", "at most 10,000"),
        (lambda t: t.replace("slots = 4", "slots = 4.5"), "pool.slots", "whole number"),
        (lambda t: t.replace("slots = 4", "slots = [{ count = 6000 }, { count = 6000 }]"), "pool.slots[1].count",
         "more than 10,000 slots"),
        (lambda t: t.replace("slots = 4", "slots = [{ cpus = 5000 }]"), "pool.slots[0].cpus", "at most 4,096"),
        (lambda t: t.replace("slots = 4", "slots = [{ gpus = 2000 }]"), "pool.slots[0].gpus", "at most 1,024"),
        (lambda t: t.replace("slots = 4", "slots = 4\nnegotiation_interval = 1e-300"),
         "pool.negotiation_interval", "at least 1"),
        (lambda t: t.replace("slots = 4", "slots = 4\nnegotiation_interval = 1e300"),
         "pool.negotiation_interval", "at most 86,400"),
        (lambda t: t.replace("slots = 4", "slots = 4\nvacate_delay = inf"), "pool.vacate_delay", "finite"),
        (lambda t: t.replace("slots = 4", "slots = 4\nreservation_timeout = 0.5"), "pool.reservation_timeout",
         "at least 1"),
        (lambda t: t.replace("count = 2", "count = 100000000"), "submit[0].count", "at most 1,000,000"),
        (lambda t: t.replace("runtime = 100", "runtime = 1e300"), "submit[0].runtime", "at most 100,000,000"),
        (lambda t: t.replace("runtime = 100", "runtime = nan"), "submit[0].runtime", "finite"),
        (lambda t: t.replace("runtime = 100", "runtimes = [100, inf]"), "submit[0].runtimes[1]", "finite"),
        (lambda t: t.replace("runtime = 100", "runtimes = [100, nan]"), "submit[0].runtimes[1]", "finite"),
        (lambda t: t.replace("count = 2", "count = 2\ntime = 1e300"), "submit[0].time", "at most 100,000,000"),
        (lambda t: t.replace("count = 2", "count = 2\ncpus = 2"), "submit[0]", "no slot of the pool has that much"),
        (lambda t: t.replace('owner = "a"', 'owner = "a\\u001b[2J"'), "submit[0].owner", "must be printable"),
        (lambda t: t + "[[submit]]\nowner = 'a'\nruntime = 1\ncount = 999999\n", "submit[1]",
         "more than 1,000,000 jobs"),
        (lambda t: "[scenario]\nhorizon = 1e9\n" + t, "scenario.horizon", "at most 100,000,000"),
        (lambda t: "[scenario]\nhorizon = 9e7\n" + t, "scenario.horizon", "a simulation stops by"),
        (lambda t: "[scenario]\nname = \"a\\nb\"\n" + t, "scenario.name", "printable"),
        (lambda t: "[scenario]\npolicies = [\"" + "x" * 1000 + "\"]\n" + t, "scenario.policies", "... (1,000"),
        (lambda t: t.replace("runtime = 100", "runtime = 9e7"), "submit[0]", "a job cannot end before 90,000,000 s"),
        (lambda t: t + "[checkpoint]\nmode = \"periodic\"\ninterval = 1e-300\n", "checkpoint.interval",
         "must be 0 or at least 1"),
        (lambda t: t + "[fairshare]\nhalf_life = 1e-300\n", "fairshare.half_life", "at least 1"),
        (lambda t: t + "[fairshare]\nusage = { a = 1e300 }\n", "fairshare.usage.a", "at most 1e+15"),
        (lambda t: t + "[fairshare]\nusage = { \"a\\nb\" = 1 }\n", 'fairshare.usage."a\\nb"', "printable"),
        (lambda t: t + "[fairshare]\ndampening = 0\n", "fairshare.dampening", "at least"),
        (lambda t: t + "[fairshare]\nk5 = 0.5\n", "fairshare.k5", "at least 1"),
        (lambda t: t + "[fairshare]\nk6_tolerance = 2\n", "fairshare.k6_tolerance", "at most 1"),
        (lambda t: t + "[fairshare.cambridge]\nprice_limit = 256\n", "fairshare.cambridge.price_limit",
         "at most 255"),
        (lambda t: t + "[fairshare.cambridge]\nunit = -1\n", "fairshare.cambridge.unit", "at least"),
        (lambda t: t + "[fairshare.cambridge]\ndeferal = 60\n", "fairshare.cambridge.deferal",
         "did you mean 'deferral'"),
        (lambda t: t + "[policy]\nexcess = \"share\"\ntarget = \"feasible\"\n", "policy.excess",
         "needs target"),
    ],
)
def test_bad_scenario(tmp_path, change, key, reason):
    path = write(tmp_path, change(BASE))
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert info.value.path == str(path)
    assert info.value.key == key
    assert reason in info.value.reason
    assert "\n" not in str(info.value) and str(info.value).isprintable()


def fails(load, path):
    with pytest.raises(ConfigError) as info:
        load(path)
    assert "\n" not in str(info.value) and str(info.value).isprintable()
    return info.value


def test_workload_bounds(tmp_path, monkeypatch):
    (tmp_path / "traces").symlink_to(ROOT / "osep" / "data" / "traces")
    base = ("[pool]\nslots = [{ cpus = 128, partitionable = true }]\n[owners]\nuser1 = 1\n[workload]\n"
            'swf = "traces/NASA-iPSC-1993-3.1-cln.swf.gz"\n')
    for extra, key, reason in [
        ("limit = 10\ncompress = 1e-300\n", "workload.compress", "at least 0.001"),
        ("limit = 10\nsince = 1e300\n", "workload.since", "at most 10,000,000,000"),
        ("limit = 10\nlimit = 0\n", "line 8, column 10", "Cannot overwrite"),
        ("limit = 1000\ncompress = 0.001\n", "workload.swf", "times are at most 100,000,000 s"),
    ]:
        err = fails(load_scenario, write(tmp_path, base + extra))
        assert err.key == key and reason in err.reason
    small = base.replace("cpus = 128", "cpus = 64") + "limit = 5\n"
    err = fails(load_scenario, write(tmp_path, small))
    assert err.key == "workload" and "asks for 128 cores" in err.reason
    monkeypatch.setattr(B, "MAX_JOBS", 100)
    (tmp_path / "many.swf").write_text("".join(f"{n} {n} -1 10 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                                               for n in range(B.MAX_JOBS + 5)))
    many = base.replace("traces/NASA-iPSC-1993-3.1-cln.swf.gz", "many.swf")
    err = fails(load_scenario, write(tmp_path, many))
    assert err.key == "workload.swf" and "more than 100 jobs" in err.reason
    long = base.replace("traces/NASA-iPSC-1993-3.1-cln.swf.gz", "x" * 300)
    assert "File name too long" in fails(load_scenario, write(tmp_path, long)).reason


def test_the_simulation_limit_follows_t_from_the_command_line(tmp_path):
    path = write(tmp_path, BASE.replace("runtime = 100", "runtime = 1000000"))
    assert load_scenario(path).pool.horizon == pytest.approx(B.MAX_CYCLES / (1 / 60 + 1 / 300))
    err = fails(lambda p: load_scenario(p, interval=1.0), path)
    assert err.key == "submit[0]" and "every 1 s (-t)" in err.reason
    result = cli_runner().invoke(cli, ["simulate", str(path), "-t", "1"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "(-t)" in result.stderr
    result = cli_runner().invoke(cli, ["simulate", str(path), "-t", "1e-300"])
    assert result.exit_code == 2 and "1e-300" in result.stderr  # click's range check: nothing runs


def _unbounded(path: Path) -> bool:
    """A bundled scenario that does not stop at a horizon of its own."""
    import tomllib

    return "horizon" not in tomllib.loads(path.read_text())["scenario"]


@pytest.mark.parametrize("path", [p for p in sorted((ROOT / "osep" / "data" / "scenarios").glob("*.toml"))
                                  if _unbounded(p)], ids=lambda p: p.stem)
def test_the_limit_does_not_change_the_bundled_scenarios(path):
    """The horizon osep sets lies beyond the end of every bundled scenario: stopping there or never
    gives the same runs."""
    from osep.experiment.runs import comparison, run_scenario

    scenario = load_scenario(path)
    policies = ("osep",) if "nasa" in path.stem else None  # the NASA week: its longest run only
    bounded = comparison(scenario, run_scenario(scenario, policies))
    unbounded = replace(scenario, pool=replace(scenario.pool, horizon=None))
    assert comparison(unbounded, run_scenario(unbounded, policies)) == bounded
    assert all(p.get("unfinished", 0) == 0 for p in bounded["policies"].values())


def test_the_lcg_scenario_stops_at_its_own_horizon_with_long_jobs_still_running():
    """The LCG week is cut at its horizon (the simulator's cost bound); what ran until then is
    measured, and the jobs still running are counted, not lost."""
    from osep.experiment.runs import comparison, run_scenario

    scenario = load_scenario(ROOT / "osep" / "data" / "scenarios" / "lcg-2005.toml")
    assert scenario.pool.horizon == 2.4 * 86400 and len(scenario.jobs) == 13651
    doc = comparison(scenario, run_scenario(scenario, ("osep",)))
    osep = doc["policies"]["osep"]
    assert 0 < osep["unfinished"] < 500
    assert len(osep["groups"]) == 10 and osep["vacates"] > 0


def test_the_models_parameters_and_the_excess(tmp_path):
    text = BASE + ("[policy]\nexcess = \"slurm\"\n[fairshare]\ndampening = 2\nk5 = 3\nk6_tolerance = 0.2\n"
                   "[fairshare.cambridge]\nunit = 60\nprice_limit = 100\ndeferral = 3600\nhalf_life = 86400\n")
    s = load_scenario(write(tmp_path, text))
    m = s.pool.models
    assert (m.dampening, m.k5, m.k6_tolerance) == (2.0, 3.0, 0.2)
    assert (m.unit, m.price_limit, m.deferral, m.cambridge_half_life) == (60.0, 100.0, 3600.0, 86400.0)
    assert s.excess.value == "slurm"
    default = load_scenario(write(tmp_path, BASE)).pool.models
    assert default.price_limit is None and default.deferral == 10_800


@pytest.mark.parametrize(("table", "key", "value"), [("scenario", "policies", '["none", "osep"]'),
                                                     ("policy", "excess", '"fifo"')])
def test_the_greedy_order_s_old_names_are_refused_naming_the_valid_ones(tmp_path, table, key, value):
    # the policy once called "none" and the excess once called "fifo" are "greedy" (not first come,
    # first served: a job that does not fit is passed over); the old names get the usual one line
    result = cli_runner().invoke(cli, ["validate", str(write(tmp_path, BASE + f"[{table}]\n{key} = {value}\n"))])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{table}.{key}: " in result.stderr and "greedy" in result.stderr, result.stderr


def test_a_scenario_runs_greedy_by_its_new_name(tmp_path):
    path = write(tmp_path, BASE.replace("[pool]", "[scenario]\npolicies = [\"greedy\"]\n[policy]\nexcess = "
                                                  "\"greedy\"\n[pool]", 1))
    s = load_scenario(path)
    assert s.policies == ("greedy",) and s.excess.value == "greedy"


# A compact job list: [workload] csv = "jobs.csv".

CSV_BASE = "[pool]\nslots = [{ count = 2, cpus = 4, memory = 8192, gpus = 1, partitionable = true }]\n" \
           "[owners]\na = 1\nb = 1\n[workload]\ncsv = \"jobs.csv\"\n"


def with_csv(tmp_path, rows, extra="", encoding="utf-8"):
    (tmp_path / "jobs.csv").write_bytes(rows.encode(encoding) if isinstance(rows, str) else rows)
    return write(tmp_path, CSV_BASE + extra)


def test_a_job_list_in_csv(tmp_path):
    rows = "runtime,owner,submit,cpus,memory,gpus\n100,a,0,2,1024,1\n\n50.5, b ,10,,,\n7,a,20,1,0,0\n"
    s = load_scenario(with_csv(tmp_path, rows))
    assert [(str(j.id), j.submit, j.runtime, j.shape) for j in s.jobs] == [
        ("a#0.0", 0.0, 100.0, (2, 1024, 1, 0)), ("b#0.0", 10.0, 50.5, (1, 0, 0, 0)),
        ("a#0.1", 20.0, 7.0, (1, 0, 0, 0))]
    window = load_scenario(with_csv(tmp_path, rows, "since = 5\nuntil = 20\ncompress = 2\n"))
    assert [(j.owner, j.submit) for j in window.jobs] == [("b", 2.5)]
    assert [j.owner for j in load_scenario(with_csv(tmp_path, rows, "limit = 2\n")).jobs] == ["a", "b"]


def test_a_job_list_is_the_same_as_submit_tables(tmp_path):
    toml = load_scenario(write(tmp_path, BASE))
    (tmp_path / "jobs.csv").write_text("owner,submit,runtime\na,0,100\na,0,100\n")
    head = BASE.partition("[[submit]]")[0]
    listed = load_scenario(write(tmp_path, head + '[workload]\ncsv = "jobs.csv"\n'))
    assert listed.jobs == toml.jobs


@pytest.mark.parametrize("rows, key, reason", [
    ("", "line 1", "expected a header row"),
    ("owner,submit,runtme\n", "line 1, column 3", "did you mean 'runtime'"),
    ("owner,submit,runtime,owner\n", "line 1, column 4", "given twice"),
    ("owner,runtime\n", "line 1", "no 'submit' column"),
    ("owner,submit,runtime\n", "workload.csv", "no jobs in the job list"),
    ("owner,submit,runtime\na,0\n", "line 2", "2 cells, but the header names 3 columns"),
    ("owner,submit,runtime\na,0,1\n,0,1\n", "line 3, column 1 (owner)", "must not be empty"),
    ("owner,submit,runtime\n\"a\x1b[2J\",0,1\n", "line 2, column 1 (owner)", "printable"),
    ("owner,submit,runtime\na,nan,1\n", "line 2, column 2 (submit)", "finite"),
    ("owner,submit,runtime\na,-1,1\n", "line 2, column 2 (submit)", "at least 0"),
    ("owner,submit,runtime\na,soon,1\n", "line 2, column 2 (submit)", "a number of seconds"),
    ("owner,submit,runtime\na,0,0\n", "line 2, column 3 (runtime)", "greater than 0"),
    ("owner,submit,runtime\na,0,1e300\n", "line 2, column 3 (runtime)", "at most 100,000,000"),
    ("owner,submit,runtime\na,1e11,1\n", "line 2, column 2 (submit)", "at most 10,000,000,000"),
    ("owner,submit,runtime,cpus\na,0,1,2.5\n", "line 2, column 4 (cpus)", "whole number"),
    ("owner,submit,runtime,cpus\na,0,1,0\n", "line 2, column 4 (cpus)", "1 to 4,096"),
    ("owner,submit,runtime,gpus\na,0,1,-1\n", "line 2, column 4 (gpus)", "0 to 1,024"),
    ("owner,submit,runtime,memory\na,0,1," + "9" * 5000 + "\n", "line 2, column 4 (memory)", "whole number"),
    ("owner,submit,runtime,cpus\na,0,1,8\n", "workload", "no slot of the pool has that much"),
    ("owner,submit,runtime\na,0,1\n\"b,0,1\n", "line 3", "not valid CSV"),
    ("owner,submit,runtime\na,0,1\nb\x00,0,1\n", "line 3, column 1 (owner)", "printable"),
    (b"owner,submit,runtime\na,0,1\n\xff,0,1\n", "line 3, column 1 (owner)", "not UTF-8 text (byte 0xff)"),
    (b"owner,submit,runtime\na,0,\xff1\n", "line 2, column 3 (runtime)", "a number of seconds"),
    (b"owner,su\xffbmit,runtime\n", "line 1", "not UTF-8"),
    # negative, NaN and huge values in every column
    ("owner,submit,runtime,cpus\na,0,1,+-5\n", "line 2, column 4 (cpus)", "expected a whole number, got '+-5'"),
    ("owner,submit,runtime,cpus\na,0,1,-1\n", "line 2, column 4 (cpus)", "1 to 4,096, got -1"),
    ("owner,submit,runtime,memory\na,0,1,--1\n", "line 2, column 4 (memory)", "whole number"),
    ("owner,submit,runtime,memory\na,0,1,-1\n", "line 2, column 4 (memory)", "0 to"),
    ("owner,submit,runtime,memory\na,0,1,nan\n", "line 2, column 4 (memory)", "whole number"),
    ("owner,submit,runtime,gpus\na,0,1,1e3\n", "line 2, column 4 (gpus)", "whole number"),
    ("owner,submit,runtime,disk\na,0,1,-0x1\n", "line 2, column 4 (disk)", "whole number"),
    ("owner,submit,runtime,disk\na,0,1," + "9" * 20 + "\n", "line 2, column 4 (disk)", "0 to"),
    ("owner,submit,runtime\na,-inf,1\n", "line 2, column 2 (submit)", "finite"),
    ("owner,submit,runtime\na,1e999,1\n", "line 2, column 2 (submit)", "finite"),
    ("owner,submit,runtime\na,-0.5,1\n", "line 2, column 2 (submit)", "at least 0"),
    ("owner,submit,runtime\na,0,-1\n", "line 2, column 3 (runtime)", "greater than 0"),
    ("owner,submit,runtime\na,0,NaN\n", "line 2, column 3 (runtime)", "finite"),
    # Python's spellings of a number, not a CSV file's
    ("owner,submit,runtime\na,1_000,1\n", "line 2, column 2 (submit)", "a number of seconds, got '1_000'"),
    ("owner,submit,runtime\na,0,\uff15\n", "line 2, column 3 (runtime)", "a number of seconds"),
])
def test_bad_job_lists_name_file_line_column_and_reason(tmp_path, rows, key, reason):
    err = fails(load_scenario, with_csv(tmp_path, rows))
    assert err.key == key and reason in err.reason, str(err)


def test_bad_workload_tables_with_a_job_list(tmp_path):
    (tmp_path / "jobs.csv").write_text("owner,submit,runtime\na,0,1\n")
    for extra, key, reason in [
        ('swf = "x.swf"\n', "workload.csv", "not both"),
        ('owners = "user"\n', "workload.owners", "unknown key"),
    ]:
        err = fails(load_scenario, write(tmp_path, CSV_BASE + extra))
        assert err.key == key and reason in err.reason
    err = fails(load_scenario, write(tmp_path, CSV_BASE.replace('csv = "jobs.csv"', "")))
    assert err.key == "workload" and "give a workload log" in err.reason
    (tmp_path / "sub").mkdir()
    for name, reason in [("nope.csv", "no such file"), ("sub", "is a directory"), ("x" * 300, "cannot read")]:
        path = write(tmp_path, CSV_BASE.replace("jobs.csv", name))
        err = fails(load_scenario, path)
        assert (err.path, err.key) == (str(path), "workload.csv") and reason in err.reason


def test_job_list_bounds(tmp_path, monkeypatch):
    rows = "owner,submit,runtime\n" + "a,0,1\n" * 30
    monkeypatch.setattr(B, "MAX_JOBS", 20)
    err = fails(load_scenario, with_csv(tmp_path, rows))
    assert err.key == "workload.csv" and "more than 20 jobs" in err.reason
    monkeypatch.setattr(B, "MAX_JOB_LIST_BYTES", 100)
    err = fails(load_scenario, with_csv(tmp_path, rows))
    assert err.key == "workload.csv" and "jobs.csv: larger than 100 bytes" in err.reason


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_job_list_loads_or_is_one_line_error(text):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = with_csv(Path(tmp), "owner,submit,runtime,cpus\n" + text)
        try:
            s = load_scenario(path)
        except ConfigError as exc:
            assert "\n" not in str(exc) and str(exc).isprintable()
        else:
            assert all(j.runtime > 0 and j.submit >= 0 for j in s.jobs)


# Numbers a file may hold where a count or a time goes: negative, NaN, infinite, huge, or spelled oddly.
HOSTILE_NUMBERS = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["+-5", "--1", "-+1", "-0", "+0", "-nan", "NaN", "inf", "-inf", "1e999", "-1e999",
                     "0x10", "1_000", " 5 ", "\uff15", "1e3", "+1", "", "9" * 20]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(HOSTILE_NUMBERS, min_size=6, max_size=6), min_size=1, max_size=4))
def test_hostile_numbers_in_a_job_list_are_jobs_or_one_line_errors(rows):
    import tempfile

    from osep.config.joblist import read_job_list

    text = "owner,submit,runtime,cpus,memory,gpus,disk\n" + "".join("a," + ",".join(r) + "\n" for r in rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.csv"
        path.write_text(text)
        try:
            work = read_job_list(path)
        except ConfigError as exc:
            assert "\n" not in str(exc) and str(exc).isprintable()
        else:
            for spec in work.jobs:
                job = job_of(spec)  # a reader's job is fit to be a Job
                assert job.cpus >= 1 and min(job.memory, job.gpus, job.disk) >= 0
                assert 0 <= spec.submit <= B.MAX_TRACE_SECONDS and 0 < spec.runtime <= B.MAX_SECONDS


@pytest.mark.parametrize(("line", "key", "reason"), [
    ("cpus = -1", "submit[0].cpus", "greater than 0"),
    ("cpus = nan", "submit[0].cpus", "whole number"),
    ("cpus = 99999999999999999999", "submit[0].cpus", "at most 4,096"),
    ("memory = -1", "submit[0].memory", "at least 0"),
    ("memory = inf", "submit[0].memory", "whole number"),
    ("gpus = -1", "submit[0].gpus", "at least 0"),
    ("disk = -9223372036854775808", "submit[0].disk", "at least 0"),
    ("time = -1", "submit[0].time", "at least 0"),
    ("time = nan", "submit[0].time", "finite"),
    ("time = inf", "submit[0].time", "finite"),
    ("time = 1e300", "submit[0].time", "at most"),
    ("runtime = -inf", "submit[0].runtime", "finite"),
    ("runtime = -1", "submit[0].runtime", "greater than 0"),
    ("runtimes = [10, -1]", "submit[0].runtimes[1]", "greater than 0"),
    ("runtimes = [nan]", "submit[0].runtimes[0]", "finite"),
])
def test_negative_nan_and_huge_values_in_submit_tables_are_one_line_errors(tmp_path, line, key, reason):
    text = BASE.replace("runtime = 100", "runtime = 100\n" + line)
    if line.startswith("runtime"):
        text = BASE.replace("runtime = 100", line)
    if line.startswith("runtimes"):
        text = BASE.replace("count = 2\nruntime = 100", line)
    err = fails(load_scenario, write(tmp_path, text))
    assert err.key == key and reason in err.reason, str(err)


SUBMIT_KEYS = ("time", "runtime", "cpus", "memory", "gpus", "disk")


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(SUBMIT_KEYS), HOSTILE_NUMBERS.filter(lambda t: t.strip() != ""), min_size=1))
def test_hostile_numbers_in_submit_tables_are_jobs_or_one_line_errors(values):
    import tempfile

    table = "".join(f"{k} = {v.strip()}\n" for k, v in values.items())
    if "runtime" not in values:
        table += "runtime = 100\n"
    text = ("[pool]\nslots = [{ cpus = 4096, partitionable = true }]\n[owners]\na = 1\n"
            "[[submit]]\nowner = \"a\"\n" + table)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            scenario = load_scenario(write(Path(tmp), text))
        except ConfigError as exc:
            assert "\n" not in str(exc) and str(exc).isprintable()
        else:
            assert scenario.jobs and all(job_of(spec).cpus >= 1 for spec in scenario.jobs)


def test_validate_reads_a_scenario_once(tmp_path, monkeypatch):
    from osep.config import scenario as module

    reads = []
    real = module.read_toml
    monkeypatch.setattr(module, "read_toml", lambda p: reads.append(p) or real(p))
    import osep.ui.cmd_files as files

    real_files = files.read_toml
    monkeypatch.setattr(files, "read_toml", lambda p: reads.append(p) or real_files(p))
    result = cli_runner().invoke(cli, ["validate", str(write(tmp_path, "[scenario]\n" + BASE))])
    assert result.exit_code == 0 and len(reads) == 1


def test_the_simulation_limit_lets_the_whole_lcg_log_run_and_still_bounds_a_busy_pool():
    # The whole LCG 2005 log as `osep simulate --trace` runs it on 1,580 slots (owners group.user):
    # its last job ends at 1,123,132 s, which the bound before issue 11 stopped at 15,865 s.
    from osep.config.scenario import simulation_limit

    assert simulation_limit(60, 300, 1_580, 187_520, 231) > 1_123_132
    # What docs/simulate.md's "Bounds" measures at the limit: 10,000 slots with cycles of 1 s, 8,000 pairs.
    assert simulation_limit(1, 1, 10_000, 0, 2) == pytest.approx(B.MAX_WORK / (10_000 + 40 + 2))
    # Jobs weigh a twentieth of a slot, owners twenty slots.
    assert simulation_limit(1, 1, 0, 200_000, 0) == simulation_limit(1, 1, 10_000, 0, 0) == B.MAX_WORK / 10_000
    assert simulation_limit(1, 1, 0, 0, 500) == pytest.approx(B.MAX_WORK / (20 * 500 + 500))


def test_the_docs_layout_of_a_scenario_is_one_the_reader_takes(tmp_path):
    """Every key the docs' "Scenario files" layout shows is one the reader knows: the layout, with
    its workload log where its path says and a pool its log's largest jobs fit on, loads."""
    page = (ROOT / "docs" / "simulate.md").read_text()
    layout = page.split("## Scenario files", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    assert "slots = 10 " in layout and 'swf = "../traces/' in layout
    (tmp_path / "traces").symlink_to(ROOT / "osep" / "data" / "traces")
    (tmp_path / "scenarios").mkdir()
    path = tmp_path / "scenarios" / "layout.toml"
    path.write_text(layout.replace("slots = 10 ", "slots = [{ count = 2, cpus = 128 }] ", 1))
    scenario = load_scenario(path)
    assert scenario.policies == ("greedy", "fairshare", "osep", "osep-ckpt")
    assert scenario.horizon is not None and scenario.horizon.seconds == 100000
    assert any(job.owner == "owner1" for job in scenario.jobs)
