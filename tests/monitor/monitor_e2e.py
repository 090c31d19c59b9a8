#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos monitor` on ibsim, against a real OpenSM with the ibqos plugin on three-switch.net.

Counters set through ibsim's console (PerformanceSet) come out of /metrics, read with a real HTTP
client, with the right names, labels and byte units (data counters are 4-byte words). ibsim
moves the data and packet counters for every MAD it forwards, so those are asserted on deltas;
the per-VL counters and XmitWait move only when set. ibsim has no per-SL counters and drops
those MADs: that costs one timeout (and its retry) per device kind, never again per scrape. A
PMA made deaf (ibsim's Error command) is reported and skipped, and read again once it answers.
A congested output port's VL mix is judged against the shares its VL arbitration intends.
`--once --json` prints one report; a usage error exits 2.
"""
import argparse
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import simfabric  # noqa: E402

RETRIES = 1
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Metrics:
    """One /metrics page: samples by name and labels, and the TYPE of each family."""

    def __init__(self, text):
        self.text = text
        self.samples = {}
        self.types = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
                continue
            if line.startswith("#") or not line:
                continue
            m = SAMPLE.match(line)
            if not m:
                raise ValueError("not a sample line: " + line)
            labels = dict(LABEL.findall(m.group(2) or ""))
            self.samples.setdefault(m.group(1), []).append((labels, float(m.group(3))))

    def get(self, name, **labels):
        """The value of the one sample of name whose labels include these, or None."""
        found = [v for l, v in self.samples.get(name, []) if all(l.get(k) == str(v2) for k, v2 in labels.items())]
        return found[0] if len(found) == 1 else None

    def all(self, name, **labels):
        return [(l, v) for l, v in self.samples.get(name, []) if all(l.get(k) == str(v2) for k, v2 in labels.items())]


def fetch(port, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def metrics(port):
    return Metrics(fetch(port)[2])


def wait_scrapes(port, count, monitor, timeout=30.0):
    """Waits until `count` more scrapes have finished; the page after them."""
    start = metrics(port).get("ibqos_monitor_scrapes_total")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if monitor.poll() is not None:
            raise RuntimeError(f"ibqos monitor exited ({monitor.returncode})")
        m = metrics(port)
        if m.get("ibqos_monitor_scrapes_total") >= start + count:
            return m
        time.sleep(0.05)
    raise RuntimeError(f"no {count} scrapes within {timeout} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim/OpenSM not installed: skipped")
        return 77
    root = os.path.abspath(args.root)
    ibqos = os.path.abspath(args.ibqos)
    policy = os.path.join(root, "samples/policies/per-port-tables.conf")
    with simfabric.SimFabric(os.path.join(root, "samples/fabrics/three-switch.net"), console=True) as fabric:
        fabric.start_opensm({"qos": "TRUE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + policy},
                            "0x10000a", "sm HCA-1", plugin_dir=os.path.abspath(args.plugin_dir))
        run_service(fabric, ibqos, policy)
        run_once(fabric, ibqos, policy)
    p = subprocess.run([ibqos, "monitor", policy, "--json"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--once" in p.stderr, "--json without --once is a usage error (exit 2)")
    # Without a fabric (no simulator, and no HCA on this machine): a clear error and exit 2.
    if not (os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband")):
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "IBSIM_SOCKNAME", "SIM_HOST")}
        p = subprocess.run([ibqos, "monitor", policy, "--once"], capture_output=True, text=True, timeout=120, env=env)
        check(p.returncode == 2 and "discovered" in p.stderr,
              f"without a fabric: exit 2 and a reason ({p.returncode}: {p.stderr.strip()[:200]})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


class Notifications:
    """$NOTIFY_SOCKET, read all the time as systemd does (a full queue would block the sender)."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(path)
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                self.messages.put(set(self.socket.recv(4096).decode().split("\n")))
            except OSError:
                return

    def until(self, line, timeout):
        """The notifications up to the first holding line (None when it does not come)."""
        seen = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                break
            seen.append(message)
            if line in message:
                return seen
        return None

    def close(self):
        self.socket.close()


def run_service(fabric, ibqos, policy):
    """The service under a stand-in for systemd: $NOTIFY_SOCKET and a 1 s watchdog."""
    port = free_port()
    log = open(os.path.join(fabric.workdir, "monitor.log"), "w+")
    notify_path = os.path.join(fabric.workdir, "notify")
    listener = Notifications(notify_path)
    monitor = subprocess.Popen(
        [ibqos, "monitor", policy, "--listen", f"127.0.0.1:{port}", "--interval", "0.4", "--timeout", "150",
         "--retries", str(RETRIES), "--textfile", os.path.join(fabric.workdir, "ibqos.prom")],
        cwd=fabric.workdir,
        env=fabric.env("compute1 HCA-1", ours=True, extra={"NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "1000000"}),
        stdout=subprocess.DEVNULL, stderr=log, preexec_fn=simfabric._die_with_parent)
    try:
        ready = listener.until("READY=1", 60)
        if ready is None:
            log.seek(0)
            raise RuntimeError("the monitor did not tell READY=1:\n" + log.read()[-3000:])
        extended = [m for m in ready if any(line.startswith("EXTEND_TIMEOUT_USEC=") for line in m)]
        check(bool(extended) and "READY=1" not in ready[0],
              "before READY=1, discovery and the first scrape ask systemd for more time (EXTEND_TIMEOUT_USEC)")
        status, ctype, _ = fetch(port)
        check(status == 200 and ctype.startswith("text/plain; version=0.0.4"),
              f"at READY=1 /metrics serves Prometheus text 0.0.4 ({status}, {ctype})")
        check(any(line.startswith("STATUS=scrape 1:") for m in ready for line in m), "READY=1 comes with the first scrape")
        service_checks(fabric, port, monitor)
        seen = listener.until("WATCHDOG=1", 5)
        check(seen is not None, "the service pings the watchdog")
        monitor.send_signal(signal.SIGHUP)
        reload = listener.until("RELOADING=1", 30)
        renewal = listener.until("READY=1", 30)
        check(reload is not None and renewal is not None, "SIGHUP: RELOADING=1, then READY=1")
        check(renewal is not None and any("WATCHDOG=1" in m for m in renewal[:-1]),
              "while SIGHUP's rediscovery runs, the watchdog is still told")
        monitor.terminate()
        check(listener.until("STOPPING=1", 20) is not None, "SIGTERM: STOPPING=1")
    finally:
        if monitor.poll() is None:
            monitor.terminate()
            try:
                monitor.wait(20)
            except subprocess.TimeoutExpired:
                monitor.kill()
                monitor.wait()
        listener.close()
        log.seek(0)
        text = log.read()
        check(monitor.returncode == 0, f"SIGTERM stops the service with exit 0 ({monitor.returncode})")
        check("SIGHUP: policy and fabric read again" in text, "SIGHUP reads the policy and the fabric again")
        if failures:
            print("---- monitor log:\n" + text[-3000:])


def service_checks(fabric, port, monitor):
    m = wait_scrapes(port, 2, monitor)
    for name, kind in m.types.items():
        if kind == "counter":
            check(name.endswith("_total"), f"counter {name} ends in _total")
    ports_read = m.get("ibqos_monitor_scrape_ports", state="read")
    # The switches' linked ports (3 + 5 + 4) and 6 CA ports (storage1 has two).
    check(ports_read == 18, f"every linked port is read ({ports_read})")
    check(not m.all("ibqos_finding", kind="tables-differ"), "the plugin's tables are in force: no tables-differ")
    storage = dict(node_name="storage1 HCA-1", port=1)
    info = m.all("ibqos_port_info", **storage)
    check(len(info) == 1 and info[0][0]["groups"] == "storage" and info[0][0]["node_guid"].startswith("0x"),
          f"storage1's port 1 carries its node GUID and its port group ({info})")
    leaf = dict(node_name="Leaf1", port=3)
    vlinfo = m.all("ibqos_port_vl_info", vl=2, **leaf)
    check(len(vlinfo) == 1 and "2" in vlinfo[0][0]["sls"].split(",") and vlinfo[0][0]["levels"] == "storage",
          f"Leaf1/P3's VL 2 carries SL 2, the storage level ({vlinfo})")
    check(m.get("ibqos_sl_level_info", sl=2, level="storage") == 1, "SL 2 is labelled with its level")

    # Per-SL: ibsim drops them. One timeout (and its retry) per device kind (switches, CAs).
    kinds = 2
    timeouts = m.get("ibqos_monitor_mad_timeouts_total")
    check(timeouts == kinds * (1 + RETRIES), f"the per-SL MADs cost one timeout per device kind ({timeouts})")
    sl_support = [v for l, v in m.all("ibqos_monitor_attribute_supported", attribute="PortXmitDataSL")]
    check(sl_support == [0] * kinds, f"both kinds are known without PortXmitDataSL ({sl_support})")
    vl_support = [v for l, v in m.all("ibqos_monitor_attribute_supported", attribute="PortVLOpData")]
    check(vl_support == [1] * kinds, f"both kinds answer PortVLOpData ({vl_support})")
    check(m.get("ibqos_monitor_scrape_mads", attribute="PortXmitDataSL") is None,
          "a scrape after the first sends no per-SL MAD")

    # Counters set through the console, read back in bytes and ticks.
    before = m.get("ibqos_port_transmit_bytes_total", node_name="compute3 HCA-1", port=1)
    # (VL 1 carries no level's SL: its series appears with its first traffic.)
    rx_vl_before = m.get("ibqos_port_vl_receive_bytes_total", vl=1, **storage) or 0
    fabric.send_console('PerformanceSet "compute3 HCA-1"[1] PortCountersExtended.PortXmitData=1000000000')
    fabric.send_console('PerformanceSet "Leaf2"[1] PortCounters.PortXmitWait=5000')
    fabric.send_console('PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData1=1000')
    # (The scrape under way may have read some ports before the console changed them.)
    m = wait_scrapes(port, 3, monitor)
    after = m.get("ibqos_port_transmit_bytes_total", node_name="compute3 HCA-1", port=1)
    grown = after - before
    # ibsim's own MAD traffic adds 72 words a MAD: a few thousand at most in these scrapes.
    check(4 * (10**9 - 10**6) <= grown <= 4 * (10**9 + 10**6),
          f"PortXmitData set to 1e9 words grows transmit bytes by 4e9 ({grown:.0f})")
    wait = m.get("ibqos_port_transmit_wait_ticks_total", node_name="Leaf2", port=1)
    check(wait == 5000, f"PortXmitWait 5000 comes out as 5000 ticks ({wait})")
    rx_vl = m.get("ibqos_port_vl_receive_bytes_total", vl=1, **storage)
    check(rx_vl - rx_vl_before == 4000, f"PortVLOpData1 1000 comes out as 4000 bytes on VL 1 ({rx_vl - rx_vl_before})")
    check(m.get("ibqos_port_congested", node_name="Leaf2", port=1) == 0,
          "a port whose XmitWait stopped rising is no longer congested")
    check(m.get("ibqos_monitor_mad_timeouts_total") == timeouts, "no timeout since the first scrapes")
    with open(os.path.join(fabric.workdir, "ibqos.prom")) as f:
        textfile = Metrics(f.read())
    check(textfile.get("ibqos_monitor_scrapes_total") is not None and "ibqos_port_info" in textfile.samples,
          "the textfile holds the same metrics for node_exporter")

    # A congested output port: Leaf1/P3 sends to storage1 P1 under bandwidth 1:25%, 2:50%,
    # 3:25%; VLs 1 and 2 wait, storage1 receives 1000, 1000 and 2000 words on VLs 1-3: VL 2
    # gets 25 % where it should get 50 %. The per-VL counters are cleared after each read, so
    # what the console sets is the next interval's count. (A console burst can straddle a
    # scrape: then again.)
    judged = None
    for attempt in range(3):
        for vl, words in {1: 1000, 2: 1000, 3: 2000}.items():
            fabric.send_console(f'PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData{vl}={words}')
        fabric.send_console(f'PerformanceSet "Leaf1"[3] PortCounters.PortXmitWait={10000 * (attempt + 1)}')
        fabric.send_console('PerformanceSet "Leaf1"[3] PortVLXmitWaitCounters.PortVLXmitWaitCounters1=100')
        fabric.send_console('PerformanceSet "Leaf1"[3] PortVLXmitWaitCounters.PortVLXmitWaitCounters2=100')
        judged = find_judged(port, "Leaf1", 3, lambda vls: [vls[vl]["achieved_share"] for vl in (1, 2, 3)]
                             == [0.25, 0.25, 0.5])
        if judged:
            break
    check(judged is not None, "Leaf1/P3's VL mix 25/25/50 % is seen while it is congested")
    if judged:
        vls, report = judged
        intended = [vls[vl]["intended_share"] for vl in (1, 2, 3)]
        check(intended == [0.25, 0.5, 0.25], f"its arbitration intends 25/50/25 % ({intended})")
        below = [f for f in report["findings"] if f["kind"] == "vl-below-share"]
        check(len(below) == 1 and below[0]["node_name"] == "Leaf1" and below[0]["port"] == 3 and below[0]["vl"] == 2,
              f"VL 2 of Leaf1/P3 is found below its share ({below})")
    busy_link(fabric, port, monitor)
    status, ctype, svg = fetch(port, "/shares.svg")
    check(status == 200 and ctype == "image/svg+xml" and "Leaf1/P3" in svg, "/shares.svg draws Leaf1/P3")
    try:
        fetch(port, "/nothing")
        check(False, "an unknown path is 404")
    except urllib.error.HTTPError as e:
        check(e.code == 404, f"an unknown path is 404 ({e.code})")

    # A deaf PMA: reported, skipped, and read again when it answers.
    fabric.send_console('Error "compute2 HCA-1"[1] 100')
    m = wait_scrapes(port, 3, monitor)
    check(m.get("ibqos_monitor_pma_up", node_name="compute2 HCA-1") == 0, "the deaf PMA is down")
    check(len(m.all("ibqos_finding", kind="pma-unanswered", node_name="compute2 HCA-1")) == 1,
          "a finding names it")
    read = m.get("ibqos_monitor_scrape_ports", state="read")
    check(read == 17, f"its port is skipped, the others read ({read})")
    mads = m.get("ibqos_monitor_scrape_mads", attribute="ClassPortInfo")
    check(mads == 1 + RETRIES, f"a scrape asks it once (ClassPortInfo and the retry) ({mads})")
    fabric.send_console('Error "compute2 HCA-1"[1] 0')
    m = wait_scrapes(port, 3, monitor)
    check(m.get("ibqos_monitor_pma_up", node_name="compute2 HCA-1") == 1, "it is read again once it answers")
    check(m.get("ibqos_monitor_scrape_ports", state="read") == 18, "every port is read again")


def find_judged(port, node, number, wanted, seconds=10):
    """The first report within `seconds` in which node/number is judged with a VL mix for which
    wanted(vls) holds: (vls by number, report), or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        report = json.loads(fetch(port, "/report.json")[2])
        for p in report["ports"]:
            vls = {v["vl"]: v for v in p["vls"]}
            if p["node_name"] == node and p["port"] == number and p["judged"] and \
                    all(vl in vls and vls[vl]["achieved_share"] is not None for vl in (1, 2, 3)) and wanted(vls):
                return vls, report
        time.sleep(0.1)
    return None


def busy_link(fabric, port, monitor):
    """A busy link, as counters show it after less than a second of HDR traffic: Leaf1/P3's
    32-bit PortXmitWait stopped at its maximum (it is not cleared: OpenSM's PerfMgr shares it),
    and in every interval the 16-bit per-VL XmitWait of VLs 1 and 2 and storage1's PortVLOpData
    of VL 2 reach theirs. Each interval is judged: congested (from the per-VL XmitWait), VL 2's
    share from what it counted at least, VL 1 found below its share."""
    fabric.send_console('PerformanceSet "Leaf1"[3] PortCounters.PortXmitWait=4294967295')
    judged_rounds = 0
    rounds = 4
    for _ in range(rounds):
        fabric.send_console('PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData1=1000000')
        fabric.send_console('PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData2=4294967295')
        fabric.send_console('PerformanceSet "storage1 HCA-1"[1] PortVLOpData.PortVLOpData3=1000000')
        fabric.send_console('PerformanceSet "Leaf1"[3] PortVLXmitWaitCounters.PortVLXmitWaitCounters1=65535')
        fabric.send_console('PerformanceSet "Leaf1"[3] PortVLXmitWaitCounters.PortVLXmitWaitCounters2=65535')
        found = find_judged(port, "Leaf1", 3, lambda vls: vls[2]["achieved_share"] > 0.99, seconds=3)
        if found is None:
            continue
        vls, report = found
        storage = [p for p in report["ports"] if p["node_name"] == "storage1 HCA-1" and p["port"] == 1][0]
        leaf = [p for p in report["ports"] if p["node_name"] == "Leaf1" and p["port"] == 3][0]
        below = {f["vl"] for f in report["findings"]
                 if f["kind"] == "vl-below-share" and f["node_name"] == "Leaf1" and f["port"] == 3}
        if "PortVLOpData2" in storage["saturated"] and leaf["congested"] and below == {1}:
            judged_rounds += 1
        # The next round starts after this scrape cleared the per-VL counters.
        wait_scrapes(port, 1, monitor)
    check(judged_rounds >= rounds - 1,
          f"a busy link whose counters saturate is judged in every interval ({judged_rounds} of {rounds} rounds; "
          "a console burst may straddle one scrape)")
    fabric.send_console('PerformanceSet "Leaf1"[3] PortCounters.PortXmitWait=0')


def run_once(fabric, ibqos, policy):
    p = fabric.tool([ibqos, "monitor", policy, "--once", "--json", "--interval", "0.3", "--timeout", "150",
                     "--no-table-check"], "compute2 HCA-1", check=False, timeout=120)
    check(p.returncode == 0, f"--once --json exits 0 ({p.returncode}: {p.stderr[-500:]})")
    try:
        report = json.loads(p.stdout)
    except ValueError:
        check(False, "--once --json prints one JSON object")
        return
    check(report["scrape"]["number"] == 2 and report["scrape"]["interval_seconds"] >= 0.3,
          f"two scrapes, --interval apart ({report['scrape']})")
    names = {(q["node_name"], q["port"]) for q in report["ports"]}
    check(len(names) == 18 and ("storage1 HCA-1", 2) in names, "every linked port is in the report")
    compute3 = [q for q in report["ports"] if q["node_name"] == "compute3 HCA-1"][0]
    check(compute3["rates"]["transmit_bytes_per_second"] is not None and compute3["extended_counters"],
          "a port's rates come from its 64-bit counters")
    unsupported = {(s["kind"].split()[0], s["attribute"]) for s in report["support"] if not s["supported"]}
    check(("switch", "PortXmitDataSL") in unsupported and ("CA", "PortXmitDataSL") in unsupported,
          f"the report says which kinds lack the per-SL counters ({sorted(unsupported)})")

    # The fabric from a topology file (ibnetdiscover's, with the LIDs): no discovery, same ports.
    topology = os.path.join(fabric.workdir, "fabric.topo")
    with open(topology, "w") as f:
        f.write(fabric.tool(["ibnetdiscover"], "compute1 HCA-1").stdout)
    p = fabric.tool([ibqos, "monitor", policy, "--topology", topology, "--once", "--json", "--interval", "0.2",
                     "--timeout", "150"], "compute1 HCA-1", check=False, timeout=120)
    report = json.loads(p.stdout) if p.returncode == 0 else {"ports": [], "scrape": {}}
    check(p.returncode == 0 and report["scrape"].get("ports_read") == 18,
          f"with --topology every linked port is read ({p.returncode}: {report['scrape']} {p.stderr[-300:]})")


if __name__ == "__main__":
    sys.exit(main())
