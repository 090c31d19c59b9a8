#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads the built products' symbols: no test double and no failure injection point in any of
them, no Spirit code and no compiler in the preload library (it reads the agent's plan file,
never a policy); no allocator of our own in a library another program loads (the preload
library, the plugin), and the ibqos command on it where the build chose one; and the ibqos
command without the monitor's HTTP server and libsystemd, which alone cost every command about
4 ms to load (ibqos-monitor links them).

usage: check_products.py --preload LIB [--failpoints TEST_MODULE] [--allocator-user EXE]
                         [--lean EXE] PRODUCT...
"""
import argparse
import re
import subprocess
import sys

# Test doubles (tests/doubles/, tests/host-sched/'s stand-ins).
DOUBLES = re.compile(r"\bibqos::host::(?:EmulatedMlx5\w*|Emulated\w+|FluidLink\w*)\b|verbs_standin"
                     r"|\bibqos::monitor::FakePma\b")
# The plugin's failure injection points (osm-plugin/failpoint.hpp), built into a test module only.
FAILPOINTS = re.compile(r"\bibqos::osm::failpoint\b")
# What a grammar or a compiler leaves behind.
PRELOAD_FORBIDDEN = re.compile(r"boost::spirit|\bibqos::grammar::|\bibqos::ast::|\bibqos::passes::"
                               r"|\bibqos::(?:loadPolicy|compilePolicy|parsePolicy)\b")

# What only the monitor needs, with the dozen libraries each loads in turn.
MONITOR_ONLY = re.compile(r"lib(?:microhttpd|systemd)\.so")

# Allocators that take malloc over for the whole process.
ALLOCATOR = re.compile(r"lib(?:mimalloc|jemalloc|tcmalloc)")


def symbols(path):
    out = subprocess.run(["nm", "-C", path], capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"{path}: nm read no symbols ({out.stderr.strip() or 'stripped?'})")
    return out.stdout.splitlines()


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{path}: readelf failed ({out.stderr.strip()})")
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload", required=True)
    parser.add_argument("--failpoints", help="the plugin's test module: it must hold the points the products lack")
    parser.add_argument("--allocator-user", action="append", default=[],
                        help="a program the build links with an allocator of its own (mimalloc)")
    parser.add_argument("--lean", action="append", default=[],
                        help="a program every command starts: it must not load the monitor's libraries")
    parser.add_argument("products", nargs="+")
    args = parser.parse_args()
    problems = 0
    for path in [args.preload] + args.products:
        found = [s for s in symbols(path) if DOUBLES.search(s)]
        for s in found[:5]:
            print(f"{path}: links a test double: {s[:160]}", file=sys.stderr)
        problems += len(found)
        found = [s for s in symbols(path) if FAILPOINTS.search(s)]
        for s in found[:5]:
            print(f"{path}: holds a failure injection point: {s[:160]}", file=sys.stderr)
        problems += len(found)
    if args.failpoints and not any(FAILPOINTS.search(s) for s in symbols(args.failpoints)):
        print(f"{args.failpoints}: no failure injection point found (the check is stale)", file=sys.stderr)
        problems += 1
    found = [s for s in symbols(args.preload) if PRELOAD_FORBIDDEN.search(s)]
    for s in found[:5]:
        print(f"{args.preload}: links the grammar or the compiler: {s[:160]}", file=sys.stderr)
    problems += len(found)
    # A library loaded into another program's process (OpenSM, an application) leaves that
    # program's allocator alone.
    for path in [args.preload] + [p for p in args.products if p.endswith(".so")]:
        for lib in needed(path):
            if ALLOCATOR.match(lib):
                print(f"{path}: links an allocator of its own: {lib}", file=sys.stderr)
                problems += 1
    for path in args.allocator_user:
        if not any(ALLOCATOR.match(lib) for lib in needed(path)):
            print(f"{path}: does not link the allocator the build chose", file=sys.stderr)
            problems += 1
    for path in args.lean:
        for lib in needed(path):
            if MONITOR_ONLY.match(lib):
                print(f"{path}: loads {lib}, which only ibqos-monitor needs", file=sys.stderr)
                problems += 1
    print(f"{1 + len(args.products)} products read: {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
