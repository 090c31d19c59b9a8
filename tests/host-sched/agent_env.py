#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos-agent env` on the sample fabrics and policies, against `ibqos query`.

For each sample policy of a sample fabric and several kinds of request (a QoS class, a ServiceID,
a PKey, or none), every ordered pair of CA ports of the fabric is asked with `ibqos query --batch`
(the test's oracle: the product never tries ports): the SLs answered, and the port pairs each
gets, must be what `ibqos-agent env --topology --json` says, and env must print the stacks'
settings (exit 0) exactly when there is one SL, and nothing on stdout (exit 1) when there are
several. Without --topology, env decides on every fabric the policy could meet: one SL there
must be the fabric's one SL, and different SLs on the fabric must be different SLs everywhere.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--agent", required=True)
ap.add_argument("--ibqos", required=True)
ap.add_argument("--samples", required=True)
args = ap.parse_args()
failures = []

SETTINGS = ["NCCL_IB_SL", "UCX_IB_SL", "OMPI_MCA_btl_openib_ib_service_level", "MV2_DEFAULT_SERVICE_LEVEL",
            "NVSHMEM_IB_SL"]


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def run(cmd, stdin=None):
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, timeout=300)


def sample(*parts):
    return os.path.join(args.samples, *parts)


# (fabric, partitions or None, SM port or None, policies)
FABRICS = [
    ("qos-lab.ibnetdiscover", "qos-lab.partitions.conf", "sm-01 HCA-1/P1",
     ["qos-lab-guid-ranges.conf", "qos-lab-names-and-types.conf", "qos-lab-partitions.conf", "qos-lab-fields.conf",
      "qos-lab-ulps.conf", "qos-lab-mixed.conf", "qos-lab-handwritten.conf", "qos-lab-storage-ulps.conf"]),
    ("three-switch.net", None, "sm HCA-1/P1", ["storage-mpi-ai.conf", "host-sched.conf"]),
    ("rack-row.ibnetdiscover", "rack-row.partitions.conf", "sm-main HCA-1/P1",
     ["opensm-full-example.conf", "qos-lab-guid-ranges.conf", "qos-lab-names-and-types.conf",
      "qos-lab-partitions.conf", "storage-mpi-ai.conf"]),
]
# (qos-class, service-id, pkey): None for a field the requests do not carry.
KINDS = [(None, None, None), ("0", None, None), ("3", None, None), ("5", "0x20001", None), ("7", None, None),
         (None, "0x10005", None), ("0", "0x1064e51", None), (None, "0x10603db", None), (None, "0x500", "0x7fff"),
         ("2", None, "0x8001")]


def fabric_args(fabric, partitions, sm):
    out = ["--topology", sample("fabrics", fabric), "--sm", sm]
    if partitions:
        out += ["--partitions", sample("fabrics", partitions)]
    return out


def kind_args(kind):
    out = []
    for flag, value in zip(("--qos-class", "--service-id", "--pkey"), kind):
        if value is not None:
            out += [flag, value]
    return out


def ca_ports(policy, fargs):
    p = run([args.ibqos, "compile", policy, *fargs, "--emit", "json"])
    if p.returncode != 0:
        raise SystemExit(f"ibqos compile {policy}: {p.stderr}")
    return sorted({port["guid"] for port in json.loads(p.stdout)["ports"] if port["node_type"] == "CA"})


def oracle(policy, fargs, ports, kind):
    """The SL of every CA port pair, as ibqos query answers: {sl: pairs}."""
    fields = [v if v is not None else "-" for v in kind]
    lines = "".join(f"{s} {d} {fields[1]} {fields[0]} {fields[2]} -\n" for s in ports for d in ports)
    p = run([args.ibqos, "query", policy, *fargs, "--batch", "-"], stdin=lines)
    if p.returncode != 0:
        raise SystemExit(f"ibqos query {policy}: {p.stderr}")
    sls = collections.Counter()
    for line in p.stdout.splitlines():
        answer = json.loads(line)
        if answer["status"] == "ok":
            sls[answer["sl"]] += 1
    return dict(sls)


def env(policy, extra):
    return run([args.agent, "env", policy, *extra])


