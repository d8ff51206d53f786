"""Running slots per owner over time, real against ideal, one panel per policy (the paper's figures).

matplotlib draws with its file-only Agg backend, so no display is ever needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from osep.experiment import Outcome
from osep.metrics import curves


def draw(path: Path | str, title: str, outcomes: Mapping[str, Outcome]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(outcomes)
    fig, axes = plt.subplots(
        len(names), 1, figsize=(10, 2.6 * len(names) + 0.6), sharex=True, squeeze=False
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, name in zip(axes[:, 0], names):
        out = outcomes[name]
        c = curves(out.result.jobs, out.result.capacity, out.shares)
        hours = [t / 3600.0 for t in c.times]
        for k, owner in enumerate(sorted(c.real)):
            colour = colours[k % len(colours)]
            ax.step(hours, c.real[owner], where="post", color=colour, lw=1.6, label=f"{owner} real")
            ax.step(hours, c.ideal[owner], where="post", color=colour, lw=1.0, ls="--",
                    label=f"{owner} ideal")
        vacates = sorted(
            run.end / 3600.0 for rec in out.result.jobs for run in rec.runs if run.vacated
        )
        if vacates:
            ax.plot(vacates, [0] * len(vacates), "v", color="black", ms=5, label="vacate")
        m = out.metrics
        ax.set_title(
            f"{name}: PV {m.violation:.0f}, LC {m.capacity_loss:.0f}, PC {m.cost:.0f} slot-s",
            fontsize=10, loc="left",
        )
        ax.set_ylabel("slots")
        ax.set_ylim(bottom=0, top=out.result.capacity + 0.5)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("hours since the start of the scenario")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8, ncol=1, frameon=False)
    fig.suptitle(
        f"{title}: running slots per owner (solid: real; dashed: ideal, the feasible share)",
        fontsize=11, x=0.42,
    )
    fig.tight_layout(rect=(0, 0, 0.84, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
