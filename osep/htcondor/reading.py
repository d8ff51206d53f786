"""The live pool's reading side without the network: what the collector, the schedds and the
negotiator answered, read into a snapshot's parts and into the pool's size as the negotiator counts
it. :mod:`osep.htcondor.live` asks (through the bindings, ``htcondor2``) and keeps what the pool
keeps; each ad is read by :mod:`osep.htcondor.job_ads` or :mod:`osep.htcondor.slot_ads`. No pool, no
state but what one snapshot gathers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import classad2

from osep.core.model import Job, JobState, Slot
from osep.htcondor import quota_knobs
from osep.htcondor.ads import BadAd, integer
from osep.htcondor.job_ads import Accounts, AdTally, IdleGroup, JobAd, to_idle, to_job
from osep.htcondor.quota_shares import PoolSize
from osep.htcondor.slot_ads import slot_weights, to_slots

# How the pool sees a job it read: one it is vacating is VACATING (``Vacates.state`` in vacates.py).
Seen = Callable[[Job], JobState]
# The owner tree's placing of accounting names (None: the owner is the ad's own), as LiveSettings has it.
Naming = Callable[[str], str] | None

NOT_DEFINED = "Not defined"  # what a daemon answers for a knob that has no value
SLOT_FACTS = ["Name", "SlotWeight", "Cpus", "Memory", "GPUs", "Disk", "PartitionableSlot", "GhostMultiplier"]
_WEIGHED = {"cpus": "Cpus", "memory": "Memory", "gpus": "GPUs", "disk": "Disk"}


def server_time(ad: Any) -> int | None:
    """A job ad's ``ServerTime`` (the clock of the schedd that sent it), if it has a usable one."""
    return integer(ad.get("ServerTime"))


def as_seen(entry: JobAd, seen: Seen) -> JobAd:
    """The job as the pool sees it: one it is vacating is VACATING."""
    state = seen(entry.job)
    return entry if state is entry.job.state else replace(entry, job=replace(entry.job, state=state))


def translate(name: str, ad: Any, tally: AdTally, seen: Seen, naming: Naming = None) -> JobAd | None:
    """One job ad of schedd ``name``, as the pool sees it. A bad ad is counted in ``tally`` and
    skipped, never fatal; None too for a job that occupies no execute slot."""
    try:
        entry = to_job(name, ad, tally, naming=naming)
    except BadAd as exc:
        tally.reject(str(exc))
        return None
    return as_seen(entry, seen) if entry is not None else None


class Reading:
    """One snapshot's answers, read as they come: each schedd's jobs that hold a slot and its idle
    groups (with what they add up to per owner and submitter), then the slots."""

    def __init__(self, slot_ads: list[Any], seen: Seen, naming: Naming = None) -> None:
        self.slot_ads = slot_ads
        self.seen = seen
        self.naming = naming
        self.accounts = Accounts(weights=slot_weights(slot_ads))
        self.tally = AdTally()
        self.jobs: list[Job] = []
        self.idle: list[IdleGroup] = []
        self.pool_time: int | None = None  # the first schedd's clock that could be read

    def schedd(self, name: str, grouped: list[Any], ads: list[Any], clock: int | None) -> None:
        """Schedd ``name``'s answers: its idle jobs ``grouped`` and the ``ads`` of its jobs that hold
        a slot (emptied as they are read, so that each ad read is let go); ``clock``, its time."""
        if self.pool_time is None:
            self.pool_time = clock
        ads.reverse()  # read from the end of the list
        while ads:
            entry = translate(name, ads.pop(), self.tally, self.seen, self.naming)
            if entry is not None:
                self.jobs.append(entry.job)
                self.accounts.add(entry)
        for ad in grouped:
            group = to_idle(name, ad, self.tally, clock, naming=self.naming)
            if group is not None:
                self.idle.append(group)
                self.accounts.add_idle(group)

    def slots(self) -> list[Slot]:
        """The slots the slot ads describe; a bad one is counted in ``tally``."""
        out: list[Slot] = []
        for item in to_slots(self.slot_ads):
            if isinstance(item, BadAd):
                self.tally.reject(str(item))
            else:
                out.append(item)
        return out


# -- the negotiator's group quotas (osep shares --from-pool) -----------------------------------------