for fabric, partitions, sm, policies in FABRICS:
    fargs = fabric_args(fabric, partitions, sm)
    for name in policies:
        policy = sample("policies", name)
        ports = ca_ports(policy, fargs)
        for kind in KINDS:
            what = f"{name} on {fabric}, {' '.join(kind_args(kind)) or 'no fields'}"
            expected = oracle(policy, fargs, ports, kind)
            p = env(policy, fargs + kind_args(kind) + ["--json"])
            got = json.loads(p.stdout) if p.stdout.strip() else {}
            if len(expected) == 1:
                sl = next(iter(expected))
                check(p.returncode == 0 and got.get("status") == "ok" and got.get("sl") == sl
                      and got.get("settings") == {s: str(sl) for s in SETTINGS},
                      f"{what}: every CA pair gets SL {sl}; env --json says so with the settings "
                      f"(exit {p.returncode}, {got.get('status')} {got.get('sl')})")
                text = env(policy, fargs + kind_args(kind))
                check(text.returncode == 0 and text.stdout == "".join(f"{s}={sl}\n" for s in SETTINGS),
                      f"  and prints the assignments, one a line ({text.stdout.splitlines()[:2]})")
            elif not expected:
                check(p.returncode == 1 and got.get("status") == "no-path", f"{what}: no pair answered: no-path, exit 1")
            else:
                pairs = {s["sl"]: s["port_pairs"] for s in got.get("sls", [])}
                check(p.returncode == 1 and got.get("status") == "different" and pairs == expected,
                      f"{what}: pairs per SL {expected}, env says {pairs} (exit {p.returncode})")
                text = env(policy, fargs + kind_args(kind))
                check(text.returncode == 1 and text.stdout == ""
                      and all(f"\nSL {sl} (level " in text.stderr for sl in expected),
                      f"  text: nothing on stdout, every SL on stderr, exit {text.returncode}")
            # Every fabric: one SL everywhere is this fabric's one SL; different SLs here are
            # different SLs everywhere.
            everywhere = env(policy, kind_args(kind) + ["--json"])
            e = json.loads(everywhere.stdout) if everywhere.stdout.strip() else {}
            if e.get("status") == "ok":
                check(list(expected) in ([e["sl"]], []),
                      f"  without a topology: one SL {e['sl']} everywhere, and on the fabric {list(expected)}")
            elif len(expected) > 1:
                check(everywhere.returncode == 1 and e.get("status") == "different",
                      f"  without a topology: different SLs too ({e.get('status')}, exit {everywhere.returncode})")

# Grouped and cut for people: at most four regions of port pairs an SL in text, the rest
# counted, every one of them in --json.
guid_ranges = sample("policies", "qos-lab-guid-ranges.conf")
rack = fabric_args("rack-row.ibnetdiscover", "rack-row.partitions.conf", "sm-main HCA-1/P1")
text, js = env(guid_ranges, rack + ["--qos-class", "3"]), env(guid_ranges, rack + ["--qos-class", "3", "--json"])
blocks = text.stderr.split("\nSL ")[1:]
regions = {s["sl"]: len(s["regions"]) for s in json.loads(js.stdout).get("sls", [])}
shown_ok = len(blocks) == len(regions) > 1
for block in blocks:
    sl = int(block.split(" ", 1)[0])
    shown = block.count("\n  from ")
    more = f"... and {regions.get(sl, 0) - 4} more regions" in block
    shown_ok &= shown == min(regions.get(sl, 0), 4) and more == (regions.get(sl, 0) > 4)
check(shown_ok and any(n > 4 for n in regions.values()),
      f"rack-row, qos-lab-guid-ranges.conf: each SL shows at most 4 regions and counts the rest ({regions})")

