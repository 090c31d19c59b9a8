#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Benchmark (run on demand): OpenSM's own CPU time per PathRecord, with the plugin's responder
# answering (pathrecord=plugin) and with OpenSM's handler scanning the plain policy
# (pathrecord=opensm), at several policy sizes. Under ibsim the throughput is the simulator's, so
# the figure is OpenSM's CPU time (utime + stime from /proc, over the stream, minus what it spends
# idle for as long) divided by the requests answered; the same stream of GET requests comes from
# several client processes at once, each stream on a fresh simulator. Also the heavy sweep (SIGHUP
# to SUBNET UP) with the plugin and without it (a stock OpenSM given the plugin's plain policy).
#
#   bench/responder_cost.py --build build [--rules 10,100,1000,10000] [--runs 5] [--json]
#                           [--sweep-rules 1000] [--svg docs/responder-cost.svg]
#   bench/responder_cost.py --build build --callgrind [--rules ...] [--runs 1] [--requests 2000]
import argparse
import json
import os
import random
import statistics
import shutil
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


def cpu_seconds(pid, task=None):
    path = f"/proc/{pid}/task/{task}/stat" if task else f"/proc/{pid}/stat"
    fields = open(path).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def dispatcher_threads(pid):
    """OpenSM's dispatcher threads, which run the SA's handlers: the first threads it starts
    (osm_opensm_init starts one per CPU before any other), so the lowest thread ids after the
    main thread's."""
    tasks = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    return tasks[1:1 + (os.cpu_count() or 1)]


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
    """For one stream from every client at once: OpenSM's CPU seconds per request, those of its
    dispatcher threads (the handlers' own work, without the transport's) and requests per
    second."""
    pid = osm.process.pid
    handlers = dispatcher_threads(pid)
    handler_cpu = lambda: sum(cpu_seconds(pid, t) for t in handlers)  # noqa: E731
    idle_start, idle_cpu = time.monotonic(), cpu_seconds(pid)
    time.sleep(1.0)
    idle_rate = (cpu_seconds(pid) - idle_cpu) / (time.monotonic() - idle_start)
    start, cpu, handled = time.monotonic(), cpu_seconds(pid), handler_cpu()
    procs = [subprocess.Popen([probe, "--timeout", "5000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=fabric.workdir, env=fabric.env(host, ours=True), text=True)
             for host in clients]
    outputs = [p.communicate(text, timeout=600) for p in procs]
    elapsed = time.monotonic() - start
    used = cpu_seconds(pid) - cpu - idle_rate * elapsed
    handled = handler_cpu() - handled
    answered = sum(1 for out, _ in outputs for line in out.splitlines() if line != "timeout")
    if answered < 0.99 * count * len(clients):
        raise RuntimeError(f"only {answered} of {count * len(clients)} requests were answered: "
                           + " ".join(err for _, err in outputs)[:500])
    return used / answered, handled / answered, answered / elapsed


def count_instructions(fabric, sm, probe, clients, text, count, options, mode, build, work):
    """Instructions the PathRecord handler executes per request, OpenSM run under callgrind with
    counting switched on only inside the handler (the responder's, or OpenSM's own)."""
    handler = "ibqos::osm::PathResponder::onPathRecord*" if mode == "plugin" else "osm_pr_rcv_process"
    out = os.path.join(work, f"callgrind-{mode}.out")
    osm = fabric.start_opensm(options, sm[1], sm[0], name=f"opensm-{mode}",
                              plugin_dir=os.path.join(build, "osm-plugin"), timeout=600,
                              wrapper=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                       f"--toggle-collect={handler}", "--dump-instr=no"])
    osm.wait_for("IBQOS-0100", 1, 600)
    client = clients[0]
    p = subprocess.run([probe, "--timeout", "20000"], input=text, capture_output=True, text=True,
                       cwd=fabric.workdir, env=fabric.env(client, ours=True), timeout=1800)
    answered = sum(1 for line in p.stdout.splitlines() if line != "timeout")
    osm.stop(timeout=120)
    if answered < 0.99 * count:
        raise RuntimeError(f"only {answered} of {count} requests were answered under callgrind")
    totals = [line for line in open(out) if line.startswith(("summary:", "totals:"))]
    return int(totals[-1].split()[1]) / answered


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
    ap.add_argument("--sweep-rules", type=int, default=1000, help="the policy size the sweeps are timed at")
    ap.add_argument("--callgrind", action="store_true",
                    help="instead: instructions per PathRecord in the handler alone (OpenSM under valgrind's "
                         "callgrind, counting only inside the PathRecord handler); exact, and unmoved by load")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--svg", help="also draw the CPU per PathRecord against the policy size")
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed")
        return 77
    if args.callgrind and not shutil.which("valgrind"):
        print("--callgrind needs valgrind (apt install valgrind)")
        return 77
    build = os.path.abspath(args.build)
    probe = os.path.join(build, "tests", "ibqos-sa-probe")
    net, partitions, host, guid, clients = FABRICS[args.fabric]
    net = os.path.join(ROOT, "samples", "fabrics", net)
    partitions = partitions and os.path.join(ROOT, "samples", "fabrics", partitions)
    sizes = [int(n) for n in args.rules.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="ibqos-responder-cost-") as work:

        def fresh_fabric():
            """A new simulator and its ports as a first OpenSM numbers them (the same each time):
            one simulator for many OpenSMs and clients slows its forwarding down, and OpenSM's
            CPU per request with it."""
            fabric = simfabric.SimFabric(net).__enter__()
            osm = fabric.start_opensm({}, guid, host, name="opensm-discovery")
            ports = sa_requests.Ports(fabric.tool(["ibnetdiscover"], host).stdout)
            osm.stop()
            return fabric, ports

        for rules in sizes:
            params = {"fabric": args.fabric, "rules": rules, "clients": len(clients),
                      "requests": args.requests * len(clients)}
            policy = os.path.join(work, f"policy-{rules}.conf")
            measured = {"plugin": [], "opensm": []}
            # The two modes alternate, so that machine noise falls on both alike.
            for run in range(args.runs):
                for mode in ("plugin", "opensm"):
                    fabric, ports = fresh_fabric()
                    try:
                        rng = random.Random(rules)
                        with open(policy, "w") as f:
                            f.write(make_policy(rules, ports, rng))
                        text = stream(ports, rules, rng, args.requests)
                        if args.callgrind:
                            measured[mode].append(count_instructions(fabric, (host, guid), probe, clients, text, args.requests,
                                                                     plugin_options(policy, mode, partitions),
                                                                     mode, build, work))
                            continue
                        osm = fabric.start_opensm(plugin_options(policy, mode, partitions), guid, host,
                                                  name=f"opensm-{mode}", plugin_dir=os.path.join(build, "osm-plugin"),
                                                  timeout=300)
                        osm.wait_for("IBQOS-0100", 1, 300)
                        measured[mode].append(measure_stream(fabric, osm, probe, clients, text, args.requests))
                    finally:
                        fabric.close()
            for mode, label in (("plugin", "responder"), ("opensm", "opensm_scan")):
                if args.callgrind:  # one client's stream
                    results.append({"name": f"handler_instructions_per_pathrecord_{label}",
                                    "value": round(statistics.median(measured[mode])), "unit": "instructions",
                                    "runs": len(measured[mode]), **dict(params, clients=1, requests=args.requests)})
                    continue
                for name, column in (("cpu_per_pathrecord", 0), ("handler_cpu_per_pathrecord", 1)):
                    cpu = [m[column] * 1e6 for m in measured[mode]]
                    results.append({"name": f"{name}_{label}", "value": round(statistics.median(cpu), 2),
                                    "unit": "us", "min": round(min(cpu), 2), "max": round(max(cpu), 2),
                                    "runs": len(cpu), **params})
                results.append({"name": f"pathrecords_per_s_{label}",
                                "value": round(statistics.median(m[2] for m in measured[mode])), "unit": "1/s",
                                **params})
        if not args.callgrind:  # the sweeps are timed, not counted
            # The heavy sweep: the plugin (its compilation, and OpenSM's re-parse of the plain policy
            # it writes) against a stock OpenSM given that plain policy.
            rules = args.sweep_rules
            policy = os.path.join(work, f"sweep-policy-{rules}.conf")
            plain = os.path.join(work, "plain-policy.conf")
            fabric, ports = fresh_fabric()
            try:
                with open(policy, "w") as f:
                    f.write(make_policy(rules, ports, random.Random(rules)))
                for label, options, plugin in (
                        ("plugin", plugin_options(policy, "plugin", partitions), os.path.join(build, "osm-plugin")),
                        ("without_plugin", {"qos": "TRUE", "qos_policy_file": plain, "sweep_interval": "0",
                                            **({"partition_config_file": partitions} if partitions else {})}, None)):
                    osm = fabric.start_opensm(options, guid, host, name=f"opensm-sweeps-{label}", plugin_dir=plugin,
                                              timeout=300)
                    times = [osm.heavy_sweep(300) * 1000 for _ in range(args.sweeps)]
                    osm.stop()
                    if plugin:  # the plain policy the plugin wrote, for the stock OpenSM
                        with open(plain, "w") as f:
                            f.write(open(os.path.join(fabric.workdir, "opensm-sweeps-plugin", "cache",
                                                      "ibqos-policy.conf")).read())
                    results.append({"name": f"heavy_sweep_{label}", "value": round(statistics.median(times), 1),
                                    "unit": "ms", "min": round(min(times), 1), "max": round(max(times), 1),
                                    "fabric": args.fabric, "rules": rules})
            finally:
                fabric.close()
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            spread = f"  ({r['min']}-{r['max']})" if "min" in r else ""
            print(f"{r['name']:<32} {r['value']:>10} {r['unit']:<4} rules={r['rules']}{spread}")
    if args.svg and args.callgrind:
        lines = [json.dumps(r) for r in results if r["name"].startswith("handler_instructions")]
        subprocess.run([sys.executable, os.path.join(HERE, "plot_matcher.py"), "-o", args.svg,
                        "--title", f"Instructions per PathRecord in the SA's handler ({args.fabric})",
                        "--series", "handler_instructions_per_pathrecord_opensm_scan=OpenSM's handler",
                        "--series", "handler_instructions_per_pathrecord_responder=ibqos responder",
                        "--y-label", "instructions per PathRecord (callgrind)", "--unit", "instructions"],
                       input="\n".join(lines), text=True, check=True)
    elif args.svg:
        lines = [json.dumps(r) for r in results if "cpu_per_pathrecord" in r["name"]]
        subprocess.run([sys.executable, os.path.join(HERE, "plot_matcher.py"), "-o", args.svg,
                        "--title", f"OpenSM's CPU time per PathRecord ({args.fabric}, ibsim)",
                        "--series", "cpu_per_pathrecord_opensm_scan=OpenSM's handler, whole process",
                        "--series", "cpu_per_pathrecord_responder=ibqos responder, whole process",
                        "--series", "handler_cpu_per_pathrecord_opensm_scan=OpenSM's handler, SA threads",
                        "--series", "handler_cpu_per_pathrecord_responder=ibqos responder, SA threads",
                        "--y-label", "OpenSM CPU time per PathRecord (µs)", "--unit", "µs"],
                       input="\n".join(lines), text=True, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
