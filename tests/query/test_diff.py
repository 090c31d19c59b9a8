#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos diff` against brute force: generated policy pairs on the qos-lab fabric, requests drawn
from the numbers the policies use, each answered by `ibqos query --batch` under both policies.
Exact regions: a request lies in a region exactly when its answer changes (requests rejected
under both count as unchanged), with the region's answers for a request that asks for no SL.
Pairs: a policy and itself with comments and blank lines added (exit 0), a policy and the same
with one level's SL changed, and unrelated policies. Then the cases that broke the witness-port
form: a bandwidth-only change without a topology, and a region whose field is decided by an
earlier rule."""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--ibqos", required=True)
ap.add_argument("--source-root", required=True)
ap.add_argument("--pairs", type=int, default=12)
ap.add_argument("--requests", type=int, default=400)
args = ap.parse_args()
sys.path.insert(0, os.path.join(args.source_root, "tests", "conformance"))
import policygen  # noqa: E402

FABRICS = os.path.join(args.source_root, "samples", "fabrics")
TOPOLOGY = os.path.join(FABRICS, "qos-lab.ibnetdiscover")
PARTITIONS = os.path.join(FABRICS, "qos-lab.partitions.conf")
SM = "0x100001"
FABRIC_ARGS = ["--topology", TOPOLOGY, "--partitions", PARTITIONS, "--sm", SM]
FIELDS = ("status", "sl", "mtu_limit", "rate_limit", "packet_life", "pkeys", "pkey")
NUMBER = re.compile(r"0x[0-9a-f]+|\d+", re.I)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL " + message)
    return condition


def ibqos(*argv, stdin=None):
    return subprocess.run([args.ibqos, *argv], capture_output=True, text=True, input=stdin, timeout=300)


def numbers(text, keyword, limit):
    out = set()
    for line in text.lower().split("\n"):
        code = line.split("#", 1)[0]
        if keyword in code:
            for token in NUMBER.findall(code):
                v = int(token, 16) if token.startswith("0x") else int(token)
                out.update(x for x in (v - 1, v, v + 1) if 0 <= x <= limit)
    return sorted(out)


def requests_for(rng, texts, guids, count):
    sids = sorted(set().union(*(numbers(t, "service-id", (1 << 64) - 1) for t in texts))) or [1]
    classes = sorted(set().union(*(numbers(t, "qos-class", 4095) for t in texts))) or [0]
    pkeys = sorted(set().union(*(numbers(t, "pkey", 0xffff) for t in texts)) | {0x7fff, 0xffff, 1, 0x8001, 2})
    out = []
    for _ in range(count):
        out.append((rng.choice(guids), rng.choice(guids),
                    rng.choice(sids) if rng.random() < 0.5 else None,
                    rng.choice(classes) if rng.random() < 0.4 else None,
                    rng.choice(pkeys) if rng.random() < 0.4 else None,
                    rng.randrange(16) if rng.random() < 0.15 else None))
    return out


def batch(policy, requests, fabric_args=FABRIC_ARGS):
    text = "".join(" ".join("-" if v is None else (v if isinstance(v, str) else hex(v)) for v in r) + "\n"
                   for r in requests)
    p = ibqos("query", policy, *fabric_args, "--batch", "-", stdin=text)
    return [json.loads(line) for line in p.stdout.splitlines()]


def changed(a, b):
    if a["status"] == "rejected" and b["status"] == "rejected":
        return False
    return any(a[f] != b[f] for f in FIELDS)


def in_values(value, ranges, absent):
    if absent:
        return value is None
    if ranges is None:
        return True
    return value is not None and any(lo <= value <= hi for lo, hi in ranges)


def holds(region, r):
    src, dst, sid, qos, pkey, _ = r
    absent = region.get("absent", [])
    loopback = region.get("loopback")
    if (loopback == "only" and src != dst) or (loopback == "excluded" and src == dst):
        return False
    return (int(src, 16) in region["source_set"] and int(dst, 16) in region["destination_set"]
            and in_values(sid, region["service_ids"], "service_ids" in absent)
            and in_values(qos, region["qos_classes"], "qos_classes" in absent)
            and in_values(pkey, region["pkeys"], "pkeys" in absent))


def compare(name, old_path, new_path, old_text, new_text, rng, guids, new_partitions=None):
    """new_partitions: NEW's partitions.conf (--new-partitions), OLD keeping qos-lab's."""
    new_args = FABRIC_ARGS if new_partitions is None else \
        ["--topology", TOPOLOGY, "--partitions", new_partitions, "--sm", SM]
    side = [] if new_partitions is None else ["--new-partitions", new_partitions]
    d = ibqos("diff", old_path, new_path, *FABRIC_ARGS, *side, "--json")
    if not check(d.returncode in (0, 1), f"{name}: ibqos diff exit {d.returncode}: {d.stderr[-300:]}"):
        return None
    out = json.loads(d.stdout)
    for g in out["regions"]:
        g["source_set"] = {int(x, 16) for x in g["sources"]}
        g["destination_set"] = {int(x, 16) for x in g["destinations"]}
    check(out["equivalent"] == (d.returncode == 0), f"{name}: exit status and 'equivalent' disagree")
    check(out["equivalent"] == (not out["regions"] and not out["ports"]), f"{name}: 'equivalent' and the lists disagree")
    requests = requests_for(rng, [old_text, new_text], guids, args.requests)
    old, new = batch(old_path, requests), batch(new_path, requests, new_args)
    for r, a, b in zip(requests, old, new):
        regions = [g for g in out["regions"] if holds(g, r)]
        check(len(regions) <= 1, f"{name}: {r} lies in {len(regions)} regions")
        if changed(a, b):
            check(regions, f"{name}: {r} changes ({a} -> {b}) but lies in no region")
            # The region's answers are those of a request that asks for no SL.
            g = regions[0] if regions else None
            if g and r[5] is None:
                check(all(g["old"][f] == a[f] and g["new"][f] == b[f] for f in ("status", "sl", "mtu_limit"))
                      and (g["new"]["pkey"] is None or g["new"]["pkey"] == b["pkey"]),
                      f"{name}: {r} lies in a region whose answers are not its own")
        elif not (a["status"] == "rejected" and b["status"] == "rejected"):
            check(not regions, f"{name}: {r} keeps its answer ({a}) but lies in a region")
    return out


def edit_partitions(rng, text):
    """qos-lab's partitions with one membership added, dropped or made full."""
    edits = [("0x100010, 0x100007 ;", "0x100010, 0x100007, 0x100005 ;"),  # node-02 joins lab
             ("ALL_SWITCHES, 0x10000e=limited", "ALL_SWITCHES"),  # storage-02 full in compute
             ("0x100003=full, 0x10000c=full", "0x100003=full"),   # node-04 leaves lab
             ("0x10000a=full", "0x10000a")]                       # storage-01 P2 limited in storage
    old, new = rng.choice(edits)
    assert old in text, old
    return text.replace(old, new)


