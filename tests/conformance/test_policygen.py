#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Self-test of policygen.py: determinism, construct coverage, mutation lines, stock text, and
# every valid policy passing `ibqos check` (errors none, warnings allowed).
import os
import pathlib
import subprocess
import sys
import tempfile
from collections import Counter

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import policygen  # noqa: E402

SEEDS = range(int(os.environ.get("POLICYGEN_SEEDS", "500")))
# Every construct and mutation appears at least 5 times in the full 500 seeds; in a smaller sample
# (the sanitizer build's), proportionally fewer times, and at least once.
MIN_COUNT = max(1, 5 * len(SEEDS) // 500)
IBQOS = pathlib.Path(os.environ.get("IBQOS", ROOT / "build" / "cli" / "ibqos"))
FABRICS = [
    ("qos-lab", ROOT / "samples/fabrics/qos-lab.ibnetdiscover",
     ROOT / "samples/fabrics/qos-lab.partitions.conf", 0x100001),
    ("rack-row", ROOT / "samples/fabrics/rack-row.ibnetdiscover",
     ROOT / "samples/fabrics/rack-row.partitions.conf", 0x100001),
]

failures = []


def fail(message: str) -> None:
    failures.append(message)
    print("FAIL " + message)


def load(name, topology, partitions, sm):
    return policygen.profile_from_files(topology.read_text(), partitions.read_text(), sm, name)


def check_profiles(profiles):
    """The sample fabrics read as their files describe them."""
    lab = profiles["qos-lab"]
    parts = {p["name"]: p for p in lab.partitions}
    if parts["Default"]["ipoib_ok"] or parts["Default"]["full_members"] != 1:
        fail("qos-lab: only the SM should be a full member of Default: %r" % parts["Default"])
    if parts["compute"]["full_members"] != 8 or not parts["storage"]["ipoib_ok"]:
        fail("qos-lab: compute/storage partitions misread: %r" % lab.partitions)
    if sum(1 for p in lab.ports if p["type"] == "SWITCH") != 3 or len(lab.ports) != 13:
        fail("qos-lab: expected 13 ports (3 switches): %d" % len(lab.ports))
    row = profiles["rack-row"]
    parts = {p["name"]: p for p in row.partitions}
    if not parts["Default"]["ipoib_ok"] or parts["solo"]["ipoib_ok"]:
        fail("rack-row: Default should allow ipoib, solo should not: %r" % row.partitions)
    descs = {p["node_desc"] for p in row.ports}
    for desc in ("login,1 HCA-1", "leaf_r3 (lab)", "storage/a HCA-1", "gw router 1"):
        if desc not in descs:
            fail("rack-row: NodeDescription %r not read" % desc)


def check_policy(fabric, profile, seed, counts):
    policy, base_text, base_stock = policygen._generate(seed, profile)
    again = policygen.generate(seed, profile)
    if (again.text, again.stock_text, again.intent, again.mutation,
            again.constructs) != (policy.text, policy.stock_text, policy.intent, policy.mutation,
                                  policy.constructs):
        fail("%s seed %d: not deterministic" % (fabric, seed))
    unknown = policy.constructs - set(policygen.ALL_CONSTRUCTS)
    if unknown:
        fail("%s seed %d: constructs not in ALL_CONSTRUCTS: %s" % (fabric, seed, sorted(unknown)))
    for c in policy.constructs:
        counts[c] += 1
    for word in ("host-sched", "bandwidth:"):
        if word in policy.stock_text:
            fail("%s seed %d: stock_text holds %r" % (fabric, seed, word))
    uses_extensions = policy.constructs & {"ext:host-sched", "ext:bandwidth"}
    if not uses_extensions and policy.text != policy.stock_text:
        fail("%s seed %d: stock_text differs without extensions" % (fabric, seed))
    if policy.intent == "valid":
        if policy.mutation is not None or "\r" in policy.text:
            fail("%s seed %d: valid policy with a mutation or a carriage return" % (fabric, seed))
        if policy.text != base_text:
            fail("%s seed %d: valid policy differs from its base" % (fabric, seed))
        return
    check_mutation(fabric, seed, policy, base_text, base_stock)


def check_mutation(fabric, seed, policy, base_text, base_stock):
    m = policy.mutation
    if not m or m.get("kind") not in policygen.MUTATION_KINDS:
        fail("%s seed %d: invalid policy without a known mutation: %r" % (fabric, seed, m))
        return
    for key, text, base in (("line", policy.text, base_text),
                            ("stock_line", policy.stock_text, base_stock)):
        lines = text.split("\n")
        base_lines = base.split("\n")
        n = m.get(key)
        if not isinstance(n, int) or not 1 <= n <= len(lines):
            fail("%s seed %d: %s %r outside the text" % (fabric, seed, key, n))
            continue
        if m["kind"] in policygen.LINE_EDIT_KINDS:
            if n <= len(base_lines) and lines[n - 1] == base_lines[n - 1]:
                fail("%s seed %d: %s %s line %d unchanged: %r" % (fabric, seed, m["kind"], key, n,
                                                                  lines[n - 1]))
        elif not lines[n - 1].split("#")[0].strip() and n != len(lines):
            fail("%s seed %d: %s %s line %d is not a statement: %r"
                 % (fabric, seed, m["kind"], key, n, lines[n - 1]))
    if policy.text == base_text:
        fail("%s seed %d: mutation changed nothing" % (fabric, seed))


def ibqos_check(fabric, topology, partitions, sm, policies):
    """Run ibqos check on every valid policy; return the rejected ones and the invalid accepted."""
    rejected = []
    accepted_invalid = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed, policy in policies:
            path = pathlib.Path(tmp) / ("%s-%d.conf" % (fabric, seed))
            path.write_bytes(policy.text.encode())
            p = subprocess.run([str(IBQOS), "check", str(path), "--topology", str(topology),
                                "--partitions", str(partitions), "--sm", hex(sm)],
                               capture_output=True, text=True, timeout=60)
            if policy.intent == "valid" and p.returncode != 0:
                rejected.append((seed, p.returncode, p.stdout + p.stderr))
            if policy.intent == "invalid" and p.returncode == 0:
                accepted_invalid.append((seed, policy.mutation))
    return rejected, accepted_invalid


def main():
    profiles = {name: load(name, t, p, sm) for name, t, p, sm in FABRICS}
    check_profiles(profiles)
    totals = Counter()
    intents = Counter()
    for name, topology, partitions, sm in FABRICS:
        profile = profiles[name]
        counts = Counter()
        policies = []
        for seed in SEEDS:
            check_policy(name, profile, seed, counts)
            policy = policygen.generate(seed, profile)
            intents[policy.intent] += 1
            policies.append((seed, policy))
        totals.update(counts)
        if IBQOS.exists():
            rejected, accepted_invalid = ibqos_check(name, topology, partitions, sm, policies)
            for seed, rc, output in rejected:
                fail("%s seed %d: ibqos check exit %d on a valid policy:\n%s"
                     % (name, seed, rc, output[-3000:]))
            print("%s: ibqos rejects %d valid policies, accepts %d invalid ones"
                  % (name, len(rejected), len(accepted_invalid)))
            for seed, mutation in accepted_invalid:
                print("  note: ibqos accepts invalid %s seed %d: %r" % (name, seed, mutation))
        else:
            print("ibqos not built (%s): ibqos check skipped" % IBQOS)
    for construct in policygen.ALL_CONSTRUCTS:
        if totals[construct] < MIN_COUNT:
            fail("construct %s appears in %d policies only" % (construct, totals[construct]))
    print("intents: %s" % dict(intents))
    width = max(len(c) for c in policygen.ALL_CONSTRUCTS)
    for construct in policygen.ALL_CONSTRUCTS:
        print("  %-*s %5d" % (width, construct, totals[construct]))
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("policygen self-test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
