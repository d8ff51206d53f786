"""Slot ads to the project's slots, and what they say of the pool's claims: pure translation, no pool
and no state."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from osep.core.model import Job, JobState, Slot
from osep.errors import PoolError
from osep.htcondor.ads import LARGEST_DISK, Ad, BadAd, ad_id, evaluate, integer, number, show

SLOT_ATTRS = ["Name", "Cpus", "Memory", "GPUs", "Disk", "SlotType", "State", "ParentSlotId",
              "SlotWeight", "RemoteUser", "RemoteOwner"]
# Slots in these states cannot run a job for anyone, so they are not capacity.
UNAVAILABLE = {"Owner", "Drained", "Delete"}


def parent_name(name: str, parent_id: Any) -> str | None:
    """The partitionable slot a dynamic slot ``slot<N>_<M>@host`` was carved from: ``slot<N>@host``
    (by its ParentSlotId where the ad has one, else by its name)."""
    local, at, host = name.partition("@")
    number = integer(parent_id)
    if number is not None:
        return f"slot{number}{at}{host}"
    base, underscore, _ = local.rpartition("_")
    return f"{base}{at}{host}" if at and underscore and base else None


def to_slots(ads: Iterable[Ad]) -> Iterator[Slot | BadAd]:
    """The slots the ads describe, in their order, with a :class:`BadAd` in place of each ad that
    cannot be read. Slots that cannot run a job for anyone (``UNAVAILABLE``) are left out, and so
    are dynamic slots of a partitionable slot that is."""
    gone: set[str] = set()
    seen: set[str] = set()
    dynamic: list[Slot] = []
    for ad in ads:
        name = evaluate(ad, "Name")
        if isinstance(name, str) and name in seen:
            # Two startds advertising one name: the place and its jobs would be confused.
            yield BadAd(f"{name}: a second slot ad of the same name")
            continue
        cpus = number(evaluate(ad, "Cpus"))
        memory = number(evaluate(ad, "Memory"))
        gpus = number(evaluate(ad, "GPUs"))
        disk = number(evaluate(ad, "Disk"), LARGEST_DISK)
        state = evaluate(ad, "State")
        kind = evaluate(ad, "SlotType")
        if not isinstance(name, str) or not name or cpus is None:
            yield BadAd(f"{ad_id(ad)}: Name is {show(name)}, Cpus is {show(evaluate(ad, 'Cpus'))}")
            continue
        seen.add(name)
        mib = int(memory) if memory is not None else None
        count = int(gpus) if gpus is not None else 0
        kib = int(disk) if disk is not None else None
        if kind == "Dynamic":
            parent = parent_name(name, evaluate(ad, "ParentSlotId"))
            if parent is None:
                yield BadAd(f"{name}: a dynamic slot without a parent")
                continue
            dynamic.append(Slot(name, int(cpus), mib, count, kib, parent=parent))
            continue
        if isinstance(state, str) and state in UNAVAILABLE:
            gone.add(name)
            continue
        if kind == "Partitionable":
            # What is still unclaimed; its dynamic slots hold the rest.
            yield Slot(name, int(cpus), mib, count, kib, partitionable=True)
        else:
            yield Slot(name, max(int(cpus), 1), mib, count, kib)
    for slot in dynamic:
        if slot.parent not in gone:
            yield slot


def slot_weights(ads: Iterable[Ad]) -> dict[str, float]:
    """Each slot's SlotWeight as its ad evaluates it: what the negotiator charges a submitter for
    the slot, and so what a ceiling counts (the negotiator's default, without SLOT_WEIGHT, is the
    slot's Cpus)."""
    out = {}
    for ad in ads:
        name = evaluate(ad, "Name")
        weight = number(evaluate(ad, "SlotWeight"))
        if weight is None:
            weight = number(evaluate(ad, "Cpus"))
        if isinstance(name, str) and weight is not None:
            out[name] = weight
    return out


def check_complete(slot_ads: Iterable[Ad], jobs: Iterable[Job], schedds: int) -> None:
    """Refuse a view that misses a schedd: slots claimed by jobs nobody can see would look free to
    the policy. A few claims may lead the job queues by an update interval; many may not."""
    ads = list(slot_ads)
    claimed = sum(1 for ad in ads if ad.get("State") == "Claimed")
    visible = sum(1 for j in jobs if j.state in (JobState.RUNNING, JobState.VACATING))
    tolerance = max(2, len(ads) // 20)
    if claimed - visible > tolerance:
        raise PoolError(
            f"incomplete view of the pool: {claimed} claimed slots but {visible} running jobs "
            f"in {schedds} schedd(s); a schedd is down or unreachable"
        )
