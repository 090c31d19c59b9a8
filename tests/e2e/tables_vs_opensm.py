#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# With only opensm.conf options (no qos-setup), `ibqos compile --emit json` must give every port
# exactly the SL2VL and VL arbitration tables a real OpenSM 3.3.23 writes to it: each
# configuration runs OpenSM on an ibsim fabric and reads every port back with smpquery.
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402

CONFIGURATIONS = {
    # OpenSM's built-in defaults: the SL2VL default (0..14,7) relies on folding on 8-VL ports.
    "built-in defaults": {},
    # The qos_ set: VL 15 in a VLArb list wraps to 0, weight 300 is cut to 44, VLs 8-14 fold.
    "global options": {
        "qos_high_limit": "6",
        "qos_vlarb_high": "0:64,1:128,15:32",
        "qos_vlarb_low": "2:192,3:64,4:300,9:16,5:1,6:2,7:3,0:4,1:5",
        "qos_sl2vl": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
    },
    # Per-class sets, falling back to qos_ for what they leave out.
    "per-class options": {
        "qos_vlarb_low": "0:16,1:32",
        "qos_ca_high_limit": "2",
        "qos_ca_vlarb_high": "3:96",
        "qos_ca_sl2vl": "1,1,2,2,3,3,4,4,5,5,6,6,7,7,0,15",
        "qos_swe_vlarb_high": "1:128,2:64",
        "qos_swe_sl2vl": "0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0",
        "qos_sw0_vlarb_low": "3:255",
        "qos_sw0_sl2vl": "7,6,5,4,3,2,1,0,7,6,5,4,3,2,1,0",
    },
}

SM_HOST = "sm HCA-1"
POLICY = "qos-ulps\n    default : 0\nend-qos-ulps\n"


def compare(fabric, ibqos, name, options, scratch):
    osm = fabric.start_opensm(dict({"qos": "TRUE"}, **options), "0x10000a", SM_HOST, name=name.replace(" ", "-"))
    topology = os.path.join(scratch, name.replace(" ", "-") + ".topo")
    with open(topology, "w") as f:
        f.write(fabric.tool(["ibnetdiscover"], SM_HOST).stdout)
    policy = os.path.join(scratch, "policy.conf")
    with open(policy, "w") as f:
        f.write(POLICY)
    p = subprocess.run([ibqos, "compile", policy, "--topology", topology, "--opensm-conf", osm.conf_path,
                        "--emit", "json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"ibqos compile failed ({p.returncode}):\n{p.stderr}")
    ports = json.loads(p.stdout)["ports"]
    mismatches, pairs = [], 0
    for port in ports:
        where = f"{port['node_desc']}/P{port['port']} (lid {port['lid']})"
        rows = simfabric.parse_sl2vl(fabric.tool(["smpquery", "sl2vl", str(port["lid"]), str(port["port"])], SM_HOST).stdout)
        for pair in port["sl2vl"]:
            pairs += 1
            got = rows.get((pair["in"], pair["out"]))
            if got != pair["vl"]:
                mismatches.append(f"{where} sl2vl in {pair['in']} out {pair['out']}: ibqos {pair['vl']}, OpenSM {got}")
        vlarb = simfabric.parse_vlarb(fabric.tool(["smpquery", "vlarb", str(port["lid"]), str(port["port"])], SM_HOST).stdout)
        for table in ("high", "low"):
            want = [tuple(e) for e in port["vlarb_" + table]]
            if want != vlarb[table][:len(want)] or len(want) != vlarb.get(table + "_cap"):
                mismatches.append(f"{where} vlarb {table}: ibqos {want}, OpenSM {vlarb[table]}")
    # Every port OpenSM programs is in the output: linked CA ports, linked switch ports, and
    # the enhanced port 0 (ibsim: the Spine).
    described = {(p["node_desc"], p["port"]) for p in ports}
    for expected in [("Spine", 0), ("Leaf1", 7), ("storage1 HCA-1", 2), ("compute3 HCA-1", 1)]:
        if expected not in described:
            mismatches.append(f"{expected[0]}/P{expected[1]} is missing from the output")
    if ("Leaf1", 0) in described:
        mismatches.append("Leaf1/P0 (a base port 0) is in the output, but OpenSM does not program it")
    osm.stop()
    return ports, pairs, mismatches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--net", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    ibqos = os.path.abspath(args.ibqos)
    failed = False
    with tempfile.TemporaryDirectory(prefix="ibqos-tables-") as scratch, simfabric.SimFabric(args.net) as fabric:
        for name, options in CONFIGURATIONS.items():
            ports, pairs, mismatches = compare(fabric, ibqos, name, options, scratch)
            status = "ok  " if not mismatches else "FAIL"
            print(f"{status} {name}: {len(ports)} ports, {pairs} SL2VL pairs and {2 * len(ports)} VLArb tables compared")
            for m in mismatches[:40]:
                print("     " + m)
            failed |= bool(mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
