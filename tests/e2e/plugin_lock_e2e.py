#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# End-to-end test of the plugin under a failure inside OpenSM's lock: a real OpenSM 3.3.23 on
# ibsim loads the plugin's test module (libibqos_osm_failpoints.so, the plugin built with its
# failure injection points), and a heavy sweep fails at each point where the plugin holds
# OpenSM's lock. After each failure the plugin logs its internal error, it returned without the
# lock (the module's entry checks after each event), the SA still answers PathRecord queries
# (it takes the lock shared), the sweep reaches SUBNET UP (OpenSM takes the lock exclusively on
# the way) and the last good policy stays in force; a later edit still takes over.
#
# Why both checks: a shared lock left held stops OpenSM's next exclusive lock, the sweep and
# everything after it for good. An exclusive lock left held by OpenSM's state-manager thread does
# not hang glibc's rwlock there: OpenSM's next exclusive lock on that thread fails (EDEADLK,
# unchecked by cl_plock_excl_acquire), its release frees the plugin's lock, and OpenSM's own
# region runs unprotected while the SA reads the subnet; only the entry's check sees it.
import argparse
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402

SM = ("sm HCA-1", "0x10000a")  # the three-switch fabric's SM host and port GUID
# Where the plugin holds OpenSM's lock: reading the subnet and the options at HEAVY_SWEEP_DONE,
# setting options and hooks there, reading the partitions at UCAST_ROUTING_DONE (shared).
FAILPOINTS = ("sweep-read", "sweep-apply", "routing-read")
# What the test module's entry logs when the plugin returns from an event with the lock held.
LOCK_HELD = "with OpenSM's lock held"
failures = []


def check(condition, message):
    print(("     ok   " if condition else "     FAIL ") + message)
    if not condition:
        failures.append(message)
    return condition


def lid_of(topo_text, description, port=1):
    record = None
    for line in topo_text.splitlines():
        if line.startswith(("Ca", "Switch")):
            record = line
        elif record and f'"{description}"' in record and line.startswith(f"[{port}]("):
            return int(line.split("# lid ")[1].split()[0])
    raise AssertionError(f"no LID for {description}/P{port}")


def path_sl(fabric, host, slid, dlid, service_id):
    """The SL of the SA's PathRecord answer, or None when the SA answers nothing in time."""
    args = ["saquery", "-p", "--slid", str(slid), "--dlid", str(dlid), "--service_id", hex(service_id)]
    try:
        p = fabric.tool(args, host, check=False, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    record = simfabric.parse_pathrecord(p.stdout)
    return None if record is None else int(record["sl"], 0)


def failures_under_the_lock(root, plugin_dir, work):
    policy = os.path.join(work, "policy.conf")
    text = open(os.path.join(root, "samples/policies/per-port-tables.conf")).read()
    with open(policy, "w") as f:
        f.write(text)
    points = os.path.join(work, "failpoints")
    os.mkdir(points)
    host, guid = SM
    with simfabric.SimFabric(os.path.join(root, "samples/fabrics/three-switch.net")) as fabric:
        options = {"qos": "FALSE", "event_plugin_name": "ibqos_osm_failpoints",
                   "event_plugin_options": "policy=" + policy}
        osm = fabric.start_opensm(options, guid, host, plugin_dir=plugin_dir,
                                  extra_env={"IBQOS_FAILPOINT_DIR": points})
        osm.wait_for("IBQOS-0100", 1, 30)  # the first sweep's summary: the policy is in force
        topo = fabric.tool(["ibnetdiscover"], host).stdout
        src, dst = lid_of(topo, "compute1 HCA-1"), lid_of(topo, "storage1 HCA-1")
        check(path_sl(fabric, host, src, dst, 0x10005) == 2, "before any failure, storage traffic gets SL 2")

        for point in FAILPOINTS:
            print(f"---- a failure at {point}, with OpenSM's lock held")
            trigger = os.path.join(points, point)
            open(trigger, "w").close()
            errors, ups, held = osm.count("IBQOS-0900"), osm.count("SUBNET UP"), osm.count(LOCK_HELD)
            osm.process.send_signal(signal.SIGHUP)
            osm.wait_for("IBQOS-0900", errors + 1, 30)
            line = [entry for entry in osm.log().splitlines() if "IBQOS-0900" in entry][-1]
            check("internal error, the previous state stays in force" in line and point in line,
                  f"{point}: the plugin logs the internal error and where: {line.split('IBQOS-0900: ')[-1]}")
            check(osm.count(LOCK_HELD) == held, f"{point}: the plugin returned without OpenSM's lock")
            check(path_sl(fabric, host, src, dst, 0x10005) == 2,
                  f"{point}: the SA still answers, with the last good policy's SL 2")
            osm.wait_for("SUBNET UP", ups + 1, 30)
            check(True, f"{point}: the failed sweep still reaches SUBNET UP")
            os.remove(trigger)
            # A sweep after the failure is whole again: its summary is logged.
            summaries = osm.count("IBQOS-0100")
            osm.heavy_sweep()
            osm.wait_for("IBQOS-0100", summaries + 1, 30)
            check(osm.count("IBQOS-0900") == errors + 1, f"{point}: the next sweep runs without an error")

        print("---- an edit after the failures")
        with open(policy, "w") as f:
            f.write(text.replace("        sl: 2\n", "        sl: 3\n"))
        in_force = osm.count("IBQOS-0010")
        osm.heavy_sweep()
        check(osm.count("IBQOS-0010") == in_force + 1, "the edited policy is in force")
        check(path_sl(fabric, host, src, dst, 0x10005) == 3, "the SA answers the edited policy's SL 3")
        check(osm.alive(), "OpenSM is still running")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin-dir", required=True, help="where libibqos_osm_failpoints.so is")
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="ibqos-plugin-lock-") as work:
        try:
            failures_under_the_lock(os.path.abspath(args.root), os.path.abspath(args.plugin_dir), work)
        except simfabric.FabricError as e:
            # No SUBNET UP, no summary: OpenSM waits for a lock (the log's end says where).
            check(False, str(e))
    print(f"{len(failures)} failures" if failures else "the plugin never leaves OpenSM's lock held")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
