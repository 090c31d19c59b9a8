#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs ibqos-bench-resolve against a real OpenSM on ibsim (tests/fabric/simfabric.py), and
times the `ibqos-agent resolve` command as a whole process too.

    bench/run_bench_resolve.py --build BUILD_DIR [--count 1000] [--json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tests", "fabric"))
import simfabric  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--count", type=int, default=1000)
ap.add_argument("--cli-runs", type=int, default=100)
ap.add_argument("--json", action="store_true")
args = ap.parse_args()
if not simfabric.available():
    sys.exit("ibsim, OpenSM or libumad2sim is not installed")
build = os.path.abspath(args.build)
policy = os.path.join(root, "samples", "policies", "host-sched.conf")
scratch_dir = tempfile.TemporaryDirectory(prefix="ibqos-bench-resolve-")  # removed at exit
scratch = scratch_dir.name
plain = os.path.join(scratch, "qos-policy.conf")
with open(policy) as f, open(plain, "w") as out:
    out.write(re.sub(r"^host-sched\s*\n.*?^end-host-sched\s*\n", "", f.read(), flags=re.S | re.M))

with simfabric.SimFabric(os.path.join(root, "samples", "fabrics", "two-switch.net"), workdir=scratch) as fabric:
    fabric.start_opensm({"qos": "TRUE", "qos_policy_file": plain}, "0x0000000000100001", "Hca1")
    bench = [os.path.join(build, "bench", "ibqos-bench-resolve"), "--policy", policy, "--dst", "1",
             "--count", str(args.count), "--qos-class", "3"] + (["--json"] if args.json else [])
    p = fabric.tool(bench, "Hca2", timeout=600)
    sys.stdout.write(p.stdout)
    # The whole command, process start to exit, as a script would run it.
    times = []
    agent = [os.path.join(build, "cli", "ibqos-agent"), "resolve", policy, "--dst", "1",
             "--qos-class", "3", "--json"]
    for _ in range(args.cli_runs):
        start = time.monotonic()
        fabric.tool(agent, "Hca2")
        times.append((time.monotonic() - start) * 1e6)
    times.sort()
    for name, value in (("resolve_cli_process_median", statistics.median(times)),
                        ("resolve_cli_process_p99", times[min(len(times) - 1, int(0.99 * len(times)))])):
        if args.json:
            print(json.dumps({"name": name, "value": round(value, 3), "unit": "us", "runs": args.cli_runs}))
        else:
            print(f"{name:<34} {value:14.3f} {'us':<8} runs={args.cli_runs}")
