#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `ibqos verify` on ibsim: a fabric programmed by OpenSM with the ibqos plugin holds the policy's
# tables (exit 0, no difference); the same fabric programmed by a stock OpenSM, which ignores
# qos-setup, does not (exit 1, every differing port and table listed); without a fabric, exit 2.
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    root = os.path.abspath(args.root)
    ibqos = os.path.abspath(args.ibqos)
    policy = os.path.join(root, "samples/policies/per-port-tables.conf")
    failures = []
    with simfabric.SimFabric(os.path.join(root, "samples/fabrics/three-switch.net")) as fabric:
        osm = fabric.start_opensm({"qos": "TRUE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + policy},
                                  "0x10000a", "sm HCA-1", plugin_dir=os.path.abspath(args.plugin_dir))
        p = fabric.tool([ibqos, "verify", policy, "--json"], "compute1 HCA-1", check=False)
        report = json.loads(p.stdout)
        print(f"with the plugin: exit {p.returncode}, {report['ports_checked']} ports, {len(report['differences'])} differences")
        if p.returncode != 0 or report["differences"] or report["ports_checked"] != 19 or report["status"] != "ok":
            failures.append("with the plugin the fabric should hold every table of the policy")
        # A policy with errors is reported first, and nothing is compared.
        bad = os.path.join(fabric.workdir, "bad-policy.conf")
        with open(bad, "w") as f:
            f.write("qos-levels\n qos-level\n  name: default\n  sl: 16\n end-qos-level\nend-qos-levels\n")
        p = fabric.tool([ibqos, "verify", bad, "--json"], "compute1 HCA-1", check=False)
        report = json.loads(p.stdout)
        print(f"a policy with errors: exit {p.returncode}, status {report.get('status')}")
        if p.returncode != 1 or report.get("status") != "error" or "differences" in report \
                or [d["code"] for d in report["diagnostics"] if d["severity"] == "error"] != ["value-range"]:
            failures.append(f"a policy with errors is reported, and nothing compared: {report}")
        osm.stop()

        fabric.start_opensm({"qos": "TRUE"}, "0x10000a", "sm HCA-1", name="stock")
        p = fabric.tool([ibqos, "verify", policy, "--json"], "compute1 HCA-1", check=False)
        report = json.loads(p.stdout)
        differing = sorted({d["name"] for d in report["differences"]})
        if report.get("status") != "differences":
            failures.append(f"--json says the tables differ: status {report.get('status')}")
        print(f"stock OpenSM: exit {p.returncode}, {len(report['differences'])} differences on {len(differing)} ports")
        # qos-setup gives storage1's ports and the leaf ports facing it their own VLArb tables,
        # and the leaves' traffic from the spine its own SL2VL: all of it must show.
        expected = {"storage1 HCA-1/P1", "storage1 HCA-1/P2", "Leaf1/P3", "Leaf2/P2"}
        if p.returncode != 1 or not expected <= set(differing):
            failures.append(f"a stock OpenSM's tables should differ on {sorted(expected)}, found {differing}")
        if not all(d["expected"] and d["found"] and d["table"] for d in report["differences"]):
            failures.append("every difference names the table, what was expected and what was found")
        # Tables in the form of `ibqos compile --emit json`: the SL2VL as 16 VLs, VLArb entries
        # as [vl, weight] pairs; the port's number as elsewhere, its name beside it.
        compiled = json.loads(subprocess.run([ibqos, "compile", policy, "--topology", "-", "--emit", "json"],
                                             input=fabric.tool(["ibnetdiscover"], "compute1 HCA-1").stdout,
                                             capture_output=True, text=True, timeout=120).stdout or "{}")
        ports = {(p["node_desc"], p["port"]): p for p in compiled.get("ports", [])}
        for d in report["differences"]:
            node, number = d["name"].rsplit("/P", 1)
            want = ports.get((node, d["port"]))
            if int(number) != d["port"] or d["port_number"] != d["port"] or want is None:
                failures.append(f"difference {d}: its port number and name disagree, or compile has no such port")
                continue
            if d["table"].startswith("vlarb"):
                table = want["vlarb_high" if d["table"] == "vlarb high" else "vlarb_low"]
            else:
                source = int(d["table"].split()[-1])
                table = next(t["vl"] for t in want["sl2vl"] if t["in"] == source)
            if d["expected"] != table or not isinstance(d["found"], list):
                failures.append(f"{d['name']} {d['table']}: expected {d['expected']} is not compile's {table}")
        text = fabric.tool([ibqos, "verify", policy], "compute1 HCA-1", check=False).stdout
        lines = text.splitlines()
        if "differences" not in lines[-1]:
            failures.append("the text report ends with a count line")
        if not any(line.startswith("storage1 HCA-1/P1 vlarb low: expected ") and ", found " in line for line in lines):
            failures.append("a difference is one line: port, table, expected, found:\n" + text[:500])

    # Without a fabric (no simulator, and no HCA on this machine): a clear error and exit 2.
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        print("this machine has an RDMA device: the no-fabric case is not checked")
        return 1 if failures else 0
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "IBSIM_SOCKNAME", "SIM_HOST")}
    p = subprocess.run([ibqos, "verify", policy], capture_output=True, text=True, timeout=120, env=env)
    print(f"no fabric: exit {p.returncode}: {p.stderr.strip()[:120]}")
    if p.returncode != 2 or "ibqos verify:" not in p.stderr:
        failures.append("without a fabric verify exits 2 with a message")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