def negotiator_keys(names: Iterable[str]) -> dict[str, str]:
    """The knobs to read (every GROUP_* one and quota_knobs.GLOBAL_KNOBS), each with the key that holds
    the negotiator's value: the ``NEGOTIATOR.`` prefixed one where there is one (it wins there),
    else the plain one. Keys with another daemon's prefix are not the negotiator's."""
    wanted = {quota_knobs.fold(n) for n in quota_knobs.GLOBAL_KNOBS}
    chosen: dict[str, tuple[str, str, bool]] = {}  # folded name -> (name, key, prefixed)
    for key in names:
        prefixed = quota_knobs.fold(key).startswith("NEGOTIATOR.")
        base = key.split(".", 1)[1] if prefixed else key
        folded = quota_knobs.fold(base)
        if folded not in wanted and not folded.startswith(quota_knobs.GROUP_PREFIX):
            continue
        if folded not in chosen or (prefixed and not chosen[folded][2]):
            chosen[folded] = (base, key, prefixed)
    return {base: key for base, key, _ in chosen.values()}


def sizing_constraint(knobs: Mapping[str, str]) -> str | None:
    """The constraint of the slots the negotiator sizes the pool by: those it sees
    (NEGOTIATOR_SLOT_CONSTRAINT) that size the pool (NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT, once
    GROUP_DYNAMIC_MACH_CONSTRAINT); None for every slot."""
    folded = {quota_knobs.fold(k): v for k, v in knobs.items()}
    sizing = folded.get("NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", folded.get("GROUP_DYNAMIC_MACH_CONSTRAINT"))
    parts = [c for c in (folded.get("NEGOTIATOR_SLOT_CONSTRAINT"), sizing) if c and c.strip()]
    return " && ".join(f"({c})" for c in parts) or None


def pool_size(ads: list[Any], knobs: Mapping[str, str]) -> PoolSize:
    """The pool's size as the negotiator counts it for quotas, from the ads of the slots that size
    it (:func:`sizing_constraint`, with ``SLOT_FACTS``): their weights, each times its
    GhostMultiplier; and, for a negotiator that uses no weights, the slots, a partitionable one as
    its cores. A slot without a SlotWeight (or every slot, with FORCE_NEGOTIATOR_SLOT_WEIGHT) weighs
    what the negotiator's SLOT_WEIGHT says of it."""
    forced = quota_knobs.knob_flag(knobs, "FORCE_NEGOTIATOR_SLOT_WEIGHT", False, classad_value)
    expression = {quota_knobs.fold(k): v for k, v in knobs.items()}.get("SLOT_WEIGHT") or "Cpus"
    weighted = effective = 0.0
    weighs = set(_WEIGHED) | {"slots"}
    for ad in ads:
        weight = None if forced else _ad_number(ad, "SlotWeight")
        if weight is None:
            weight = _weigh(ad, expression)
        if weight is None or weight < 0:
            weight = 1.0  # as the negotiator's accountant takes a weight it cannot read
        ghosts = _ad_number(ad, "GhostMultiplier")
        weighted += weight * (int(ghosts) if ghosts is not None else 1)
        partitionable = ad.get("PartitionableSlot") is True
        effective += (_ad_number(ad, "Cpus") or 0.0) if partitionable else 1.0
        said = _ad_number(ad, "SlotWeight")  # what the slot says of itself, whatever the negotiator does
        if said is not None:
            for unit in list(weighs):
                own = 1.0 if unit == "slots" else _ad_number(ad, _WEIGHED[unit])
                if own is None or abs(own - said) > 1e-9 * max(1.0, abs(said)):
                    weighs.discard(unit)
    return PoolSize(weighted=weighted, effective=effective, weighs=frozenset(weighs) if ads else None)


def _ad_number(ad: Any, attr: str) -> float | None:
    try:
        value = ad.eval(attr) if attr in ad else None
    except Exception:  # noqa: BLE001 - the edge: an attribute that cannot be evaluated is not there
        return None
    if isinstance(value, bool | classad2.Value) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _weigh(ad: Any, expression: str) -> float | None:
    try:
        value = classad2.ExprTree(expression).eval(ad)
    except Exception:  # noqa: BLE001 - the edge: a weight that cannot be evaluated
        return None
    if isinstance(value, bool | classad2.Value) or not isinstance(value, int | float):
        return None
    return float(value)


def classad_value(text: str) -> object:
    """``text`` as a ClassAd expression evaluated on its own, as HTCondor reads a knob that is not a
    plain literal: a bool, int, float or str; None if it is undefined, an error, or no expression."""
    try:
        value = classad2.ExprTree(text).eval()
    except Exception:  # noqa: BLE001 - the edge: text the bindings cannot parse
        return None
    if isinstance(value, classad2.Value):  # Undefined and Error, which are ints to Python
        return None
    return value if isinstance(value, bool | int | float | str) else None
