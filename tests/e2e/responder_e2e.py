#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# End-to-end test of the plugin's PathRecord responder: a real OpenSM 3.3.23 on ibsim answers the
# same raw PathRecord requests (every shape: by LID and GID, GET and GetTable, with and without
# each optional field and selector, to CAs, routers and switches, partition-less pairs) twice,
# once with the responder (pathrecord=plugin) and once with OpenSM's own handler reading the
# plugin's plain policy (pathrecord=opensm); the answers must be equal byte for byte, policy after
# policy, with no policy in force, and with a routing engine (lash) that chooses the SLs. Then a
# SIGTERM in the middle of a PathRecord burst: OpenSM exits cleanly.
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import sa_requests  # noqa: E402
import simfabric  # noqa: E402

ROOT = PLUGIN_DIR = PROBE = None
failures = []

# A policy for the ring: levels on several SLs, chosen by QoS class and ServiceID; lash then
# decides each path's SL, and a request for another SL gets no path.
RING_POLICY = """port-groups
    port-group
        name: first-half
        port-name: "host-1a HCA-1/P1", "host-1b HCA-1/P1", "host-2a HCA-1/P1"
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: bulk
        sl: 1
        mtu-limit: 3
    end-qos-level
    qos-level
        name: latency
        sl: 2
        packet-life: 12
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 1-3
        qos-level-name: latency
    end-qos-match-rule
    qos-match-rule
        source: first-half
        service-id: 0x10000-0x1ffff
        qos-level-name: bulk
    end-qos-match-rule
end-qos-match-rules
"""

# fabric: (net file, partitions file, SM host, SM port GUID, extra opensm.conf options, policies:
# sample names, RING for the text above, None for no policy in force; a second client, whose
# partitions the requests' ends must share too)
RING = "ring"
# Policies stock OpenSM drops on their fabric: the plugin refuses them and the last good policy
# stays in force, for the responder and for OpenSM's handler alike.
REFUSED = {"opensm-ulps-all.conf"}
FABRICS = {
    "qos-lab": ("qos-lab.net", "qos-lab.partitions.conf", "sm-01 HCA-1", "0x100001", {},
                [None, "qos-lab-mixed.conf", "qos-lab-guid-ranges.conf", "qos-lab-names-and-types.conf",
                 "qos-lab-partitions.conf", "qos-lab-fields.conf", "qos-lab-ulps.conf", "qos-lab-handwritten.conf",
                 # Values OpenSM takes as it reads them: a packet life of 70 spills into the selector.
                 "tests/conformance/regressions/stricter-errors-keep-opensm-meaning.conf"],
                "node-04 HCA-1"),
    # Every port with two LIDs: a port pair has four paths, in OpenSM's order of preference.
    "qos-lab-lmc": ("qos-lab.net", "qos-lab.partitions.conf", "sm-01 HCA-1", "0x100001", {"lmc": "1"},
                    ["qos-lab-fields.conf"], "node-02 HCA-1"),
    "rack-row": ("rack-row.net", "rack-row.partitions.conf", "sm-main HCA-1", "0x100001", {},
                 ["opensm-full-example.conf", "storage-mpi-ai.conf", "opensm-ulps-all.conf",
                  "opensm-ulps-shortest.conf", "qos-lab-names-and-types.conf"], "gpu01 mlx5_1"),
    "ring-lash": ("ring-lash.net", "ring-lash.partitions.conf", "sm HCA-1", "0x100001",
                  {"routing_engine": "lash", "lash_start_vl": "1"}, [RING], "host-4b HCA-1"),
    # dfsssp spreads each path over its VLs at random (rand() per request): answers are compared
    # but for the SL, which must be one dfsssp gives, and requests name no SL.
    "ring-dfsssp": ("ring-lash.net", "ring-lash.partitions.conf", "sm HCA-1", "0x100001",
                    {"routing_engine": "dfsssp"}, [RING], "host-4b HCA-1"),
}
RANDOM_SL = {"ring-dfsssp"}


def check(condition, message):
    if not condition:
        failures.append(message)
        print("     FAIL " + message)
    return condition


