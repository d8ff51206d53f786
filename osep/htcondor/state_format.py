"""The state file's format (``OSEP_STATE_FILE``): what one run of ``osep run`` leaves for the next,
and what ``osep release`` reads, as bytes; the file itself and its lock are :mod:`osep.htcondor.state`.

It holds, per negotiator and submitter, the ceiling osep set, what the administrator had before and
since when osep holds it (:class:`CeilingRecord`, which ``osep report`` shows; a ceiling is recorded
*before* it is sent, see :mod:`osep.htcondor.ceilings`), and what a ``--once`` run must hand to the
next one: the vacates still in progress, the rooms kept for their beneficiaries, and the vacates
of the last hour per job (for ``OSEP_MAX_VACATES_PER_JOB_PER_HOUR``). The file is JSON::

    {"format": "osep-state", "version": 2, "sha256": "<of the state, as written>",
     "state": {"ceilings": {NEGOTIATOR: {SUBMITTER: {"original": -1, "set": [4], "since": T}}},
               "vacates": [[POOL, SCHEDD, CLUSTER, PROC, START or null, SENT], ...],
               "reservations": [{"owner": O, "place": P, "expires": T, "until_running": N,
                                 "shape": [CPUS, MEMORY, GPUS, DISK]}, ...],
               "recent": [[POOL, SCHEDD, CLUSTER, PROC, [T, ...]], ...]}}

Every field is checked on reading, against the bounds below; a file that fails any check, or whose
checksum does not match, is refused whole (:class:`StateError`, naming the file, the key and the
reason): osep then touches no ceiling rather than guess whose each one is. The two earlier formats
(ceilings only, without a checksum) are read too. :func:`encode` never writes what :func:`decode`
would refuse.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

from osep.core.model import JobId
from osep.core.reservations import Reservation
from osep.core.resources import Shape
from osep.errors import ConfigError
from osep.htcondor import bounded_json
from osep.htcondor import json_fields as fields

FORMAT = "osep-state"
VERSION = 2
NO_CEILING = -1
LARGEST = 2**31 - 1  # ceilings, job numbers and counts: HTCondor's own int
LATEST_TIME = 2.0**40  # about the year 36,800: no clock osep reads is later
# What a pool can need, each bound loose for large pools and tight enough that a file of them all stays
# well within MAX_BYTES with names as HTCondor makes them (some 30 characters): a vacate in progress, a
# room kept and a job with recent vacates are each a job or a slot osep acted on within the last hour
# (20,000 is a fifth of a pool of 100,000 jobs); ceilings go on submitters, of which a policy names at
# most 10,000 (osep.bounds.MAX_OWNERS). A run with more keeps the newest; more ceilings, which
# it cannot drop, it cannot save, and then it sets none (as when the file cannot be written).
MAX_ENTRIES = 20_000  # ceilings, vacates, reservations and jobs with recent vacates, each
MAX_TIMES = 1_000  # recent vacates of one job
MAX_RECENT = 100_000  # recent vacates of all jobs
MAX_SET = 8  # ceilings osep may have in force for one submitter (two while a command is on its way)
# Reading a file costs at most about 100 bytes per token (below) plus its size a few times over.
# Measured: read_state peaked at 83 MiB on the costliest files of 16 MiB (tests/htcondor/
# test_state_file.py), `osep release` at 147 MiB on a file of every entry above, of 30-character
# names, which takes about 10 MiB. osep refuses to write more than MAX_BYTES.
MAX_BYTES = 16 * 2**20
# Strings, opening brackets, commas and colons (osep.htcondor.bounded_json) of a file of all the above:
# a ceiling (in a negotiator of its own) 24, a vacate 9, a reservation 22, a job's recent vacates 10
# and one per time after the first.
MAX_TOKENS = MAX_ENTRIES * (24 + 9 + 22 + 10) + MAX_RECENT + 100
MAX_DEPTH = 8  # levels of nesting: osep writes 6 (state.ceilings.NEGOTIATOR.SUBMITTER.set)
MAX_NAME = 1_024  # characters in a negotiator, submitter, owner, place, schedd or pool name
LEGACY = ""  # the negotiator of ceilings from a state file older than that distinction


class StateError(ConfigError):
    """The state file cannot be used: unreadable, damaged, or in use by another osep."""


@dataclass(frozen=True, slots=True)
class CeilingRecord:
    """A ceiling osep set on a submitter: what the administrator had before (``original``, -1 for
    none) and what osep may have in force now (``values``: what it set; while a command is on its
    way, or failed, the value before it too). The negotiator showing one of ``values`` means the
    ceiling is still osep's; any other value was set by someone else since."""

    original: int
    values: tuple[int, ...]
    since: float | None = None  # when osep first set one (None: recorded before osep kept that)