# A larger fabric: 512 hosts under 16 leaves, a group of 16 hosts a rack named port by port, QoS
# class 3 to the even racks on its own SL. The text stays short (the ports, names and kinds of
# port cut to the first four and counted), and every pair is in one SL.
with tempfile.TemporaryDirectory(prefix="ibqos-agent-env-") as scratch:
    hosts, per_leaf, spines = 512, 32, 4
    leaves = hosts // per_leaf
    net = []
    for s_ in range(spines):
        net += [f'Switch\t{leaves} "spine{s_}"'] + [f'[{l + 1}]\t"leaf{l}"[{per_leaf + 1 + s_}]' for l in range(leaves)] + [""]
    for l in range(leaves):
        net += [f'Switch\t{per_leaf + spines} "leaf{l}"']
        net += [f'[{h + 1}]\t"host{l * per_leaf + h}"[1]' for h in range(per_leaf)]
        net += [f'[{per_leaf + 1 + s_}]\t"spine{s_}"[{l + 1}]' for s_ in range(spines)] + [""]
    for h in range(hosts):
        net += [f'Hca\t1 "host{h}"', f'[1]\t"leaf{h // per_leaf}"[{h % per_leaf + 1}]', ""]
    racks = hosts // 16
    groups = "".join(f"    port-group\n        name: rack{r}\n        port-name: " +
                     ", ".join(f"host{h}/P1" for h in range(r * 16, r * 16 + 16)) + "\n    end-port-group\n"
                     for r in range(racks))
    big_policy = ("port-groups\n" + groups + "end-port-groups\nqos-levels\n    qos-level\n        name: default\n"
                  "        sl: 0\n    end-qos-level\n    qos-level\n        name: fast\n        sl: 3\n"
                  "    end-qos-level\nend-qos-levels\nqos-match-rules\n    qos-match-rule\n        qos-class: 3\n"
                  "        destination: " + ", ".join(f"rack{r}" for r in range(0, racks, 2)) +
                  "\n        qos-level-name: fast\n    end-qos-match-rule\nend-qos-match-rules\n")
    net_path, policy_path = os.path.join(scratch, "fat.net"), os.path.join(scratch, "racks.conf")
    with open(net_path, "w") as f:
        f.write("\n".join(net))
    with open(policy_path, "w") as f:
        f.write(big_policy)
    for extra in (["--topology", net_path], []):
        p = env(policy_path, extra + ["--qos-class", "3"])
        lines = p.stderr.splitlines()
        check(p.returncode == 1 and p.stdout == "" and "\nSL 0 (level 'default')" in p.stderr
              and "\nSL 3 (level 'fast')" in p.stderr and max(map(len, lines)) < 400 and len(lines) < 20,
              f"512 hosts{' on the fabric' if extra else ', every fabric'}: two SLs in {len(lines)} short lines "
              f"(longest {max(map(len, lines))} characters)")
    js = json.loads(env(policy_path, ["--topology", net_path, "--qos-class", "3", "--json"]).stdout)
    pairs = {s_["sl"]: s_["port_pairs"] for s_ in js["sls"]}
    check(pairs == {0: hosts * hosts // 2, 3: hosts * hosts // 2},
          f"  every one of the {hosts * hosts} pairs is in one SL, half to the even racks ({pairs})")

# The readable forms without a topology.
p = env(sample("policies", "host-sched.conf"), ["--qos-class", "3"])
check(p.returncode == 0 and p.stdout.splitlines()[:2] == ["NCCL_IB_SL=3", "UCX_IB_SL=3"],
      f"host-sched.conf, QoS class 3, every fabric: NCCL_IB_SL=3 and UCX_IB_SL=3 first ({p.stdout.splitlines()[:2]})")
p = env(sample("policies", "storage-mpi-ai.conf"), ["--qos-class", "3"])
check(p.returncode == 1 and p.stdout == "" and "SL 3 (level 'mpi')" in p.stderr and "the default level" not in p.stderr
      and "decided by rule 0" in p.stderr,
      "storage-mpi-ai.conf, QoS class 3, every fabric: the SM's rule gives its port another SL: "
      "stderr names both SLs and the deciding rules, stdout is empty")
print(p.stderr)
# Usage and input errors.
p = env(sample("policies", "host-sched.conf"), ["--qos-class", "4096"])
check(p.returncode == 2 and p.stdout == "", f"a QoS class of 13 bits is a usage error (exit {p.returncode})")
p = env(sample("policies", "no-such.conf"), [])
check(p.returncode == 2, f"a policy that cannot be read: exit 2 ({p.returncode})")
p = run([args.agent, "env", "-", "--qos-class", "3"], stdin="qos-levels\n    qos-level\n        sl: 3\n"
        "    end-qos-level\nend-qos-levels\n")
check(p.returncode == 1 and p.stdout == "" and "missing" in p.stderr,
      f"a policy with errors: exit 1, the errors on stderr ({p.returncode})")
p = run([args.agent, "env", "-", "--qos-class", "3", "--json"], stdin="qos-levels\n    qos-level\n        sl: 3\n"
        "    end-qos-level\nend-qos-levels\n")
got = json.loads(p.stdout) if p.returncode == 1 and p.stdout.strip() else {}
check(got.get("status") == "error" and any(d["severity"] == "error" for d in got.get("diagnostics", [])),
      f"  with --json: status error and the diagnostics on stdout ({p.stdout.strip()[:80]})")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
