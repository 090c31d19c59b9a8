#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The monitor's HTTP server against the clients anyone on the network could be. Every client
is on loopback (127.0.0.0/8: each address a "client" of its own), bounded in count and time.

The real server (MetricsServer, its limits, the pages rendered once a scrape) over fake PMAs
(ibqos-test-monitor-server: ibsim's libumad2sim takes descriptors from 1024 on as its own, so a
monitor on ibsim cannot hold a thousand connections):
- 5,000 connections held open with half-sent requests, trickling a byte now and then (the
  server the monitor had before died of SIGSEGV at 1,025): /metrics is still answered from
  another address, with /report.json and /shares.svg fetched at the same time, and latencies
  are printed (p50, p99, max).
- One address gets at most --max-connections-per-client connections; past --max-connections
  the server refuses, stays up, and serves again once the held connections go; a silent
  connection is closed after --idle-timeout.

`ibqos monitor` itself on ibsim, with a real OpenSM and the ibqos plugin:
- --web-config-file: TLS with a self-signed certificate (verified by the client), basic auth
  with a bcrypt hash (no or wrong credentials: 401); a key ibqos cannot honour stops the start
  (exit 2, the file and the key named).
- A NodeDescription in Latin-1 (ibsim's net file) comes out of /metrics as valid UTF-8.
- 900 slow connections (what umad2sim leaves room for) and /metrics still answered.
"""
import argparse
import base64
import ctypes
import os
import resource
import select
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402

LATIN1 = "caf\xe9 n\xf6de".encode("latin-1")
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path="/metrics", scheme="http", context=None, headers=None, timeout=10):
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{port}{path}", headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout, context=context) as r:
        return r.status, r.read()


def wait_ready(port, monitor, scheme="http", context=None, headers=None, timeout=60):
    """Waits until /metrics is served (200: the first scrape is published)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if monitor.poll() is not None:
            raise RuntimeError(f"ibqos monitor exited ({monitor.returncode})")
        try:
            status, _ = get(port, scheme=scheme, context=context, headers=headers, timeout=2)
            if status == 200:
                return
        except (OSError, urllib.error.URLError):
            pass  # (an HTTPError is a URLError: 503 until the first scrape)
        time.sleep(0.1)
    raise RuntimeError("the monitor never served /metrics")


class Held:
    """Connections from one loopback address, each holding a half-sent request."""

    def __init__(self, port, address, count, request=b"GET /metrics HTTP/1.1\r\nHost: x\r\n"):
        self.sockets = []
        for _ in range(count):
            s = socket.socket()
            s.setblocking(True)
            s.settimeout(5)
            s.bind((address, 0))
            try:
                s.connect(("127.0.0.1", port))
                s.sendall(request)
            except OSError:
                s.close()
                continue
            self.sockets.append(s)

    def trickle(self):
        """One more header byte on each (a slow client, not an idle one)."""
        for s in self.sockets:
            try:
                s.send(b"X")
            except OSError:
                pass

    def alive(self, wait=0.5):
        """How many the server has not closed."""
        time.sleep(wait)
        open_ = 0
        for s in self.sockets:
            poller = select.poll()  # (select() stops at descriptor 1024)
            poller.register(s, select.POLLIN)
            if not poller.poll(0):
                open_ += 1
                continue
            try:
                open_ += s.recv(1, socket.MSG_PEEK) != b""
            except OSError:
                pass
        return open_

    def close(self):
        for s in self.sockets:
            s.close()
        self.sockets = []


def start_monitor(fabric, ibqos, policy, port, *extra):
    log = open(os.path.join(fabric.workdir, f"monitor-{port}.log"), "w+")
    process = subprocess.Popen(
        [ibqos, "monitor", policy, "--listen", f"127.0.0.1:{port}", "--interval", "0.5", "--timeout", "150",
         "--no-table-check", *extra],
        cwd=fabric.workdir, env=fabric.env("compute1 HCA-1", ours=True), stdout=subprocess.DEVNULL, stderr=log,
        preexec_fn=simfabric._die_with_parent)
    return process, log


def stop(process, log):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.seek(0)
    return log.read()


def bcrypt(password):
    """A bcrypt hash ($2b$, cost 10) of password, made by libcrypt, as htpasswd -B makes one."""
    libcrypt = ctypes.CDLL("libcrypt.so.1")
    libcrypt.crypt_gensalt.restype = ctypes.c_char_p
    libcrypt.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    libcrypt.crypt.restype = ctypes.c_char_p
    libcrypt.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    salt = libcrypt.crypt_gensalt(b"$2b$", 10, None, 0)
    return libcrypt.crypt(password.encode(), salt).decode()


def sockets_of(pid):
    """How many sockets a process has open (its listening one included)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def start_server(server, workdir, *extra):
    """The test server, and the port it listens on."""
    log = open(os.path.join(workdir, f"server-{len(os.listdir(workdir))}.log"), "w+")
    process = subprocess.Popen([server, "--listen", "127.0.0.1:0", *extra], stdout=subprocess.PIPE, stderr=log,
                               text=True, preexec_fn=simfabric._die_with_parent)
    line = process.stdout.readline().split()
    if len(line) != 2 or line[0] != "listening":
        log.seek(0)
        raise RuntimeError("the test server did not start: " + log.read()[-2000:])
    return process, log, int(line[1])


def held_connections(server, workdir):
    monitor, log, port = start_server(server, workdir)
    held = []
    try:
        wait_ready(port, monitor)

        # 5,000 held connections from 50 addresses (100 each, within the per-client bound).
        started = time.monotonic()
        held = [Held(port, f"127.0.0.{2 + i}", 100) for i in range(50)]
        opened = sum(len(h.sockets) for h in held)
        check(opened == 5000, f"5,000 connections opened ({opened}) in {time.monotonic() - started:.1f} s")
        stop_renders = threading.Event()
        render_errors = []

        def renders():
            while not stop_renders.is_set():
                for path in ("/report.json", "/shares.svg"):
                    try:
                        get(port, path)
                    except Exception as e:  # noqa: BLE001 (any failure is reported)
                        render_errors.append(repr(e))

        renderer = threading.Thread(target=renders, daemon=True)
        renderer.start()
        latencies, errors = [], []
        for i in range(300):
            if i % 100 == 0:
                for h in held:
                    h.trickle()
            t = time.monotonic()
            try:
                status, _ = get(port)
                latencies.append(time.monotonic() - t)
                if status != 200:
                    errors.append(status)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
        stop_renders.set()
        renderer.join(20)
        still = sum(h.alive(0) for h in held)
        check(not errors and not render_errors,
              f"under 5,000 held connections every /metrics, /report.json and /shares.svg is answered "
              f"({errors[:3]} {render_errors[:3]})")
        if latencies:
            print(f"     /metrics latency under {still} held connections and concurrent renders: "
                  f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms, "
                  f"max {max(latencies) * 1000:.1f} ms ({len(latencies)} requests)")
            check(percentile(latencies, 0.99) < 1.0, "p99 latency under a second")
        check(still >= 4900, f"the slow clients are held, not dropped ({still} of 5,000 still open)")
        check(monitor.poll() is None, "the server is still running")

        # One address: at most --max-connections-per-client (128 by default).
        greedy = Held(port, "127.0.0.200", 200)
        kept = greedy.alive()
        check(kept <= 128, f"one address holds at most 128 connections ({kept} of 200 kept)")
        greedy.close()
    finally:
        for h in held:
            h.close()
        text = stop(monitor, log)
        check(monitor.returncode == 0, f"the server stops cleanly ({monitor.returncode})")
        http_lines = text.count("ibqos monitor: http: ")
        check(http_lines <= 12, f"5,000 dropped connections log at most 10 lines a minute ({http_lines})")
        if failures:
            print("---- server log:\n" + text[-3000:])


def total_limit(server, workdir):
    monitor, log, port = start_server(server, workdir, "--max-connections", "1000", "--idle-timeout", "3")
    held = []
    try:
        wait_ready(port, monitor)
        held = [Held(port, f"127.0.1.{1 + i}", 100) for i in range(11)]
        time.sleep(0.5)
        # Past the bound, connections wait in the kernel's listen backlog, unaccepted.
        accepted = sockets_of(monitor.pid)
        check(accepted <= 1000 + 1, f"past --max-connections 1000 the server accepts no more ({accepted} sockets "
                                    "for 1,100 connections)")
        check(monitor.poll() is None, "the server survives 1,100 held connections")
        # The first 1,000 time out after 3 s, then the waiting ones are accepted and time out.
        time.sleep(3 * 2 + 1.5)
        alive = sum(h.alive(0) for h in held)
        check(alive == 0, f"silent connections are closed after --idle-timeout 3 ({alive} left)")
        status, _ = get(port)
        check(status == 200, "once they are gone, /metrics is served again")
    finally:
        for h in held:
            h.close()
        stop(monitor, log)


def web_config(fabric, ibqos, policy):
    work = fabric.workdir
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    hashed = bcrypt("s3cret")
    config = os.path.join(work, "web.yml")
    with open(config, "w") as f:
        # Relative paths are read from the file's folder, as exporter-toolkit reads them.
        f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  min_version: TLS12\n"
                f"basic_auth_users:\n  prometheus: {hashed}\n"
                "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    port = free_port()
    monitor, log = start_monitor(fabric, ibqos, policy, port, "--web-config-file", config)
    context = ssl.create_default_context(cafile=cert)
    try:
        good = {"Authorization": "Basic " + base64.b64encode(b"prometheus:s3cret").decode()}
        wait_ready(port, monitor, "https", context, good)
        for name, headers in (("no credentials", {}),
                              ("a wrong password", {"Authorization": "Basic " + base64.b64encode(b"prometheus:x").decode()}),
                              ("an unknown user", {"Authorization": "Basic " + base64.b64encode(b"root:s3cret").decode()})):
            try:
                get(port, scheme="https", context=context, headers=headers)
                check(False, f"{name}: refused")
            except urllib.error.HTTPError as e:
                check(e.code == 401 and "Basic" in e.headers.get("WWW-Authenticate", ""),
                      f"{name}: 401 with a Basic challenge ({e.code})")
        request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=good)
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            check(r.status == 200 and b"ibqos_monitor_scrapes_total" in r.read(),
                  "over TLS, verified against its certificate, the right password gets /metrics")
            check(r.headers.get("X-Frame-Options") == "deny", "the configured header is sent")
        try:
            get(port, scheme="http", timeout=3)
            check(False, "plain HTTP is not served on a TLS port")
        except (OSError, urllib.error.URLError, ConnectionError):
            check(True, "plain HTTP is not served on a TLS port")
        # (urlopen's response was read above: fetch again for the body.)
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            body = r.read()
        try:
            text = body.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            text = ""
        check('node_name="caf\\\\xe9 n\\\\xf6de"' in text,
              "a Latin-1 NodeDescription is a valid UTF-8 label value, its bytes escaped")
        # (Silent: on a TLS port a slow client is one that has not finished its handshake.)
        held = [Held(port, f"127.0.2.{1 + i}", 90, request=b"") for i in range(10)]
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            check(r.status == 200, "with 900 slow connections held, /metrics is still answered")
        alive = sum(h.alive(0) for h in held)
        check(monitor.poll() is None and alive == 900, f"and they are held, not dropped ({alive})")
        for h in held:
            h.close()
    finally:
        stop(monitor, log)

    bad = os.path.join(work, "bad.yml")
    with open(bad, "w") as f:
        f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_ca_file: ca.pem\n")
    p = fabric.tool([ibqos, "monitor", policy, "--listen", "127.0.0.1:0", "--web-config-file", bad], "compute1 HCA-1",
                    check=False, timeout=60)
    check(p.returncode == 2 and "bad.yml" in p.stderr and "client_ca_file" in p.stderr,
          f"a web config key ibqos cannot honour stops the start, named ({p.returncode}: {p.stderr.strip()[-300:]})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 8000:
        print(f"the open-file limit ({hard}) is too low for 5,000 connections: skipped")
        return 77
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 8000), hard))
    root = os.path.abspath(args.root)
    ibqos = os.path.abspath(args.ibqos)
    policy = os.path.join(root, "samples/policies/per-port-tables.conf")
    with tempfile.TemporaryDirectory(prefix="ibqos-hostile-") as scratch:
        held_connections(os.path.abspath(args.server), scratch)
        total_limit(os.path.abspath(args.server), scratch)
        if not simfabric.available():
            print("ibsim/OpenSM not installed: the monitor on ibsim is skipped")
            print(f"{len(failures)} failure(s)")
            return 1 if failures else 0
        # The sample fabric with compute2 described in Latin-1.
        net = os.path.join(scratch, "latin1.net")
        with open(os.path.join(root, "samples/fabrics/three-switch.net"), "rb") as f, open(net, "wb") as out:
            out.write(f.read().replace(b"compute2 HCA-1", LATIN1))
        with simfabric.SimFabric(net, workdir=scratch) as fabric:
            fabric.start_opensm({"qos": "TRUE", "event_plugin_name": "ibqos_osm",
                                 "event_plugin_options": "policy=" + policy},
                                "0x10000a", "sm HCA-1", plugin_dir=os.path.abspath(args.plugin_dir))
            web_config(fabric, ibqos, policy)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
