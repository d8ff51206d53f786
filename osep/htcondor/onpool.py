"""A sweep's runs as jobs of an HTCondor pool: the runner of ``osep tune --on-pool``.

Each job runs :mod:`osep.htcondor.tunejob` on a batch of tasks, with the history's files, a spec
and osep's own modules in a zip (put on PYTHONPATH) transferred to it, so that the execute machine
needs only Python and structlog. Everything lives in a scratch directory made for the runs and
removed after them; the schedd must see it at the same path (its user log, the jobs' input and
output), as the local schedd does.

The jobs' user log (read with the bindings' ``JobEventLog``: it is the jobs' own, small and written
by the schedd alone) says which ended. A batch's results are handed on (``done``) as its output
arrives. A job that fails (a non-zero exit, no or bad output, held: the held one is removed first)
is submitted again, up to ``attempts`` in all; then the sweep stops with a :class:`PoolError`
naming the candidate. Whatever ends the runs, every job of theirs still in the queue is removed.
The bookkeeping (:func:`run_jobs`) talks to a :class:`Queue`, which :class:`ScheddQueue` is for a
real schedd, so that tests can give it another.
"""

from __future__ import annotations

import json
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import htcondor2 as htcondor

import osep
from osep.errors import PoolError
from osep.htcondor.reach import address_of, collector_of, the_collector
from osep.tune.candidates import Candidate
from osep.tune.history import History
from osep.tune.sweep import Done, Figures, Task

JobId = tuple[int, int]  # cluster, proc
ZIP = "osep.zip"
# Submit commands the runner sets itself: --pool-submit may not change them.
OWN_COMMANDS = frozenset({"executable", "transfer_executable", "arguments", "environment", "initialdir",
                          "should_transfer_files", "when_to_transfer_output", "transfer_input_files",
                          "transfer_output_files", "error", "log", "universe", "queue"})


@dataclass(frozen=True, slots=True)
class OnPool:
    """How the runs go to the pool: its collector (``pool``; None: the configuration's), the schedd
    by name (None: the local one), tasks per job (``batch``), the Python that runs a job on the
    execute machine, further submit commands (``submit``), tries per job (``attempts``) and
    seconds between looks at the user log (``poll``)."""

    pool: str | None = None
    schedd: str | None = None
    batch: int = 1
    python: str = "/usr/bin/python3"
    submit: tuple[tuple[str, str], ...] = ()
    attempts: int = 3
    poll: float = 2.0


@dataclass(frozen=True, slots=True)
class Ending:
    """A job that left the running: ``terminated`` (exit ``code``), ``held`` or ``removed``, and why."""

    job: JobId
    kind: str
    reason: str = ""
    code: int | None = None


class Queue(Protocol):
    """What the runner needs of a schedd."""

    def submit(self, description: Mapping[str, str], items: Sequence[Mapping[str, str]]) -> int:
        """Queue one job per item (``$(n)`` in the description); the new cluster's id."""

    def endings(self) -> list[Ending]:
        """The jobs that ended since the last call, as the user log says."""

    def remove(self, jobs: Sequence[JobId], why: str) -> None:
        """Remove these jobs."""

    def clear(self, clusters: Sequence[int]) -> None:
        """Remove every job of these clusters that is still in the queue."""


def description(options: OnPool, scratch: Path, inputs: Sequence[str]) -> dict[str, str]:
    """The submit description of the runs' jobs, ``$(n)`` naming a job's batch."""
    own = {
        "universe": "vanilla",
        "executable": options.python,
        "transfer_executable": "false",
        "arguments": "-m osep.htcondor.tunejob spec-$(n).json out-$(n).json",
        "environment": f"PYTHONPATH={ZIP}",
        "initialdir": str(scratch),
        "should_transfer_files": "YES",
        "when_to_transfer_output": "ON_EXIT",
        "transfer_input_files": ",".join([*inputs, "spec-$(n).json", ZIP]),
        "transfer_output_files": "out-$(n).json",
        "error": "err-$(n).txt",
        "log": str(scratch / "jobs.log"),
    }
    return {"request_cpus": "1", "JobBatchName": "osep-tune", **dict(options.submit), **own}


def transfer_names(paths: Sequence[Path]) -> list[str]:
    """The names the history's files have in a job's directory: their own, prefixed with their index
    (two inputs may have the same base name)."""
    return [f"{k}-{p.name}" for k, p in enumerate(paths)]


def zip_osep(target: Path) -> None:
    """osep's modules (its .py files) in a zip, from which Python imports them."""
    package = Path(osep.__file__).parent
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(package.rglob("*.py")):
            out.write(path, str(path.relative_to(package.parent)))


