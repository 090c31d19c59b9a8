#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Never worse than stock OpenSM, tables included: a qos-setup scope that would starve an SL a
# level hands out is not applied. On an ibsim fabric, OpenSM with the plugin and a policy whose
# vlarb-scope for the hosts gives SL 7's VL no weight must program every host port exactly as a
# stock OpenSM with the same files does, while a harmless scope for the switches stays applied;
# `ibqos check` and the plugin's log name the scope, the reason and the ports.
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import plugin_opensm  # noqa: E402
import simfabric  # noqa: E402

SM_HOST = "sm HCA-1"
SM_GUID = "0x10000a"
POLICY = """\
port-groups
    port-group
        name: hosts
        node-type: CA
    end-port-group
    port-group
        name: switches
        node-type: SWITCH
    end-port-group
end-port-groups
qos-setup
    vlarb-tables
        vlarb-scope
            group: hosts
            vlarb-high: 0:64
            vlarb-low: 1:64, 2:64
        end-vlarb-scope
        vlarb-scope
            group: switches
            vlarb-high: 0:32
            vlarb-low: 0:8, 1:16, 2:24, 3:40, 4:8, 5:8, 6:8, 7:8
        end-vlarb-scope
    end-vlarb-tables
end-qos-setup
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: bulk
        sl: 7
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 7
        qos-level-name: bulk
    end-qos-match-rule
end-qos-match-rules
"""
HARMFUL_SCOPE_LINE = 13
SWITCH_LOW = [(0, 8), (1, 16), (2, 24), (3, 40), (4, 8), (5, 8), (6, 8), (7, 8)]


def read_tables(fabric, ports):
    """Every port's SL2VL rows and VLArb tables as the fabric holds them."""
    tables = {}
    for port in ports:
        lid, number = str(port["lid"]), str(port["port"])
        sl2vl = simfabric.parse_sl2vl(fabric.tool(["smpquery", "sl2vl", lid, number], SM_HOST).stdout)
        vlarb = simfabric.parse_vlarb(fabric.tool(["smpquery", "vlarb", lid, number], SM_HOST).stdout)
        tables[(port["node_desc"], port["port"])] = (port["node_type"], sl2vl, vlarb)
    return tables


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--net", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    ibqos = os.path.abspath(args.ibqos)
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)
        return ok

    with tempfile.TemporaryDirectory(prefix="ibqos-never-worse-") as scratch, \
            simfabric.SimFabric(args.net) as fabric:
        policy = os.path.join(scratch, "qos-policy.conf")
        with open(policy, "w") as f:
            f.write(POLICY)
        # An unbounded high limit: warned about at its opensm.conf line, also in the plugin's log.
        osm = fabric.start_opensm({"qos": "TRUE", "qos_high_limit": "255", "qos_policy_file": policy},
                                  SM_GUID, SM_HOST, name="stock")
        topology = os.path.join(scratch, "fabric.topo")
        with open(topology, "w") as f:
            f.write(fabric.tool(["ibnetdiscover"], SM_HOST).stdout)

        # What ibqos says, offline: one error at the harmful scope, naming the SL, the level and
        # the ports; nothing about the harmless one.
        p = subprocess.run([ibqos, "check", policy, "--topology", topology, "--json"],
                           capture_output=True, text=True, timeout=120)
        errors = [d for d in json.loads(p.stdout) if d["severity"] == "error"]
        check(p.returncode == 1 and len(errors) == 1 and errors[0]["code"] == "sl-starved"
              and errors[0]["line"] == HARMFUL_SCOPE_LINE and not errors[0]["opensm_rejects"]
              and "qos-level 'bulk'" in errors[0]["message"] and "not applied" in errors[0]["message"],
              f"check: one sl-starved error at the hosts' vlarb-scope (line {HARMFUL_SCOPE_LINE}), "
              f"not one OpenSM has: {errors}")

        # The ports OpenSM programs, from a policy with no qos-setup.
        plain = os.path.join(scratch, "plain.conf")
        with open(plain, "w") as f:
            f.write("qos-ulps\n    default : 0\nend-qos-ulps\n")
        p = subprocess.run([ibqos, "compile", plain, "--topology", topology, "--emit", "json"],
                           capture_output=True, text=True, timeout=120)
        ports = json.loads(p.stdout)["ports"]

        stock = read_tables(fabric, ports)
        osm.stop()

        osm, _ = plugin_opensm.start(fabric, scratch,
                                     {"qos": "TRUE", "qos_high_limit": "255", **plugin_opensm.plugin_options(policy)},
                                     SM_GUID, SM_HOST, args.plugin_dir, ready="IBQOS-0010", name="plugin")
        # The tables of the policy in force go out at the sweep that puts it in force.
        osm.wait_for("SUBNET UP", 1, 30)
        plugin = read_tables(fabric, ports)
        log = open(osm.log_path, errors="replace").read()
        conf_lines = open(osm.conf_path).read().splitlines()
        osm.stop()

    hosts = [k for k, v in stock.items() if v[0] == "CA"]
    switch_ports = [k for k, v in stock.items() if v[0] == "SWITCH" and k[1] != 0]
    check(hosts and switch_ports, f"{len(hosts)} host ports and {len(switch_ports)} switch ports read")
    differing = [f"{k[0]}/P{k[1]}" for k in hosts if plugin[k][1:] != stock[k][1:]]
    check(not differing, f"every host port holds stock OpenSM's tables with the plugin (differing: {differing})")
    starved = [f"{k[0]}/P{k[1]}" for k in hosts if plugin[k][2]["low"][:2] == [(1, 64), (2, 64)]]
    check(not starved, f"no host port holds the harmful scope's table (holding it: {starved})")
    applied = [k for k in switch_ports if plugin[k][2]["low"][:len(SWITCH_LOW)] == SWITCH_LOW]
    check(len(applied) == len(switch_ports),
          f"the harmless switch scope is applied on {len(applied)} of {len(switch_ports)} switch ports")
    check(any(stock[k][2]["low"][:len(SWITCH_LOW)] != SWITCH_LOW for k in switch_ports),
          "stock OpenSM's switch tables differ from the scope's (the comparison can fail)")
    named = [line for line in log.splitlines()
             if "IBQOS-0012" in line and "sl-starved" in line and f":{HARMFUL_SCOPE_LINE}:" in line]
    check(named and "not applied" in named[0] and "ports get" in named[0],
          "the plugin's log names the scope (file and line), the reason and the ports: "
          + (named[0] if named else "no such line"))
    at = re.search(r"(\S*opensm\.conf):(\d+):\d+: warning: \[high-limit-unbounded\]", log)
    check(at is not None and conf_lines[int(at.group(2)) - 1].startswith("qos_high_limit"),
          "the plugin's log names the opensm.conf line of an option it warns about: "
          + (at.group(0) if at else "no such line"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
