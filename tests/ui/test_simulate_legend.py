"""The comparison table (``osep simulate``, ``osep replay``) says under it what PV, LC, PC and A_US
are and what they are counted in; JSON and CSV carry their units in their own fields."""

from __future__ import annotations

import pytest

from builders import cli_runner
from osep.config import bundled
from osep.ui.cli import cli
from osep.ui.render import LEGEND_WIDTH, metrics_legend


@pytest.mark.parametrize(("scenario", "unit"), [("paper-general", "slot-s: slot-seconds"),
                                                 ("machines", "core-s: core-seconds")])
def test_the_table_ends_with_a_legend_of_its_metrics_and_their_unit(scenario, unit):
    result = cli_runner().invoke(cli, ["simulate", scenario])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("PV: "))
    assert all("  " in line for line in lines[2:start])  # the table's rows, then the legend
    legend = " ".join(lines[start:])
    for metric in ("PV: ", "LC: ", "PC: ", "A_US: ", unit):
        assert metric in legend
    assert len(lines) - start <= 2 and max(len(line) for line in lines[start:]) <= LEGEND_WIDTH


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_json_and_csv_have_no_legend(fmt):
    result = cli_runner().invoke(cli, ["simulate", str(bundled.scenario("paper-job-size")), "--format", fmt])
    assert result.exit_code == 0, result.stderr
    assert "capacity owed" not in result.stdout


def test_dominant_shares_count_pv_in_share_seconds_and_the_rest_in_cores():
    legend = " ".join(metrics_legend("share-s", "core-s", "cpus"))
    assert "share-s: shares x seconds; core-s: core-seconds" in legend
