"""``osep simulate --trace``: a workload log run with no scenario file, through click's runner."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from builders import cli_runner
from osep.ui.cli import cli

ROOT = Path(__file__).parents[2]
TRACES = ROOT / "osep" / "data" / "traces"
NASA = TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz"
LCG = TRACES / "LCG-2005.swf.gz"
SHARED = ROOT.parent / "shared" / "data" / "traces"
LINE = "{n} {t} -1 {r} 1 -1 -1 -1 -1 -1 1 {u} {g} -1 {q} {p} -1 -1\n"


@pytest.fixture
def runner():
    return cli_runner()


def small_log(tmp_path, header="; MaxProcs: 4\n", jobs=None, name="small.swf"):
    """Twelve one-core jobs of three users in two groups (user1 does most of the work)."""
    jobs = jobs or [(k * 10, 600 if k % 3 == 0 else 100, 1 + k % 3, 1 + k % 2) for k in range(12)]
    path = tmp_path / name
    path.write_text(header + "".join(LINE.format(n=k + 1, t=t, r=r, u=u, g=g, q=u, p=g)
                                     for k, (t, r, u, g) in enumerate(jobs)))
    return path


def run(runner, *args):
    result = runner.invoke(cli, ["simulate", *map(str, args)])
    return result


def ok(runner, *args):
    result = run(runner, *args)
    assert result.exit_code == 0, result.stderr
    return result


def one_line_error(result, text):
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert text in lines[-1], result.stderr
    assert ("Traceback" not in result.stderr and result.exception is None) or isinstance(result.exception,
                                                                                       SystemExit)


def test_a_small_log_runs_with_shares_from_its_work(runner, tmp_path):
    result = ok(runner, "--trace", small_log(tmp_path), "--format", "json", "--policy", "osep")
    doc = json.loads(result.stdout)
    trace = doc["scenario"]["trace"]
    assert trace["jobs"] == 12 and trace["records"] == 12 and trace["skipped"] == {}
    assert trace["pool"] == {"cores": 4, "from": "the log's MaxProcs header", "machines": 4,
                             "cores_per_machine": 1, "partitionable": False, "unit": "slots"}
    # core-seconds: user1 4 x 600, user2 and user3 4 x 100 each
    assert trace["shares"]["owners"] == {"user1": "75.0000%", "user2": "12.5000%", "user3": "12.5000%"}
    assert doc["scenario"]["slots"] == 4 and doc["scenario"]["jobs"] == 12
    assert "12 jobs of 3 owners (user)" in result.stderr and "4 one-core slots" in result.stderr
    assert "user1 75.0000%" in result.stderr


def test_owners_by_group_queue_partition_and_tree(runner, tmp_path):
    log = small_log(tmp_path)
    for naming, owners in [("group", {"group1", "group2"}), ("queue", {"queue1", "queue2", "queue3"}),
                           ("partition", {"partition1", "partition2"})]:
        doc = json.loads(ok(runner, "--trace", log, "--owners", naming, "--format", "json",
                            "--policy", "greedy").stdout)
        assert set(doc["scenario"]["trace"]["shares"]["owners"]) == owners
    doc = json.loads(ok(runner, "--trace", log, "--owners", "group.user", "--format", "json",
                        "--policy", "osep").stdout)
    tree = doc["scenario"]["trace"]["shares"]["owners"]
    assert set(tree) == {"group1", "group2"} and set(tree["group1"]) == {"share", "user1", "user2", "user3"}
    assert doc["policies"]["osep"]["groups"]


def test_the_threshold_leaves_small_owners_without_a_share(runner, tmp_path):
    doc = json.loads(ok(runner, "--trace", small_log(tmp_path), "--least", "0.2", "--format", "json",
                        "--policy", "greedy").stdout)
    trace = doc["scenario"]["trace"]
    assert trace["shares"]["owners"] == {"user1": "100.0000%"} and trace["owners_without_share"] == 2
    one_line_error(run(runner, "--trace", small_log(tmp_path), "--least", "0.9"), "--least")


def test_a_policy_file_gives_the_shares(runner, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('[policy]\ninterval = 600\nmin_run_time = 90\n[owners]\nuser2 = "100%"\n')
    result = ok(runner, "--trace", small_log(tmp_path), "--policy-file", policy, "--format", "json",
                "--policy", "osep")
    doc = json.loads(result.stdout)
    assert doc["scenario"]["trace"]["shares"] == {"from": str(policy)}
    assert doc["scenario"]["trace"]["owners_without_share"] == 2
    assert doc["policies"]["osep"]["settings"]["interval"] == 600
    assert doc["policies"]["osep"]["settings"]["min_run_time"] == 90
    bad = tmp_path / "bad.toml"
    bad.write_text("[owners]\nuser2 = -1\n")
    one_line_error(run(runner, "--trace", small_log(tmp_path), "--policy-file", bad), f"{bad}: owners.user2")


def test_the_pool_options(runner, tmp_path):
    log = small_log(tmp_path, header="")
    doc = json.loads(ok(runner, "--trace", log, "--format", "json", "--policy", "greedy").stdout)
    pool = doc["scenario"]["trace"]["pool"]
    # jobs every 10 s, every third of 600 s: eleven of them at once at 100 s
    assert pool["cores"] == 11 and pool["from"] == "the most cores the log's jobs held at once"
    doc = json.loads(ok(runner, "--trace", log, "--cores", "10", "--cores-per-machine", "4", "--format", "json",
                        "--policy", "greedy").stdout)
    pool = doc["scenario"]["trace"]["pool"]
    # Exactly the cores asked for: two machines of 4 and one of what is left.
    assert (pool["machines"], pool["cores"], pool["partitionable"], pool["unit"]) == (3, 10, True, "cpus")
    assert (pool["cores_per_machine"], pool["last_machine_cores"]) == (4, 2)
    assert doc["scenario"]["slots"] == 10
    result = ok(runner, "--trace", log, "--cores", "10", "--cores-per-machine", "4", "--policy", "greedy")
    assert "pool: 10 cores in 3 partitionable machines: 2 of 4 cores and one of 2 (from --cores)" in result.stderr
    doc = json.loads(ok(runner, "--trace", log, "--cores", "12", "--cores-per-machine", "4", "--format", "json",
                        "--policy", "greedy").stdout)
    pool = doc["scenario"]["trace"]["pool"]
    assert (pool["machines"], pool["cores"], pool["last_machine_cores"]) == (3, 12, 4)


def test_the_window_limit_and_compress(runner, tmp_path):
    log = small_log(tmp_path)
    doc = json.loads(ok(runner, "--trace", log, "--from-second", "20", "--until-second", "80", "--compress", "2",
                        "--format", "json", "--policy", "greedy").stdout)
    trace = doc["scenario"]["trace"]
    assert trace["jobs"] == 6 and trace["outside_window"] == 6
    assert trace["window"] == {"since": 20.0, "until": 80.0, "limit": None, "compress": 2.0}
    doc = json.loads(ok(runner, "--trace", log, "--days", str(35 / 86400), "--limit", "2", "--format", "json",
                        "--policy", "greedy").stdout)
    assert doc["scenario"]["trace"]["jobs"] == 2 and doc["scenario"]["trace"]["window"]["until"] == 35


def test_the_simulation_options(runner, tmp_path):
    log = small_log(tmp_path)
    doc = json.loads(ok(runner, "--trace", log, "--negotiation-interval", "30", "--horizon", "200", "-t", "60",
                        "-p", "1", "--target", "feasible", "--format", "json", "--policy", "osep").stdout)
    trace, osep = doc["scenario"]["trace"], doc["policies"]["osep"]
    assert trace["negotiation_interval"] == 30 and trace["horizon"] == 200
    assert osep["settings"]["interval"] == 60 and osep["settings"]["max_vacates"] == 1
    assert osep["settings"]["target"] == "feasible" and osep["unfinished"] > 0
    csv = ok(runner, "--trace", log, "--format", "csv", "--policy", "greedy")
    assert csv.stdout.startswith("policy,owner,share,")
    plot = tmp_path / "run.svg"
    ok(runner, "--trace", log, "--policy", "greedy", "--plot", plot)
    assert plot.read_bytes().lstrip().startswith(b"<?xml")


def test_skipped_records_are_counted(runner, tmp_path):
    log = small_log(tmp_path)
    with log.open("a") as f:
        f.write("junk\n" + LINE.format(n=13, t=5, r=0, u=1, g=1, q=1, p=1)
                + "14 5 -1 100 1 -1 -1 -1 -1 -1 2 1 1 -1 1 1 -1 -1\n")
    result = ok(runner, "--trace", log, "--format", "json", "--policy", "greedy")
    skipped = json.loads(result.stdout)["scenario"]["trace"]["skipped"]
    assert skipped == {"1 fields, not 18": 1, "run time 0 (under half a second)": 1,
                       "a partial execution (status 2, 3 or 4)": 1}
    assert "workload lines left out" in result.stderr and "15 records" in result.stderr


@pytest.mark.parametrize("args, text", [
    ([], "give a SCENARIO file, or --trace"),
    ([str(ROOT / "osep" / "data" / "scenarios" / "paper-job-size.toml"), "--trace", "x.swf"], "not both"),
    ([str(ROOT / "osep" / "data" / "scenarios" / "paper-job-size.toml"), "--cores", "4"], "--cores goes with --trace"),
    ([str(ROOT / "osep" / "data" / "scenarios" / "paper-job-size.toml"), "--owners", "group"], "--owners goes with"),
    (["--trace", "{log}", "--until-second", "50", "--days", "1"], "--until-second or --days, not both"),
    (["--trace", "{log}", "--from-second", "50", "--until-second", "40"], "must be after --from-second"),
    (["--trace", "{log}", "--least", "0.5", "--policy-file", "p.toml"], "does not go with --policy-file"),
    (["--trace", "{log}", "--owners", "site"], "osep: error: simulate: --owners: "),
    (["--trace", "{log}", "--cores", "0"], "osep: error: simulate: --cores: "),
    (["--trace", "{log}", "--compress", "0"], "osep: error: simulate: --compress: "),
    (["--trace", "{log}", "--from-second", "-1"], "osep: error: simulate: --from-second: "),
    (["--trace", "{log}", "--plot", "x.gif"], ".png or .svg"),
    (["--trace", "{log}", "--from-second", "5000"],
     "no jobs in the log submitted in [5000, the end) s: of its 12 data lines, 0 were left out and the others"),
    (["--trace", "{log}", "--cores", "20000"], "more one-core slots than 10,000"),
    (["--trace", "{log}", "--cores", "8", "--cores-per-machine", "1", "--horizon", "1e8"], "--horizon: must be at"),
    (["--trace", "{log}", "--policy-file", "missing.toml"], "missing.toml: no such file"),
    (["--trace", "missing.swf"], "missing.swf: no such file"),
])
def test_bad_options_are_one_line(runner, tmp_path, args, text):
    log = small_log(tmp_path)
    result = run(runner, *[a.replace("{log}", str(log)) for a in args])
    assert result.exit_code == 2, result.stderr
    assert text in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_multi_core_jobs_need_machines(runner, tmp_path):
    log = tmp_path / "wide.swf"
    log.write_text("; MaxProcs: 64\n" + LINE.format(n=1, t=0, r=10, u=1, g=1, q=1, p=1).replace(" 10 1 ", " 10 32 "))
    one_line_error(run(runner, "--trace", log), "--cores-per-machine: the log has jobs of up to 32 processors")
    one_line_error(run(runner, "--trace", log, "--cores-per-machine", "16"), "more than a machine of 16 cores")
    one_line_error(run(runner, "--trace", log, "--cores", "400000", "--cores-per-machine", "32"),
                   "make 12,500 machines")
    one_line_error(run(runner, "--trace", log, "--cores", "24", "--cores-per-machine", "32"),
                   "--cores: the log has jobs of up to 32 processors, more than the pool's 24 cores")
    ok(runner, "--trace", log, "--cores-per-machine", "32", "--policy", "greedy")
    # A machine smaller than the rest, beside a whole one, is no obstacle.
    ok(runner, "--trace", log, "--cores", "40", "--cores-per-machine", "32", "--policy", "greedy")


@pytest.mark.parametrize("content, text", [
    ("", ": it has no data lines (is it a log in the Standard Workload Format?)"),
    ("; a comment only\n", ": it has no data lines"),
    ("<html>\n<body>not a log</body>\n", ": all 2 of its data lines were left out (line 1: 1 fields, not 18; "
                                          "line 2: 3 fields, not 18; is it a log in the Standard Workload Format?)"),
])
def test_a_file_that_is_no_workload_log_says_so(runner, tmp_path, content, text):
    log = tmp_path / "junk.swf"
    log.write_text(content)
    one_line_error(run(runner, "--trace", log), f"no jobs in the log submitted in [0, the end) s{text}")


@pytest.mark.parametrize("content", [b"\x1f\x8b\x08\x00junk", b"not gzip at all" * 10, b""])
def test_hostile_compressed_logs_are_one_line(runner, tmp_path, content):
    log = tmp_path / "bad.swf.gz"
    log.write_bytes(content)
    result = run(runner, "--trace", log)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "bad.swf.gz" in result.stderr


def test_a_truncated_gzip_log_is_one_line(runner, tmp_path):
    log = tmp_path / "cut.swf.gz"
    log.write_bytes(NASA.read_bytes()[:50_000])
    one_line_error(run(runner, "--trace", log), "cut.swf.gz: cannot read")


def test_hostile_plain_logs_run_or_fail_in_one_line(runner, tmp_path):
    lines = ["nan " * 18, "-1 " * 18, "1e400 " * 18, "9" * 400 + " 1" * 17, "1 -5 -1 10 1" + " -1" * 13,
             "\x1b[2J" * 10, "1 0 -1 1e12 1" + " -1" * 13, "\u2028" * 5, "1 0 -1 10 1" + " -1" * 12]
    log = tmp_path / "hostile.swf"
    log.write_text("\n".join(lines) + "\n" + LINE.format(n=1, t=0, r=10, u=1, g=1, q=1, p=1))
    result = run(runner, "--trace", log, "--format", "json", "--policy", "greedy")
    assert result.exit_code == 0, result.stderr
    trace = json.loads(result.stdout)["scenario"]["trace"]
    # the line of 1s after a 400-digit job number is a job of its own
    assert trace["jobs"] == 2 and sum(trace["skipped"].values()) == trace["records"] - 2
    assert trace["pool"]["cores"] == 2  # no header: the two jobs at once


def test_the_nasa_log_as_the_bundled_scenario(runner, tmp_path):
    """--trace with the NASA scenario's window, pool and shares runs exactly what the scenario file runs."""
    policy = tmp_path / "nasa.toml"
    policy.write_text('[policy]\nunit = "cpus"\ninterval = 300\n'
                      '[owners]\nuser4 = "40%"\nuser2 = "30%"\nuser1 = "15%"\nuser8 = "15%"\n')
    for log in (NASA, *([SHARED / NASA.name] if (SHARED / NASA.name).exists() else [])):
        traced = json.loads(ok(runner, "--trace", log, "--days", "7", "--compress", "2.5", "--cores-per-machine",
                               "128", "--policy-file", policy, "--policy", "osep", "--format", "json").stdout)
        filed = json.loads(ok(runner, ROOT / "osep" / "data" / "scenarios" / "nasa-ipsc.toml", "--policy", "osep",
                              "--format", "json").stdout)
        assert traced["policies"] == filed["policies"]
        assert traced["scenario"]["trace"]["skipped"] == {"run time 0 (under half a second)": 173}
        assert traced["scenario"]["trace"]["pool"]["from"] == "the log's MaxProcs header"