Ceilings = dict[str, dict[str, CeilingRecord]]  # negotiator -> submitter -> record


@dataclass(slots=True)
class SavedState:
    ceilings: Ceilings = field(default_factory=dict)
    vacates: list[tuple[JobId, float | None, float]] = field(default_factory=list)  # job, its start, sent
    reservations: list[Reservation] = field(default_factory=list)
    recent: dict[JobId, list[float]] = field(default_factory=dict)  # job -> times it was vacated


def decode(raw: bytes, path: Path | str = "state file") -> SavedState:
    """The state ``raw`` holds; :class:`StateError` (naming ``path``) if it fails any check."""
    try:
        return _decode(raw)
    except fields.Bad as exc:
        raise StateError(path, exc.key or None, exc.reason) from None


def _decode(raw: bytes) -> SavedState:
    try:
        doc = bounded_json.loads(raw, MAX_DEPTH, MAX_TOKENS)
    except bounded_json.Refused as exc:
        raise fields.Bad("", str(exc)) from None
    if not isinstance(doc, dict):
        raise fields.Bad("", f"is not a state file: its JSON is {fields.kind_of(doc)}, not an object")
    if "format" not in doc:
        return _legacy(doc)
    fields.known_keys(doc, "", {"format", "version", "sha256", "state"})
    if doc.get("format") != FORMAT:
        raise fields.Bad("format", f"expected {FORMAT!r}, got {fields.show(doc.get('format'))}")
    version = doc.get("version")
    if version != VERSION or isinstance(version, bool):
        raise fields.Bad("version", f"this osep reads version {VERSION}, got {fields.show(version)}")
    state = fields.field(doc, "", "state", dict)
    digest = fields.field(doc, "", "sha256", str)
    if digest != checksum(state):
        raise fields.Bad("sha256", "does not match the state: the file was changed or damaged")
    fields.known_keys(state, "state", {"ceilings", "vacates", "reservations", "recent"})
    ceilings = _ceilings(fields.field(state, "state", "ceilings", dict), "state.ceilings")
    vacates = [_vacate(v, f"state.vacates[{k}]") for k, v in enumerate(_entries(state, "state", "vacates"))]
    reservations = [_reservation(r, f"state.reservations[{k}]")
                    for k, r in enumerate(_entries(state, "state", "reservations"))]
    recent = dict(_recent(r, f"state.recent[{k}]") for k, r in enumerate(_entries(state, "state", "recent")))
    if sum(len(times) for times in recent.values()) > MAX_RECENT:
        raise fields.Bad("state.recent", f"more than {MAX_RECENT} times in all; osep writes at most that many")
    return SavedState(ceilings=ceilings, vacates=vacates, reservations=reservations, recent=recent)


