#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Benchmark (run on demand): the OpenSM plugin on a large ibsim fabric. Heavy sweep time (SIGHUP to
# SUBNET UP, median of N) and SA PathRecord throughput (queries from one process through the
# agent's SA client) with the plugin, against a stock OpenSM given the equivalent plain policy and
# options (`ibqos compile --emit opensm`).
#   bench/plugin_overhead.py --build build [--leaves 36] [--plugin-dir DIR] [--json]
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fabric"))
import simfabric  # noqa: E402


def fat_tree(leaves, hosts_per_leaf, spines):
    lines = []
    up = spines
    for s in range(spines):
        lines.append(f'Switch\t{leaves} "spine{s}"')
        for l in range(leaves):
            lines.append(f'[{l + 1}]\t"leaf{l}"[{hosts_per_leaf + 1 + s}]')
        lines.append("")
    for l in range(leaves):
        lines.append(f'Switch\t{hosts_per_leaf + up} "leaf{l}"')
        for h in range(hosts_per_leaf):
            lines.append(f'[{h + 1}]\t"host{l * hosts_per_leaf + h}"[1]')
        for s in range(spines):
            lines.append(f'[{hosts_per_leaf + 1 + s}]\t"spine{s}"[{l + 1}]')
        lines.append("")
    for h in range(leaves * hosts_per_leaf):
        lines.append(f'Hca\t1 "host{h}"')
        lines.append(f'[1]\t"leaf{h // hosts_per_leaf}"[{h % hosts_per_leaf + 1}]')
        lines.append("")
    return "\n".join(lines)


def policy(hosts):
    groups = "".join(f"    port-group\n        name: rack{r}\n        port-name: " +
                     ", ".join(f"host{h}/P1" for h in range(r * 18, min(hosts, r * 18 + 18))) +
                     "\n    end-port-group\n" for r in range((hosts + 17) // 18))
    rules = "".join(f"    qos-match-rule\n        source: rack{r}\n        destination: rack{(r + 1) % ((hosts + 17) // 18)}\n"
                    f"        service-id: {0x10000 + r * 16:#x}-{0x10000 + r * 16 + 15:#x}\n        qos-level-name: fast\n"
                    "    end-qos-match-rule\n" for r in range((hosts + 17) // 18))
    return ("port-groups\n" + groups + "end-port-groups\n"
            "qos-setup\n    vlarb-tables\n        vlarb-scope\n            group: rack0\n            vlarb-high: 0:64\n"
            "            bandwidth: 1:60%, 2:40%\n        end-vlarb-scope\n    end-vlarb-tables\nend-qos-setup\n"
            "qos-levels\n    qos-level\n        name: default\n        sl: 0\n    end-qos-level\n"
            "    qos-level\n        name: fast\n        sl: 1\n    end-qos-level\nend-qos-levels\n"
            "qos-match-rules\n" + rules + "end-qos-match-rules\n")


def sa_rate(fabric, host, build, policy, lids, n):
    """PathRecord queries per second from one process (ibqos-bench-resolve: the agent's SA
    client, one query at a time): the median of ten runs of n/10 queries, each run to one random
    destination with one random ServiceID."""
    rng = random.Random(7)
    bench = os.path.join(build, "bench", "ibqos-bench-resolve")
    rates = []
    for _ in range(10):
        p = fabric.tool([bench, "--policy", policy, "--dst", str(rng.choice(lids)), "--count", str(max(1, n // 10)),
                         "--service-id", hex(0x10000 + rng.randrange(1000)), "--json"], host, timeout=600)
        rates += [json.loads(l)["value"] for l in p.stdout.splitlines() if '"sa_queries_per_s"' in l]
    return statistics.median(rates)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the Meson build folder")
    ap.add_argument("--leaves", type=int, default=36)
    ap.add_argument("--hosts-per-leaf", type=int, default=18)
    ap.add_argument("--spines", type=int, default=18)
    ap.add_argument("--sweeps", type=int, default=10)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--plugin-dir", help="where libibqos_osm.so is (default: the build's osm-plugin/), "
                    "to measure another build of the plugin")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    ibqos = os.path.join(build, "cli", "ibqos")
    hosts = args.leaves * args.hosts_per_leaf
    results = []
    with tempfile.TemporaryDirectory(prefix="ibqos-overhead-") as work:
        net = os.path.join(work, "fabric.net")
        open(net, "w").write(fat_tree(args.leaves, args.hosts_per_leaf, args.spines))
        pol = os.path.join(work, "policy.conf")
        open(pol, "w").write(policy(hosts))
        plain = os.path.join(work, "plain")
        os.makedirs(plain)
        subprocess.run([ibqos, "compile", pol, "--topology", net, "--emit", "opensm", "-o", plain], check=True,
                       capture_output=True)
        stock_options = {}
        for line in open(os.path.join(plain, "opensm-qos.conf")):
            if line.strip() and not line.startswith("#"):
                key, value = line.split(None, 1)
                stock_options[key] = value.strip()
        stock_options["qos_policy_file"] = os.path.join(plain, "qos-policy.conf")
        nodes = args.leaves + args.spines + hosts
        params = {"nodes": nodes, "hosts": hosts, "switches": args.leaves + args.spines}
        configurations = [("stock", stock_options, None),
                          ("plugin", {"qos": "TRUE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + pol},
                           os.path.abspath(args.plugin_dir) if args.plugin_dir else os.path.join(build, "osm-plugin"))]
        # Alternate the two configurations so that machine noise falls on both alike.
        measured = {"stock": ([], []), "plugin": ([], [])}
        for label, options, plugin in configurations * args.rounds:
            with simfabric.SimFabric(net) as fabric:
                osm = fabric.start_opensm(options, "0x100001", "host0", plugin_dir=plugin, timeout=300)
                topo = fabric.tool(["ibnetdiscover"], "host0").stdout
                lids = [int(l.split("# lid ")[1].split()[0]) for l in topo.splitlines() if l.startswith("[1](")]
                measured[label][0].extend(osm.heavy_sweep(120) for _ in range(args.sweeps))
                measured[label][1].append(sa_rate(fabric, "host0", build, pol, lids, args.queries))
                if plugin:
                    work_ms = [float(l.split("ibqos ")[1].split(" ms")[0]) for l in osm.log().splitlines() if "IBQOS-0100" in l]
                    results.append({"name": "plugin_work_per_sweep", "value": round(statistics.median(work_ms), 2), "unit": "ms", **params})
        for label in ("stock", "plugin"):
            times, rates = measured[label]
            results.append({"name": f"heavy_sweep_{label}", "value": round(statistics.median(times) * 1000, 2), "unit": "ms", **params})
            results.append({"name": f"sa_pathrecords_{label}", "value": round(statistics.median(rates), 1), "unit": "queries/s", **params})
    stock = next(r["value"] for r in results if r["name"] == "heavy_sweep_stock")
    with_plugin = next(r["value"] for r in results if r["name"] == "heavy_sweep_plugin")
    results.append({"name": "heavy_sweep_overhead", "value": round((with_plugin / stock - 1) * 100, 1), "unit": "%", **params})
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['name']:<28} {r['value']:>12} {r['unit']:<10} nodes={r['nodes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
