#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Benchmark (run on demand): OpenSM's own CPU time per PathRecord, with the plugin's responder
# answering (pathrecord=plugin) and with OpenSM's handler scanning the plain policy
# (pathrecord=opensm), at several policy sizes. Under ibsim the throughput is the simulator's, so
# the figure is OpenSM's CPU time (utime + stime from /proc, over the stream, minus what it spends
# idle for as long) divided by the requests answered; the same stream of GET requests comes from
# several client processes at once. Also the heavy sweep (SIGHUP to SUBNET UP) with and without
# the plugin at the largest size.
#
#   bench/responder_cost.py --build build [--rules 10,100,1000,10000] [--runs 5] [--json]
#                           [--svg docs/responder-cost.svg]
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fabric"))
import sa_requests  # noqa: E402
import simfabric  # noqa: E402

FABRICS = {
    # name: (net, partitions, SM host, SM port GUID, client hosts)
    "rack-row": ("rack-row.net", "rack-row.partitions.conf", "sm-main HCA-1", "0x100001",
                 ["gpu01 mlx5_0", "GPU02 HCA-1", "login,1 HCA-1", "mgmt HCA-1"]),
    "two-switch": ("two-switch.net", None, "Hca1", "0x100001", ["Hca1", "Hca2", "Hca3", "Hca4"]),
}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def make_policy(rules, ports, rng):
    """`rules` match rules over 20 port groups of the fabric's CA ports, each rule with its own
    ServiceID range and a QoS-class range: most requests are decided by the default level after
    OpenSM has scanned every rule."""
    cas = sorted(g for g, kind in ports.endpoints.values() if kind == "ca")
    groups = []
    for i in range(20):
        members = rng.sample(cas, max(1, len(cas) // 3))
        groups.append(f"    port-group\n        name: g{i}\n        port-guid: "
                      + ", ".join(f"{g:#x}" for g in sorted(members)) + "\n    end-port-group\n")
    body = []
    for r in range(rules):
        lo = 0x100000 + r * 16
        body.append(f"    qos-match-rule\n        source: g{r % 20}\n        destination: g{(r * 7 + 3) % 20}\n"
                    f"        service-id: {lo:#x}-{lo + 7:#x}\n        qos-class: {r % 64}-{r % 64 + 2}\n"
                    f"        qos-level-name: l{r % 4}\n    end-qos-match-rule\n")
    levels = "".join(f"    qos-level\n        name: l{i}\n        sl: {i + 1}\n    end-qos-level\n" for i in range(4))
    return ("port-groups\n" + "".join(groups) + "end-port-groups\n"
            "qos-levels\n    qos-level\n        name: default\n        sl: 0\n    end-qos-level\n" + levels +
            "end-qos-levels\nqos-match-rules\n" + "".join(body) + "end-qos-match-rules\n")


def stream(ports, rules, rng, count):
    """GET requests by LID between random CA ports; half carry a ServiceID (a tenth of them one a
    rule names), a third a QoS class."""
    cas = [lid for lid, (_, kind) in ports.endpoints.items() if kind == "ca"]
    requests = []
    for _ in range(count):
        f = {"slid": rng.choice(cas), "dlid": rng.choice(cas)}
        mask = sa_requests.SLID | sa_requests.DLID
        if rng.random() < 0.5:
            f["service_id"] = (0x100000 + rng.randrange(rules) * 16 if rng.random() < 0.1 else
                               0x900000 + rng.randrange(1 << 20))
            mask |= sa_requests.SERVICE_ID
        if rng.random() < 0.33:
            f["qos_class"] = rng.randrange(64)
            mask |= sa_requests.QOS_CLASS
        requests.append(("get", mask, sa_requests.encode(**f)))
    return "".join(sa_requests.request_line(r) + "\n" for r in requests)


def measure_stream(fabric, osm, probe, clients, text, count):
    """OpenSM's CPU seconds per request for one stream from every client at once."""
    pid = osm.process.pid
    idle_start, idle_cpu = time.monotonic(), cpu_seconds(pid)
    time.sleep(1.0)
    idle_rate = (cpu_seconds(pid) - idle_cpu) / (time.monotonic() - idle_start)
    start, cpu = time.monotonic(), cpu_seconds(pid)
    procs = [subprocess.Popen([probe, "--timeout", "5000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=fabric.workdir, env=fabric.env(host, ours=True), text=True)
             for host in clients]
    outputs = [p.communicate(text, timeout=600) for p in procs]
    elapsed = time.monotonic() - start
    used = cpu_seconds(pid) - cpu - idle_rate * elapsed
    answered = sum(1 for out, _ in outputs for line in out.splitlines() if line != "timeout")
    if answered < 0.99 * count * len(clients):
        raise RuntimeError(f"only {answered} of {count * len(clients)} requests were answered: "
                           + " ".join(err for _, err in outputs)[:500])
    return used / answered, answered / elapsed


def plugin_options(policy, mode, partitions):
    options = {"event_plugin_name": "ibqos_osm", "event_plugin_options": f"policy={policy},pathrecord={mode}",
               "sweep_interval": "0"}
    if partitions:
        options["partition_config_file"] = partitions
    return options


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True, help="the Meson build folder")
    ap.add_argument("--fabric", choices=sorted(FABRICS), default="rack-row")
    ap.add_argument("--rules", default="10,100,1000,10000")
    ap.add_argument("--runs", type=int, default=5, help="streams per size and mode (default 5)")
    ap.add_argument("--requests", type=int, default=4000, help="requests per client and stream")
    ap.add_argument("--sweeps", type=int, default=5, help="heavy sweeps timed per configuration")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--svg", help="also draw the CPU per PathRecord against the policy size")
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed")
        return 77
    build = os.path.abspath(args.build)
    probe = os.path.join(build, "tests", "ibqos-sa-probe")
    net, partitions, host, guid, clients = FABRICS[args.fabric]
    net = os.path.join(ROOT, "samples", "fabrics", net)
    partitions = partitions and os.path.join(ROOT, "samples", "fabrics", partitions)
    sizes = [int(n) for n in args.rules.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="ibqos-responder-cost-") as work, simfabric.SimFabric(net) as fabric:
        osm = fabric.start_opensm({}, guid, host, name="opensm-discovery")
        ports = sa_requests.Ports(fabric.tool(["ibnetdiscover"], host).stdout)
        osm.stop()
        for rules in sizes:
            rng = random.Random(rules)
            policy = os.path.join(work, f"policy-{rules}.conf")
            with open(policy, "w") as f:
                f.write(make_policy(rules, ports, rng))
            text = stream(ports, rules, rng, args.requests)
            params = {"fabric": args.fabric, "rules": rules, "clients": len(clients),
                      "requests": args.requests * len(clients)}
            measured = {"plugin": [], "opensm": []}
            # The two modes alternate, so that machine noise falls on both alike.
            for run in range(args.runs):
                for mode in ("plugin", "opensm"):
                    osm = fabric.start_opensm(plugin_options(policy, mode, partitions), guid, host,
                                              name=f"opensm-{rules}-{mode}-{run}", plugin_dir=os.path.join(build, "osm-plugin"),
                                              timeout=300)
                    osm.wait_for("IBQOS-0100", 1, 300)
                    per_request, rate = measure_stream(fabric, osm, probe, clients, text, args.requests)
                    measured[mode].append((per_request * 1e6, rate))
                    osm.stop()
            for mode, label in (("plugin", "responder"), ("opensm", "opensm_scan")):
                cpu = [c for c, _ in measured[mode]]
                results.append({"name": f"cpu_per_pathrecord_{label}", "value": round(statistics.median(cpu), 2),
                                "unit": "us", "min": round(min(cpu), 2), "max": round(max(cpu), 2),
                                "runs": len(cpu), **params})
                results.append({"name": f"pathrecords_per_s_{label}",
                                "value": round(statistics.median(r for _, r in measured[mode])), "unit": "1/s",
                                **params})
        # The heavy sweep at the largest size: the plugin (its compile, and OpenSM's re-parse of the
        # plain policy) against a stock OpenSM reading the same plain policy.
        largest = sizes[-1]
        policy = os.path.join(work, f"policy-{largest}.conf")
        plain = os.path.join(work, "plain")
        for label, options, plugin in (
                ("plugin", plugin_options(policy, "plugin", partitions), os.path.join(build, "osm-plugin")),
                ("without_plugin", {"qos": "TRUE", "qos_policy_file": os.path.join(plain, "qos-policy.conf"),
                                    "sweep_interval": "0", **({"partition_config_file": partitions} if partitions else {})},
                 None)):
            if label == "without_plugin":
                os.makedirs(plain, exist_ok=True)
                with open(os.path.join(plain, "qos-policy.conf"), "w") as f:
                    f.write(open(os.path.join(fabric.workdir, f"opensm-{largest}-plugin-0", "cache",
                                              "ibqos-policy.conf")).read())
            osm = fabric.start_opensm(options, guid, host, name=f"opensm-sweeps-{label}", plugin_dir=plugin,
                                      timeout=300)
            times = [osm.heavy_sweep(300) * 1000 for _ in range(args.sweeps)]
            osm.stop()
            results.append({"name": f"heavy_sweep_{label}", "value": round(statistics.median(times), 1),
                            "unit": "ms", "min": round(min(times), 1), "max": round(max(times), 1),
                            "fabric": args.fabric, "rules": largest})
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            spread = f"  ({r['min']}-{r['max']})" if "min" in r else ""
            print(f"{r['name']:<32} {r['value']:>10} {r['unit']:<4} rules={r['rules']}{spread}")
    if args.svg:
        lines = [json.dumps(dict(r, name=r["name"].replace("cpu_per_pathrecord_", "")))
                 for r in results if r["name"].startswith("cpu_per_pathrecord_")]
        subprocess.run([sys.executable, os.path.join(HERE, "plot_matcher.py"), "-o", args.svg,
                        "--title", f"OpenSM's CPU time per PathRecord ({args.fabric}, ibsim)",
                        "--series", "responder=ibqos responder", "--series", "opensm_scan=OpenSM's handler",
                        "--y-label", "OpenSM CPU time per PathRecord (µs)", "--unit", "µs"],
                       input="\n".join(lines), text=True, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
