"""Negotiator submitter ceilings: how a hold is enforced on a live pool, and how it is undone.

Every submitter of a held owner gets a ceiling equal to what it runs right after the cycle's vacates,
in SlotWeight (the sum of its slots' own ``SlotWeight``; cores by default), plus the plan's allowance
for the owner (in cores), split over its submitters. It keeps every job it has and is matched no
more than that, so room freed by vacates or by jobs ending goes to the owners below their share. When
an owner is no longer held its submitters get back the ceiling they had before osep touched them
(normally none, -1); an administrator's own, lower ceiling is never raised.

What osep set, and what was there before, is kept per negotiator and saved in the state file after
every change, so that a ``--once`` run can hand its holds to the next one, a run that died can be
cleaned up after, and ``osep release`` can lift them all (those recorded under another negotiator's
name are named, not touched). A command that fails is on record as if it had gone through (it may
have) and is sent again at the next sync. The negotiator itself is reached through a
:class:`NegotiatorLink` (the bindings, in :mod:`osep.htcondor.live`; a fake in the tests).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from osep.htcondor.ads import Accounts

NO_CEILING = -1
LEGACY = ""  # state files written before ceilings were kept per negotiator


class NegotiatorLink(Protocol):
    @property
    def name(self) -> str: ...

    def ceilings(self) -> dict[str, int]:
        """Every submitter's current ceiling."""
        ...

    def set_ceiling(self, submitter: str, value: int) -> None: ...


def held_submitters(holding: Mapping[str, int], accounts: Accounts) -> set[str]:
    """Every accounting name of the owners in ``holding``."""
    return {s for owner in holding for s in accounts.submitters.get(owner, ())}


def desired(holding: Mapping[str, int], accounts: Accounts, original: Mapping[str, int]
            ) -> dict[str, int]:
    """The ceiling each submitter of a held owner should have (``holding``: owner -> allowance)."""
    out = {}
    for owner, allowance in holding.items():
        submitters = sorted(accounts.submitters.get(owner, ()))
        for k, submitter in enumerate(submitters):
            # The owner's allowance, split over its submitters (the first take the remainder).
            extra = allowance // len(submitters) + (1 if k < allowance % len(submitters) else 0)
            cap = max(0, int(accounts.busy.get(submitter, 0.0))) + extra
            before = original.get(submitter, NO_CEILING)
            # An administrator's own, lower ceiling is never raised.
            out[submitter] = cap if before < 0 else min(cap, before)
    return out


