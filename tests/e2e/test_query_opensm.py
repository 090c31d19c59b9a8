#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential test of `ibqos query` against a real OpenSM.

For each sample policy of the qos-lab fabric, OpenSM 3.3.23 runs on ibsim with `qos TRUE`, the
policy and the sample partitions; random PathRecord requests (random ends, with and without a
ServiceID, QoS class, PKey and SL) go to its SA one at a time with saquery, and the same
requests to `ibqos query --batch`, given the fabric as ibnetdiscover sees it. They must agree:
an empty answer where ibqos says "rejected"; the SL, packet life and PKey exactly; the MTU and
rate as the level's limit clamped by the path (ibqos has no routes: the path's values are
computed here from the topology, comparing real speeds since the rate enum is not ordered).

Exits 77 (skipped) when ibsim, OpenSM or the diags are not installed.
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402

SKIP = 77
SM_HOST = "sm-01 HCA-1"
SM_GUID = "0x100001"
SUBNET_TIMEOUT = 18  # OpenSM's default: the packet life of a level that sets none
POLICIES = ["qos-lab-guid-ranges.conf", "qos-lab-names-and-types.conf", "qos-lab-partitions.conf",
            "qos-lab-fields.conf", "qos-lab-ulps.conf", "qos-lab-mixed.conf"]

# What ibsim's switch port 0 reports (measured: every path to or from a switch gets them).
SWITCH_PORT0_GBPS = 10.0
SWITCH_PORT0_MTU = 3  # 1024
CA_MTU = 4  # 2048

RATE_GBPS = {2: 2.5, 3: 10, 4: 30, 5: 5, 6: 20, 7: 40, 8: 60, 9: 80, 10: 120, 11: 14, 12: 56, 13: 112,
             14: 168, 15: 25, 16: 100, 17: 200, 18: 300, 19: 28, 20: 50, 21: 400, 22: 600}
LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50}

# Values the requests draw from: those the sample policies name, their neighbours, and others.
SERVICE_IDS = [0x0, 0x2, 0x3, 0x4, 0xff, 0x100, 0x150, 0x1ff, 0x200, 0x500, 0x5ff, 0x600, 0x1000, 0x1001,
               0x2000, 0x20ff, 0x10000, 0x1000a, 0x10010, 0x10011, 0x11000, 0x1ffff, 0x20000,
               0x1060000 + 0x48ca, 0x1060000 + 20000, 0x1060000 + 0x0cbc, 0x1060000 + 900, 0x1060000 + 905,
               0x1060000 + 906, 0xffffffffffff0000, 0xffffffffffffffff]
QOS_CLASSES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 99, 100, 4095]
PKEYS = [0x7fff, 0xffff, 0x0001, 0x8001, 0x0100, 0x8100, 0x0101, 0x7001, 0xf001, 0x0002, 0x8002, 0x1234]


