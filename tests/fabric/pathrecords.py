# SPDX-License-Identifier: MIT
"""PathRecord answers of a live SA against `ibqos query`, shared by the end-to-end tests and the
plugin soak: random requests, asking the SA with saquery and ibqos with one batch, and comparing
the two (ibqos has no routes, so the path's own MTU and rate are computed here from the topology).
"""
import concurrent.futures
import json
import re
import subprocess

import sa_requests
import simfabric

# The qos-lab sample fabric: its SM host and port, and the sample policies written for it.
QOS_LAB_SM = ("sm-01 HCA-1", "0x100001")
QOS_LAB_POLICIES = ["qos-lab-guid-ranges.conf", "qos-lab-names-and-types.conf", "qos-lab-partitions.conf",
                    "qos-lab-fields.conf", "qos-lab-ulps.conf", "qos-lab-mixed.conf", "qos-lab-handwritten.conf"]

SUBNET_TIMEOUT = 18  # OpenSM's default: the packet life of a level that sets none

# What ibsim's switch port 0 reports (measured: every path to or from a switch gets them).
SWITCH_PORT0_GBPS = 10.0
SWITCH_PORT0_MTU = 3  # 1024
CA_MTU = 4  # 2048

RATE_GBPS = {2: 2.5, 3: 10, 4: 30, 5: 5, 6: 20, 7: 40, 8: 60, 9: 80, 10: 120, 11: 14, 12: 56, 13: 112,
             14: 168, 15: 25, 16: 100, 17: 200, 18: 300, 19: 28, 20: 50, 21: 400, 22: 600}
# How OpenSM orders the rate enum when it clamps a path's rate to a level's rate-limit
# (ordered_rates in libopensm/osm_helper.c): by data rate with 64b/66b lanes counted as their
# signalling equivalent, so 25 Gb/s (1x EDR, "31.25") is above 30 Gb/s (12x SDR).
RATE_ORDER = {2: 1, 3: 3, 4: 6, 5: 2, 6: 5, 7: 9, 8: 10, 9: 13, 10: 14, 11: 4, 12: 12, 13: 16, 14: 17, 15: 7,
              16: 15, 17: 18, 18: 19, 19: 8, 20: 11, 21: 20, 22: 21}
RATE_OF_GBPS = {gbps: rate for rate, gbps in RATE_GBPS.items()}
LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50}

# Values the requests draw from: those the sample policies name, their neighbours, and others.
# Not 0: saquery takes a ServiceID or PKey of 0 for "not given" and leaves it out of the request.
SERVICE_IDS = [0x1, 0x2, 0x3, 0x4, 0xff, 0x100, 0x150, 0x1ff, 0x200, 0x500, 0x5ff, 0x600, 0x1000, 0x1001,
               0x2000, 0x20ff, 0x10000, 0x1000a, 0x10010, 0x10011, 0x11000, 0x1ffff, 0x20000,
               0x1060000 + 0x48ca, 0x1060000 + 20000, 0x1060000 + 0x0cbc, 0x1060000 + 900, 0x1060000 + 905,
               0x1060000 + 906, 0xffffffffffff0000, 0xffffffffffffffff,
               # the kernel's storage ULPs: NFS over RDMA, Lustre, NVMe over Fabrics
               0x1060000 + 20049, 0x1060000 + 987, 0x1060000 + 4420]
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
            "sid": (rng.choice(SERVICE_IDS) if rng.random() < 0.85 else rng.getrandbits(64) or 1) if rng.random() < 0.5 else None,
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


def raw_request(r):
    """A request as saquery -p sends it (SubnAdmGetTable, the fields given in the mask)."""
    f, mask = {"slid": r["src"], "dlid": r["dst"]}, sa_requests.SLID | sa_requests.DLID
    for key, field, bit in (("sid", "service_id", sa_requests.SERVICE_ID), ("qos", "qos_class", sa_requests.QOS_CLASS),
                            ("pkey", "pkey", sa_requests.PKEY), ("sl", "sl", sa_requests.SL)):
        if r[key] is not None:
            f[field] = r[key]
            mask |= bit
    return ("gettable", mask, sa_requests.encode(**f))


def _record(line):
    """The first record of an answer line in parse_pathrecord's form, or None for no path."""
    records = sa_requests.records_of(line)
    if not records:
        return None
    f = sa_requests.decode(records[0])
    byte = lambda selected: (selected[0] << 6) | selected[1]  # noqa: E731
    return {"sl": hex(f["sl"]), "mtu": hex(byte(f["mtu"])), "rate": hex(byte(f["rate"])),
            "pkt_life": hex(byte(f["packet_life"])), "pkey": f["pkey"]}


