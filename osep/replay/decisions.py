"""Reading the daemon's decision log back: what ``osep report --history`` summarises and what
``osep replay`` uses to date each eviction's signal and to tell osep's evictions from anybody else's.

The events are those :mod:`osep.act.records` writes; other events in the same log (``reloaded``,
``stopped``, ``ceiling``...) are for people, and the reader passes over them. A damaged line is
counted (:mod:`osep.replay.damage`) and skipped; no line is read past ``MAX_RECORD_BYTES``.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO

from osep.act.records import ACTION, CYCLE, CYCLE_FAILED, DECISION, OUTCOMES, STARTED, Outcome
from osep.core.model import JobId
from osep.errors import LogError
from osep.replay.damage import (
    LONGEST,
    MAX_JOB_NUMBER,
    MAX_RECORD_BYTES,
    MAX_SLOTS,
    Damage,
    brief,
    log_time,
    name_ok,
    number_in,
    regular_file,
)

READ = frozenset((STARTED, CYCLE_FAILED, DECISION, ACTION, CYCLE))  # the events the reader takes
MAX_CYCLE = 2**31 - 1  # a cycle number
BLOCK = 1 << 20  # bytes read at a time past a line too long to take

# Damage, as counted (see osep.replay.damage): fixed texts; the line number says where.
TOO_LONG = f"a line longer than {MAX_RECORD_BYTES >> 20} MiB, skipped"
NOT_UTF8 = "not UTF-8 text, skipped"
NOT_JSON = "not a JSON log event, skipped"
NO_NAME = "a JSON object with no event name, skipped"


@dataclass(frozen=True, slots=True)
class Action:
    run: int
    cycle: int
    time: float
    kind: str  # vacate | claim
    outcome: Outcome
    owner: str | None  # vacate: whose job
    beneficiary: str | None
    job: JobId | None = None
    slot: str | None = None
    run_time: float = 0.0
    lost_work: float = 0.0
    detail: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class DecisionLog:
    path: str
    actions: list[Action] = field(default_factory=list)
    cycles: int = 0
    failed_cycles: int = 0
    runs: int = 0
    capacity: int | None = None  # the largest pool the loop saw
    first: float | None = None
    last: float | None = None
    held_cycles: dict[str, int] = field(default_factory=dict)  # owner -> cycles spent held
    # The vacates sent (done, naming a job), and whether the log gives them in time order (what
    # :func:`vacates_in_order` needs); counted whether or not ``actions`` are kept.
    vacates: int = 0
    vacates_ordered: bool = True
    # With ``keep``: the vacates sent, as vacates_in_order gives them (times, clusters, procs), while
    # there are at most that many; None when not kept.
    kept: tuple[array[float], array[int], array[int]] | None = None

    def kept_in_order(self) -> Iterator[tuple[float, JobId]] | None:
        """What :func:`vacates_in_order` gives, from the vacates :func:`read_decisions` kept (None
        when it did not keep them all)."""
        if self.kept is None:
            return None
        times, clusters, procs = self.kept
        return zip(times, map(JobId, repeat(""), clusters, procs), strict=True)

    def vacates_sent(self) -> dict[JobId, list[float]]:
        """The job as its schedd's event logs name it (no schedd) -> times a vacate was sent for it,
        oldest first."""
        out: dict[JobId, list[float]] = {}
        for a in self.actions:
            if _sent(a):
                assert a.job is not None
                out.setdefault(a.job.in_schedd, []).append(a.time)
        for times in out.values():
            times.sort()
        return out


def _sent(action: Action) -> bool:
    return action.kind == "vacate" and action.outcome is Outcome.DONE and action.job is not None


def read_decisions(
    path: Path,
    warn: Callable[[str], None],
    since: float | None = None,
    until: float | None = None,
    *,
    actions: bool = True,
    keep: int = 0,
) -> DecisionLog:
    """The log's cycles and actions with ``since <= time < until`` (with ``actions`` false, the
    actions are counted but not kept: what ``osep replay`` reads first, with memory that does not
    grow with the log).

    Bad lines are skipped and counted, and ``warn`` gets one line per kind of damage at the end:
    a line longer than :data:`osep.replay.damage.MAX_RECORD_BYTES` (never read whole), one that is
    not UTF-8 or not a JSON object (a cut-off last line, something else written to the same file;
    NaN, infinities and nesting deeper than Python's recursion limit are not JSON here), and an
    event of the five above whose fields are of the wrong type or out of the bounds in
    :mod:`osep.replay.damage`. A file that cannot be read, or that holds damage and not one JSON
    object, raises :class:`LogError`.

    With ``keep``, the vacates sent are kept too while there are at most ``keep`` of them (24 bytes
    each): :meth:`DecisionLog.kept_in_order` then gives what :func:`vacates_in_order` would, without
    reading the file again."""
    log = DecisionLog(str(path))
    last_sent: float | None = None
    times: array[float] = array("d")
    clusters: array[int] = array("q")
    procs: array[int] = array("q")
    for action in _actions(path, Damage(warn), log, since, until):
        if _sent(action):
            log.vacates += 1
            if last_sent is not None and action.time < last_sent:
                log.vacates_ordered = False
            last_sent = action.time
            if log.vacates <= keep:
                assert action.job is not None
                times.append(action.time)
                clusters.append(action.job.cluster)
                procs.append(action.job.proc)
            elif log.vacates == keep + 1:  # too many to keep
                times, clusters, procs = array("d"), array("q"), array("q")
        if actions:
            log.actions.append(action)
    if keep > 0 and log.vacates <= keep:
        log.kept = (times, clusters, procs)
    return log


def vacates_in_order(path: Path) -> Iterator[tuple[float, JobId]]:
    """The vacates the log says were sent, (time, the job as its schedd's event logs name it), in
    the log's order, which is time order when :attr:`DecisionLog.vacates_ordered` (read by
    :func:`read_decisions`, which also reported the damage: here it is passed over silently).
    Holds one line at a time, and parses only the lines that may name a vacate."""
    for action in _actions(path, Damage(lambda _: None), DecisionLog(str(path)), None, None,
                           only=b"vacate"):
        if _sent(action):
            assert action.job is not None
            yield action.time, action.job.in_schedd


def _actions(path: Path, damage: Damage, log: DecisionLog, since: float | None,
             until: float | None, *, only: bytes | None = None) -> Iterator[Action]:
    """The log's actions, one at a time; the rest of what it says goes into ``log``, and its
    damage into ``damage``, reported at the end. With ``only``, just the actions whose kind is
    ``only`` are sure to be given (and ``log`` and ``damage`` are not complete): a line that holds
    neither those bytes nor a backslash (a JSON escape, which could spell them) cannot name such an
    action and is passed over unparsed."""
    name = str(path)
    regular_file(path, "decision log")
    reasons: dict[tuple[int, int, str, str], str] = {}
    cycle_time: float | None = None
    objects = 0
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise LogError(f"{name}: cannot read the decision log: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(_lines(handle), start=1):
            if line is None:
                damage.add(name, f"line {number}", TOO_LONG)
                continue
            if only is not None and only not in line and b"\\" not in line:
                continue
            if not line.strip():
                continue
            event = _parse(line)
            if isinstance(event, str):
                damage.add(name, f"line {number}", event)
                continue
            objects += 1
            event_name = event.get("event")
            if not isinstance(event_name, str):
                damage.add(name, f"line {number}", NO_NAME)
                continue
            if event_name not in READ:
                continue  # for people
            if event_name == STARTED:
                log.runs += 1
                reasons.clear()
                continue
            try:
                time = _time(event)
                if time is None:
                    if event_name == CYCLE_FAILED and _inside(cycle_time, since, until):
                        log.failed_cycles += 1
                    continue
                cycle_time = time
                if not _inside(time, since, until):
                    continue
                cycle = _whole(event, "cycle", MAX_CYCLE) or 0
                action = _take(log, event, event_name, max(1, log.runs), cycle, time, reasons)
            except _Bad as bad:
                damage.add(name, f"line {number}", f"{event_name} event with a bad {bad}, skipped")
                continue
            if action is not None:
                yield action
    if objects == 0 and damage.total and only is None:
        where, problem = damage.first(name) or ("line 1", "")
        raise LogError(f"{name}: {where}: not a decision log ({brief(problem)})")
    damage.report()


class _Bad(Exception):
    """A field of a log event has the wrong type or is out of bounds (the exception's text: which)."""


def _lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """The file's lines, each at most ``MAX_RECORD_BYTES`` long; None for a longer one, whose rest
    is read past in blocks rather than held."""
    while line := handle.readline(MAX_RECORD_BYTES + 1):
        if len(line) > MAX_RECORD_BYTES and not line.endswith(b"\n"):
            while (rest := handle.readline(BLOCK)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line


def _parse(line: bytes) -> dict[str, Any] | str:
    """The line's JSON object, or what is wrong with the line."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_UTF8
    try:
        event = _DECODER.decode(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python recurses
        return NOT_JSON
    return event if isinstance(event, dict) else NOT_JSON


def _no_constant(text: str) -> None:
    raise ValueError(f"{text} is not a number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # NaN and infinities are not JSON


def _take(log: DecisionLog, event: dict[str, Any], name: str, run: int, cycle: int, time: float,
          reasons: dict[tuple[int, int, str, str], str]) -> Action | None:
    """What the event adds to ``log``; an action is returned, not kept."""
    kind = event.get("kind")
    if name in (DECISION, ACTION) and kind is not None and not isinstance(kind, str):
        raise _Bad("kind")
    if name == DECISION and kind in ("vacate", "claim"):
        what = _text(event, "job" if kind == "vacate" else "slot")
        reasons[(run, cycle, kind, str(what))] = _text(event, "reason") or ""
    elif name == ACTION and kind in ("vacate", "claim"):
        what = _text(event, "job" if kind == "vacate" else "slot")
        outcome = event.get("outcome")
        if not isinstance(outcome, str) or outcome not in OUTCOMES:
            raise _Bad("outcome")
        return Action(
            run=run, cycle=cycle, time=time, kind=kind, outcome=Outcome(outcome),
            owner=_name(event, "owner"), beneficiary=_name(event, "beneficiary"),
            job=_job(event), slot=_name(event, "slot"),
            run_time=_duration(event, "run_time"), lost_work=_duration(event, "lost_work"),
            detail=_text(event, "detail"),
            reason=reasons.pop((run, cycle, kind, str(what)), None),
        )
    elif name == ACTION and kind == "hold" and event.get("outcome") == Outcome.DONE.value:
        owners = event.get("owners") or []
        if not isinstance(owners, list) or not all(name_ok(o) for o in owners):
            raise _Bad("owners")
        for owner in owners:
            log.held_cycles[owner] = log.held_cycles.get(owner, 0) + 1
    elif name == CYCLE:
        # The pool's slots ("capacity" in a log that names no unit: it counted slots then).
        capacity = _whole(event, "slots" if "unit" in event else "capacity", MAX_SLOTS)
        log.cycles += 1
        if capacity is not None:
            log.capacity = max(log.capacity or 0, capacity)
        log.first = time if log.first is None else min(log.first, time)
        log.last = time if log.last is None else max(log.last, time)
    return None


def _inside(time: float | None, since: float | None, until: float | None) -> bool:
    if time is None:
        return False
    return (since is None or time >= since) and (until is None or time < until)


def _time(event: dict[str, Any]) -> float | None:
    """The event's time (None if it has none), within the bounds of any log time."""
    value = event.get("time")
    if value is None:
        return None
    time = log_time(value)
    if time is None:
        raise _Bad("time")
    return time


def _whole(event: dict[str, Any], key: str, most: int) -> int | None:
    """A count from 0 to ``most`` (a whole float, as some writers give one, is taken)."""
    value = event.get(key)
    if value is None:
        return None
    number = number_in(value, 0, most)
    if number is None or not number.is_integer():
        raise _Bad(key)
    return int(number)


def _duration(event: dict[str, Any], key: str) -> float:
    value = event.get(key)
    if value is None:
        return 0.0
    seconds = number_in(value, 0, LONGEST)
    if seconds is None:
        raise _Bad(key)
    return seconds


def _text(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(key)
    return value


def _name(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is not None and not name_ok(value):
        raise _Bad(key)
    return value


def _job(event: dict[str, Any]) -> JobId | None:
    text = _text(event, "job")
    if text is None:
        return None
    try:
        job = JobId.parse(text)
    except ValueError:
        raise _Bad("job") from None
    if not (0 <= job.cluster <= MAX_JOB_NUMBER and 0 <= job.proc <= MAX_JOB_NUMBER):
        raise _Bad("job")
    return job
