#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential test of `ibqos query` against a real OpenSM.

For each sample policy of the qos-lab fabric, OpenSM 3.3.23 runs on ibsim with `qos TRUE`, the
policy and the sample partitions; random PathRecord requests (random ends, with and without a
ServiceID, QoS class, PKey and SL) go to its SA as saquery -p sends them (through ibqos-sa-probe
with --probe, else with saquery one at a time), and the same
requests to `ibqos query --batch`, given the fabric as ibnetdiscover sees it. They must agree:
an empty answer where ibqos says "rejected"; the SL, packet life and PKey exactly; the MTU and
rate as the level's limit clamped by the path (ibqos has no routes: the path's values are
computed here from the topology, the rate clamped in OpenSM's order of the rate enum).

A policy that uses ibqos's extensions (EMITTED: the storage ULP words) is handed to OpenSM as
`ibqos compile --emit opensm` writes it for a stock OpenSM, and `ibqos query` is asked with the
policy as written: the plain policy must give the same answers.

Exits 77 (skipped) when ibsim, OpenSM or the diags are not installed.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import pathrecords  # noqa: E402
import simfabric  # noqa: E402

SKIP = 77
SM_HOST, SM_GUID = pathrecords.QOS_LAB_SM
# Sample policies with extensions: OpenSM gets the plain policy ibqos writes for it.
EMITTED = ["qos-lab-storage-ulps.conf"]


def check_policy(fabric, args, policy, topology, topology_path, rng, workdir):
    policy_path = os.path.join(args.samples, "policies", policy)
    partitions = os.path.join(args.samples, "fabrics", "qos-lab.partitions.conf")
    osm_policy = policy_path
    if policy in EMITTED:
        out = os.path.join(workdir, "emitted-" + policy.replace(".conf", ""))
        os.makedirs(out, exist_ok=True)
        subprocess.run([args.ibqos, "compile", policy_path, "--topology", topology_path, "--partitions", partitions,
                        "--sm", SM_GUID, "--emit", "opensm", "-o", out], check=True, capture_output=True,
                       timeout=120)
        osm_policy = os.path.join(out, "qos-policy.conf")
    osm = fabric.start_opensm({"qos": "TRUE", "qos_policy_file": osm_policy, "partition_config_file": partitions},
                              SM_GUID, SM_HOST, name="opensm-" + policy.replace(".conf", ""))
    try:
        # ERR AC14 (a rule's PKey has no partition) is only logged; any other QoS error drops
        # the policy, and OpenSM would serve without one.
        errors = [l for l in osm.log().splitlines() if "ERR AC" in l and "ERR AC14" not in l]
        if errors:
            raise simfabric.FabricError(f"OpenSM did not take {policy}:\n" + "\n".join(errors))
        requests = pathrecords.random_requests(rng, sorted(topology.endpoints), args.queries)
        answers = pathrecords.ask_sa(fabric, SM_HOST, requests, args.jobs, args.probe)
    finally:
        osm.stop()
    ours = pathrecords.ask_ibqos(args.ibqos, policy_path, topology_path, partitions, SM_GUID, requests,
                                 os.path.join(workdir, policy + ".batch"))
    differences = pathrecords.report(policy, topology, requests, answers, ours)
    return len(requests), len(differences)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--samples", required=True, help="the samples folder")
    ap.add_argument("--queries", type=int, default=300, help="PathRecord queries per policy")
    ap.add_argument("--jobs", type=int, default=4, help="saquery processes at a time")
    ap.add_argument("--probe", help="ibqos-sa-probe: every request through it instead of one saquery each")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--policy", action="append", help="only these sample policies")
    args = ap.parse_args()
    args.samples = os.path.abspath(args.samples)
    args.probe = args.probe and os.path.abspath(args.probe)
    if not simfabric.available():
        print("skipped: ibsim, OpenSM, saquery or libumad2sim is not installed")
        return SKIP
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="ibqos-query-e2e-")
    total = failed = 0
    with simfabric.SimFabric(os.path.join(args.samples, "fabrics", "qos-lab.net"), workdir=workdir) as fabric:
        # The topology ibqos is given is the running fabric's, as ibnetdiscover sees it.
        osm = fabric.start_opensm({}, SM_GUID, SM_HOST, name="opensm-discovery")
        discovered = fabric.tool(["ibnetdiscover"], SM_HOST).stdout
        osm.stop()
        topology_path = os.path.join(workdir, "qos-lab.ibnetdiscover")
        with open(topology_path, "w") as f:
            f.write(discovered)
        topology = pathrecords.Topology(discovered)
        for policy in args.policy or pathrecords.QOS_LAB_POLICIES + EMITTED:
            n, d = check_policy(fabric, args, policy, topology, topology_path, rng, workdir)
            total += n
            failed += d
    print(f"{total} queries, {failed} differences")
    if failed:
        print(f"logs and batches kept in {workdir}")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
