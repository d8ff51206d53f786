"""Negotiator submitter ceilings: how a hold is enforced on a live pool, and how it is undone.

A held owner's submitters get a ceiling of what they run after the cycle's vacates plus the plan's
allowance, split over them; a released owner's get back what they had before. docs/policy.md gives
the rule, and the leases of HTCondor 25.11 and later. Whose a ceiling is, is decided by what the
negotiator has: a value osep set (on record as a :class:`osep.htcondor.state_format.CeilingRecord`) is
osep's; any other is the administrator's: osep never lifts it, and holds below it. A ceiling is
recorded before it is sent (write-ahead), so a run that dies at any point leaves a state file that
names it. If the state file cannot be written no new ceiling is set; lifting needs no record. A
command that fails may have reached the negotiator, so both values stay on record until it is read
again. The negotiator is reached through a :class:`NegotiatorLink` (the bindings, in
:mod:`osep.htcondor.negotiator`; a fake in the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from osep.errors import PoolError
from osep.htcondor.job_ads import Accounts
from osep.htcondor.state_format import LEGACY, MAX_SET, NO_CEILING, CeilingRecord, StateError
from osep.htcondor.state_format import Ceilings as Records

__all__ = ["LEGACY", "NO_CEILING", "Ceilings", "NegotiatorLink", "desired", "held_submitters"]


class NegotiatorLink(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def leases(self) -> bool:
        """Whether the negotiator takes time-limited ceilings (HTCondor 25.11 and later)."""
        ...

    def ceilings(self) -> dict[str, int]:
        """Every submitter's current ceiling."""
        ...

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        """Give ``submitter`` the ceiling ``value``: for ``lease`` seconds, after which the
        negotiator gives back the one from before, where it takes leases and ``lease`` is given;
        for good otherwise. Any lease in force on the submitter ends first."""
        ...


def capped(owner: str, holding: Mapping[str, int], accounts: Accounts) -> list[str]:
    """The accounting names of ``owner`` a hold may cap: those charged for held owners only. A
    ceiling on a name that jobs of an owner not held are charged to too (two owners' jobs naming
    one accounting group) would hold that owner as well, so it is left alone."""
    return sorted(s for s in accounts.submitters.get(owner, ())
                  if accounts.charged.get(s, {owner}) <= holding.keys())


def _capped_by_owner(holding: Mapping[str, int], accounts: Accounts) -> dict[str, list[str]]:
    """:func:`capped` for every held owner, worked out once."""
    return {owner: capped(owner, holding, accounts) for owner in holding}


def shared(holding: Mapping[str, int], accounts: Accounts) -> list[str]:
    """Accounting names of held owners that no hold may cap (see :func:`capped`)."""
    return sorted({s for owner in holding for s in accounts.submitters.get(owner, ())}
                  - held_submitters(holding, accounts))


def held_submitters(holding: Mapping[str, int], accounts: Accounts) -> set[str]:
    """Every accounting name the owners in ``holding`` are held by."""
    return {s for names in _capped_by_owner(holding, accounts).values() for s in names}


def desired(holding: Mapping[str, int], accounts: Accounts, original: Mapping[str, int]
            ) -> dict[str, int]:
    """The ceiling each submitter of a held owner should have (``holding``: owner -> allowance)."""
    out = {}
    for owner, submitters in _capped_by_owner(holding, accounts).items():
        allowance = holding[owner]
        for k, submitter in enumerate(submitters):
            # The owner's allowance, split over its submitters (the first take the remainder).
            extra = allowance // len(submitters) + (1 if k < allowance % len(submitters) else 0)
            cap = max(0, int(accounts.busy.get(submitter, 0.0))) + extra
            before = original.get(submitter, NO_CEILING)
            # An administrator's own, lower ceiling is never raised.
            out[submitter] = cap if before < 0 else min(cap, before)
    return out


