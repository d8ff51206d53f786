"""A fake HTCondor edge for tests of the live adapter: a collector, schedds and a negotiator standing
in for the bindings' classes, so that everything from the queries on (translation, decision, actuator,
ceilings) runs as it does against a pool. Only the network is fake.

Install it with :meth:`Edge.install` (a pytest ``monkeypatch``): ``htcondor2.Collector``,
``htcondor2.Schedd`` and ``htcondor2.Negotiator`` then answer from the edge's ads, and every command
sent is recorded in :attr:`Edge.sent`.
"""

from __future__ import annotations

from typing import Any

import classad2
import htcondor2


def schedd_ad(name: str) -> classad2.ClassAd:
    ad = classad2.ClassAd()
    ad["MyType"] = "Scheduler"
    ad["Name"] = name
    ad["MyAddress"] = f"<127.0.0.1:9618?sock={len(name)}>"
    return ad


class Edge:
    """What the pool holds: ``slots`` (startd ads) and ``jobs`` per schedd name (job ads)."""

    def __init__(self, slots: list[classad2.ClassAd] | None = None,
                 jobs: dict[str, list[classad2.ClassAd]] | None = None) -> None:
        self.slots = list(slots or [])
        self.jobs = {name: list(ads) for name, ads in (jobs or {}).items()}
        self.down: set[str] = set()  # schedds (by name) or "collector", "negotiator" that refuse
        self.ceilings: dict[str, int] = {}
        # Every command: ("vacate", schedd, "cluster.proc"), ("ceiling", submitter, value),
        # ("advertise", command, the ad).
        self.sent: list[tuple[str, str, Any]] = []

    # -- the bindings' face ----------------------------------------------------------------------

    def install(self, monkeypatch: Any) -> None:
        edge = self

        class Collector:
            def __init__(self, pool: str | None = None) -> None:
                pass

            def locateAll(self, daemon_type: Any) -> list[classad2.ClassAd]:
                edge._refuse("collector")
                return [schedd_ad(name) for name in edge.jobs]

            def locate(self, daemon_type: Any, name: str | None = None) -> classad2.ClassAd:
                edge._refuse("collector")
                ad = classad2.ClassAd()
                ad["Name"] = "negotiator@cm"
                ad["MyAddress"] = "<127.0.0.1:9618>"
                return ad

            def query(self, ad_type: Any = None, constraint: Any = None,
                      projection: Any = None) -> list[classad2.ClassAd]:
                edge._refuse("collector")
                return list(edge.slots)

            def advertise(self, ads: list[classad2.ClassAd], command: str = "") -> None:
                edge._refuse("collector")
                for ad in ads:
                    edge.sent.append(("advertise", command, ad))

        class Schedd:
            def __init__(self, ad: classad2.ClassAd | None = None) -> None:
                if ad is None:
                    raise AssertionError("Schedd() without an ad would be the local schedd")
                self.name = str(ad["Name"])

            def query(self, constraint: str = "true", projection: Any = None) -> list[classad2.ClassAd]:
                edge._refuse(self.name)
                expr = classad2.ExprTree(constraint)
                return [ad for ad in edge.jobs.get(self.name, ()) if expr.eval(ad) is True]

            def act(self, action: Any, ids: list[str]) -> dict[str, int]:
                edge._refuse(self.name)
                for job in ids:
                    edge.sent.append(("vacate", self.name, job))
                return {"TotalSuccess": len(ids)}

        class Negotiator:
            _SET_CEILING = 0

            def __init__(self, ad: classad2.ClassAd | None = None) -> None:
                self._addr = "<127.0.0.1:9618>"

            def getPriorities(self, rollup: bool = False) -> list[classad2.ClassAd]:
                edge._refuse("negotiator")
                out = []
                for name, value in edge.ceilings.items():
                    ad = classad2.ClassAd()
                    ad["Name"] = name
                    ad["Ceiling"] = value
                    out.append(ad)
                return out

            def setCeiling(self, user: str, ceiling: int) -> None:
                edge._set_ceiling(user, ceiling)

        def lift(addr: str, command: int, user: str, value: int) -> None:
            edge._set_ceiling(user, value)

        from htcondor2 import _negotiator

        monkeypatch.setattr(htcondor2, "Collector", Collector)
        monkeypatch.setattr(htcondor2, "Schedd", Schedd)
        monkeypatch.setattr(htcondor2, "Negotiator", Negotiator)
        monkeypatch.setattr(_negotiator, "_negotiator_command_user_value", lift)

    def _refuse(self, who: str) -> None:
        if who in self.down:
            raise htcondor2.HTCondorException(f"{who} is down")

    def _set_ceiling(self, user: str, value: int) -> None:
        self._refuse("negotiator")
        self.sent.append(("ceiling", user, value))
        if value < 0:
            self.ceilings.pop(user, None)
        else:
            self.ceilings[user] = value

    @property
    def vacated(self) -> list[tuple[str, str]]:
        """(schedd, cluster.proc) of every vacate sent."""
        return [(who, str(what)) for kind, who, what in self.sent if kind == "vacate"]
