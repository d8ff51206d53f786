"""Policy files.

A policy file is TOML with two tables::

    [policy]
    target = "owner"           # or "feasible"
    victim_order = "wallclock" # or "lost-work"
    max_vacates = 10           # p; omit for the largest owner share
    interval = 300             # t, seconds between cycles
    unit = "slots"

    [owners]
    atlas = 10                 # slots contributed; or "30%" of the pool (all owners alike)
    cms = { share = 10 }       # table form, room for more per-owner settings later

Everything is checked on load into frozen objects. Any problem raises :class:`ConfigError` naming the
file, the dotted key and what is wrong; nothing half-loaded is ever returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from osep.config.toml import Table, read_toml, show
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings
from osep.core.shares import ShareTable
from osep.errors import ConfigError

DEFAULT_INTERVAL = 300.0  # t, seconds between cycles, when a policy file does not say


def parse_owners(table: Table) -> ShareTable:
    """Owner shares: all absolute (slots) or all percentages of the pool, never a mix."""
    shares: dict[str, float] = {}
    kinds: dict[str, str] = {}
    for owner in table.data:
        value = table.raw(owner)
        if isinstance(value, Mapping):
            sub = Table(table.path, value, table.key(owner))
            value = sub.raw("share")
            sub.finish()
        key = table.key(owner)
        if isinstance(value, str) and value.strip().endswith("%"):
            text = value.strip()[:-1].strip()
            try:
                number = float(text)
            except ValueError:
                raise ConfigError(table.path, key, f"not a percentage: {value!r}") from None
            kinds[owner] = "percent"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
            kinds[owner] = "slots"
        else:
            raise ConfigError(
                table.path, key, f"a share is a number of slots or a percentage like \"30%\"; got {show(value)}"
            )
        if not math.isfinite(number) or number < 0:
            raise ConfigError(table.path, key, f"a share cannot be negative, got {value!r}")
        shares[owner] = number
    if len(set(kinds.values())) > 1:
        slots = sorted(o for o, k in kinds.items() if k == "slots")
        pct = sorted(o for o, k in kinds.items() if k == "percent")
        raise ConfigError(
            table.path,
            table.key(pct[0]),
            f"shares of different units: {', '.join(pct)} in percent but {', '.join(slots)} in slots",
        )
    percent = bool(kinds) and next(iter(kinds.values())) == "percent"
    if percent and sum(shares.values()) > 100.0 + 1e-9:
        raise ConfigError(
            table.path, table.prefix, f"percentages add up to {sum(shares.values()):g}%, more than 100%"
        )
    return ShareTable(shares=shares, percent=percent)


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A policy file: what the decision depends on, and how often the loop runs it (t)."""

    settings: PolicySettings
    interval: float = DEFAULT_INTERVAL


def parse_policy(policy: Table, owners: Table) -> PolicyFile:
    unit = policy.string("unit", "slots")
    if unit != "slots":
        raise policy.error("unit", f"only \"slots\" is supported by this version; got {unit!r}")
    settings = PolicySettings(
        shares=parse_owners(owners),
        target=policy.choice("target", Target, Target.OWNER),
        victim_order=policy.choice("victim_order", VictimOrder, VictimOrder.WALLCLOCK),
        max_vacates=policy.number("max_vacates", None, minimum=0, integer=True),
    )
    interval = float(policy.number("interval", DEFAULT_INTERVAL, positive=True))
    policy.finish()
    return PolicyFile(settings, interval)


def load_policy(path: Path | str) -> PolicyFile:
    """Read and validate a policy file."""
    top = Table(path, read_toml(path))
    loaded = parse_policy(top.table("policy"), top.table("owners", required=True))
    top.finish()
    return loaded
