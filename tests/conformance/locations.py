#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every diagnostic of `ibqos check --json` carries a line and a column: over every golden policy,
every sample policy (alone and against its fabric) and generated invalid policies (one known
mutation each, which must also be reported on its own line). Needs no simulator."""
import argparse
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import policygen  # noqa: E402

FABRICS = {  # sample fabric -> (ibnetdiscover, partitions, SM port GUID)
    "qos-lab": ("qos-lab.ibnetdiscover", "qos-lab.partitions.conf", "0x100001"),
    "rack-row": ("rack-row.ibnetdiscover", "rack-row.partitions.conf", "0x100001"),
}


def check(ibqos, path, extra=()):
    p = subprocess.run([ibqos, "check", str(path), "--json", *extra], capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"ibqos check {path} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--count", type=int, default=300, help="generated invalid policies per fabric")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    work = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"ibqos-locations-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    unlocated, runs, mislocated = [], 0, []

    def look(path, diagnostics, label):
        nonlocal runs
        runs += 1
        for d in diagnostics:
            if d["line"] < 1 or d["column"] < 1:
                unlocated.append(f"{label}: {d['severity']} [{d['code']}] {d['message']}")
        return diagnostics

    inputs = sorted((ROOT / "tests" / "golden" / "check").glob("*.conf")) + sorted((ROOT / "samples" / "policies").glob("*.conf"))
    inputs += sorted((HERE / "regressions").glob("*.conf"))
    for path in inputs:
        look(path, check(args.ibqos, path), path.name)
    for name, (topology, partitions, sm) in FABRICS.items():
        fabric = ["--topology", str(ROOT / "samples" / "fabrics" / topology),
                  "--partitions", str(ROOT / "samples" / "fabrics" / partitions), "--sm", sm]
        for path in sorted((ROOT / "samples" / "policies").glob("*.conf")):
            look(path, check(args.ibqos, path, fabric), f"{path.name} on {name}")
        profile = policygen.profile_from_files((ROOT / "samples" / "fabrics" / topology).read_text(),
                                               (ROOT / "samples" / "fabrics" / partitions).read_text(),
                                               int(sm, 16), name)
        for seed in range(args.seed, args.seed + args.count):
            g = policygen.generate(seed, profile, invalid=True)
            path = work / f"{name}-{seed}.conf"
            path.write_text(g.text)
            diagnostics = look(path, check(args.ibqos, path, fabric), f"{name} seed {seed}")
            want = g.mutation["line"]
            if not any(d["severity"] == "error" and d["line"] == want for d in diagnostics):
                mislocated.append(f"{name} seed {seed}: {g.mutation['kind']} at line {want} ({g.mutation['detail']}); "
                                  f"errors at {sorted({d['line'] for d in diagnostics if d['severity'] == 'error'})}")
            path.unlink()
    work.rmdir()
    for u in unlocated:
        print("NO LOCATION " + u)
    for m in mislocated:
        print("NOT ON THE MUTATED LINE " + m)
    print(f"{runs} checks: {len(unlocated)} diagnostics without a line, {len(mislocated)} mutations not reported "
          f"on their line")
    return 1 if unlocated or mislocated else 0


if __name__ == "__main__":
    sys.exit(main())
