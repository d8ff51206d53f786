"""The bundled files (osep/data) by name: what there is, and what a scenario argument names."""

from __future__ import annotations

from pathlib import Path

import pytest

from osep.config import bundled
from osep.errors import ConfigError, OsepError

DATA = Path(__file__).parents[2] / "osep" / "data"
SCENARIOS = sorted(p.stem for p in (DATA / "scenarios").glob("*.toml"))


def test_the_bundled_files_are_the_package_s_data():
    assert bundled.root() == DATA
    assert bundled.scenario_names() == SCENARIOS
    assert {"paper-general", "paper-job-size", "nasa-ipsc"} <= set(SCENARIOS)


def test_the_catalogue_has_every_example_and_scenario_each_with_a_line_and_a_file():
    entries = bundled.catalogue()
    names = [e.name for e in entries]
    assert names == ["policy", "owner-tree", "slurm-classic", "condor-config",
                     *(f"scenario {s}" for s in SCENARIOS)]
    for entry in entries:
        assert entry.path.is_file() and entry.about and "\n" not in entry.about
    by_name = {e.name: e for e in entries}
    assert by_name["condor-config"].path == DATA / "condor" / "50-osep.config"
    assert by_name["scenario paper-general"].about.startswith("Table II")  # the file's description


@pytest.mark.parametrize(("words", "file"), [
    (("policy",), "policy.toml"),
    (("owner-tree",), "tree.toml"),
    (("slurm-classic",), "slurm-classic-example.toml"),
    (("condor-config",), "condor/50-osep.config"),
    (("scenario", "tree"), "scenarios/tree.toml"),
    (("scenario", "lcg-2005"), "scenarios/lcg-2005.toml"),
])
def test_find(words, file):
    entry = bundled.find(words)
    assert entry.path == DATA / file and entry.words == words


@pytest.mark.parametrize(("words", "message"), [
    (("polcy",), "no bundled file 'polcy': there are policy, owner-tree, slurm-classic, condor-config, "
                 "scenario NAME (osep example --list)"),
    (("policy", "x"), "no bundled file 'policy x'"),
    (("scenario",), "give the scenario's name: osep example scenario NAME, one of lcg-2005, "),
    (("scenario", "a", "b"), "give the scenario's name"),
    (("scenario", "nope"), "nope: no bundled scenario of that name: lcg-2005, machines, "),
    (("scenario", "../policy"), "no bundled scenario of that name"),
])
def test_find_refuses_what_is_not_there_naming_what_is(words, message):
    with pytest.raises(OsepError) as info:
        bundled.find(words)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_scenario_argument_is_a_file_when_there_is_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tree").write_text("")  # a file in the way wins over the bundled scenario
    assert bundled.file_or_scenario(Path("tree")) == Path("tree")
    assert bundled.file_or_scenario(Path("paper-general")) == DATA / "scenarios" / "paper-general.toml"
    for meant in ("sub/paper-general", "/nowhere/paper-general", "paper-general.toml"):  # the reader says why not
        assert bundled.file_or_scenario(Path(meant)) == Path(meant)


@pytest.mark.parametrize("given", ["paper-generl", "policy", "lcg-2005.csv"])
def test_a_name_that_is_neither_a_file_nor_a_scenario_lists_the_scenarios(tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        bundled.file_or_scenario(Path(given))
    assert str(info.value) == (f"{given}: no such file, nor a bundled scenario (those are: "
                               f"{', '.join(SCENARIOS)})")


@pytest.mark.parametrize(("words", "named"), [
    (("scenario", "nasa-ipsc"), [("../traces/NASA-iPSC-1993-3.1-cln.swf.gz", "traces")]),
    (("scenario", "lcg-2005"), [("lcg-2005.csv", "scenarios")]),
    (("scenario", "paper-general"), []),
    (("policy",), []),
])
def test_beside_names_the_files_a_scenario_reads_relative_to_itself(words, named):
    found = bundled.beside(bundled.find(words))
    assert [(name, where.parent.name) for name, where in found] == named
    assert all(where.is_file() for _, where in found)