def _legacy(doc: dict[str, Any]) -> SavedState:
    """Version 1 (``{"negotiators": {N: {"ceilings": ..., "original": ...}}}``) and version 0
    (``{"ceilings": ..., "original": ...}``): ceilings only."""
    if "negotiators" in doc:
        fields.known_keys(doc, "", {"negotiators"})
        entries = fields.field(doc, "", "negotiators", dict)
        where = "negotiators"
    else:
        entries, where = {LEGACY: doc}, ""
    _count(entries, where)
    out: Ceilings = {}
    total = 0
    for name, entry in entries.items():
        key = fields.join(where, fields.label(name)) if where else ""
        _name(name, key or "negotiators", empty=True)
        if not isinstance(entry, dict):
            raise fields.Bad(key, f"expected an object, got {fields.kind_of(entry)}")
        fields.known_keys(entry, key, {"ceilings", "original"})
        ceilings = fields.field(entry, key, "ceilings", dict) if "ceilings" in entry else {}
        original = fields.field(entry, key, "original", dict) if "original" in entry else {}
        records: dict[str, CeilingRecord] = {}
        for submitter, value in ceilings.items():
            at = fields.join(key, "ceilings", fields.label(submitter))
            _name(submitter, at)
            before = original.get(submitter, NO_CEILING)
            records[submitter] = CeilingRecord(_ceiling(before, fields.join(key, "original", fields.label(submitter))),
                                               (_ceiling(value, at),))
        for submitter, value in original.items():
            _name(submitter, fields.join(key, "original", fields.label(submitter)))
            _ceiling(value, fields.join(key, "original", fields.label(submitter)))
        total += len(records)
        if total > MAX_ENTRIES:
            raise fields.Bad(where, f"more than {MAX_ENTRIES} ceilings")
        if records:
            out[name] = records
    return SavedState(ceilings=out)


def _ceilings(doc: dict[str, Any], where: str) -> Ceilings:
    out: Ceilings = {}
    total = 0
    for negotiator, submitters in doc.items():
        key = fields.join(where, fields.label(negotiator))
        _name(negotiator, key, empty=True)
        if not isinstance(submitters, dict):
            raise fields.Bad(key, f"expected an object, got {fields.kind_of(submitters)}")
        total += len(submitters)
        if total > MAX_ENTRIES:
            raise fields.Bad(where, f"more than {MAX_ENTRIES} ceilings")
        records = {}
        for submitter, record in submitters.items():
            at = fields.join(key, fields.label(submitter))
            _name(submitter, at)
            if not isinstance(record, dict):
                raise fields.Bad(at, f"expected an object, got {fields.kind_of(record)}")
            fields.known_keys(record, at, {"original", "set", "since"})
            original = _ceiling(record.get("original"), f"{at}.original")
            values = fields.field(record, at, "set", list)
            if not 1 <= len(values) <= MAX_SET:
                raise fields.Bad(f"{at}.set", f"expected 1 to {MAX_SET} ceilings, got {len(values)}")
            since = _time(record["since"], f"{at}.since") if "since" in record else None
            records[submitter] = CeilingRecord(
                original, tuple(_ceiling(v, f"{at}.set[{k}]") for k, v in enumerate(values)), since)
        if records:
            out[negotiator] = records
    return out


def _vacate(entry: Any, at: str) -> tuple[JobId, float | None, float]:
    items = fields.items(entry, at, 6)
    start = None if items[4] is None else _time(items[4], f"{at}[4]")
    return _job(items, at), start, _time(items[5], f"{at}[5]")


def _reservation(entry: Any, at: str) -> Reservation:
    if not isinstance(entry, dict):
        raise fields.Bad(at, f"expected an object, got {fields.kind_of(entry)}")
    fields.known_keys(entry, at, {"owner", "place", "expires", "until_running", "shape"})
    owner = _name(entry.get("owner"), f"{at}.owner")
    place = _name(entry.get("place"), f"{at}.place")
    expires = _time(entry.get("expires"), f"{at}.expires")
    until = _count_of(entry.get("until_running"), f"{at}.until_running")
    raw = fields.items(entry.get("shape"), f"{at}.shape", len(get_args(Shape)))
    shape = cast(Shape, tuple(_count_of(v, f"{at}.shape[{k}]") for k, v in enumerate(raw)))
    return Reservation(owner, place, expires, until, shape)


def _recent(entry: Any, at: str) -> tuple[JobId, list[float]]:
    items = fields.items(entry, at, 5)
    times = items[4]
    if not isinstance(times, list) or len(times) > MAX_TIMES:
        raise fields.Bad(f"{at}[4]", f"expected a list of at most {MAX_TIMES} times, got {fields.kind_of(times)}")
    return _job(items, at), [_time(t, f"{at}[4][{k}]") for k, t in enumerate(times)]


