#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Marginal cost of one request in `ibqos query --batch`: the batch run at two sizes, the
difference in wall time divided by the difference in requests (start-up, reading the policy and
the fabric cancel out). Requests are drawn at random from the qos-lab sample fabric, with and
without ServiceID, QoS class, PKey and SL, a few of them unreadable.

usage: bench/query_batch.py [--build DIR] [--requests N] [--rounds R] [--json]
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOLOGY = os.path.join(ROOT, "samples/fabrics/qos-lab.ibnetdiscover")
PARTITIONS = os.path.join(ROOT, "samples/fabrics/qos-lab.partitions.conf")
POLICY = os.path.join(ROOT, "samples/policies/qos-lab-handwritten.conf")


def ports():
    text = open(TOPOLOGY).read()
    guids = sorted(set(re.findall(r"\((?:0x)?([0-9a-f]+)\)", text)))
    lids = sorted(set(re.findall(r" lid (\d+)", text)))
    return ["0x" + g for g in guids] + lids


def requests(count, seed):
    rng = random.Random(seed)
    names = ports()
    field = lambda p, v: v if rng.random() < p else "-"
    lines = []
    for i in range(count):
        if i % 997 == 0:
            lines.append("this line is not a request")
            continue
        lines.append(" ".join([
            rng.choice(names), rng.choice(names),
            field(0.6, hex(rng.choice([0x1000, 0x1001, 0x2000, 0x10000000001, rng.randrange(1 << 20)]))),
            field(0.3, str(rng.randrange(8))),
            field(0.3, hex(rng.choice([0xffff, 0x7fff, 0x8001, 0x0002]))),
            field(0.2, str(rng.randrange(16))),
        ]))
    return "\n".join(lines) + "\n"


def seconds(ibqos, batch_file, rounds):
    best = None
    for _ in range(rounds):
        start = time.perf_counter()
        p = subprocess.run([ibqos, "query", POLICY, "--topology", TOPOLOGY, "--partitions", PARTITIONS,
                            "--batch", batch_file], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        took = time.perf_counter() - start
        if p.returncode not in (0, 1):
            sys.exit(f"ibqos query --batch failed ({p.returncode}): {p.stderr.decode()[-500:]}")
        best = took if best is None else min(best, took)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--requests", type=int, default=200000, help="requests in the larger batch")
    ap.add_argument("--rounds", type=int, default=5, help="runs of each size; the fastest counts")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ibqos = os.path.join(args.build, "cli/ibqos")
    small, large = args.requests // 4, args.requests
    with tempfile.TemporaryDirectory(prefix="ibqos-bench-") as scratch:
        files = {}
        for n in (small, large):
            files[n] = os.path.join(scratch, f"batch-{n}")
            with open(files[n], "w") as f:
                f.write(requests(n, seed=n))
        t = {n: seconds(ibqos, files[n], args.rounds) for n in (small, large)}
    marginal_us = (t[large] - t[small]) / (large - small) * 1e6
    results = [
        ("query_batch_marginal", marginal_us, "us"),
        (f"query_batch_{small}_total", t[small], "s"),
        (f"query_batch_{large}_total", t[large], "s"),
    ]
    params = {"requests": large, "rounds": args.rounds, "fabric": "qos-lab",
              "policy": os.path.basename(POLICY)}
    if args.json:
        for name, value, unit in results:
            print(json.dumps({"name": name, "value": round(value, 4), "unit": unit, **params}))
    else:
        print(f"ibqos query --batch on the qos-lab fabric ({os.path.basename(POLICY)}), best of {args.rounds}")
        print(f"{'measure':34} {'value':>14} unit")
        print("-" * 60)
        for name, value, unit in results:
            print(f"{name:34} {value:14.3f} {unit}")


if __name__ == "__main__":
    main()
