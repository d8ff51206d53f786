"""``osep example``: the bundled files listed, printed and copied out."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import cli_runner
from osep.ui.cli import cli

DATA = Path(__file__).parents[2] / "osep" / "data"
FILES = {
    "policy": "policy.toml",
    "owner-tree": "tree.toml",
    "slurm-classic": "slurm-classic-example.toml",
    "condor-config": "condor/50-osep.config",
    **{f"scenario {p.stem}": f"scenarios/{p.name}" for p in sorted((DATA / "scenarios").glob("*.toml"))},
}


@pytest.fixture
def runner():
    return cli_runner()


@pytest.mark.parametrize("args", [["example"], ["example", "--list"]])
def test_the_list_has_a_line_for_each_file(runner, args):
    result = runner.invoke(cli, args)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines] == list(FILES)
    assert lines[0].split(None, 1)[1] == "a commented policy file: the owners' shares and how OSEP enforces them"
    assert all(len(line.split("  ", 1)[1].strip()) > 20 for line in lines)


@pytest.mark.parametrize(("name", "file"), FILES.items())
def test_each_file_printed_as_it_is(runner, name, file):
    result = runner.invoke(cli, ["example", *name.split()])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (DATA / file).read_text(encoding="utf-8")


@pytest.mark.parametrize(("scenario", "beside"), [
    ("nasa-ipsc", "../traces/NASA-iPSC-1993-3.1-cln.swf.gz"), ("lcg-2005", "lcg-2005.csv")])
def test_a_scenario_that_reads_a_file_beside_it_says_so(runner, scenario, beside):
    result = runner.invoke(cli, ["example", "scenario", scenario])
    assert result.exit_code == 0
    assert result.stderr.startswith(f"osep: warning: {scenario} reads {beside} relative to itself: ")
    assert result.stderr.endswith(f"(osep simulate {scenario})\n") and result.stderr.count("\n") == 1


def test_output_writes_the_file_and_refuses_to_overwrite_one_without_force(runner, tmp_path):
    out = tmp_path / "policy.toml"
    result = runner.invoke(cli, ["example", "policy", "--output", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == f"policy written to {out}\n"
    assert out.read_bytes() == (DATA / "policy.toml").read_bytes()

    out.write_text("mine\n")
    refused = runner.invoke(cli, ["example", "condor-config", "-o", str(out)])
    assert refused.exit_code == 2
    assert refused.stderr == f"osep: error: {out} is there already: give --force to overwrite it\n"
    assert out.read_text() == "mine\n"

    forced = runner.invoke(cli, ["example", "condor-config", "-o", str(out), "--force"])
    assert forced.exit_code == 0
    assert out.read_bytes() == (DATA / "condor" / "50-osep.config").read_bytes()


def test_output_into_a_missing_folder_is_one_line(runner, tmp_path):
    result = runner.invoke(cli, ["example", "policy", "-o", str(tmp_path / "no" / "p.toml")])
    assert result.exit_code == 2
    assert result.stderr == f"osep: error: cannot write {tmp_path}/no/p.toml: No such file or directory\n"


@pytest.mark.parametrize(("args", "message"), [
    (["polcy"], "osep: error: no bundled file 'polcy': there are policy, owner-tree, slurm-classic, "
                "condor-config, scenario NAME (osep example --list)"),
    (["scenario", "nope"], "osep: error: nope: no bundled scenario of that name: lcg-2005, machines, "),
    (["scenario"], "osep: error: give the scenario's name: osep example scenario NAME, one of "),
    (["--list", "policy"], "osep: error: example: --list takes no NAME"),
    (["--force"], "osep: error: example: --output and --force go with a NAME"),
    (["policy", "--force"], "osep: error: example: --force goes with --output"),
])
def test_what_is_not_there_is_one_line_and_status_2(runner, args, message):
    result = runner.invoke(cli, ["example", *args])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