class Topology:
    """The ports, LIDs and link rates of an ibnetdiscover file, and the switch graph."""

    HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*#\s*"([^"]*)"(.*)$')
    PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s*#(.*)$')

    def __init__(self, text):
        self.endpoints = {}  # lid -> {"type", "node", "gbps"}
        self.links = {}      # (node, port) -> (peer node, peer port, gbps)
        node = None
        for line in text.splitlines():
            m = self.HEADER.match(line)
            if m:
                kind, node = m.group(1), m.group(3)
                if kind == "Switch":
                    lid = int(re.search(r"lid (\d+)", m.group(5)).group(1))
                    self.endpoints[lid] = {"type": "switch", "node": node, "gbps": SWITCH_PORT0_GBPS}
                continue
            m = self.PORT.match(line)
            if not m or node is None:
                continue
            port, peer, peer_port, comment = int(m.group(1)), m.group(3), int(m.group(4)), m.group(5)
            speed = re.search(r"(\d+)x(\w+)\s*$", comment)
            gbps = int(speed.group(1)) * LANE_GBPS[speed.group(2)]
            self.links[(node, port)] = (peer, peer_port, gbps)
            if m.group(2):  # a CA or router port: it has a GUID and a LID of its own
                lid = int(re.search(r"lid (\d+)", comment).group(1))
                self.endpoints[lid] = {"type": "ca", "node": node, "port": port, "gbps": gbps}
        self.switch_links = {}  # switch -> {neighbour switch: gbps}
        switches = {e["node"] for e in self.endpoints.values() if e["type"] == "switch"}
        for (node, _), (peer, _, gbps) in self.links.items():
            if node in switches and peer in switches:
                self.switch_links.setdefault(node, {})[peer] = gbps

    def switch_of(self, lid):
        e = self.endpoints[lid]
        return e["node"] if e["type"] == "switch" else self.links[(e["node"], e["port"])][0]

    def path(self, src, dst):
        """(gbps, mtu enum) of the path: the lowest rate of its ports and links (the fabric is a
        tree of switches, parallel links having equal rates)."""
        a, b = self.endpoints[src], self.endpoints[dst]
        gbps = min(a["gbps"], b["gbps"])
        mtu = SWITCH_PORT0_MTU if "switch" in (a["type"], b["type"]) else CA_MTU
        if src != dst:
            start, goal = self.switch_of(src), self.switch_of(dst)
            previous, queue = {start: None}, [start]
            while queue:
                s = queue.pop(0)
                for n in self.switch_links.get(s, {}):
                    if n not in previous:
                        previous[n] = s
                        queue.append(n)
            s = goal
            while previous[s] is not None:
                gbps = min(gbps, self.switch_links[previous[s]][s])
                s = previous[s]
        return gbps, mtu


def random_requests(rng, lids, count):
    requests = []
    for _ in range(count):
        requests.append({
            "src": rng.choice(lids), "dst": rng.choice(lids),
            "sid": (rng.choice(SERVICE_IDS) if rng.random() < 0.85 else rng.getrandbits(64)) if rng.random() < 0.5 else None,
            "qos": (rng.choice(QOS_CLASSES) if rng.random() < 0.85 else rng.randrange(4096)) if rng.random() < 0.4 else None,
            "pkey": rng.choice(PKEYS) if rng.random() < 0.4 else None,
            "sl": rng.randrange(16) if rng.random() < 0.25 else None,
        })
    return requests


def saquery_args(r):
    args = ["saquery", "-p", "--slid", str(r["src"]), "--dlid", str(r["dst"])]
    if r["sid"] is not None:
        args += ["--service_id", hex(r["sid"])]
    if r["qos"] is not None:
        args += ["-Q", str(r["qos"])]
    if r["pkey"] is not None:
        args += ["--pkey", hex(r["pkey"])]
    if r["sl"] is not None:
        args += ["--sl", str(r["sl"])]
    return args


def batch_line(r):
    def field(v, fmt):
        return "-" if v is None else fmt(v)
    return " ".join([str(r["src"]), str(r["dst"]), field(r["sid"], hex), field(r["qos"], str),
                     field(r["pkey"], hex), field(r["sl"], str)])


def ask_opensm(fabric, r):
    p = fabric.tool(saquery_args(r), SM_HOST, check=False, timeout=60)
    record = simfabric.parse_pathrecord(p.stdout)
    if record is None and p.returncode != 0 and "NO_RECORDS" not in p.stderr + p.stdout:
        raise simfabric.FabricError(f"{' '.join(saquery_args(r))} failed ({p.returncode}): {p.stderr.strip()}")
    return record


def expected_values(topology, r, answer):
    """What OpenSM should answer, from ibqos's answer and the path."""
    gbps, mtu = topology.path(r["src"], r["dst"])
    if answer["mtu_limit"] is not None:
        mtu = min(mtu, answer["mtu_limit"])
    if answer["rate_limit"] is not None:
        gbps = min(gbps, RATE_GBPS[answer["rate_limit"]])
    life = answer["packet_life"] if answer["packet_life"] is not None else SUBNET_TIMEOUT
    return {"sl": answer["sl"], "mtu": mtu, "gbps": gbps, "pkt_life": life, "pkey": answer["pkey"]}


