#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos check` on a policy written as a 400-rack site might write it: per rack a port-group
of its hosts (a GUID range) and of its storage nodes, and 50 rules for the rack's traffic
(storage by ServiceID, MPI and AI by QoS class, management by PKey), 20,000 rules in all, with
a few catch-all rules early on (a QoS-class range for every rack, a ServiceID range) that
shadow thousands of later rules. Prints the lines `ibqos check` writes and how long it takes,
by default and with the analysis budget unlimited.

usage: bench/rack_site.py [--build DIR] [--racks N] [--keep FILE] [--json]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES_PER_RACK = 50


def policy(racks):
    out = ["port-groups"]
    for r in range(racks):
        base = 0x100000 + r * 0x100
        out += [f"    port-group\n        name: rack{r:03d}-hosts\n"
                f"        port-guid: 0x{base:x}-0x{base + 0x3f:x}\n    end-port-group",
                f"    port-group\n        name: rack{r:03d}-storage\n"
                f"        port-guid: 0x{base + 0x40:x}-0x{base + 0x47:x}\n    end-port-group"]
    out.append("end-port-groups\nqos-levels")
    for name, sl in (("default", 0), ("storage", 1), ("mpi", 2), ("ai", 3), ("mgmt", 4), ("bulk", 5)):
        out.append(f"    qos-level\n        name: {name}\n        sl: {sl}\n    end-qos-level")
    out.append("end-qos-levels\nqos-match-rules")
    rule = 0

    def add(fields, level):
        nonlocal rule
        rule += 1
        body = "".join(f"        {k}: {v}\n" for k, v in fields)
        out.append(f"    qos-match-rule\n{body}        qos-level-name: {level}\n    end-qos-match-rule")

    for r in range(racks):
        hosts, storage = f"rack{r:03d}-hosts", f"rack{r:03d}-storage"
        if r == 2:  # the catch-alls an administrator adds while debugging, then forgets
            add([("qos-class", "8-15")], "mpi")
            add([("service-id", "0x1000-0x1fff")], "storage")
            add([("destination", ", ".join(f"rack{x:03d}-storage" for x in range(racks)))], "storage")
        for k in range(RULES_PER_RACK):
            kind = k % 5
            if kind == 0:
                add([("source", hosts), ("destination", storage), ("service-id", hex(0x1000 + k))], "storage")
            elif kind == 1:
                add([("source", hosts), ("destination", hosts), ("qos-class", str(8 + k % 8))], "mpi")
            elif kind == 2:
                add([("source", hosts), ("qos-class", str(16 + k % 16))], "ai")
            elif kind == 3:
                add([("source", hosts), ("pkey", hex(0x100 + r % 64))], "mgmt")
            else:
                add([("destination", storage), ("service-id", hex(0x10000 + r * RULES_PER_RACK + k))], "bulk")
    out.append("end-qos-match-rules\n")
    return "\n".join(out), rule


def run(ibqos, path, extra):
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([ibqos, "check", path, *extra], capture_output=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": time.perf_counter() - start, "cpu_seconds": after.ru_utime - before.ru_utime,
            "lines": p.stderr.count(b"\n"), "summary": p.stderr.decode(errors="replace").splitlines()[-1],
            "peak_kb": after.ru_maxrss}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--racks", type=int, default=400)
    ap.add_argument("--keep", help="write the generated policy there")
    ap.add_argument("--json", action="store_true", help="one JSON object per figure and line")
    args = ap.parse_args()
    ibqos = os.path.join(args.build, "cli", "ibqos")
    text, rules = policy(args.racks)
    with tempfile.TemporaryDirectory() as scratch:
        path = args.keep or os.path.join(scratch, "rack-site.conf")
        with open(path, "w") as f:
            f.write(text)
        for budget, extra in (("default", []), ("unlimited", ["--analysis-budget", "unlimited"])):
            r = run(ibqos, path, extra)
            if args.json:
                for name, unit in (("lines", "lines"), ("seconds", "s"), ("cpu_seconds", "s"), ("peak_kb", "KiB")):
                    print(json.dumps({"name": f"check_{name}", "value": r[name], "unit": unit, "racks": args.racks,
                                      "rules": rules, "budget": budget}))
            else:
                print(f"{budget:9} {rules} rules: {r['lines']} lines in {r['seconds']:.2f} s "
                      f"({r['cpu_seconds']:.2f} s CPU, peak {r['peak_kb'] // 1024} MiB): {r['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