def run_jobs(queue: Queue, options: OnPool, scratch: Path, history: History, tasks: Sequence[Task],
             done: Done, sleep: Callable[[float], None], warn: Callable[[str], None]) -> None:
    """Run ``tasks`` as jobs of ``queue`` from ``scratch`` (an empty directory the schedd sees), calling
    ``done`` for each task as its job's results arrive."""
    if not tasks:
        return
    names = transfer_names(history.inputs())
    for name, path in zip(names, history.inputs(), strict=True):
        (scratch / name).symlink_to(path.resolve())
    zip_osep(scratch / ZIP)
    size = max(1, options.batch)
    batches = [list(tasks[at:at + size]) for at in range(0, len(tasks), size)]
    for n, batch in enumerate(batches):
        spec = {"history": history.describe(), "files": names,
                "tasks": [{"period": p, "candidate": c.as_dict()} for p, c in batch]}
        (scratch / f"spec-{n}.json").write_text(json.dumps(spec), encoding="utf-8")
    submit = description(options, scratch, names)
    book = _Book(queue, submit)
    try:
        book.add(list(range(len(batches))))
        while book.pending:
            endings = queue.endings()
            for ending in endings:
                if ending.job not in book.pending:
                    continue  # a job the runner removed itself
                n = book.pending.pop(ending.job)
                problem = _collect(scratch, n, batches[n], done) if ending.kind == "terminated" else None
                if ending.kind == "terminated" and problem is None:
                    continue
                if ending.kind == "removed":
                    raise PoolError(f"the pool's job for {_naming(batches[n])} was removed from the queue"
                                    + (f" ({ending.reason})" if ending.reason else ""))
                if ending.kind == "held":
                    queue.remove([ending.job], "osep tune submits it again")
                    said = _last_line(scratch / f"err-{n}.txt")  # what the job said, if it came back
                    problem = f"held: {ending.reason or 'no reason given'}" + (f"; it said: {said}" if said else "")
                book.again(n, problem or "failed", batches[n], scratch, options.attempts, warn)
            if not endings:
                sleep(options.poll)
    finally:
        queue.clear(book.clusters)


@dataclass
class _Book:
    queue: Queue
    submit: dict[str, str]
    pending: dict[JobId, int] = field(default_factory=dict)  # job -> its batch
    tries: dict[int, int] = field(default_factory=dict)  # batch -> jobs submitted for it
    clusters: list[int] = field(default_factory=list)

    def add(self, batches: list[int]) -> None:
        cluster = self.queue.submit(self.submit, [{"n": str(n)} for n in batches])
        self.clusters.append(cluster)
        for proc, n in enumerate(batches):
            self.pending[(cluster, proc)] = n
            self.tries[n] = self.tries.get(n, 0) + 1

    def again(self, n: int, problem: str, batch: Sequence[Task], scratch: Path, attempts: int,
              warn: Callable[[str], None]) -> None:
        what = _naming(batch)
        if self.tries[n] >= attempts:
            raise PoolError(f"the pool's job for {what} failed {self.tries[n]} times; the last: {problem}")
        for old in (f"out-{n}.json", f"err-{n}.txt"):
            (scratch / old).unlink(missing_ok=True)
        warn(f"the pool's job for {what} failed ({problem}): submitted again, "
             f"try {self.tries[n] + 1} of {attempts}")
        self.add([n])



def _naming(batch: Sequence[Task]) -> str:
    first = f"candidate {batch[0][1].key()} ({batch[0][0]} period)"
    return first + (f" and {len(batch) - 1} more" if len(batch) > 1 else "")


def _collect(scratch: Path, n: int, batch: Sequence[Task], done: Done) -> str | None:
    """Hand on a finished job's results; what is wrong with them (nothing handed on), or None."""
    try:
        data = json.loads((scratch / f"out-{n}.json").read_text(encoding="utf-8"))
        rows = data["results"]
        got = [((str(r["period"]), Candidate.from_dict(r["candidate"])), Figures.from_dict(r["figures"]))
               for r in rows]
    except FileNotFoundError:
        said = _last_line(scratch / f"err-{n}.txt")
        return f"no output{': ' + said if said else ''}"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"bad output ({type(exc).__name__}: {exc})"
    if [task for task, _ in got] != list(batch):
        return "bad output (not the runs it was given)"
    for task, figures in got:
        done(task, figures)
    return None


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


# -- a real schedd ---------------------------------------------------------------------------------


