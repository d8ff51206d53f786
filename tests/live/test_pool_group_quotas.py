"""The negotiator's group quotas read from the real test pool and written as an osep policy tree
(osep.htcondor.group_reader.read_group_quotas and osep.htcondor.quota_shares): what the running negotiator says,
checked against the quotas it works out itself (its accounting ads' SubtreeQuota)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from harness import Live

# 20 one-core slots. Static and dynamic quotas side by side at the top, dynamic ones below a
# static group; one knob only the negotiator sees (NEGOTIATOR. prefix), one group a ceiling.
GROUPS = """
GROUP_NAMES = group_physics, group_physics.hep, group_physics.lep, group_chem
NEGOTIATOR.GROUP_QUOTA_group_physics = 12
GROUP_QUOTA_DYNAMIC_group_physics.hep = 0.75
GROUP_QUOTA_DYNAMIC_group_physics.lep = 0.25
GROUP_QUOTA_DYNAMIC_group_chem = 0.4
GROUP_ACCEPT_SURPLUS = True
GROUP_ACCEPT_SURPLUS_group_chem = False
"""

# What the test reads, in a process of its own configured as osep is (live.config()): the tree's
# text, the problems, and the negotiator's own quotas from its accounting ads in the collector.
READ = """
import json, sys
import htcondor2
from osep.htcondor import group_reader, quota_shares, reading
read = group_reader.read_group_quotas(remote=sys.argv[1] == "remote")
result = quota_shares.translate(read.knobs, read.pool_size, reading.classad_value)
ads = htcondor2.Collector().query(htcondor2.AdTypes.Accounting, constraint="IsAccountingGroup =?= true",
                                  projection=["Name", "SubtreeQuota"])
print(json.dumps({"text": result.text, "problems": result.problems,
                  "quotas": {str(a["Name"]): float(a["SubtreeQuota"]) for a in ads if "SubtreeQuota" in a}}))
"""


def read(live: Live, where: str) -> dict:
    done = subprocess.run([sys.executable, "-c", READ, where], env=live.env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("live", [{"cpus": 20, "extra_config": GROUPS}], indirect=True)
def test_the_pools_group_quotas_as_an_osep_tree(live: Live):
    live.config()  # osep's own configuration: where the pool is, and no group knob at all
    # A job in a group, so that the negotiator runs its quota rounds and reports them.
    live.submit("alice", 1, extra="accounting_group = group_physics.hep\naccounting_group_user = alice\n")
    doc: dict = {}

    def reported() -> bool:
        # The accounting ads appear before the first negotiation cycle has assigned quotas (0 then).
        doc.update(read(live, "remote"))
        names = {"group_physics", "group_physics.hep", "group_physics.lep", "group_chem"}
        return set(doc["quotas"]) >= names and all(doc["quotas"][g] > 0 for g in names)

    live.wait_until(reported, 90, "the negotiator's group quotas in its accounting ads")
    print(doc["text"])
    tree = tomllib.loads(doc["text"])
    assert tree["policy"] == {"unit": "cpus"}
    owners = tree["owners"]
    # Static beside dynamic at the top: amounts, chem's being 0.4 of what physics leaves (20 - 12).
    assert owners["group_physics"]["share"] == 12
    assert owners["group_chem"]["share"] == pytest.approx(3.2)
    assert owners["group_physics"]["hep"]["share"] == "75%"
    assert owners["group_physics"]["lep"]["share"] == "25%"
    assert doc["problems"] == []
    assert "NEGOTIATOR.GROUP_QUOTA" not in doc["text"] and "GROUP_QUOTA_group_physics = 12" in doc["text"]
    assert "a ceiling, as it accepts no surplus" in doc["text"].split("[owners.group_chem]")[1].split("share")[0]
    assert "the pool's size, as the negotiator counts it for quotas: 20 cpus" in doc["text"]
    # The shares resolved as osep resolves them are the quotas the negotiator worked out itself.
    resolved = {"group_physics": 12.0, "group_chem": 3.2, "group_physics.hep": 0.75 * 12,
                "group_physics.lep": 0.25 * 12}
    for group, amount in resolved.items():
        assert doc["quotas"][group] == pytest.approx(amount), group
    # This machine's configuration, as osep reads its own, has no groups: the negotiator's is needed.
    local = read(live, "local")
    assert tomllib.loads(local["text"])["owners"] == {}
    assert "GROUP_NAMES names no group" in local["text"]
    # The command an administrator runs prints the same tree, and it is a policy file osep takes
    # whose shares resolve, as osep resolves them, to the negotiator's own quotas.
    cli = subprocess.run([sys.executable, "-m", "osep", "shares", "--from-pool"], env=live.env(),
                         capture_output=True, text=True, timeout=120, check=False)
    assert cli.returncode == 0 and cli.stderr == "", cli.stderr
    assert cli.stdout == doc["text"]
    policy = live.work / "from-pool.toml"
    policy.write_text(cli.stdout)
    from osep.config.policy import load_policy
    from osep.core.tree import ShareTree

    tree_policy = load_policy(policy).settings.shares
    assert isinstance(tree_policy, ShareTree)
    amounts = tree_policy.resolve_nodes(20)
    for group in resolved:
        assert amounts[group] == pytest.approx(doc["quotas"][group]), group
