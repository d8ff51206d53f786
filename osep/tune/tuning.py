"""A sweep end to end: every candidate on the tuned period (those the journal holds are not run
again), the front and the recommendation, then the recommendation and the policy file's own settings
on the held-out period; out comes the document ``osep tune`` renders.

How runs are carried out is the caller's (``runner``: worker processes here, or a pool's jobs), so
that every way gives the same document from the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from osep.errors import ConfigError
from osep.tune.candidates import Candidate
from osep.tune.front import Pick, front, recommend
from osep.tune.history import CHECK, TUNE, History
from osep.tune.journal import Journal
from osep.tune.sweep import Done, Figures, Task

Runner = Callable[[History, Sequence[Task], Done], None]
Progress = Callable[[int, int], None]  # runs finished (of this invocation's), runs to do


@dataclass(frozen=True, slots=True)
class Sweep:
    """What to try: the candidates (the policy file's own settings, ``baseline``, among them) and
    the rule that recommends one."""

    candidates: tuple[Candidate, ...]
    baseline: Candidate
    pick: Pick


def tune(history: History, sweep: Sweep, journal: Journal, runner: Runner,
         progress: Progress | None = None) -> dict[str, Any]:
    """Run what the journal lacks and return the document (see :func:`document`)."""
    reused = sum(1 for c in sweep.candidates if (TUNE, c) in journal.done)
    _run(history, [(TUNE, c) for c in sweep.candidates], journal, runner, progress)
    rows = [journal.done[(TUNE, c)] for c in sweep.candidates]
    own = sweep.baseline.as_dict()
    changes = [sum(1 for k, v in c.as_dict().items() if v != own[k]) for c in sweep.candidates]
    chosen = recommend(rows, sweep.pick, changes)
    check: dict[str, Figures] = {}
    if CHECK in history.periods() and chosen is not None:
        pair = {"recommended": sweep.candidates[chosen], "policy_file": sweep.baseline}
        _run(history, [(CHECK, c) for c in dict.fromkeys(pair.values())], journal, runner, progress)
        check = {name: journal.done[(CHECK, c)] for name, c in pair.items()}
    return document(history, sweep, rows, chosen, check, reused)


def runnable(history: History, candidates: Sequence[Candidate], given: bool, baseline: Candidate
             ) -> tuple[tuple[Candidate, ...], list[str]]:
    """The candidates whose interval every period can be simulated at (the simulator's bounds
    depend on it), and a note for each interval left out. An interval the user gave (``given``), or
    the policy file's, that cannot be run is a ConfigError naming ``-t``."""
    notes: list[str] = []
    out = list(candidates)
    for interval in sorted({c.interval for c in candidates}):
        try:
            for period in history.periods():
                history.scenario(period, interval)
        except ConfigError as exc:
            if given or interval == baseline.interval:
                raise ConfigError(exc.path, "-t", f"{interval:g} s: {exc.reason}") from None
            notes.append(f"t = {interval:g} s left out of the candidates: {exc.reason}")
            out = [c for c in out if c.interval != interval]
    return tuple(out), notes


def _run(history: History, tasks: list[Task], journal: Journal, runner: Runner,
         progress: Progress | None) -> None:
    # By period and interval, so that a worker makes each period's scenario for an interval once.
    todo = sorted((t for t in tasks if t not in journal.done), key=lambda t: (t[0], t[1].interval))
    finished = 0

    def done(task: Task, figures: Figures) -> None:
        nonlocal finished
        journal.record(task, figures)
        finished += 1
        if progress is not None:
            progress(finished, len(todo))

    if todo:
        if progress is not None:
            progress(0, len(todo))
        runner(history, todo, done)


def change(new: float, old: float) -> float | None:
    """``new`` against ``old`` as a fraction (-0.25: a quarter less); None where ``old`` is 0."""
    return None if old == 0 else (new - old) / old


def document(history: History, sweep: Sweep, rows: Sequence[Figures], chosen: int | None,
             check: dict[str, Figures], reused: int) -> dict[str, Any]:
    """The sweep's results as JSON: the history, the rule, every candidate with its figures (tuned
    period), whether it is on the front, the recommended one and the policy file's, and the two of
    them on the held-out period with the recommendation's change against the policy file's."""
    on_front = front(rows)
    base = sweep.candidates.index(sweep.baseline)
    resource = rows[0].resource if rows else "slots"
    periods = {p: dict(zip(("from", "until"), history.span(p), strict=True)) for p in history.periods()}
    inputs, described = [str(p) for p in history.inputs()], history.describe()
    logs = [inputs[k] for k in ([log["file"] for log in described["logs"]] if "logs" in described
                                else [described["log"]])]
    doc: dict[str, Any] = {
        "history": {"inputs": inputs, "log_files": logs, **described, "periods": periods},
        "measured_in": resource,
        "pick": {"rule": sweep.pick.rule.value, "within": sweep.pick.within, "says": sweep.pick.describe()},
        "candidates": [
            {"settings": c.as_dict(), **f.as_dict(), "cost": f.cost, "front": k in on_front,
             "policy_file": k == base, "recommended": k == chosen}
            for k, (c, f) in enumerate(zip(sweep.candidates, rows, strict=True))
        ],
        "recommended": chosen,
        "policy_file": base,
        "runs": {"candidates": len(rows), "from_journal": reused},
        "check": None,
    }
    if check:
        rec, own = check["recommended"], check["policy_file"]
        doc["check"] = {
            "recommended": rec.as_dict() | {"cost": rec.cost},
            "policy_file": own.as_dict() | {"cost": own.cost},
            "pv_change": change(rec.pv, own.pv),
            "cost_change": change(rec.cost, own.cost),
            "vacates_change": change(rec.vacates, own.vacates),
        }
    return doc
