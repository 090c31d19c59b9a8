#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Every sample policy (among them every example of OpenSM's QoS guide and parser) must pass
# `ibqos check` with no error.
import argparse
import pathlib
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--ibqos", required=True)
ap.add_argument("dir")
args = ap.parse_args()
failed = 0
policies = sorted(pathlib.Path(args.dir).glob("*.conf"))
for policy in policies:
    p = subprocess.run([args.ibqos, "check", str(policy)], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        failed += 1
        print(f"FAIL {policy.name} (exit {p.returncode})\n{p.stderr}")
    else:
        print(f"ok   {policy.name}")
print(f"{len(policies) - failed}/{len(policies)} sample policies pass")
sys.exit(1 if failed or not policies else 0)