def ask_sa(fabric, host, requests, jobs=4, probe=None):
    """Each request to the SA from `host`: its PathRecord, or None for no path. With `probe`
    (ibqos-sa-probe) all of them through one process, as saquery -p would send them; else with
    one saquery each, `jobs` at a time."""
    if probe:
        lines = sa_requests.ask(fabric, host, probe, [raw_request(r) for r in requests])
        if "timeout" in lines:
            raise simfabric.FabricError(f"the SA did not answer {lines.count('timeout')} of {len(lines)} requests")
        return [_record(line) for line in lines]

    def one(r):
        p = fabric.tool(saquery_args(r), host, check=False, timeout=60)
        record = simfabric.parse_pathrecord(p.stdout)
        if record is None and p.returncode != 0 and "NO_RECORDS" not in p.stderr + p.stdout:
            raise simfabric.FabricError(f"{' '.join(saquery_args(r))} failed ({p.returncode}): {p.stderr.strip()}")
        return record
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, requests))


def ask_ibqos(ibqos, policy, topology_path, partitions, sm_guid, requests, batch_path):
    """The same requests to `ibqos query --batch`: one JSON answer per request."""
    with open(batch_path, "w") as f:
        f.write("".join(batch_line(r) + "\n" for r in requests))
    args = [ibqos, "query", policy, "--topology", topology_path, "--sm", sm_guid, "--batch", batch_path]
    if partitions:
        args += ["--partitions", partitions]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise simfabric.FabricError(f"ibqos query failed ({p.returncode}): {p.stderr}")
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    if len(answers) != len(requests):
        raise simfabric.FabricError(f"ibqos query answered {len(answers)} of {len(requests)} requests")
    return answers


def expected_values(topology, r, answer):
    """What the SA should answer, from ibqos's answer and the path."""
    gbps, mtu = topology.path(r["src"], r["dst"])
    if answer["mtu_limit"] is not None:
        mtu = min(mtu, answer["mtu_limit"])
    limit = answer["rate_limit"]
    if limit is not None and RATE_ORDER[RATE_OF_GBPS[gbps]] > RATE_ORDER[limit]:
        gbps = RATE_GBPS[limit]
    life = answer["packet_life"] if answer["packet_life"] is not None else SUBNET_TIMEOUT
    return {"sl": answer["sl"], "mtu": mtu, "gbps": gbps, "pkt_life": life, "pkey": answer["pkey"]}


def got_values(record):
    return {"sl": int(record["sl"], 16), "mtu": int(record["mtu"], 16) & 0x3f,
            "gbps": RATE_GBPS.get(int(record["rate"], 16) & 0x3f), "pkt_life": int(record["pkt_life"], 16) & 0x3f,
            "pkey": int(record["pkey"], 16)}


def compare(topology, requests, theirs, ours):
    """The SA's answers against ibqos's: (differences as text, {rejection reason: count})."""
    differences, reasons = [], {}
    for r, record, mine in zip(requests, theirs, ours):
        if mine["status"] == "error":
            differences.append(f"{batch_line(r)}: ibqos error {mine['message']}")
            continue
        if mine["status"] == "rejected":
            reasons[mine["reason"]] = reasons.get(mine["reason"], 0) + 1
        if (record is None) != (mine["status"] == "rejected"):
            differences.append(f"{batch_line(r)}: the SA {'answers nothing' if record is None else 'answers a path'}, "
                               f"ibqos says {mine['status']} ({mine.get('reason', mine['level'])})")
            continue
        if record is None:
            continue
        want, got = expected_values(topology, r, mine), got_values(record)
        if want != got:
            diff = ", ".join(f"{k} {got[k]} (ibqos {want[k]})" for k in want if want[k] != got[k])
            differences.append(f"{batch_line(r)}: level {mine['level']}: the SA answers {diff}")
    return differences, reasons


def report(label, topology, requests, theirs, ours):
    """Compares, prints a summary line, the rejection reasons and every difference; returns them."""
    differences, reasons = compare(topology, requests, theirs, ours)
    rejected = sum(reasons.values())
    deciding = {json.dumps(a["rule"]) for a in ours if a["status"] == "ok"}
    print(f"{label}: {len(requests)} PathRecord queries, {len(requests) - rejected} answered, {rejected} empty; "
          f"{len(differences)} differences; {len(deciding)} rules (default level counted) decided an answer")
    for reason, n in sorted(reasons.items()):
        print(f"  {n:4} empty: {reason}")
    for d in differences:
        print("  DIFFERENCE " + d)
    return differences