def _job(items: list[Any], at: str) -> JobId:
    pool = _name(items[0], f"{at}[0]", empty=True)
    schedd = _name(items[1], f"{at}[1]", empty=True)
    return JobId(schedd, _count_of(items[2], f"{at}[2]"), _count_of(items[3], f"{at}[3]"), pool)


def _entries(doc: dict[str, Any], where: str, key: str) -> list[Any]:
    entries: list[Any] = fields.field(doc, where, key, list)
    _count(entries, f"{where}.{key}")
    return entries


def _name(value: Any, at: str, empty: bool = False) -> str:
    return fields.name(value, at, MAX_NAME, empty)


def _count(entries: dict[str, Any] | list[Any], where: str) -> None:
    if len(entries) > MAX_ENTRIES:
        raise fields.Bad(where, f"more than {MAX_ENTRIES} entries; osep writes at most that many")


def _ceiling(value: Any, at: str) -> int:
    if not fields.whole(value) or not NO_CEILING <= value <= LARGEST:
        raise fields.Bad(at, f"a ceiling is a whole number from -1 to {LARGEST}; got {fields.show(value)}")
    return cast(int, value)


def _count_of(value: Any, at: str) -> int:
    if not fields.whole(value) or not 0 <= value <= LARGEST:
        raise fields.Bad(at, f"expected a whole number from 0 to {LARGEST}; got {fields.show(value)}")
    return cast(int, value)


def _time(value: Any, at: str) -> float:
    number = fields.whole(value) or (isinstance(value, float) and math.isfinite(value))
    if not number or not 0 <= value <= LATEST_TIME:
        raise fields.Bad(at, f"expected a time in seconds from 0 to 2^40; got {fields.show(value)}")
    return float(value)


def checksum(state: Any) -> str:
    return hashlib.sha256(_canonical(state).encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def encode(state: SavedState) -> bytes:
    """The file that keeps ``state``: the newest entries of each kind up to the bounds (ceilings all);
    ValueError if it would hold more ceilings than :data:`MAX_ENTRIES` or be larger than
    :data:`MAX_BYTES` (so osep never writes what it would refuse to read)."""
    body: dict[str, Any] = {
        "ceilings": {n: {s: _record(r) for s, r in records.items()}
                     for n, records in state.ceilings.items() if records},
        "vacates": [[j.pool, j.schedd, j.cluster, j.proc, start, sent]
                    for j, start, sent in state.vacates[-MAX_ENTRIES:]],
        "reservations": [{"owner": r.owner, "place": r.slot, "expires": r.expires,
                          "until_running": r.until_running, "shape": list(r.shape)}
                         for r in state.reservations[-MAX_ENTRIES:]],
        "recent": _recent_rows(state.recent),
    }
    doc = {"format": FORMAT, "version": VERSION, "sha256": checksum(body), "state": body}
    ceilings = sum(len(records) for records in state.ceilings.values())
    if ceilings > MAX_ENTRIES:
        raise ValueError(f"it would hold {ceilings} ceilings, more than the {MAX_ENTRIES} osep reads")
    data = (_canonical(doc) + "\n").encode("utf-8")
    if len(data) > MAX_BYTES:
        raise ValueError(f"it would be larger than {MAX_BYTES // 2**20} MiB (names of more than some "
                         "hundred characters?), more than osep reads")
    return data


def _record(record: CeilingRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"original": record.original, "set": list(record.values)}
    if record.since is not None:
        out["since"] = record.since
    return out


def _recent_rows(recent: dict[JobId, list[float]]) -> list[list[Any]]:
    """The newest jobs' recent vacates, each job's newest, within :data:`MAX_ENTRIES` jobs and
    :data:`MAX_RECENT` times in all."""
    rows: list[list[Any]] = []
    room = MAX_RECENT
    for job, times in reversed(recent.items()):
        if len(rows) == MAX_ENTRIES or not room:
            break
        kept = times[-min(MAX_TIMES, room):]
        if kept:
            rows.append([job.pool, job.schedd, job.cluster, job.proc, kept])
            room -= len(kept)
    rows.reverse()
    return rows
