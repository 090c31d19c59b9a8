#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Benchmark (run on demand): how long `ibqos apply` takes on each sample fabric (samples/fabrics/
# *.net) with a real OpenSM and the plugin on ibsim: check, diff, install, SIGHUP, the heavy sweep,
# and the verification (every port's tables over SMPs, PathRecords from the SA). Each round
# applies a change of one rule's SL and one port's VLArb table, then changes it back; the median
# of the rounds is printed, and the time of an apply the plugin refuses, rolled back (with the
# test module's failpoint, when --failpoints-dir is given).
#   bench/apply_time.py --build build [--rounds 5] [--failpoints-dir build/tests] [--json]
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fabric"))
import plugin_opensm  # noqa: E402
import simfabric  # noqa: E402

MARKER = "# refused by the benchmark's failpoint"


def policy(first, second, sl, weight, extra=""):
    return plugin_opensm.two_group_policy(first, second, sl, vlarb_high=weight, head=extra)


def hcas(net_path):
    """The HCA names of a net file, in file order."""
    return re.findall(r'^Hca\s+\d+\s+"([^"]+)"', open(net_path).read(), re.M)


def port_guids(fabric, host):
    """{HCA name: its first port's GUID}, from ibnetdiscover before any SM runs."""
    text = fabric.tool(["ibnetdiscover"], host).stdout
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r'^Ca\s+\d+\s+"[^"]*"\s+#\s+"([^"]+)"', line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^\[\d+\]\(([0-9a-fA-F]+)\)", line)
        if m and name and name not in out:
            out[name] = int(m.group(1), 16)
    return out


def measure(net, args, work):
    names = hcas(net)
    ibqos = os.path.abspath(os.path.join(args.build, "cli", "ibqos"))
    plugin_dir = os.path.abspath(args.failpoints_dir or os.path.join(args.build, "osm-plugin"))
    plugin = "ibqos_osm_failpoints" if args.failpoints_dir else "ibqos_osm"
    with simfabric.SimFabric(net) as fabric:
        sm = names[0]
        guids = port_guids(fabric, sm)
        first, second = guids[sm], guids[names[-1]]
        path = os.path.join(work, "policy.conf")
        texts = [policy(first, second, 2, 64), policy(first, second, 4, 32)]
        with open(path, "w") as f:
            f.write(texts[0])
        status = os.path.join(work, "ibqos-status.json")
        options = plugin_opensm.plugin_options(path, status, module=plugin)
        if "lash" in os.path.basename(net):
            # The fabric made for LASH: its SLs come from the engine, and apply says so.
            options["routing_engine"] = "lash"
        osm, points = plugin_opensm.start(fabric, work, options, hex(guids[sm]), sm, plugin_dir, failpoints=True,
                                          timeout=60)
        times, reported, ports = [], [], 0

        def apply(text):
            new = os.path.join(work, "new.conf")
            with open(new, "w") as f:
                f.write(text)
            start = time.monotonic()
            p = fabric.tool([ibqos, "apply", new, "--status", status, "--json"], sm, check=False, timeout=300)
            seconds = time.monotonic() - start
            result = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
            return p.returncode, seconds, result, p.stderr

        for r in range(args.rounds):
            code, seconds, result, err = apply(texts[(r + 1) % 2])
            if code != 0:
                raise RuntimeError(f"{os.path.basename(net)}: apply exited {code}: {err} {result.get('message')}")
            times.append(seconds)
            reported.append(result["seconds"])
            ports = result["verify"]["tables"]["ports_checked"]
        rolled = None
        if args.failpoints_dir:
            with open(os.path.join(points, "candidate-compile"), "w") as f:
                f.write(MARKER + "\n")
            code, seconds, result, err = apply(policy(first, second, 6, 16, extra=MARKER))
            if code != 3:
                raise RuntimeError(f"{os.path.basename(net)}: a refused apply exited {code}: {err}")
            rolled = seconds
        osm.stop()
        return {"endpoints": len(guids), "ports": ports, "median": statistics.median(times),
                "max": max(times), "reported": statistics.median(reported), "rolled_back": rolled}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--failpoints-dir", help="the directory of the plugin's test module: also time a rollback")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim, OpenSM or libumad2sim missing")
        return 77
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    rows = []
    for net in sorted(glob.glob(os.path.join(root, "samples", "fabrics", "*.net"))):
        with tempfile.TemporaryDirectory(prefix="ibqos-apply-bench-") as work:
            rows.append((os.path.basename(net), measure(net, args, work)))
    if args.json:
        for name, m in rows:
            params = {"fabric": name, "endpoints": m["endpoints"], "ports_with_tables": m["ports"],
                      "rounds": args.rounds}
            print(json.dumps({"name": "apply", "value": round(m["median"] * 1000, 1), "unit": "ms",
                              "parameters": params}))
            if m["rolled_back"] is not None:
                print(json.dumps({"name": "apply_rolled_back", "value": round(m["rolled_back"] * 1000, 1),
                                  "unit": "ms", "parameters": params}))
        return 0
    print(f"{'fabric':<18} {'endpoints':>9} {'ports':>6} {'apply median':>13} {'max':>8} {'in apply':>9} {'rolled back':>12}")
    for name, m in rows:
        rolled = f"{m['rolled_back'] * 1000:.0f} ms" if m["rolled_back"] is not None else "-"
        print(f"{name:<18} {m['endpoints']:>9} {m['ports']:>6} {m['median'] * 1000:>10.0f} ms "
              f"{m['max'] * 1000:>5.0f} ms {m['reported'] * 1000:>6.0f} ms {rolled:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