def main():
    topology = open(TOPOLOGY).read()
    profile = policygen.profile_from_files(topology, open(PARTITIONS).read(), int(SM, 16), "qos-lab")
    guids = sorted({"0x%x" % p["guid"] for p in profile.ports})
    rng = random.Random(7)
    cases = partition_cases = partition_changes = 0
    with tempfile.TemporaryDirectory(prefix="ibqos-diff-") as scratch:
        seed = 5000
        while cases < args.pairs and seed < 6000:
            seed += 1
            g = policygen.generate(seed, profile, invalid=False)
            old_path = os.path.join(scratch, f"old-{seed}.conf")
            with open(old_path, "w") as f:
                f.write(g.text)
            if ibqos("check", old_path, *FABRIC_ARGS).returncode != 0:
                continue
            cases += 1
            # The same policy with comments and blank lines: no change, exit 0.
            noisy = "# a comment\n\n" + g.text.replace("\n", "\n\n", 3) + "\n# the end\n"
            noisy_path = os.path.join(scratch, f"noisy-{seed}.conf")
            with open(noisy_path, "w") as f:
                f.write(noisy)
            d = ibqos("diff", old_path, noisy_path, *FABRIC_ARGS)
            check(d.returncode == 0, f"seed {seed}: comments and blank lines are a change: {d.stdout[:400]}")
            # Without a topology (a witness fabric from the policies' selectors) too.
            d = ibqos("diff", old_path, noisy_path, "--json")
            check(d.returncode == 0 and json.loads(d.stdout)["equivalent"],
                  f"seed {seed}: without a topology, comments and blank lines are a change: {d.stderr[-300:]}")
            # One level's SL moved.
            levels = list(re.finditer(r"(?im)^(\s*sl\s*:\s*)(\d+)", g.text))
            if levels:
                m = rng.choice(levels)
                sl = (int(m.group(2)) + 1) % 16
                moved = g.text[:m.start(2)] + str(sl) + g.text[m.end(2):]
                moved_path = os.path.join(scratch, f"moved-{seed}.conf")
                with open(moved_path, "w") as f:
                    f.write(moved)
                if ibqos("check", moved_path, *FABRIC_ARGS).returncode == 0:
                    compare(f"seed {seed} sl moved", old_path, moved_path, g.text, moved, rng, guids)
            # An unrelated policy.
            other = policygen.generate(seed + 10000, profile, invalid=False)
            other_path = os.path.join(scratch, f"other-{seed}.conf")
            with open(other_path, "w") as f:
                f.write(other.text)
            d = ibqos("diff", old_path, other_path, "--json")
            check(d.returncode in (0, 1) and json.loads(d.stdout or "{}").get("equivalent") == (d.returncode == 0),
                  f"seed {seed}: diff without a topology: exit {d.returncode}: {d.stderr[-300:]}")
            if ibqos("check", other_path, *FABRIC_ARGS).returncode == 0:
                compare(f"seed {seed} vs {seed + 10000}", old_path, other_path, g.text, other.text, rng, guids)
            # The same policy with partitions.conf edited (--new-partitions): the answers that
            # change are those of the ports whose PKey tables change.
            edited = os.path.join(scratch, f"partitions-{seed}.conf")
            with open(edited, "w") as f:
                f.write(edit_partitions(rng, open(PARTITIONS).read()))
            if ibqos("check", old_path, "--topology", TOPOLOGY, "--partitions", edited).returncode == 0:
                partition_cases += 1
                out = compare(f"seed {seed} partitions edited", old_path, old_path, g.text, g.text, rng,
                              guids, new_partitions=edited)
                partition_changes += bool(out and out["regions"])
    # Tables: the ports listed are exactly those whose compiled tables differ.
    policies = os.path.join(args.source_root, "samples", "policies")
    old_path, new_path = (os.path.join(policies, n) for n in ("qos-lab-handwritten.conf", "qos-lab-setup.conf"))
    d = json.loads(ibqos("diff", old_path, new_path, *FABRIC_ARGS, "--json").stdout)

    def tables(path):
        out = json.loads(ibqos("compile", path, *FABRIC_ARGS, "--emit", "json").stdout)
        return {(p["guid"], p["port"]): p for p in out["ports"]}

    before, after = tables(old_path), tables(new_path)
    differ = {k for k in before if before[k] != after.get(k)}
    listed = {(p["guid"], p["port"]) for p in d["ports"]}
    check(differ and listed == differ, f"tables: diff lists {sorted(listed)}, compile differs on {sorted(differ)}")
    for p in d["ports"]:
        k = (p["guid"], p["port"])
        check(p["old"] == before[k] and p["new"] == after[k], f"tables: {k}: old/new are not compile's objects")
        check(p["sl2vl"] == (before[k]["sl2vl"] != after[k]["sl2vl"]), f"tables: {k}: sl2vl flag wrong")
    # Only bandwidth: changes. Without a topology the scopes that change are listed (exit 1);
    # with one, the ports whose tables change.
    sample = os.path.join(policies, "storage-mpi-ai.conf")
    text = open(sample).read()
    check("bandwidth: 1:20%, 2:40%, 3:40%" in text, "storage-mpi-ai.conf: the bandwidth line moved")
    with tempfile.TemporaryDirectory(prefix="ibqos-diff-") as scratch:
        changed_bw = os.path.join(scratch, "bandwidth.conf")
        with open(changed_bw, "w") as f:
            f.write(text.replace("bandwidth: 1:20%, 2:40%, 3:40%", "bandwidth: 1:30%, 2:30%, 3:40%"))
        p = ibqos("diff", sample, changed_bw, "--json")
        out = json.loads(p.stdout or "{}")
        check(p.returncode == 1 and not out.get("equivalent", True) and not out["regions"]
              and out["scopes"] and all("bandwidth" in c["changes"] for c in out["scopes"]),
              f"bandwidth only, no topology: exit {p.returncode}, {p.stdout[:300]}")
        p = ibqos("diff", sample, changed_bw)
        check(p.returncode == 1 and "bandwidth" in p.stdout, f"bandwidth only, text: {p.stdout[:300]}")
        p = ibqos("diff", sample, changed_bw, "--json", "--topology", os.path.join(FABRICS, "two-switch.ibnetdiscover"))
        out = json.loads(p.stdout or "{}")
        check(p.returncode == 1 and out.get("ports"), f"bandwidth only, two-switch: exit {p.returncode}")
        # An earlier rule by qos-class decides part of a later rule's service-ids: requests with
        # qos-class 7 keep their SL, so the region says which qos-classes change ("absent" for
        # requests without one).
        def policy(sl):
            return ("qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\n"
                    " qos-level\n  name: kept\n  sl: 3\n end-qos-level\n"
                    f" qos-level\n  name: moved\n  sl: {sl}\n end-qos-level\nend-qos-levels\n"
                    "qos-match-rules\n qos-match-rule\n  qos-class: 7-9,11\n  qos-level-name: kept\n"
                    " end-qos-match-rule\n qos-match-rule\n  service-id: 0x10000-0x1ffff\n"
                    "  qos-level-name: moved\n end-qos-match-rule\nend-qos-match-rules\n")
        paths = []
        for sl in (1, 7):
            paths.append(os.path.join(scratch, f"earlier-{sl}.conf"))
            with open(paths[-1], "w") as f:
                f.write(policy(sl))
        for extra in ([], FABRIC_ARGS):
            p = ibqos("diff", *paths, "--json", *extra)
            out = json.loads(p.stdout or "{}")
            regions = out.get("regions", [])
            qos = [(g["qos_classes"], g.get("absent", [])) for g in regions]
            check(p.returncode == 1 and regions
                  and all(q is None and "qos_classes" in a or q is not None and [7, 9] not in q and [11, 11] not in q
                          for q, a in qos)
                  and all(g["service_ids"] == [[0x10000, 0x1ffff]] for g in regions),
                  f"earlier rule{' on qos-lab' if extra else ''}: regions {qos}")
        if failures == []:
            compare("earlier rule", *paths, policy(1), policy(7), rng, guids)

    # diff(1)'s convention: 2 for usage errors and for inputs with errors, reported as by check.
    with tempfile.TemporaryDirectory(prefix="ibqos-diff-") as scratch:
        bad = os.path.join(scratch, "bad.conf")
        with open(bad, "w") as f:
            f.write("qos-levels\n qos-level\n  name: x\n  sl: 99\n end-qos-level\nend-qos-levels\n")
        p = ibqos("diff", bad, old_path, *FABRIC_ARGS)
        check(p.returncode == 2 and "bad.conf:4:" in p.stderr, f"a policy with errors: exit {p.returncode}, {p.stderr[-200:]}")
        p = ibqos("diff", old_path)
        check(p.returncode == 2 and "NEW" in p.stderr, f"a missing NEW: exit {p.returncode}")
        p = ibqos("diff", old_path, old_path, "--new-partitions", PARTITIONS)
        check(p.returncode == 2 and "--new-partitions requires --topology" in p.stderr,
              f"--new-partitions without a topology: exit {p.returncode}, {p.stderr[-200:]}")
    check(cases >= args.pairs // 2, f"only {cases} usable generated policies")
    # Most partitions edits change some answer: the comparison saw them.
    check(partition_changes >= partition_cases // 2 > 0,
          f"partitions edited: {partition_changes} of {partition_cases} diffs found a change")
    print(f"{cases} policies ({partition_cases} with partitions edited, {partition_changes} of them "
          f"changing answers), {len(failures)} failures")
    return 1 if failures else 0


sys.exit(main())
