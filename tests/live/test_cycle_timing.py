"""Where a live cycle's time goes, as the daemon reports it on a real pool with two schedds: the
phases in every cycle event and in the daemon's ad. A correctness test, not a timing one: the figures
must be there, be sane, and add up to the cycle; how large they are is scripts/bench_live.py's
business."""

from __future__ import annotations

import pytest

from harness import Live

TWO = {"schedds": 2}
PHASES = {"query", "translate", "decide", "act", "other", "cycle"}


def add_up(seconds: dict[str, float]) -> bool:
    """The phases and what is left over make the cycle, to the log's rounding (0.1 ms each)."""
    parts = sum(v for k, v in seconds.items() if k != "cycle")
    return abs(parts - seconds["cycle"]) <= 1e-4 * len(seconds)


@pytest.mark.parametrize("live", [TWO], indirect=True)
def test_each_cycle_logs_and_publishes_where_its_time_went(live: Live):
    second = next(n for n in live.pool.schedd_names() if n.startswith("schedd2@"))
    first = next(n for n in live.pool.schedd_names() if n != second)
    live.submit("alice", 20, stock=True)
    live.wait_until(lambda: live.running("alice") == 20, 90, "alice's jobs to run")
    live.submit("bob", 30, stock=True)
    live.submit("carol", 15, stock=True, schedd=second)
    live.policy({"alice": 1, "bob": 1, "carol": 1})
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")

    done = live.once("--dry-run")
    assert done.returncode == 0, done.stderr
    (cycle,) = live.events("cycle")
    seconds, cpu = cycle["seconds"], cycle["cpu_seconds"]
    print(f"MEASURED a dry-run cycle on 65 jobs: {seconds} (CPU {cpu}); queries {cycle['query_seconds']}")
    assert set(seconds) == PHASES and set(cpu) == PHASES  # a dry run keeps no state file: no "state"
    assert all(v >= 0 for v in (*seconds.values(), *cpu.values()))
    assert seconds["query"] > 0 and seconds["translate"] > 0 and seconds["decide"] > 0
    assert add_up(seconds) and add_up(cpu)
    # The queries, per daemon: the collector and each schedd, adding up to the query phase.
    queries = cycle["query_seconds"]
    assert set(queries) == {"collector", f"schedd {first}", f"schedd {second}"}
    assert abs(sum(queries.values()) - seconds["query"]) <= 1e-4 * len(queries)
    assert seconds["cycle"] < 60  # plausible: 65 jobs, two schedds on this machine

    # A real run publishes them in its ad (and saves its state file first: "state").
    daemon = live.start()
    live.wait_until(lambda: len(live.events("cycle")) >= 2, 30, "a cycle of the daemon")

    def ad() -> list[str]:
        return live.osep_ad("OSEPLastCycleSeconds", "OSEPLastQuerySeconds", "OSEPLastTranslateSeconds",
                            "OSEPLastDecideSeconds", "OSEPLastActSeconds", "OSEPLastStateSeconds").split()

    live.wait_until(lambda: len(ad()) == 6 and "undefined" not in ad(), 30,
                    f"the OSEP ad to show the last cycle's phases (now {ad()!r})")
    whole, *phases = (float(v) for v in ad())
    assert whole > 0 and all(0 <= v <= whole for v in phases)
    logged = [e["seconds"] for e in live.events("cycle")[1:]]
    assert all(set(s) == PHASES | {"state"} and add_up(s) for s in logged)
    assert any(s["cycle"] == whole for s in logged)  # the ad is the last cycle's
    assert live.stop(daemon) == 0
