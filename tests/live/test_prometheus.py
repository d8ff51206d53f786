"""osep's Prometheus endpoint against a real pool (20 cores): scraped over HTTP while bob takes his
share back from alice, as a site's Prometheus would scrape it. alice and bob each own 10 cores;
enforcement runs every INTERVAL seconds. (Named apart from tests/measure/test_metrics.py: two test
modules of one name do not load side by side.)"""

from __future__ import annotations

import socket

from builders import Samples, by_owner, scrape, total
from harness import INTERVAL, Live

SHARES = {"alice": 10, "bob": 10}
# Two enforcement cycles, a negotiation cycle, the vacates themselves, and a cycle to see bob run.
REACH = 3 * INTERVAL + 4 + 10


def free_port() -> int:
    """A port nothing listens on in the test's network namespace."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_scrape_follows_bob_to_his_share(live: Live):
    live.fill("alice")
    live.policy(SHARES)
    port = free_port()
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml", OSEP_METRICS_PORT=port)
    daemon = live.start()
    last: list[Samples] = [{}]

    def scraped() -> Samples:
        try:
            last[0] = scrape(port)
        except OSError:  # not listening yet
            last[0] = {}
        return last[0]

    live.wait_until(lambda: by_owner(scraped(), "osep_owner_running_jobs").get("alice") == 20, 30,
                    "the endpoint to show alice running 20")
    samples = last[0]
    assert samples["osep_dry_run"] == {(): 0.0} and samples["osep_last_cycle_ok"] == {(): 1.0}
    assert by_owner(samples, "osep_owner_share") == {"alice": 10.0, "bob": 10.0}
    assert {dict(k)["unit"] for k in samples["osep_owner_share"]} == {"slots"}
    assert total(samples, "osep_vacates_total") == 0

    live.submit("bob", 10)

    def bob_at_share() -> bool:
        samples = scraped()
        running, share = by_owner(samples, "osep_owner_running"), by_owner(samples, "osep_owner_share")
        return running.get("bob", 0) >= share.get("bob", 1) and total(samples, "osep_vacates_total") > 0

    took = live.wait_until(bob_at_share, REACH, "the endpoint to show bob at his share after vacates")
    print(f"MEASURED seconds for the endpoint to show bob at 10: {took:.1f}")
    samples = last[0]
    assert total(samples, "osep_vacates_total") == 10  # alice's 10 youngest, in one cycle (p = 10)
    assert by_owner(samples, "osep_owner_running_jobs") == {"alice": 10.0, "bob": 10.0}
    assert total(samples, "osep_holds_total") >= 1  # alice, held while bob's jobs started
    assert samples["osep_cycles_total"][(("result", "failed"),)] == 0
    assert {dict(k)["phase"] for k in samples["osep_cycle_phase_seconds_count"]} >= {"query", "decide", "act"}

    assert live.stop(daemon) == 0
    try:
        scrape(port)
    except OSError:
        pass  # the port is let go at exit
    else:
        raise AssertionError(f"port {port} still served after osep stopped")
    stderr = daemon.stderr.read() if daemon.stderr else ""
    assert "Traceback" not in stderr and live.events("metrics_failed") == []
