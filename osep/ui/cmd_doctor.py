"""``osep doctor``: whether ``osep run`` could act on this pool, every check in one table."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from osep.config.knobs import KNOBS, Overrides, live_settings, parse_knobs
from osep.errors import ConfigError, OsepError
from osep.ui import exits
from osep.ui.shell import cli, fails_cleanly, policy_file_option, pool_option, state_file_option


@cli.command()
@pool_option()
@policy_file_option("The policy file a run would use.", knob=True)
@state_file_option("The state file a run would use.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format.")
@fails_cleanly
def doctor(pool: str | None, policy_file: Path | None, state_file: Path | None, fmt: str) -> None:
    """Check what a real `osep run` needs, without touching the pool: the bindings' and every
    daemon's version, that each answers and grants osep the rights it uses, the policy file against
    the pool, and the state file. Exit status 0 only if a run would work."""
    from osep.config.policy import load_policy
    from osep.core.policy import decide
    from osep.htcondor import probe, reach, state_check
    from osep.htcondor.policy_check import policy_findings
    from osep.htcondor.rights import FAIL, OK, WARN, Finding, by_daemon, unreached
    from osep.ui import render

    overrides = Overrides(pool=pool, policy_file=policy_file, state_file=state_file)
    rows = [Finding("bindings", "htcondor2", OK, f"HTCondor {probe.bindings_version()}")]
    try:
        settings = parse_knobs(reach.knobs(KNOBS), overrides)
    except ConfigError as exc:
        rows.append(Finding("configuration", "knobs", FAIL, str(exc)))
        settings = parse_knobs({}, overrides)
    if settings.dry_run:
        rows.append(Finding("configuration", "OSEP_DRY_RUN", WARN,
                            "true: osep decides and touches nothing until it is false"))
    policy = None
    where = str(settings.policy_file or "policy file")
    if settings.policy_file is None:
        rows.append(Finding("policy file", where, FAIL, "none set (--policy-file, knob OSEP_POLICY_FILE)"))
    else:
        try:
            policy = load_policy(settings.policy_file).settings
        except OsepError as exc:
            rows.append(Finding("policy file", where, FAIL, str(exc)))
        else:
            rows.append(Finding("policy file", where, OK, "valid"))
    live = live_settings(settings, retries=1, policy=policy)
    probes, wanted, leases = probe.probe_pool(live, acting=True, publish=settings.publish)
    found = by_daemon(probes, wanted, leases)
    rows += found
    if policy is not None:
        if unreached(found):
            rows.append(Finding("policy vs pool", where, WARN, "not checked: a daemon does not answer"))
        else:
            try:
                snapshot, submitters = probe.pool_now(live)
                rows += policy_findings(policy, decide(snapshot, policy), submitters, where)
            except OsepError as exc:
                rows.append(Finding("policy vs pool", where, WARN, f"not checked: {exc}"))
    status, detail = state_check.inspect(settings.state_file)
    rows.append(Finding("state file", str(settings.state_file or "state file"), status, detail))
    ok = all(r.status != FAIL for r in rows)
    doc = {"ok": ok, "checks": [{"check": r.check, "target": r.target, "status": r.status, "detail": r.detail}
                                for r in rows]}
    click.echo(render.DOCTOR_RENDERERS[fmt](doc), nl=False)
    sys.exit(exits.DONE.code if ok else exits.POOL.code)
