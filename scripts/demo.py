#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The live demo: a simulated fabric (ibsim), a real OpenSM 3.3.23 with the ibqos plugin and a
sample policy; what every port got, what the SA answers for a few connections and why, and what
a host does with the answer. Everything started here is stopped at the end, also on Ctrl-C.

  scripts/demo.py --build build
"""
import argparse
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fabric"))
import simfabric  # noqa: E402

FABRIC = os.path.join(ROOT, "samples/fabrics/two-switch.net")
POLICY = os.path.join(ROOT, "samples/policies/storage-mpi-ai.conf")
SM_HOST, SM_GUID = "Hca1", "0x100001"  # ibsim's first port is the SM's
CLIENT = "Hca2"

# (what, destination node, ServiceID, QoS class)
CONNECTIONS = [
    ("block storage to a target", "Hca3", 0x10010, None),
    ("an MPI job (QoS class 3)", "Hca4", None, 3),
    ("anything to the SM", "Hca1", None, None),
    ("other traffic", "Hca4", 0x2000, None),
]


def say(title):
    print(f"\n\033[1m== {title}\033[0m" if sys.stdout.isatty() else f"\n== {title}", flush=True)


def show(text, limit=None):
    lines = text.rstrip("\n").splitlines()
    for line in lines[:limit]:
        print("   " + line)
    if limit and len(lines) > limit:
        print(f"   ... ({len(lines) - limit} more lines)")


def lid_of(fabric, node):
    out = fabric.tool(["ibaddr", "-G"], node).stdout  # "GID fe80:... LID start 0x3 end 0x3"
    return int(out.split("LID start ")[1].split()[0], 0)


def main():
    ap = argparse.ArgumentParser(description="Live demo of ibqos on a simulated fabric.")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the Meson build folder")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    ibqos = os.path.join(build, "cli", "ibqos")
    agent = os.path.join(build, "cli", "ibqos-agent")
    if not simfabric.available():
        print("ibsim, OpenSM or infiniband-diags is missing: run scripts/demo, which installs them")
        return 2

    say(f"ibqos check {os.path.relpath(POLICY, ROOT)}")
    p = simfabric.subprocess.run([ibqos, "check", POLICY], capture_output=True, text=True)
    show(p.stderr or "(no diagnostics)")

    with simfabric.SimFabric(FABRIC) as fabric:
        say(f"ibsim {os.path.relpath(FABRIC, ROOT)}, OpenSM with event_plugin_name ibqos_osm")
        options = {"qos": "FALSE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + POLICY}
        osm = fabric.start_opensm(options, SM_GUID, SM_HOST, plugin_dir=os.path.join(build, "osm-plugin"))
        osm.wait_for("IBQOS-0100")
        show("\n".join(line.split(" -> ", 1)[-1] if " -> " in line else line
                       for line in osm.log().splitlines() if "IBQOS-" in line))

        say(f"which policy is in force (ibqos status, on the SM's host {SM_HOST})")
        cache = os.path.join(os.path.dirname(osm.log_path), "cache")  # OpenSM's $OSM_CACHE_DIR
        show(fabric.tool([ibqos, "status", "--policy", POLICY], SM_HOST, check=False,
                         extra_env={"OSM_CACHE_DIR": cache}).stdout)

        say("what each port got, read back from the fabric (ibqos verify, from Hca2)")
        p = fabric.tool([ibqos, "verify", POLICY, "--json"], CLIENT, check=False, timeout=120)
        report = json.loads(p.stdout)
        print(f"   {report['ports_checked']} ports checked with {report['queries']} SMP queries: "
              f"{len(report['differences'])} differences from the policy")
        say("Switch1's port 3 (to Switch2) as smpquery reads it")
        topo = fabric.tool(["ibnetdiscover"], CLIENT).stdout
        switch_lid = next(int(line.split(" lid ")[1].split()[0]) for line in topo.splitlines()
                          if line.startswith("Switch") and '"Switch1"' in line)
        show(fabric.tool(["smpquery", "sl2vl", str(switch_lid), "3"], CLIENT).stdout, 6)
        show(fabric.tool(["smpquery", "vlarb", str(switch_lid), "3"], CLIENT).stdout, 14)
        topology = os.path.join(fabric.workdir, "fabric.ibnetdiscover")
        with open(topology, "w") as f:
            f.write(topo)

        say("what the SA answers, and why")
        for what, node, service_id, qos_class in CONNECTIONS:
            src, dst = lid_of(fabric, CLIENT), lid_of(fabric, node)
            sa = ["saquery", "-p", "--slid", str(src), "--dlid", str(dst)]
            query = [ibqos, "query", POLICY, "--topology", topology, "--sm", SM_GUID, "--src", str(src),
                     "--dst", str(dst)]
            if service_id is not None:
                sa += ["--service_id", hex(service_id)]
                query += ["--service-id", hex(service_id)]
            if qos_class is not None:
                sa += ["-Q", str(qos_class)]
                query += ["--qos-class", str(qos_class)]
            record = simfabric.parse_pathrecord(fabric.tool(sa, CLIENT, check=False).stdout)
            print(f"\n-- {what}: {CLIENT} -> {node}")
            print(f"   saquery: SL {int(record['sl'], 0) if record else '(no path)'}")
            show(simfabric.subprocess.run(query, capture_output=True, text=True).stdout)

        say(f"the host side on {CLIENT}: ibqos-agent resolve (SA query, then leaf and congestion-control slot)")
        for what, node, service_id, qos_class in CONNECTIONS[:2]:
            command = [agent, "resolve", POLICY, "--dst", str(lid_of(fabric, node))]
            if service_id is not None:
                command += ["--service-id", hex(service_id)]
            if qos_class is not None:
                command += ["--qos-class", str(qos_class)]
            print(f"\n-- {what}")
            show(fabric.tool(command, CLIENT, check=False).stdout)

        say("stopping OpenSM and ibsim")
    print("   done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