def test_the_nasa_log_uncompressed(runner, tmp_path):
    plain = tmp_path / "nasa.swf"
    plain.write_bytes(gzip.decompress(NASA.read_bytes()))
    doc = json.loads(ok(runner, "--trace", plain, "--days", "1", "--cores-per-machine", "128", "--policy", "greedy",
                        "--format", "json").stdout)
    assert doc["scenario"]["trace"]["header"]["Computer"] == "Intel iPSC/860"


@pytest.mark.parametrize("log", [LCG, *([SHARED / LCG.name] if (SHARED / LCG.name).exists() else [])])
def test_the_lcg_log_runs_by_vo_and_user(runner, log):
    """The grid's MaxProcs (24,515 cores) is more one-core slots than a simulated pool may have, so
    the pool is given; two hours of the log."""
    one_line_error(run(runner, "--trace", log, "--until-second", "7200"), "MaxProcs header gives 24,515 cores")
    result = ok(runner, "--trace", log, "--until-second", "7200", "--owners", "group.user", "--cores", "300",
                "--policy", "greedy", "--policy", "osep", "--format", "json")
    trace = json.loads(result.stdout)["scenario"]["trace"]
    assert trace["jobs"] > 1000 and trace["records"] == 188041 and trace["header"]["MaxProcs"] == "24515"
    assert trace["jobs"] + trace["outside_window"] + sum(trace["skipped"].values()) == 188041
    assert "group4" in trace["shares"]["owners"]
