#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads the built products' symbols: no test double in any of them, no Spirit code and no
compiler in the preload library (it reads the agent's plan file, never a policy).

usage: check_products.py --preload LIB PRODUCT...
"""
import argparse
import re
import subprocess
import sys

# Test doubles (tests/doubles/, tests/host-sched/'s stand-ins).
DOUBLES = re.compile(r"\bibqos::host::(?:EmulatedMlx5\w*|Emulated\w+|FluidLink\w*)\b|verbs_standin"
                     r"|\bibqos::monitor::FakePma\b")
# What a grammar or a compiler leaves behind.
PRELOAD_FORBIDDEN = re.compile(r"boost::spirit|\bibqos::grammar::|\bibqos::ast::|\bibqos::passes::"
                               r"|\bibqos::(?:loadPolicy|compilePolicy|parsePolicy)\b")


def symbols(path):
    out = subprocess.run(["nm", "-C", path], capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"{path}: nm read no symbols ({out.stderr.strip() or 'stripped?'})")
    return out.stdout.splitlines()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload", required=True)
    parser.add_argument("products", nargs="+")
    args = parser.parse_args()
    problems = 0
    for path in [args.preload] + args.products:
        found = [s for s in symbols(path) if DOUBLES.search(s)]
        for s in found[:5]:
            print(f"{path}: links a test double: {s[:160]}", file=sys.stderr)
        problems += len(found)
    found = [s for s in symbols(args.preload) if PRELOAD_FORBIDDEN.search(s)]
    for s in found[:5]:
        print(f"{args.preload}: links the grammar or the compiler: {s[:160]}", file=sys.stderr)
    problems += len(found)
    print(f"{1 + len(args.products)} products read: {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
