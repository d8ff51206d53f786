"""Reading a ClassAd's values as the negotiator sees them, and osep's own ads in the collector: pure,
no pool and no state. Job ads are read by :mod:`osep.htcondor.job_ads`, slot ads by
:mod:`osep.htcondor.slot_ads`. A bad ad raises :class:`BadAd` naming the problem; the caller decides
whether to log and skip it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import classad2

LARGEST = 2**31 - 1  # requests and times beyond this are not read as they are
LARGEST_DISK = 2**50  # KiB (an exbibyte): disks are counted in KiB and pass 2**31 at 2 TiB

Ad = Mapping[str, Any]  # a classad2.ClassAd, or anything that reads like one


class BadAd(ValueError):
    """An ad that cannot be translated; the message says why."""


# What a literal holds that evaluating it gives back unchanged: reading such an attribute is one call
# into the bindings instead of three (a job ad is mostly literals; 100,000 ads a cycle in a large pool).
_PLAIN = frozenset((int, float, str))


def evaluate(ad: Ad, attr: str) -> Any:
    """The attribute as the negotiator sees it: evaluated in the ad's own context (a stock submit
    file writes RequestMemory as an expression). Missing: undefined."""
    evaluator = getattr(ad, "eval", None)
    if evaluator is None:  # an event log's event, or a plain mapping: values are literal
        return ad.get(attr, classad2.Value.Undefined)
    try:
        # The attribute as stored: a literal's value (an int, a float, a string are exactly what
        # evaluating the literal gives), anything else an expression or a value to evaluate.
        stored = ad[attr]
    except KeyError:
        return classad2.Value.Undefined
    if type(stored) in _PLAIN:
        return stored
    try:
        return evaluator(attr)
    except (classad2.ClassAdException, KeyError, ValueError, TypeError):
        return classad2.Value.Error


def integer(value: Any) -> int | None:
    """``value`` if it is a plain integer, else None. ``classad2.Value`` (undefined, error) is an
    int to Python and must never be read as one; nor is a bool."""
    if isinstance(value, int) and not isinstance(value, (bool, classad2.Value)):
        return value
    return None


def number(value: Any, largest: int = LARGEST) -> float | None:
    """A finite number within what any pool can mean, or None (see :func:`integer`)."""
    if not isinstance(value, float) and integer(value) is None:
        return None
    if not math.isfinite(value) or not 0 <= value <= largest:
        return None
    return float(value)


def show(value: Any) -> str:
    if isinstance(value, classad2.Value):
        return str(value.name).lower()
    return repr(value)


# What osep's own ads say of the instance that publishes them (see osep.enforce.daemon).
OSEP_ATTRS = ["Name", "OSEPInstance", "OSEPStarted", "OSEPInterval", "OSEPDryRun", "LastHeardFrom",
              "OSEPStateFile"]


@dataclass(frozen=True, slots=True)
class OsepAd:
    """Another osep's ad in the collector: its name, its instance (``host:pid``), when it started,
    its interval, whether it runs dry, when the collector last heard from it (epoch seconds), and
    the state file it locks ("" if it has none, or does not say)."""

    name: str
    instance: str
    started: float
    interval: float
    dry_run: bool
    heard: float
    state_file: str = ""


def to_osep_ad(ad: Ad) -> OsepAd | None:
    """An OSEP ad as another osep published it; None for one that does not say all of it (anyone
    allowed to advertise may put any ad there: it is not believed without every field)."""
    name, instance = evaluate(ad, "Name"), evaluate(ad, "OSEPInstance")
    started, interval = number(evaluate(ad, "OSEPStarted")), number(evaluate(ad, "OSEPInterval"))
    heard, dry_run = number(evaluate(ad, "LastHeardFrom")), evaluate(ad, "OSEPDryRun")
    if not (isinstance(name, str) and isinstance(instance, str) and instance and isinstance(dry_run, bool)
            and started is not None and interval is not None and heard is not None):
        return None
    state_file = evaluate(ad, "OSEPStateFile")
    return OsepAd(name, instance, started, interval, dry_run, heard,
                  state_file if isinstance(state_file, str) else "")


def ad_id(ad: Ad) -> str:
    try:
        if "Name" in ad:
            return str(ad["Name"])
        return f"{ad.get('ClusterId', '?')}.{ad.get('ProcId', '?')}"
    except Exception:  # noqa: BLE001 - only for a log line about an ad that is already bad
        return "?"