def policy_text(name):
    if name == RING:
        return RING_POLICY
    if "/" in name:  # a path in the tree
        return open(os.path.join(ROOT, name)).read()
    return open(os.path.join(ROOT, "samples", "policies", name)).read()


def answers_of(fabric, mode, spec, work, requests_for):
    """Every policy's answers from OpenSM with the plugin in one mode: policy name -> lines (the
    first half of the requests from the SM's host, the rest from the other client)."""
    net, partitions, host, guid, extra, policies, client = spec
    policy = os.path.join(work, f"policy-{mode}.conf")
    if os.path.exists(policy):
        os.remove(policy)
    options = {"event_plugin_name": "ibqos_osm", "event_plugin_options": f"policy={policy},pathrecord={mode}"}
    if partitions:
        options["partition_config_file"] = os.path.join(ROOT, "samples", "fabrics", partitions)
    options.update(extra)
    osm = fabric.start_opensm(options, guid, host, name=f"opensm-{mode}", plugin_dir=PLUGIN_DIR)
    check(("IBQOS-0051" if mode == "plugin" else "IBQOS-0052") in osm.log(),
          f"{net}: the plugin says who answers PathRecords ({mode})")
    out = {}
    for name in policies:
        if name is None:
            if os.path.exists(policy):
                os.remove(policy)
        else:
            with open(policy, "w") as f:
                f.write(policy_text(name))
        in_force, refused = osm.count("IBQOS-0010"), osm.count("IBQOS-0011")
        osm.heavy_sweep()
        if name in REFUSED:
            check(osm.count("IBQOS-0011") > refused, f"{net} {mode}: {name} is refused")
        elif name is not None:
            check(osm.count("IBQOS-0010") == in_force + 1, f"{net} {mode}: {name} is in force")
        requests = requests_for(name)
        half = len(requests) // 2
        out[name] = (sa_requests.ask(fabric, host, PROBE, requests[:half]) +
                     sa_requests.ask(fabric, client, PROBE, requests[half:]))
    osm.heavy_sweep()  # its summary counts what the responder answered
    counts = [line for line in osm.log().splitlines() if "IBQOS-0101" in line]
    osm.stop()
    return out, counts


def compare_on(name, spec, work, count):
    print(f"---- {name}: the responder against OpenSM's handler, {len(spec[5])} policies x {count} requests")
    net = os.path.join(ROOT, "samples", "fabrics", spec[0])
    with simfabric.SimFabric(net) as fabric:
        # The LIDs OpenSM gives stay on the simulated ports for the next OpenSM.
        osm = fabric.start_opensm(spec[4], spec[3], spec[2], name="opensm-discovery")
        ports = sa_requests.Ports(fabric.tool(["ibnetdiscover"], spec[2]).stdout)
        osm.stop()

        def requests_for(policy):
            rng = random.Random(f"{name} {policy}")
            text = policy_text(policy) if policy else ""
            requests = sa_requests.random_requests(rng, ports, sa_requests.policy_values(text), count)
            if name in RANDOM_SL:
                requests = [(m, mask & ~sa_requests.SL, r) for m, mask, r in requests]
            return requests

        plugin, counts = answers_of(fabric, "plugin", spec, work, requests_for)
        opensm, _ = answers_of(fabric, "opensm", spec, work, requests_for)
        for policy in spec[5]:
            if name in RANDOM_SL:
                sls = lambda answers: {sa_requests.decode(r)["sl"] for a in answers  # noqa: E731
                                       for r in sa_requests.records_of(a)}
                check(sls(plugin[policy]) <= sls(opensm[policy]),
                      f"{name}: the responder's SLs {sorted(sls(plugin[policy]))} are among those dfsssp "
                      f"gave OpenSM's handler {sorted(sls(opensm[policy]))}")
                check(sls(plugin[policy]) - {0, 1, 2},
                      f"{name}: the responder answers SLs dfsssp chose, not only the levels' 0, 1, 2")
                plugin[policy] = [sa_requests.without_sl(a) for a in plugin[policy]]
                opensm[policy] = [sa_requests.without_sl(a) for a in opensm[policy]]
            differences = sa_requests.compare(requests_for(policy), plugin[policy], opensm[policy],
                                              ("responder", "OpenSM"))
            for d in differences[:5]:
                print("       " + d)
            records = sum(1 for a in opensm[policy] if a.startswith("0000"))
            check(not differences, f"{name} {policy or 'no policy'}: {len(differences)} of {count} answers "
                                   f"differ ({records} with records)")
        # The responder answered the requests it handles and left the rest to OpenSM's handler.
        answered = sum(int(m.group(1)) for m in (re.search(r": (\d+) PathRecord requests answered", c)
                                                 for c in counts) if m)
        left = " ".join(counts)
        check(answered > 0.8 * count * len(spec[5]), f"{name}: the responder answered {answered} requests")
        for kind in ("multicast", "one-end", "refused"):
            check(kind + " " in left, f"{name}: requests of kind {kind} went to OpenSM's handler, counted")
        if name == "qos-lab-lmc":
            several = sum(1 for a in plugin[spec[5][0]] if sa_requests.record_count(a) > 1)
            check(several > 0, f"{name}: answers with several paths of a port pair ({several})")
        if name == "ring-lash":
            sls = {sa_requests.decode(bytes.fromhex(a.split()[2])[56:120])["sl"]
                   for a in plugin[RING] if a.startswith("0000 81")}
            check({1, 2} <= sls, f"ring-lash: lash's SLs 1 and 2 are answered (found {sorted(sls)})")