class Ceilings:
    """The ceilings osep has set, per negotiator. ``persist`` writes the state file (raising
    :class:`osep.htcondor.state_format.StateError` when it cannot); without it no ceiling is ever set."""

    def __init__(self, records: Records | None, log: Any,
                 persist: Callable[[], None] | None = None) -> None:
        self.log = log
        self._persist = persist
        # negotiator -> submitter -> what osep set there, and what was there before
        self._records: Records = {n: dict(r) for n, r in (records or {}).items() if r}
        # Set by each sync: submitters whose ceiling was found changed by someone else (left as found).
        self.left: dict[str, int] = {}
        # (negotiator, submitter) -> when the lease osep set there is to be renewed (this run's
        # only: a new run renews every lease at its first sync)
        self._renew: dict[tuple[str, str], float] = {}
        # (negotiator, submitter) -> when the lease osep last set there ends (this run's only)
        self._ends: dict[tuple[str, str], float] = {}
        if self._records:
            self.log.info("ceilings_taken_over", submitters=sorted(self.set))

    def records(self) -> Records:
        """What the state file keeps."""
        return {n: dict(r) for n, r in self._records.items() if r}

    @property
    def set(self) -> dict[str, int]:
        """Every ceiling osep has set and not lifted (submitter -> value), whatever the negotiator."""
        return {s: r.values[-1] for records in self._records.values() for s, r in records.items()}

    def by_negotiator(self) -> dict[str, dict[str, int]]:
        """The same, per negotiator ("" for a state file older than that distinction)."""
        return {name: {s: r.values[-1] for s, r in records.items()}
                for name, records in self._records.items() if records}

    def lapse(self, now: float) -> float | None:
        """Seconds from ``now`` by which every ceiling on record will have ended by itself, or None
        if one of them is not a lease this run set (it lasts until it is lifted)."""
        ends = [self._ends.get((n, s)) for n, records in self._records.items() for s in records]
        if any(end is None for end in ends):
            return None
        return max([0.0, *(end - now for end in ends if end is not None)])

    def unchanged(self, holding: Mapping[str, int], accounts: Accounts) -> bool:
        """Whether a sync can be skipped without asking any negotiator: osep has no ceiling on
        record and ``holding`` asks for none. (While it has one, every sync reads the negotiator,
        to see what anyone else changed.)"""
        return not any(self._records.values()) and not desired(holding, accounts, {})

    def sync(self, link: NegotiatorLink, holding: Mapping[str, int], accounts: Accounts,
             now: float = 0.0, lease: float | None = None) -> None:
        """Make the negotiator's ceilings what ``holding`` asks for, lifting those it no longer
        names; with ``lease``, where the negotiator takes leases, each set as one and renewed once
        half of it has passed by ``now``. PoolError if a command failed, or if a new ceiling could
        not be recorded first."""
        name = link.name
        self.left = {}
        if LEGACY in self._records and name != LEGACY:  # an older state file: it was this negotiator
            self._records[name] = {**self._records.pop(LEGACY), **self._records.get(name, {})}
        records = self._records.setdefault(name, {})
        left_alone = shared(holding, accounts)
        if left_alone:
            self.log.warning("submitter_shared", submitters=left_alone,
                             consequence="not capped: jobs of owners not held are charged to it")
        if not records and not desired(holding, accounts, {}):
            return
        current = link.ceilings()
        originals = self._reconcile(records, current)
        for submitter in held_submitters(holding, accounts):
            originals.setdefault(submitter, current.get(submitter, NO_CEILING))
        want = desired(holding, accounts, originals)
        leasing = lease if lease is not None and link.leases else None
        sets = {s: v for s, v in sorted(want.items())
                if s not in records or records[s].values != (v,)
                or (leasing is not None and self._renew.get((name, s), now) <= now)}
        lifts = sorted(s for s in records if s not in want)
        refused = self._record_ahead(records, sets, originals, now)
        if refused is not None:
            sets = {}
        # One submitter's failed command is that submitter's: the others are still sent. What
        # failed stays on record (a set with both values, a lift as it was) and is sent again.
        failed: list[str] = []
        try:
            for submitter, value in sets.items():
                try:
                    link.set_ceiling(submitter, value, leasing)
                except PoolError as exc:
                    failed.append(str(exc))
                    continue
                records[submitter] = CeilingRecord(originals[submitter], (value,), records[submitter].since)
                if leasing is not None:
                    self._renew[(name, submitter)] = now + leasing / 2
                    self._ends[(name, submitter)] = now + leasing
                    self.log.info("ceiling", submitter=submitter, ceiling=value, lease=leasing)
                else:
                    self._ends.pop((name, submitter), None)
                    self.log.info("ceiling", submitter=submitter, ceiling=value)
            for submitter in lifts:
                value = records[submitter].original
                try:
                    link.set_ceiling(submitter, value)
                except PoolError as exc:
                    failed.append(str(exc))
                    continue
                del records[submitter]
                self._renew.pop((name, submitter), None)
                self._ends.pop((name, submitter), None)
                self.log.info("ceiling_lifted", submitter=submitter, ceiling=value)
        finally:
            # What went through is certain now (what did not stays on record with both values).
            # Not needed for safety (the record written ahead covers it); a crash skips it.
            self._save()
        if refused is not None:
            raise PoolError(refused)
        if failed:
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise PoolError(f"{failed[0]}{more}")

    def _reconcile(self, records: dict[str, CeilingRecord], current: Mapping[str, int]
                   ) -> dict[str, int]:
        """Which recorded ceilings are still osep's, by what the negotiator has now; returns each
        recorded submitter's original (the administrator's ceiling)."""
        originals = {}
        for submitter, record in list(records.items()):
            if submitter not in current:
                # Not listed at all: what it has is unknown, so osep's may still be in force.
                originals[submitter] = record.original
                continue
            now = current[submitter]
            if now in record.values:
                records[submitter] = CeilingRecord(record.original, (now,), record.since)
                originals[submitter] = record.original
            else:
                # Changed by someone else since osep set it (or osep's command never arrived, or
                # its lift did and the run died before it could say so): the value found stands.
                del records[submitter]
                originals[submitter] = now
                self.left[submitter] = now
                if now == record.original:  # back to what it had before osep: a lease ran out
                    self.log.info("ceiling_lapsed", submitter=submitter, ceiling=now)
                else:
                    self.log.warning("ceiling_not_osep", submitter=submitter, ceiling=now,
                                     osep_set=list(record.values), kept="as found")
        return originals

    def _record_ahead(self, records: dict[str, CeilingRecord], sets: Mapping[str, int],
                      originals: Mapping[str, int], when: float) -> str | None:
        """Put every ceiling about to be set on record, durably, before it is sent (a new one held
        since ``when``); the reason it could not be (nothing is then on record that was not before),
        or None."""
        if not sets:
            return None
        before = {s: records.get(s) for s in sets}
        for submitter, value in sets.items():
            # Until the command is known to have gone through, either value may be in force: the
            # one osep set before (reconciled above), or the administrator's if osep set none.
            old = before[submitter]
            now = old.values if old is not None else (originals[submitter],)
            values = tuple(dict.fromkeys((*now, value)))[-MAX_SET:]
            records[submitter] = CeilingRecord(originals[submitter], values,
                                               old.since if old is not None else when)
        problem = "there is no state file to record them in"
        if self._persist is not None:
            try:
                self._persist()
            except StateError as exc:
                problem = str(exc)
            else:
                return None
        for submitter, old in before.items():
            if old is None:
                del records[submitter]
            else:
                records[submitter] = old
        self.log.error("ceilings_refused", submitters=sorted(sets), problem=problem)
        return f"no ceiling set, as none could be recorded first: {problem}"

    def _save(self) -> None:
        if self._persist is None:
            return
        try:
            self._persist()
        except StateError as exc:
            self.log.error("state_not_saved", problem=str(exc))
