"""A policy file against the pool it is for, as ``osep doctor`` shows it: pure, from a plan the policy
made of the pool now and the submitters the negotiator has a record of.

An owner the pool has never heard of (no job of its in any queue now, and no submitter record of it
or under it, ``group.user``, in the negotiator) is most likely misspelt: a WARN, since an owner with
no jobs yet is allowed. A resource the policy counts in (its unit, or each resource a dominant share
names) that no machine advertises leaves every share of it unreachable: a WARN as well. A policy
that cannot be read is a FAIL (``osep run`` would not start), which the caller finds.
"""

from __future__ import annotations

from collections.abc import Iterable

from osep.core.plan import Plan
from osep.core.policy import PolicySettings
from osep.core.resources import RESOURCES, Unit
from osep.htcondor.rights import OK, WARN, Finding

SHOWN = 5  # owners named in a row; the rest are counted


def known_names(plan: Plan, submitters: Iterable[str]) -> set[str]:
    """Every name the pool knows an owner by: those with jobs queued or running now, as the policy
    counts them, and each submitter's accounting name (``alice``, ``group_physics.alice``)."""
    names = {v.owner for v in plan.owners if v.running or v.idle or v.vacating}
    names |= {s.rpartition("@")[0] or s for s in submitters}
    return names


def policy_findings(settings: PolicySettings, plan: Plan, submitters: Iterable[str],
                    target: str) -> list[Finding]:
    """The policy ``settings`` (of the file ``target``) against the pool ``plan`` was made of."""
    known = known_names(plan, submitters)
    owners = sorted(settings.shares.shares)
    unknown = [o for o in owners if not any(k == o or k.startswith(o + ".") for k in known)]
    out = []
    if unknown:
        more = f" and {len(unknown) - SHOWN} more" if len(unknown) > SHOWN else ""
        out.append(Finding("policy owners", target, WARN,
                           f"{len(unknown)} of {len(owners)} owner(s) have no job and no submitter record "
                           f"in the pool (misspelt?): {', '.join(unknown[:SHOWN])}{more}"))
    else:
        out.append(Finding("policy owners", target, OK, f"all {len(owners)} owner(s) known to the pool"))
    resources = sorted(settings.shares.resources()) if settings.unit is Unit.DOMINANT else [settings.unit.value]
    totals = plan.totals
    missing = [res for res in resources
               if (totals[RESOURCES.index(res)] if totals is not None else float(plan.capacity)) <= 0]
    if missing:
        out.append(Finding("policy unit", target, WARN,
                           f"unit {settings.unit.value!r}: no machine advertises {', '.join(missing)}; "
                           "every share of it is out of reach"))
    else:
        have = ", ".join(f"{_amount(totals, res) if totals is not None else plan.capacity} {res}"
                         for res in resources)
        out.append(Finding("policy unit", target, OK, f"unit {settings.unit.value!r}: the pool has {have}"))
    return out


def _amount(totals: tuple[float, ...], resource: str) -> str:
    return f"{totals[RESOURCES.index(resource)]:g}"