def sigterm_in_a_burst(work):
    print("---- SIGTERM during a PathRecord burst: OpenSM exits cleanly")
    spec = FABRICS["qos-lab"]
    policy = os.path.join(work, "burst.conf")
    with open(policy, "w") as f:
        f.write(policy_text("qos-lab-mixed.conf"))
    with simfabric.SimFabric(os.path.join(ROOT, "samples", "fabrics", spec[0])) as fabric:
        options = {"event_plugin_name": "ibqos_osm", "event_plugin_options": f"policy={policy}",
                   "partition_config_file": os.path.join(ROOT, "samples", "fabrics", spec[1])}
        osm = fabric.start_opensm(options, spec[3], spec[2], plugin_dir=PLUGIN_DIR)
        osm.wait_for("IBQOS-0100")
        ports = sa_requests.Ports(fabric.tool(["ibnetdiscover"], spec[2]).stdout)
        requests = sa_requests.random_requests(random.Random(7), ports,
                                               sa_requests.policy_values(policy_text("qos-lab-mixed.conf")), 4000)
        text = "".join(sa_requests.request_line(r) + "\n" for r in requests)
        clients = []
        for host in ("node-01 HCA-1", "node-02 HCA-1", "node-03 HCA-1"):
            clients.append(subprocess.Popen([PROBE, "--timeout", "200"], stdin=subprocess.PIPE,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            cwd=fabric.workdir, env=fabric.env(host, ours=True)))
        for c in clients:
            c.stdin.write(text.encode())
            c.stdin.close()
        time.sleep(0.5)
        osm.process.send_signal(signal.SIGTERM)
        try:
            code = osm.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        for c in clients:
            c.kill()
            c.wait()
        output = osm.output()
        check(code == 0, f"OpenSM exits with status 0 on SIGTERM in a burst (got {code})")
        check("IBQOS-0003" in osm.log(), "the plugin is unloaded after the SA stopped")
        check("AddressSanitizer" not in output and "runtime error" not in output,
              "no sanitizer report: " + output[-2000:])


def main():
    global ROOT, PLUGIN_DIR, PROBE
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--requests", type=int, default=300, help="requests per policy (default 300)")
    ap.add_argument("--only", metavar="FABRIC", help="one fabric, or 'sigterm'")
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    ROOT, PLUGIN_DIR, PROBE = map(os.path.abspath, (args.root, args.plugin_dir, args.probe))
    with tempfile.TemporaryDirectory(prefix="ibqos-responder-") as work:
        try:
            for name, spec in FABRICS.items():
                if not args.only or args.only == name:
                    compare_on(name, spec, work, args.requests)
            if not args.only or args.only == "sigterm":
                sigterm_in_a_burst(work)
        except simfabric.FabricError as e:
            check(False, str(e))
    print(f"{len(failures)} failures" if failures else "the responder answers as OpenSM's handler does")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
