"""Running slots per owner over time, real against ideal, one panel per policy (the paper's figures),
for simulated runs (exact step curves) and for replays (binned series of any length); and, for an
owner tree, each top-level group's PV under every policy.

matplotlib draws with its file-only Agg backend, so no display is ever needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from osep.experiment.runs import Outcome
from osep.measure.documents import AREA_SHORT
from osep.measure.metrics import Metrics
from osep.measure.records import curves
from osep.measure.series import Series


def draw(path: Path | str, title: str, outcomes: Mapping[str, Outcome]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(outcomes)
    fig, axes = plt.subplots(
        len(names), 1, figsize=(10, 2.6 * len(names) + 0.6), sharex=True, squeeze=False
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn = {name: curves(o.records or o.result.jobs, o.capacity or o.result.capacity, o.shares, o.dominant)
             for name, o in outcomes.items()}
    shift = offsets([(c.times, c.real) for c in drawn.values()] + [(c.times, c.ideal) for c in drawn.values()])
    for ax, name in zip(axes[:, 0], names, strict=False):
        out = outcomes[name]
        c = drawn[name]
        hours = [t / 3600.0 for t in c.times]
        for k, owner in enumerate(sorted(c.real)):
            colour = colours[k % len(colours)]
            lines = [*ax.step(hours, c.real[owner], where="post", color=colour, lw=1.6, label=f"{owner} real"),
                     *ax.step(hours, c.ideal[owner], where="post", color=colour, lw=1.0, ls="--",
                              label=f"{owner} ideal")]
            _move(lines, ax, fig, shift.get(owner, 0.0))
        vacates = sorted(
            run.end / 3600.0 for rec in out.result.jobs for run in rec.runs if run.vacated
        )
        if vacates:
            ax.plot(vacates, [0] * len(vacates), "v", color="black", ms=5, clip_on=False,
                    label="a vacated job leaves its slot")
        m = out.metrics
        area = AREA_SHORT[out.resource]
        pv = "share-s" if out.dominant is not None else area
        ax.set_title(
            f"{name}: PV {m.violation:.0f} {pv}, LC {m.capacity_loss:.0f}, PC {m.cost:.0f} {area}",
            fontsize=10, loc="left",
        )
        if out.dominant is not None:
            ax.set_ylabel("share held")
            top = max((v for series in (*c.real.values(), *c.ideal.values()) for v in series),
                      default=1.0)
            ax.set_ylim(*_limits(shift, min(top, 4.0) + 0.1))
        else:
            ax.set_ylabel(out.resource)
            ax.set_ylim(*_limits(shift, (out.capacity or out.result.capacity) + 0.5))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("hours since the start of the scenario")
    _legend(fig, shift)
    fig.suptitle(
        f"{title}: what each owner runs (solid: real; dashed: ideal, the feasible share)",
        fontsize=11, x=0.42,
    )
    fig.tight_layout(rect=(0, 0, 0.84, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_groups(path: Path | str, title: str, outcomes: Mapping[str, Outcome]) -> None:
    """One bar per policy for each top-level group of an owner tree: the group's PV, on a log scale
    (the policies differ by orders of magnitude)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, o in outcomes.items() if o.groups is not None]
    if not names:
        raise ValueError("no outcome has top-level groups to draw")
    first = outcomes[names[0]].groups
    assert first is not None
    groups = [g.owner for g in first.owners]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(min(16.0, max(8.0, 1.2 * len(groups) + 3)), 5.0))
    colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    for k, name in enumerate(names):
        metrics = outcomes[name].groups
        assert metrics is not None
        by_group = {g.owner: g for g in metrics.owners}
        xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(groups))]
        # A PV of 0 cannot sit on a log axis: it is drawn as a stub at 1.
        heights = [max(by_group[g].violation, 1.0) for g in groups]
        ax.bar(xs, heights, width, label=name, color=colours[k % len(colours)])
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)), groups, rotation=30 if len(groups) > 6 else 0, fontsize=8)
    ax.set_ylabel(f"PV ({AREA_SHORT[outcomes[names[0]].resource]}, log)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(6, len(names)), loc="upper center", bbox_to_anchor=(0.5, -0.14),
              frameon=False)
    ax.set_title(title, fontsize=11, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Up to this many owners each get a line pair; more are drawn as stacked areas.
LINE_OWNERS = 6
# The stacked view names this many owners (by slot-time used) and lumps the rest together.
STACKED_OWNERS = 9


def draw_series(path: Path | str, title: str, panels: Mapping[str, tuple[Series, Metrics, int]],
                origin: float | None = None) -> None:
    """Running slots per owner over time for a replay and its what-if runs, one panel each.

    ``panels``: name -> (binned series, metrics, capacity). Few owners: each owner's real curve
    (solid) against its ideal (dashed). Many owners: the real curves stacked, with the pool's ideal
    total and the shortfall (the rate at which PV grows) as lines, so that a month of a large pool
    still reads at a glance. Evictions per bin are bars along the bottom in both views.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(panels)
    owners = _ranked_owners(s for s, _, _ in panels.values())
    stacked = len(owners) > LINE_OWNERS
    fig, axes = plt.subplots(
        len(names), 1, figsize=(11, 2.8 * len(names) + 0.8), sharex=True, squeeze=False
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    shown = owners[:STACKED_OWNERS] if stacked else owners
    colour = {o: colours[k % len(colours)] for k, o in enumerate(shown)}
    start = origin if origin is not None else min(s.start for s, _, _ in panels.values())
    span = max(s.start + s.width * len(s.evictions) for s, _, _ in panels.values()) - start
    scale, unit = (3600.0, "hours") if span > 3 * 3600 else (60.0, "minutes") if span > 600 \
        else (1.0, "seconds")
    shift = {} if stacked else offsets(
        [(s.times, s.real) for s, _, _ in panels.values()] + [(s.times, s.ideal) for s, _, _ in panels.values()])
    for ax, name in zip(axes[:, 0], names, strict=False):
        series, m, capacity = panels[name]
        edges = [(series.start - start + k * series.width) / scale
                 for k in range(len(series.evictions) + 1)]
        if stacked:
            rest = [sum(vals) for vals in zip(*(series.real[o] for o in owners[STACKED_OWNERS:]), strict=False)]
            layers = [list(series.real.get(o, ())) or [0.0] * len(series.evictions) for o in shown]
            labels = list(shown)
            if rest:
                layers.append(rest)
                labels.append(f"{len(owners) - STACKED_OWNERS} others")
            ax.stackplot(edges, [_closed(v) for v in layers], labels=labels, step="post", alpha=0.85,
                         colors=[colour.get(o, "#bbbbbb") for o in labels])
            ideal = [sum(vals) for vals in zip(*series.ideal.values(), strict=False)]
            short = [sum(max(0.0, series.ideal[o][k] - series.real[o][k]) for o in series.real)
                     for k in range(len(series.evictions))]
            ax.step(edges, _closed(ideal), where="post", color="black", ls="--", lw=1.0,
                    label="ideal (all owners)")
            ax.step(edges, _closed(short), where="post", color="crimson", lw=1.0,
                    label="shortfall (PV rate)")
        else:
            for owner in shown:
                lines = [*ax.step(edges, _closed(series.real.get(owner, ())), where="post",
                                  color=colour[owner], lw=1.6, label=f"{owner} real"),
                         *ax.step(edges, _closed(series.ideal.get(owner, ())), where="post",
                                  color=colour[owner], lw=1.0, ls="--", label=f"{owner} ideal")]
                _move(lines, ax, fig, shift.get(owner, 0.0))
        if any(series.evictions):
            bars = ax.twinx()
            bars.bar(edges[:-1], series.evictions, width=series.width / scale, align="edge",
                     color="black", alpha=0.3, label="evictions (per bin)")
            bars.set_ylim(0, max(series.evictions) * 6)  # the bottom sixth of the panel
            bars.set_yticks([])
        ax.set_title(
            f"{name}: PV {m.violation:.0f}, LC {m.capacity_loss:.0f}, PC {m.cost:.0f} slot-s, "
            f"{m.vacates} evictions (grey bars)", fontsize=10, loc="left")
        ax.set_ylabel("slots")
        ax.set_ylim(*_limits(shift, capacity * 1.05 + 0.5))
        ax.set_xlim(0, span / scale)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(f"{unit} since the start of the log")
    _legend(fig, shift)
    what = "stacked running slots per owner" if stacked else \
        "running slots per owner (solid: real; dashed: ideal)"
    fig.suptitle(f"{title}: {what}", fontsize=11, x=0.42)
    fig.tight_layout(rect=(0, 0, 0.82, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Owners whose curves coincide are drawn this many points apart, so that each stays visible; a group
# of many, closer, within SPREAD_POINTS (a band no wider than a few lines).
OFFSET_POINTS = 1.5
SPREAD_POINTS = 6.0
# ... when they coincide (at a value other than 0) for more than this part of a panel's time.
COINCIDING = 0.01


def offsets(panels: Iterable[tuple[Sequence[float], Mapping[str, Sequence[float]]]],
            step: float = OFFSET_POINTS) -> dict[str, float]:
    """How far up (in points) to draw each owner's curves so that none hides another's: ``panels``
    are step curves (times, owner -> the value from each time to the next). Owners whose curves in
    some panel are equal, and not 0, for more than COINCIDING of its time form a group (with whoever
    coincides with any of them); a group's owners are drawn ``step`` apart (closer in a group too
    large for SPREAD_POINTS), centred on the true value, in the order of their names. Owners in no
    group are not moved (and not named)."""
    group: dict[str, str] = {}

    def root(owner: str) -> str:
        while group.get(owner, owner) != owner:
            owner = group[owner]
        return owner

    for times, values in panels:
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        together: dict[frozenset[str], float] = {}  # owners at one value: for how long
        for k in range(len(times) - 1):
            at: dict[float, list[str]] = {}
            for owner, curve in values.items():
                if k < len(curve) and curve[k] != 0:
                    at.setdefault(round(curve[k], 9), []).append(owner)
            for owners in at.values():
                if len(owners) > 1:
                    key = frozenset(owners)
                    together[key] = together.get(key, 0.0) + times[k + 1] - times[k]
        for same, seconds in together.items():
            if seconds > COINCIDING * span:
                first, *rest = sorted(same)
                for owner in rest:
                    group[root(owner)] = root(first)
    members: dict[str, list[str]] = {}
    for owner in sorted({*group, *group.values()}):
        members.setdefault(root(owner), []).append(owner)
    return {owner: (k - (len(names) - 1) / 2) * min(step, SPREAD_POINTS / (len(names) - 1))
            for names in members.values() for k, owner in enumerate(names)}


def _move(lines: Iterable[Any], ax: Any, fig: Any, points: float) -> None:
    """Draw ``lines`` ``points`` up from where their data puts them (after the axes have taken their
    data into their limits)."""
    if points:
        from matplotlib.transforms import offset_copy

        moved = offset_copy(ax.transData, fig=fig, y=points, units="points")
        for line in lines:
            line.set_transform(moved)


def _limits(shift: Mapping[str, float], top: float) -> tuple[float, float]:
    """A panel's y axis from 0 to ``top``, a little wider both ways when curves are drawn apart (so
    that one drawn below a curve at 0, or above one at the top, shows)."""
    room = 0.03 * top if shift else 0.0
    return -room, top + room


def _legend(fig: Any, shift: Mapping[str, float]) -> None:
    """One legend at the right for every panel's lines and marks (and the evictions' bars on their
    twin axes), each label once; a last entry says which owners' curves are drawn apart."""
    from matplotlib.lines import Line2D

    entries: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if shift:
        entries["curves that coincide are\ndrawn side by side"] = Line2D([], [], ls="none")
    fig.legend(list(entries.values()), list(entries), loc="center right", fontsize=8, ncol=1, frameon=False)


