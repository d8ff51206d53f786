"""Plots: drawn without a display, in both views (lines for a few owners, stacked areas for many)."""

from __future__ import annotations

import pytest

from osep.measure.meter import Meter
from osep.ui.plot import LINE_OWNERS, _ranked_owners, draw_series


def busy_meter(owners: int, jobs: int = 200) -> Meter:
    """Jobs every 30 s over the owners; one in seven is evicted after 100 s and never comes back."""
    events = []
    for j in range(jobs):
        t = float(j * 30)
        events.append((t, 0, j))
        if j % 7 == 0:
            events.append((t + 100, 1, j))
        else:
            events.append((t + 400 + 10 * (j % owners), 2, j))
    m = Meter({f"o{k}": 2 for k in range(owners)}, 4 * owners, curves=True)
    for t, kind, j in sorted(events):
        if kind == 0:
            m.submit(t, str(j), f"o{j % owners}")
            m.start(t, str(j), f"s{j}")
        elif kind == 1:
            m.end(t, str(j), evicted=True)
            m.withdraw(t, str(j))
        else:
            m.finish(t, str(j))
    return m


@pytest.mark.parametrize("owners", [3, LINE_OWNERS + 9])
def test_draws_both_views(tmp_path, owners):
    m = busy_meter(owners)
    series = m.series()
    path = tmp_path / "plot.svg"
    draw_series(path, "test", {"recorded": (series, m.result(), 4 * owners)})
    text = path.read_text()
    assert text.startswith("<?xml") and "recorded: PV" in text
    if owners > LINE_OWNERS:
        assert "others" in text  # owners beyond the named ones share one band


def test_owners_are_ranked_by_slot_time_used():
    m = busy_meter(3)
    series = m.series()
    ranked = _ranked_owners([series])
    used = {o: sum(series.real[o]) for o in series.real}
    assert ranked == sorted(used, key=lambda o: (-used[o], o))


def test_group_plot_draws_every_policy_for_an_owner_tree(tmp_path):
    from pathlib import Path

    from osep.config.scenario import load_scenario
    from osep.sim.experiment import run_scenario
    from osep.ui.plot import draw_groups

    scenarios = Path(__file__).parents[2] / "osep" / "data" / "scenarios"
    outcomes = run_scenario(load_scenario(scenarios / "tree.toml"), ("none", "slurm", "osep"))
    draw_groups(tmp_path / "groups.png", "tree", outcomes)
    assert (tmp_path / "groups.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    flat = run_scenario(load_scenario(scenarios / "paper-job-size.toml"), ("none",))
    with pytest.raises(ValueError, match="no outcome has top-level groups"):
        draw_groups(tmp_path / "flat.png", "flat", flat)