def got_values(record):
    return {"sl": int(record["sl"], 16), "mtu": int(record["mtu"], 16) & 0x3f,
            "gbps": RATE_GBPS.get(int(record["rate"], 16) & 0x3f), "pkt_life": int(record["pkt_life"], 16) & 0x3f,
            "pkey": int(record["pkey"], 16)}


def check_policy(fabric, args, policy, topology, topology_path, rng, workdir):
    policy_path = os.path.join(args.samples, "policies", policy)
    partitions = os.path.join(args.samples, "fabrics", "qos-lab.partitions.conf")
    osm = fabric.start_opensm({"qos": "TRUE", "qos_policy_file": policy_path, "partition_config_file": partitions},
                              SM_GUID, SM_HOST, name="opensm-" + policy.replace(".conf", ""))
    try:
        # ERR AC14 (a rule's PKey has no partition) is only logged; any other QoS error drops
        # the policy, and OpenSM would serve without one.
        errors = [l for l in osm.log().splitlines() if "ERR AC" in l and "ERR AC14" not in l]
        if errors:
            raise simfabric.FabricError(f"OpenSM did not take {policy}:\n" + "\n".join(errors))
        requests = random_requests(rng, sorted(topology.endpoints), args.queries)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            answers = list(pool.map(lambda r: ask_opensm(fabric, r), requests))
    finally:
        osm.stop()

    batch_path = os.path.join(workdir, policy + ".batch")
    with open(batch_path, "w") as f:
        f.write("".join(batch_line(r) + "\n" for r in requests))
    p = subprocess.run([args.ibqos, "query", policy_path, "--topology", topology_path, "--partitions", partitions,
                        "--sm", SM_GUID, "--batch", batch_path], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise simfabric.FabricError(f"ibqos query failed ({p.returncode}): {p.stderr}")
    ours = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(ours) == len(requests)

    differences, reasons = [], {}
    for r, theirs, mine in zip(requests, answers, ours):
        if mine["status"] == "error":
            differences.append(f"{batch_line(r)}: ibqos error {mine['message']}")
            continue
        if mine["status"] == "rejected":
            reasons[mine["reason"]] = reasons.get(mine["reason"], 0) + 1
        if (theirs is None) != (mine["status"] == "rejected"):
            differences.append(f"{batch_line(r)}: OpenSM {'answers nothing' if theirs is None else 'answers a path'}, "
                               f"ibqos says {mine['status']} ({mine.get('reason', mine['level'])})")
            continue
        if theirs is None:
            continue
        want, got = expected_values(topology, r, mine), got_values(theirs)
        if want != got:
            diff = ", ".join(f"{k} {got[k]} (ibqos {want[k]})" for k in want if want[k] != got[k])
            differences.append(f"{batch_line(r)}: level {mine['level']}: OpenSM {diff}")
    rejected = sum(reasons.values())
    deciding = {json.dumps(a["rule"]) for a in ours if a["status"] == "ok"}
    print(f"{policy}: {len(requests)} PathRecord queries, {len(requests) - rejected} answered, {rejected} empty; "
          f"{len(differences)} differences; {len(deciding)} rules (default level counted) decided an answer")
    for reason, n in sorted(reasons.items()):
        print(f"  {n:4} empty: {reason}")
    for d in differences:
        print("  DIFFERENCE " + d)
    return len(requests), len(differences)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--samples", required=True, help="the samples folder")
    ap.add_argument("--queries", type=int, default=300, help="PathRecord queries per policy")
    ap.add_argument("--jobs", type=int, default=4, help="saquery processes at a time")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--policy", action="append", help="only these sample policies")
    args = ap.parse_args()
    args.samples = os.path.abspath(args.samples)
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
        topology = Topology(discovered)
        for policy in args.policy or POLICIES:
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