class ScheddQueue:
    """A :class:`Queue` of a schedd of the pool, the jobs' ends read from their user log."""

    def __init__(self, options: OnPool, log: Path) -> None:
        self._log_path = log
        self._log: Any = None
        if options.schedd is None and options.pool is None:
            self.where = "the local schedd"
            self._schedd = _edge(self.where, htcondor.Schedd)
            return
        collector = collector_of(options.pool)
        named = f"the schedd {options.schedd}" if options.schedd else "the schedd"
        ad = _edge(f"asking {the_collector(options.pool)} for {named}",
                   lambda: collector.locate(htcondor.DaemonType.Schedd, options.schedd))
        self.where = f"{named} at {address_of(ad)}"
        self._schedd = _edge(self.where, lambda: htcondor.Schedd(ad))

    def submit(self, description: Mapping[str, str], items: Sequence[Mapping[str, str]]) -> int:
        self._log_path.touch()
        result = _edge(f"submitting the sweep's jobs to {self.where}",
                       lambda: self._schedd.submit(htcondor.Submit(dict(description)), itemdata=iter(items)))
        return int(result.cluster())

    def endings(self) -> list[Ending]:
        if self._log is None:
            self._log = _edge(f"reading the jobs' log {self._log_path}",
                              lambda: htcondor.JobEventLog(str(self._log_path)))
        return [e for e in map(_ending, _edge(f"reading the jobs' log {self._log_path}",
                                              lambda: list(self._log.events(stop_after=0)))) if e is not None]

    def remove(self, jobs: Sequence[JobId], why: str) -> None:
        spec = [f"{c}.{p}" for c, p in jobs]
        _edge(f"removing jobs {', '.join(spec)} from {self.where}",
              lambda: self._schedd.act(htcondor.JobAction.Remove, spec, why))

    def clear(self, clusters: Sequence[int]) -> None:
        if not clusters:
            return
        which = " || ".join(f"ClusterId == {int(c)}" for c in clusters)
        left = _edge(f"asking {self.where} for the sweep's jobs",
                     lambda: self._schedd.query(constraint=which, projection=["ClusterId", "ProcId"]))
        if left:
            _edge(f"removing the sweep's jobs from {self.where}",
                  lambda: self._schedd.act(htcondor.JobAction.Remove, which, "osep tune is done with them"))


def _ending(event: Any) -> Ending | None:
    job = (int(event.cluster), int(event.proc))
    kind = event.type
    if kind == htcondor.JobEventType.JOB_TERMINATED:
        normal = bool(event.get("TerminatedNormally", False))
        code = int(event.get("ReturnValue", -1)) if normal else None
        reason = f"exit status {code}" if normal else f"killed by signal {event.get('TerminatedBySignal', '?')}"
        return Ending(job, "terminated", reason, code)
    if kind == htcondor.JobEventType.JOB_HELD:
        return Ending(job, "held", str(event.get("HoldReason", "")))
    if kind == htcondor.JobEventType.JOB_ABORTED:
        return Ending(job, "removed", str(event.get("Reason", "")))
    return None


def _edge(what: str, func: Callable[[], Any]) -> Any:
    """``func()``; whatever the bindings raise becomes one PoolError line saying what was tried."""
    try:
        return func()
    except (htcondor.HTCondorException, OSError, ValueError, RuntimeError) as exc:
        raise PoolError(f"{what}: {str(exc).strip() or type(exc).__name__}") from exc


# -- the runner ------------------------------------------------------------------------------------


@dataclass
class PoolRunner:
    """A sweep's runner (:data:`osep.tune.tuning.Runner`) that runs on a pool as ``options`` say."""

    options: OnPool
    warn: Callable[[str], None]
    sleep: Callable[[float], None] = time.sleep
    queue_of: Callable[[OnPool, Path], Queue] | None = None  # None: ScheddQueue

    def __call__(self, history: History, tasks: Sequence[Task], done: Done) -> None:
        with tempfile.TemporaryDirectory(prefix="osep-tune-", ignore_cleanup_errors=True) as made:
            scratch = Path(made)
            queue = (self.queue_of or ScheddQueue)(self.options, scratch / "jobs.log")
            run_jobs(queue, self.options, scratch, history, tasks, done, self.sleep, self.warn)


def parse_submit(pairs: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``KEY=VALUE`` texts as submit commands; ValueError naming one that is not, or one the runner sets."""
    for text in pairs:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key or any(c.isspace() for c in key):
            raise ValueError(f"{text!r} is not KEY=VALUE")
        if key.lower() in OWN_COMMANDS:
            raise ValueError(f"{key}: osep tune sets it itself")
        yield key, value.strip()
