"""The negotiator's group-quota knobs and the pool's size as it counts it for quotas, read from a live
pool (``osep shares --from-pool``), for :func:`osep.htcondor.quota_shares.translate`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import htcondor2 as htcondor

from osep.config.livepool import LiveSettings
from osep.errors import PoolError
from osep.htcondor import reading
from osep.htcondor.quota_shares import PoolSize
from osep.htcondor.reach import address_of, call, collector_of, the_collector
from osep.htcondor.reading import NOT_DEFINED, SLOT_FACTS


@dataclass(frozen=True, slots=True)
class GroupKnobs:
    """What :func:`osep.htcondor.quota_shares.translate` needs, read from a pool."""

    knobs: dict[str, str]  # every GROUP_* knob and each of quota_knobs.GLOBAL_KNOBS that is set
    pool_size: PoolSize  # the pool's size as the negotiator counts it for quotas, and where the knobs were read


def read_group_quotas(settings: LiveSettings = LiveSettings(), remote: bool = True) -> GroupKnobs:
    """The group-quota knobs as the negotiator has them, and the pool's size as it counts it.

    ``remote`` (the default): the running negotiator's own configuration, asked of it over the
    network (what ``condor_config_val -negotiator`` shows): it holds ``NEGOTIATOR.``-prefixed knobs
    and what the negotiator last loaded, wherever osep runs. Else this machine's configuration, as
    this process reads it (no subsystem prefix applies). A PoolError if the negotiator cannot be
    located or asked; the pool's size is counted where it can be (``pool_size.problem`` says why not)."""
    collector = collector_of(settings.pool)
    if remote:
        ad = call(settings, f"asking {the_collector(settings.pool)} for the negotiator",
                   lambda: collector.locate(htcondor.DaemonType.Negotiator))
        config = call(settings, f"asking the negotiator at {address_of(ad)} for its configuration",
                       lambda: htcondor.RemoteParam(ad))
        names = list(config)
        source = f"the negotiator {ad.get('Name', '?')}'s own configuration"

        def value(key: str) -> str | None:
            found = str(call(settings, f"reading {key} from the negotiator", lambda: config[key]))
            return None if found == NOT_DEFINED else found
    else:
        names = list(htcondor.param)
        source = "this machine's configuration (not asked of the negotiator)"

        def value(key: str) -> str | None:
            return str(htcondor.param[key]) if key in htcondor.param else None

    found = {base: text for base, key in reading.negotiator_keys(names).items() if (text := value(key)) is not None}
    return GroupKnobs(found, replace(_count_pool(settings, collector, found), source=source))


def _count_pool(settings: LiveSettings, collector: Any, knobs: Mapping[str, str]) -> PoolSize:
    """The pool's size as the negotiator counts it for quotas (:func:`osep.htcondor.reading.pool_size`),
    or why it could not be counted."""
    constraint = reading.sizing_constraint(knobs)
    try:
        ads = call(settings, f"counting the pool's slots at {the_collector(settings.pool)}",
                    lambda: collector.query(htcondor.AdTypes.Startd, constraint=constraint, projection=SLOT_FACTS))
    except PoolError as exc:
        return PoolSize(problem=str(exc))
    return reading.pool_size(ads, knobs)
