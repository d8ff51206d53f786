"""Plots: drawn without a display, in both views (lines for a few owners, stacked areas for many)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.config import bundled
from osep.config.scenario import load_scenario
from osep.experiment.runs import run_scenario
from osep.measure.meter import Meter
from osep.ui.plot import COINCIDING, LINE_OWNERS, SPREAD_POINTS, _ranked_owners, draw, draw_series, offsets


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
    from osep.experiment.runs import run_scenario
    from osep.ui.plot import draw_groups

    scenarios = Path(__file__).parents[2] / "osep" / "data" / "scenarios"
    outcomes = run_scenario(load_scenario(scenarios / "tree.toml"), ("greedy", "slurm", "osep"))
    draw_groups(tmp_path / "groups.png", "tree", outcomes)
    assert (tmp_path / "groups.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    flat = run_scenario(load_scenario(scenarios / "paper-job-size.toml"), ("greedy",))
    with pytest.raises(ValueError, match="no outcome has top-level groups"):
        draw_groups(tmp_path / "flat.png", "flat", flat)


TIMES = (0.0, 10.0, 20.0, 100.0)


@pytest.mark.parametrize(("curves", "expected"), [
    ({"a": (1, 2, 3, 3), "b": (1, 2, 3, 3)}, {"a": -0.75, "b": 0.75}),  # equal all along
    ({"a": (1, 2, 3, 3), "b": (2, 3, 1, 1)}, {}),  # never equal
    ({"a": (0, 0, 3, 3), "b": (0, 0, 2, 2)}, {}),  # equal at 0 only: the axis, nothing to hide
    ({"a": (1, 2, 3, 3), "b": (5, 2, 1, 1), "c": (9, 9, 1, 1)},  # b with a, then c with b: one group
     {"a": -1.5, "b": 0.0, "c": 1.5}),
])
def test_owners_whose_curves_coincide_are_drawn_apart(curves, expected):
    assert offsets([(TIMES, curves)]) == pytest.approx(expected)


def test_a_large_group_is_drawn_closer_within_a_narrow_band():
    shift = offsets([(TIMES, {f"o{k}": (1, 1, 1, 1) for k in range(30)})])
    assert len(shift) == 30 and max(shift.values()) - min(shift.values()) == pytest.approx(SPREAD_POINTS)


def test_a_moment_of_equality_is_no_coincidence():
    times = (0.0, 0.5, 100.0, 200.0)
    assert offsets([(times, {"a": (2, 2, 3, 3), "b": (2, 1, 4, 4)})]) == {}  # 0.5 s of 200


@given(st.lists(st.lists(st.integers(0, 3), min_size=4, max_size=4), min_size=1, max_size=6),
       st.lists(st.integers(0, 5), max_size=4))
def test_no_two_owners_that_coincide_share_an_offset(curves, copies):
    named = {f"o{k}": tuple(c) for k, c in enumerate(curves)}
    for k, source in enumerate(copies):  # some owners a copy of another: equal all along
        named[f"copy{k}"] = named[f"o{source % len(curves)}"]
    shift = offsets([(TIMES, named)])
    for a, b in itertools.combinations(named, 2):
        together = sum(t1 - t0 for t0, t1, x, y in zip(TIMES, TIMES[1:], named[a], named[b], strict=False)
                       if x == y != 0)
        if together > COINCIDING * (TIMES[-1] - TIMES[0]):
            assert shift[a] != shift[b]
    assert set(shift) <= {o for o in named if any(named[o][:-1])}  # a curve all at 0 is never moved


def test_the_legend_names_the_vacate_marks_and_the_drawing_apart(tmp_path):
    # paper-general's first panel (greedy) has no vacates, the osep panels have; owners 3 and 4 have
    # equal shares and ideals
    outcomes = run_scenario(load_scenario(bundled.scenario("paper-general")), ("greedy", "osep"),
                            records=True)
    path = tmp_path / "plot.svg"
    draw(path, "paper-general", outcomes)
    text = path.read_text()
    assert "a vacated job leaves its slot" in text
    assert "curves that coincide are" in text