def _closed(values: Iterable[float]) -> list[float]:
    """Bin values with the last repeated, so that a post-step drawn over the bin edges ends at the
    right edge of the last bin."""
    out = list(values)
    return out + out[-1:] if out else [0.0]


def _ranked_owners(series: Iterable[Series]) -> list[str]:
    """Owners by slot-time used (then by what they were owed), largest first."""
    used: dict[str, float] = {}
    for s in series:
        for owner, values in s.real.items():
            used[owner] = used.get(owner, 0.0) + sum(values) + 1e-9 * sum(s.ideal.get(owner, ()))
    return sorted(used, key=lambda o: (-used[o], o))


def draw_front(path: Path | str, doc: Mapping[str, Any]) -> None:
    """``osep tune``'s candidates as points of cost (LC + PC) against PV on the tuned period: the
    front joined by a line, the recommendation and the policy file's settings marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["candidates"] if not r["unfinished"]]
    area = AREA_SHORT.get(doc["measured_in"], "slot-s")
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.scatter([r["cost"] for r in rows], [r["pv"] for r in rows], s=14, color="0.6", label="a candidate")
    front = sorted((r for r in rows if r["front"]), key=lambda r: (r["cost"], r["pv"]))
    ax.plot([r["cost"] for r in front], [r["pv"] for r in front], "o-", color="tab:blue", ms=5, lw=1.2,
            label="the front (no other is lower on both)")
    for key, marker, colour, label in (("policy_file", "D", "tab:orange", "the policy file's settings"),
                                       ("recommended", "*", "tab:red", "recommended")):
        for r in rows:
            if r[key]:
                ax.plot([r["cost"]], [r["pv"]], marker, color=colour, ms=13 if marker == "*" else 8,
                        label=label, zorder=3)
    if rows and doc["pick"]["rule"] != "lowest-pv":
        bound = min(r["pv"] for r in rows) * (1 + doc["pick"]["within"])
        ax.axhline(bound, color="tab:red", lw=0.8, ls=":", label=f"{doc['pick']['within']:.0%} over the lowest PV")
    ax.set_xlabel(f"cost: LC + PC ({area})")
    ax.set_ylabel(f"PV ({area})")
    ax.set_title(f"osep tune: {len(doc['candidates']):,} candidates, {doc['pick']['says']}", fontsize=9,
                 loc="left")
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