class Ceilings:
    def __init__(self, state_file: Path | None, log: Any) -> None:
        self.state_file = state_file
        self.log = log
        # negotiator -> submitter -> the ceiling osep set (and has not lifted)
        self._set: dict[str, dict[str, int]] = {}
        # negotiator -> submitter -> the ceiling before osep
        self._original: dict[str, dict[str, int]] = {}
        self._last: str | None = None  # the negotiator last synced with
        # (negotiator, submitter) whose last command failed: it may or may not be in force, so it
        # is recorded as set (and so lifted in the end) and sent again at the next sync.
        self._unsure: set[tuple[str, str]] = set()
        self._restore()

    @property
    def set(self) -> dict[str, int]:
        """Every ceiling osep has set and not lifted (submitter -> value), whatever the negotiator."""
        return {s: v for ceilings in self._set.values() for s, v in ceilings.items()}

    def forget_negotiator(self) -> None:
        """The pool (or its negotiator) may have changed: the next sync locates it again."""
        self._last = None

    def by_negotiator(self) -> dict[str, dict[str, int]]:
        """The same, per negotiator ("" for a state file older than that distinction)."""
        return {name: dict(ceilings) for name, ceilings in self._set.items() if ceilings}

    def unchanged(self, holding: Mapping[str, int], accounts: Accounts) -> bool:
        """Whether a sync would change nothing, decided without asking any negotiator: every
        ceiling osep set is with the negotiator it last synced, and is what ``holding`` asks for."""
        known = [name for name, ceilings in self._set.items() if ceilings]
        if self._unsure:
            return False
        if not known:
            return not holding
        if len(known) > 1 or known[0] != self._last:
            return False
        ceilings, original = self._set[self._last], self._original.get(self._last, {})
        if any(s not in ceilings and s not in original for s in held_submitters(holding, accounts)):
            return False
        return desired(holding, accounts, original) == ceilings

    def sync(self, link: NegotiatorLink, holding: Mapping[str, int], accounts: Accounts) -> None:
        """Make the negotiator's ceilings what ``holding`` asks for, lifting those it no longer names."""
        name = link.name
        self._last = name
        if LEGACY in self._set and name != LEGACY:  # an older state file: it was this negotiator
            self._set.setdefault(name, {}).update(self._set.pop(LEGACY))
            self._original.setdefault(name, {}).update(self._original.pop(LEGACY, {}))
        ceilings = self._set.setdefault(name, {})
        original = self._original.setdefault(name, {})
        # An original kept for a submitter osep holds no ceiling on (its setting failed) is stale:
        # the administrator may have changed it since. It is read again below if needed.
        for submitter in [s for s in original if s not in ceilings]:
            del original[submitter]
        # What each newly held submitter had before is read first, so that the ceiling osep
        # wants never exceeds an administrator's own.
        held = held_submitters(holding, accounts)
        new = sorted(s for s in held if s not in ceilings and s not in original)
        if new:
            current = link.ceilings()
            for s in new:
                original[s] = current.get(s, NO_CEILING)
        want = desired(holding, accounts, original)
        unsure = {s for n, s in self._unsure if n == name}
        if want == ceilings and not unsure:
            return
        try:
            for submitter, value in want.items():
                if ceilings.get(submitter) != value or submitter in unsure:
                    # On record first: a command that fails may still have reached the negotiator.
                    ceilings[submitter] = value
                    self._unsure.add((name, submitter))
                    link.set_ceiling(submitter, value)
                    self._unsure.discard((name, submitter))
                    self.log.info("ceiling", submitter=submitter, ceiling=value)
            for submitter in [s for s in ceilings if s not in want]:
                value = original.get(submitter, NO_CEILING)
                self._unsure.add((name, submitter))
                link.set_ceiling(submitter, value)
                self._unsure.discard((name, submitter))
                del ceilings[submitter]
                original.pop(submitter, None)
                self.log.info("ceiling_lifted", submitter=submitter, ceiling=value)
        finally:
            # Whatever was changed before a failure is on record, so that it can be undone.
            self._save()

    def _save(self) -> None:
        path = self.state_file
        if path is None:
            return
        negotiators = {
            name: {"ceilings": ceilings, "original": self._original.get(name, {})}
            for name, ceilings in self._set.items() if ceilings
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written beside it and renamed over it, so that a crash leaves the old file or the
            # new one, never half of one; flushed to disk before the rename.
            tmp = path.with_name(path.name + ".osep-tmp")
            with tmp.open("w", encoding="utf-8") as handle:
                handle.write(json.dumps({"negotiators": negotiators}))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            self.log.error("state_not_saved", path=str(path), problem=str(exc))

    def _restore(self) -> None:
        """Take over the ceilings an earlier run left in place: a ``--once`` run keeps its holds for
        the next one, and a run that died could not lift them. The first hold of this run sets them
        to what the pool needs now (lifting those no longer needed)."""
        path = self.state_file
        if path is None or not path.exists():
            return
        try:
            data = json.loads(path.read_text())
            entries = dict(data["negotiators"]) if "negotiators" in data else {LEGACY: data}
            for name, entry in entries.items():
                ceilings = {str(k): int(v) for k, v in entry.get("ceilings", {}).items()}
                original = {str(k): int(v) for k, v in entry.get("original", {}).items()}
                if ceilings:
                    self._set[str(name)] = ceilings
                    self._original[str(name)] = original
        except (OSError, ValueError, AttributeError, TypeError, OverflowError, RecursionError) as exc:
            self.log.error("state_unreadable", path=str(path), problem=str(exc))
            self._set, self._original = {}, {}
            return
        if self._set:
            self.log.info("ceilings_taken_over", submitters=sorted(self.set), path=str(path))
