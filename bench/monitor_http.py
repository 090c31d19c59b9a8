#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: the monitor's HTTP server under held connections, on loopback. The real server
(MetricsServer, its epoll loop, the pages a scrape renders once) over fake PMAs
(build/tests/ibqos-test-monitor-server). For N and 10N slow clients (each holding a half-sent
request, 100 per loopback address), it times --requests sequential GET /metrics from another
address while a second client fetches /report.json and /shares.svg without pause, and reads
the server's peak resident memory.

    python3 bench/monitor_http.py --server build/tests/ibqos-test-monitor-server [--held 500]
        [--requests 1000] [--json]

It prints a table, or one JSON object per figure and line: name, value, unit, held, requests.
"""
import argparse
import json
import os
import resource
import socket
import subprocess
import threading
import time
import urllib.request


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        return r.read()


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure(server, held_count, requests):
    process = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--hosts", "254"], stdout=subprocess.PIPE,
                               text=True)
    held = []
    try:
        port = int(process.stdout.readline().split()[1])
        deadline = time.monotonic() + 30
        while True:
            try:
                get(port, "/metrics")
                break
            except Exception:  # noqa: BLE001 (503 until the first scrape)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        started = time.monotonic()
        for i in range(held_count):
            s = socket.socket()
            s.bind((f"127.0.{10 + i // 100 // 250}.{1 + i // 100 % 250}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        opening = time.monotonic() - started
        stop = threading.Event()

        def renders():
            while not stop.is_set():
                get(port, "/report.json")
                get(port, "/shares.svg")

        renderer = threading.Thread(target=renders, daemon=True)
        renderer.start()
        latencies = []
        size = 0
        for _ in range(requests):
            t = time.perf_counter()
            size = len(get(port, "/metrics"))
            latencies.append(time.perf_counter() - t)
        stop.set()
        renderer.join(30)
        latencies.sort()
        return {"open_seconds": opening, "p50": latencies[len(latencies) // 2],
                "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], "max": latencies[-1],
                "peak_kib": peak_kib(process.pid), "page_bytes": size}
    finally:
        for s in held:
            s.close()
        process.terminate()
        process.wait(30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="build/tests/ibqos-test-monitor-server")
    ap.add_argument("--held", type=int, default=500, help="N: held connections (then 10N; default 500)")
    ap.add_argument("--requests", type=int, default=1000, help="timed /metrics requests (default 1000)")
    ap.add_argument("--json", action="store_true", help="one JSON object per figure and line")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 10 * args.held + 1000)), hard))
    rows = [(n, measure(os.path.abspath(args.server), n, args.requests)) for n in (args.held, 10 * args.held)]
    if args.json:
        for n, r in rows:
            for name, value, unit in (("metrics_latency_p50", r["p50"] * 1000, "ms"),
                                      ("metrics_latency_p99", r["p99"] * 1000, "ms"),
                                      ("metrics_latency_max", r["max"] * 1000, "ms"),
                                      ("server_peak_rss", r["peak_kib"] / 1024, "MiB"),
                                      ("open_held_connections", r["open_seconds"], "s")):
                print(json.dumps({"name": name, "value": round(value, 3), "unit": unit, "held": n,
                                  "requests": args.requests, "page_bytes": r["page_bytes"]}))
        return 0
    print(f"{'held':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'peak MiB':>9} {'open s':>7}  (/metrics of "
          f"{rows[0][1]['page_bytes']} bytes, {args.requests} requests, renders alongside)")
    for n, r in rows:
        print(f"{n:6d} {r['p50'] * 1000:8.2f} {r['p99'] * 1000:8.2f} {r['max'] * 1000:8.2f} "
              f"{r['peak_kib'] / 1024:9.1f} {r['open_seconds']:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
