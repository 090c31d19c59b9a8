#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The monitor soak (not part of scripts/test): `ibqos monitor` as a service on ibsim, against a
real OpenSM with the ibqos plugin, for the given minutes. It scrapes every second; a client on
loopback fetches /metrics every second and /report.json and /shares.svg every five, while
ibsim's console moves per-VL counters (some to their maximum) every ten. The monitor's resident
memory is sampled every minute; at the end a table (and with --json one JSON object per line)
gives it, and the run fails if the monitor died, a request failed, or memory kept growing
(the last third's peak more than 10 % over the first third's).

    scripts/soak MINUTES --monitor [--json]
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    rng = random.Random(args.seed)
    root = os.path.abspath(args.root)
    policy = os.path.join(root, "samples/policies/per-port-tables.conf")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    samples, errors, requests = [], [], 0
    with simfabric.SimFabric(os.path.join(root, "samples/fabrics/three-switch.net"), console=True) as fabric:
        fabric.start_opensm({"qos": "TRUE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + policy},
                            "0x10000a", "sm HCA-1", plugin_dir=os.path.abspath(args.plugin_dir))
        log = open(os.path.join(fabric.workdir, "monitor.log"), "w+")
        monitor = subprocess.Popen(
            [os.path.abspath(args.ibqos), "monitor", policy, "--listen", f"127.0.0.1:{port}", "--interval", "1",
             "--timeout", "150"],
            cwd=fabric.workdir, env=fabric.env("compute1 HCA-1", ours=True), stdout=subprocess.DEVNULL, stderr=log,
            preexec_fn=simfabric._die_with_parent)
        try:
            start = time.monotonic()
            end = start + args.minutes * 60
            next_sample = start + 5
            tick = 0
            while time.monotonic() < end and monitor.poll() is None:
                tick += 1
                paths = ["/metrics"] + (["/report.json", "/shares.svg"] if tick % 5 == 0 else [])
                for path in paths:
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                            r.read()
                        requests += 1
                    except urllib.error.HTTPError as e:
                        if e.code != 503 or time.monotonic() - start > 30:
                            errors.append(f"{path}: {e.code}")
                    except OSError as e:
                        if time.monotonic() - start > 30:
                            errors.append(f"{path}: {e}")
                if tick % 10 == 0:
                    for vl in (1, 2, 3):
                        words = 4294967295 if rng.random() < 0.2 else rng.randrange(1, 10**8)
                        fabric.send_console(
                            f'PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData{vl}={words}')
                    fabric.send_console(f'PerformanceSet "Leaf1"[3] PortCounters.PortXmitWait={tick * 1000}')
                    fabric.send_console('PerformanceSet "Leaf1"[3] PortVLXmitWaitCounters.PortVLXmitWaitCounters1=100')
                now = time.monotonic()
                if now >= next_sample:
                    rss, hwm = rss_kib(monitor.pid)
                    samples.append((now - start, rss, hwm))
                    next_sample += 60
                time.sleep(max(0.0, 1 - (time.monotonic() - now)))
        finally:
            died = monitor.poll()
            if died is None:
                monitor.send_signal(signal.SIGTERM)
                monitor.wait(30)
            log.seek(0)
            text = log.read()
    if died is not None:
        errors.append(f"the monitor exited early ({died}): {text[-1000:]}")
    print(f"{'minute':>8} {'rss MiB':>9} {'peak MiB':>9}")
    for at, rss, hwm in samples:
        print(f"{at / 60:8.1f} {rss / 1024:9.1f} {hwm / 1024:9.1f}")
        if args.json:
            print(json.dumps({"name": "monitor_soak_rss", "value": round(rss / 1024, 2), "unit": "MiB",
                              "minute": round(at / 60, 1), "peak_mib": round(hwm / 1024, 2)}))
    third = max(1, len(samples) // 3)
    first = max(s[1] for s in samples[:third]) if samples else 0
    last = max(s[1] for s in samples[-third:]) if samples else 0
    growing = len(samples) >= 3 and last > first * 1.10
    print(f"{requests} requests answered, {len(errors)} failed; resident memory {first / 1024:.1f} MiB "
          f"(first third's peak) -> {last / 1024:.1f} MiB (last third's)")
    for e in errors[:10]:
        print("FAIL " + e)
    if growing:
        print("FAIL resident memory kept growing")
    return 1 if errors or growing else 0


if __name__ == "__main__":
    sys.exit(main())
