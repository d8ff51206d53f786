"""``osep shares FILE``: the fair-share models on a share tree and a usage table, through click."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from builders import cli_runner
from osep.config import bundled
from osep.config.sharesfile import SharesFile
from osep.fairshare import MODELS, Params
from osep.fairshare.hierarchy import Hierarchy
from osep.ui.cli import cli
from osep.ui.shares import TABLE_WIDTH, shares_document, shares_table

ROOT = Path(__file__).parents[2]
SLURM_EXAMPLE = str(ROOT / "osep" / "data" / "slurm-classic-example.toml")
MANUAL_FACTORS = {"user1": "0.408479", "user2": "0.022097", "user3": "0.125000", "user4": "0.500000",
                  "user5": "0.749154"}


@pytest.fixture
def runner():
    return cli_runner()


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "shares.toml"
    path.write_text(text)
    return str(path)


TREE = """
[policy]
unit = "cpus"
[owners.A]
share = 40
[owners.A.B]
share = 30
[owners.A.B.user1]
share = 1
[owners.C]
share = 60
"""


def _table(text: str) -> tuple[list[str], list[str], list[str]]:
    """A table's lines: the model names over their columns and the header; its rows (from the rule
    under the header to the blank line); the legend below."""
    lines = text.splitlines()
    rule = next(k for k, line in enumerate(lines) if line.startswith("----"))
    end = lines.index("", rule)
    return lines[rule - 2:rule], lines[rule + 1:end], lines[end + 1:]


def test_the_bundled_slurm_example_shows_the_manuals_five_factors(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE])
    assert result.exit_code == 0, result.stderr
    (_, header), rows, _ = _table(result.stdout)
    factor = header.split().index("F")  # slurm's F: the first model
    for user, printed in MANUAL_FACTORS.items():
        row = next(line for line in rows if line.strip().startswith(user + " "))
        assert row.split()[factor] == printed, row
        assert row.startswith("    ")  # users sit two levels down, indented like sshare


def test_the_table_is_indented_by_level_and_lists_parents_first(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--model", "slurm"])
    assert result.exit_code == 0, result.stderr
    (models, _), rows, _ = _table(result.stdout)
    assert [row.split()[0] for row in rows] == ["A", "B", "user1", "C", "user2", "user3", "D", "E",
                                                "user4", "F", "user5"]
    assert models.split() == ["slurm"]


def test_json_carries_every_model_and_node(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [m["name"] for m in doc["models"]] == ["slurm", "share", "grid", "cambridge"]
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["A.C.user2"]["models"]["slurm"]["effective"] == pytest.approx(0.275)
    assert nodes["A.C.user2"]["models"]["share"]["m_share"] == pytest.approx(0.05)
    assert nodes["A.C"]["models"]["cambridge"] is None  # Cambridge has projects only, no groups
    assert len(nodes["D.F.user5"]["models"]["grid"]["deviations"]) == 3
    assert doc["pool_usage"] == 1.0
    assert doc["leaves_usage"] == pytest.approx(0.7)


def test_csv_has_one_row_per_node(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--format", "csv", "--model", "slurm"])
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 11
    user5 = next(r for r in rows if r["name"] == "D.F.user5")
    assert f"{float(user5['slurm.factor']):.6f}" == "0.749154"


def test_dampening_and_cambridge_options_reach_the_models(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--format", "json", "--dampening", "2",
                                 "--demand", "40000", "--estimate", "1"])
    assert result.exit_code == 0, result.stderr
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["A.C.user3"]["models"]["slurm"]["factor"] == pytest.approx(2 ** (-3 / 2))
    s = nodes["A.C.user3"]["models"]["cambridge"]["shares"]
    assert nodes["A.C.user3"]["models"]["cambridge"]["price"] == pytest.approx(
        50 * s * 40000 / (100_000 * s - 40000))


def test_unquoted_dotted_usage_keys_are_the_same_names(runner, tmp_path):
    path = _write(tmp_path, TREE + "[usage]\nA.B.user1 = 3\nC = 1\n")
    result = runner.invoke(cli, ["shares", path, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["A"]["usage"] == 3
    assert nodes["C"]["models"]["slurm"]["usage"] == pytest.approx(0.25)


@pytest.mark.parametrize(("usage", "message"), [
    ('"A.B.user2" = 1', "usage.\"A.B.user2\": 'A.B.user2' is not a leaf of the owner tree (did you mean 'A.B.user1'?)"),
    ('"A.B" = 1', "usage.\"A.B\": 'A.B' is a group: usage is given for its members, the leaves"),
    ('C = -1', "usage.C: must be at least 0, got -1"),
    ('C = "lots"', "usage.C: expected a number, got 'lots'"),
    ('"A.B.user1" = 1\nA.B.user1 = 2', "is given twice"),
])
def test_bad_usage_is_one_line(runner, tmp_path, usage, message):
    path = _write(tmp_path, TREE + "[usage]\n" + usage + "\n")
    result = runner.invoke(cli, ["shares", path])
    assert result.exit_code == 2
    assert not result.stdout and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"osep: error: {path}: ")
    assert message in result.stderr


def test_a_policy_without_usage_reads_as_no_usage(runner, tmp_path):
    result = runner.invoke(cli, ["shares", _write(tmp_path, TREE), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["usage_given"] is False and doc["pool_usage"] == 0
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["A.B.user1"]["models"]["slurm"]["factor"] == 1.0  # 2^0: nobody has used anything


def test_the_table_says_when_there_is_no_usage_and_which_file_has_some(runner, tmp_path):
    result = runner.invoke(cli, ["shares", _write(tmp_path, TREE)])
    assert result.exit_code == 0, result.stderr
    head = " ".join(result.stdout.split("\n\n")[0].split())
    assert "no usage: every leaf's is 0" in head and "osep example slurm-classic" in head


BUNDLED_WITH_OWNERS = [*(e.words for e in bundled.catalogue() if e.path.suffix == ".toml"),
                       *(("scenario", name) for name in bundled.scenario_names())]


@pytest.mark.parametrize("words", sorted(set(BUNDLED_WITH_OWNERS)), ids=" ".join)
def test_every_bundled_file_with_owners_fits_100_columns(runner, words):
    entry = bundled.find(words)
    result = runner.invoke(cli, ["shares", str(entry.path)])
    assert result.exit_code == 0, result.stderr
    _, rows, legend = _table(result.stdout)
    assert rows and legend
    assert max(len(line) for line in result.stdout.splitlines()) <= TABLE_WIDTH


def test_a_bundled_scenario_is_named_as_simulate_names_it(runner):
    by_name = runner.invoke(cli, ["shares", "tree"])
    by_path = runner.invoke(cli, ["shares", str(bundled.scenario("tree"))])
    assert by_name.exit_code == 0, by_name.stderr
    assert _table(by_name.stdout)[1] == _table(by_path.stdout)[1]
    assert [row.split()[0] for row in _table(by_name.stdout)[1]][:3] == ["vo_a", "p1", "u1"]


def test_wide_shows_every_column_but_the_tuples(runner):
    default = runner.invoke(cli, ["shares", SLURM_EXAMPLE])
    wide = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--wide"])
    assert wide.exit_code == 0, wide.stderr
    shown = _table(wide.stdout)[0][1].split()
    headers = " ".join(c.header for m in MODELS for c in m.columns if c.kind != "tuple")
    assert shown == ["node", "shares", "usage", *headers.split()]  # "K6 x" is two words
    assert set(_table(default.stdout)[0][1].split()) < set(shown)
    assert "--wide" in " ".join(_table(default.stdout)[2]) and "--wide" not in wide.stdout


def test_wide_goes_with_the_table_only(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE, "--wide", "--format", "json"])
    assert result.exit_code == 2
    assert "--wide goes with --format table" in result.stderr


def test_the_legend_names_every_column_shown(runner):
    result = runner.invoke(cli, ["shares", SLURM_EXAMPLE])
    (_, header), _, legend = _table(result.stdout)
    text = " ".join(" ".join(legend).split())
    for column in header.split()[3:]:
        assert f"{column}: " in text, column


ZERO_SHARE = "[owners]\nidle = 0\nbusy = 10\n[usage]\nidle = 5\nbusy = 5\n"


def test_cambridge_value_with_no_shares_is_undefined_in_every_format(runner, tmp_path):
    path = _write(tmp_path, ZERO_SHARE)
    table = runner.invoke(cli, ["shares", path, "--model", "cambridge"])
    (_, header), rows, _ = _table(table.stdout)
    row = next(r.split() for r in rows if r.startswith("idle "))
    columns = header.split()
    assert row[columns.index("V")] == "-" and row[columns.index("P")] == "-"
    doc = json.loads(runner.invoke(cli, ["shares", path, "--format", "json"]).stdout)
    idle = next(n for n in doc["nodes"] if n["name"] == "idle")["models"]["cambridge"]
    assert idle["value"] is None and idle["price"] is None
    out = runner.invoke(cli, ["shares", path, "--format", "csv"]).stdout
    rows_csv = {r["name"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows_csv["idle"]["cambridge.value"] == "" and rows_csv["idle"]["cambridge.price"] == ""
    assert float(rows_csv["busy"]["cambridge.value"]) == pytest.approx(5 / (20 * 10))


def test_a_pool_usage_below_the_leaves_is_refused(runner, tmp_path):
    path = _write(tmp_path, TREE + "[usage]\nC = 2\n[pool]\nusage = 1\n")
    result = runner.invoke(cli, ["shares", path])
    assert result.exit_code == 2
    assert "pool.usage: the pool's usage (1) is less than its leaves' (2)" in result.stderr


def test_a_bad_policy_is_the_usual_config_error(runner, tmp_path):
    path = _write(tmp_path, TREE.replace("share = 60", "share = -5") + "[usage]\nC = 1\n")
    result = runner.invoke(cli, ["shares", path])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"osep: error: {path}: owners.C")


def test_a_flat_policy_is_one_level(runner, tmp_path):
    path = _write(tmp_path, "[owners]\nphysics = \"30%\"\nchem = \"70%\"\n[usage]\nphysics = 1\n")
    result = runner.invoke(cli, ["shares", path, "--format", "json", "--model", "grid"])
    assert result.exit_code == 0, result.stderr
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["physics"]["models"]["grid"]["target"] == 30
    assert nodes["physics"]["models"]["grid"]["deviation"] == -70


def test_names_from_the_file_cannot_drive_the_terminal(runner, tmp_path):
    path = _write(tmp_path, '[owners]\n"a\\u001b[31m" = 1\nb = 1\n[usage]\nb = 1\n')
    result = runner.invoke(cli, ["shares", path])
    assert result.exit_code == 2  # the policy parser refuses the name ...
    assert "\x1b" not in result.stderr
    assert not result.stdout and result.stderr.count("\n") == 1


def test_the_table_escapes_names_it_is_given_anyway():
    # ... and the renderer would escape it had it got through
    tree = Hierarchy({"g\x1b[31m": "", "g\x1b[31m.u\nv": "g\x1b[31m"}, {"g\x1b[31m": 1, "g\x1b[31m.u\nv": 1})
    loaded = SharesFile("f\x1b.toml", "slots", tree, {"g\x1b[31m.u\nv": 1.0}, None)
    text = shares_table(shares_document(loaded, MODELS, Params()))
    assert "\x1b" not in text
    assert "u\\nv" in text
    assert len(_table(text)[1]) == 2


def test_validate_knows_a_shares_file(runner):
    result = runner.invoke(cli, ["validate", SLURM_EXAMPLE])
    assert result.exit_code == 0, result.stderr
    assert "11 nodes, 5 leaves, 3 levels, usage for 3 of the leaves" in result.stdout
