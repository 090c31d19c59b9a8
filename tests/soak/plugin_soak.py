#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Soak test of the OpenSM plugin: OpenSM 3.3.23 with libibqos_osm.so on ibsim (the qos-lab
fabric, its partitions) for a given time, while this driver keeps changing what it sees:

  - valid policy edits (one of the qos-lab sample policies replaces the current one),
  - broken policy edits (a valid policy with one fault: the last good policy must stay),
  - a host link taken down with ibsim's console and brought back,
  - forced heavy sweeps (SIGHUP).

After every settled sweep, `ibqos verify` (the last good policy) must find no drift, and a batch
of random saquery PathRecord queries must get the answers `ibqos query` gives for the last good
policy on the fabric ibnetdiscover sees then. OpenSM must never exit, and its memory must stay
flat. Prints progress each minute and a summary (a table, or one JSON object with --json);
exits 1 when anything above fails.

  plugin_soak.py --ibqos build/cli/ibqos --plugin-dir build/osm-plugin --root . --minutes 30
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fabric"))
import pathrecords  # noqa: E402
import simfabric  # noqa: E402

SM_HOST, SM_GUID = pathrecords.QOS_LAB_SM
POLICIES = pathrecords.QOS_LAB_POLICIES + ["qos-lab-setup.conf"]  # the last with qos-setup
HOSTS = ["node-01 HCA-1", "node-02 HCA-1", "node-03 HCA-1", "node-04 HCA-1", "node-05 HCA-1", "storage-02 HCA-1"]

# One fault each: what an administrator's slip looks like. Each must be rejected.
# A fault that leaves the text unchanged or that `ibqos check` accepts is drawn again.
FAULTS = [
    ("a misspelt section end", lambda t: t.replace("\nend-qos-levels", "\nend-qos-level", 1)),
    ("an SL out of range", lambda t: re.sub(r"^(\s+)sl: *\d+", r"\1sl: 16", t, count=1, flags=re.M)),
    ("an unknown field", lambda t: re.sub(r"^(\s+)name:", r"\1priority: 3\n\1name:", t, count=1, flags=re.M)),
    ("an undefined level", lambda t: re.sub(r"qos-level-name: *\S+", "qos-level-name: no-such-level", t, count=1)),
    ("an SL out of range in qos-ulps", lambda t: re.sub(r"^(\s*default\s*):\s*\d+", r"\1: 99", t, count=1,
                                                        flags=re.M)),
    ("a truncated file", lambda t: t[: len(t) // 2]),
    ("binary garbage", lambda t: "\x00\x01\x02\xff qos-levels\n"),
]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def write_atomically(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Soak:
    def __init__(self, args, fabric, work):
        self.args, self.fabric, self.work = args, fabric, work
        self.rng = random.Random(args.seed)
        self.samples = os.path.join(args.root, "samples")
        self.partitions = os.path.join(self.samples, "fabrics", "qos-lab.partitions.conf")
        self.policy = os.path.join(work, "qos-policy.conf")
        self.good = os.path.join(work, "last-good.conf")  # what the plugin must have in force
        self.counts = dict(sweeps=0, reloads_accepted=0, reloads_rejected=0, link_flaps=0, queries_checked=0,
                           mismatches=0, verifies=0, drift=0, opensm_restarts=0)
        self.rss = []  # (seconds, kB)
        self.osm = None
        self.start = time.monotonic()
        self.unlinked = None

    # -- OpenSM ---------------------------------------------------------------------------
    def start_opensm(self):
        options = {"qos": "FALSE", "event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + self.policy,
                   "partition_config_file": self.partitions, "log_max_size": "64"}
        self.osm = self.fabric.start_opensm(options, SM_GUID, SM_HOST, name=f"opensm{self.counts['opensm_restarts']}",
                                            plugin_dir=self.args.plugin_dir)

    def sweep(self):
        """A forced heavy sweep; OpenSM found dead is restarted (and counted: it must not happen)."""
        try:
            self.osm.heavy_sweep(timeout=60)
            self.counts["sweeps"] += 1
        except simfabric.FabricError as e:
            if self.osm.alive():
                raise
            self.fail(f"OpenSM exited ({self.osm.process.returncode}): {str(e)[-2000:]}")
            self.counts["opensm_restarts"] += 1
            self.start_opensm()

    # -- actions --------------------------------------------------------------------------
    def valid_edit(self):
        name = self.rng.choice(POLICIES)
        text = open(os.path.join(self.samples, "policies", name)).read()
        before = self.osm.count("IBQOS-0010")
        write_atomically(self.policy, text)
        self.sweep()
        if open(self.good).read() == text:
            return  # the same policy again: the plugin need not reload
        try:
            self.osm.wait_for("IBQOS-0010", before + 1, 30)
        except simfabric.FabricError:
            self.fail(f"a valid edit ({name}) was not taken")
            return
        self.counts["reloads_accepted"] += 1
        shutil.copy(self.policy, self.good)

    def broken_edit(self):
        label, text = self.broken_policy()
        before = self.osm.count("IBQOS-0011")
        write_atomically(self.policy, text)
        self.sweep()
        try:
            self.osm.wait_for("IBQOS-0011", before + 1, 30)
            self.counts["reloads_rejected"] += 1
        except simfabric.FabricError:
            self.fail(f"a broken edit ({label}) was not rejected")

    def broken_policy(self):
        """A sample policy with one fault that `ibqos check` reports as an error."""
        while True:
            label, fault = self.rng.choice(FAULTS)
            text = open(os.path.join(self.samples, "policies", self.rng.choice(POLICIES))).read()
            broken = fault(text)
            # The file as it is now (say, the same fault already written) would be nothing new to reject.
            if broken == text or broken == open(self.policy).read():
                continue
            path = os.path.join(self.work, "broken.conf")
            with open(path, "w") as f:
                f.write(broken)
            if subprocess.run([self.args.ibqos, "check", path], capture_output=True).returncode == 1:
                return label, broken

    def link_flap(self):
        host = self.rng.choice(HOSTS)
        self.fabric.send_console(f'Unlink "{host}"')
        time.sleep(0.3)
        self.sweep()
        self.unlinked = host
        self.check(f"with {host} unlinked")
        self.fabric.send_console(f'ReLink "{host}"')
        time.sleep(0.3)
        self.sweep()
        self.unlinked = None
        self.counts["link_flaps"] += 1

    def forced_sweep(self):
        self.sweep()

    # -- checks after a settled sweep -------------------------------------------------------
    def check(self, when):
        topology_text = self.fabric.tool(["ibnetdiscover"], SM_HOST, timeout=60).stdout
        topology_path = os.path.join(self.work, "topology.txt")
        with open(topology_path, "w") as f:
            f.write(topology_text)
        topology = pathrecords.Topology(topology_text)

        p = self.fabric.tool([self.args.ibqos, "verify", self.good, "--partitions", self.partitions, "--sm", SM_GUID,
                              "--json"], SM_HOST, timeout=120, check=False)
        self.counts["verifies"] += 1
        if p.returncode not in (0, 1):
            self.fail(f"ibqos verify {when} failed ({p.returncode}): {p.stderr.strip()[-1000:]}")
        else:
            differences = json.loads(p.stdout)["differences"]
            self.counts["drift"] += len(differences)
            for d in differences[:5]:
                self.fail(f"drift {when}: {d}")

        requests = pathrecords.random_requests(self.rng, sorted(topology.endpoints), self.args.queries)
        theirs = pathrecords.ask_sa(self.fabric, SM_HOST, requests, jobs=2)
        ours = pathrecords.ask_ibqos(self.args.ibqos, self.good, topology_path, self.partitions, SM_GUID, requests,
                                     os.path.join(self.work, "batch.txt"))
        differences, _ = pathrecords.compare(topology, requests, theirs, ours)
        self.counts["queries_checked"] += len(requests)
        self.counts["mismatches"] += len(differences)
        for d in differences[:5]:
            self.fail(f"SA answer {when}: {d}")

    # -- bookkeeping ----------------------------------------------------------------------
    failures = []

    def fail(self, message):
        self.failures.append(message)
        print("FAIL " + message, flush=True)

    def elapsed(self):
        return time.monotonic() - self.start

    def sample_memory(self):
        if self.osm.alive():
            self.rss.append((self.elapsed(), rss_kb(self.osm.process.pid)))

    def memory_growth(self):
        """RSS growth from the end of the first tenth of the run (start-up done) to the end, kB."""
        if len(self.rss) < 2:
            return 0, 0, 0
        settled = [kb for t, kb in self.rss if t >= self.rss[-1][0] / 10] or [self.rss[-1][1]]
        return settled[0], self.rss[-1][1], max(kb for _, kb in self.rss)

    def run(self, seconds):
        write_atomically(self.policy, open(os.path.join(self.samples, "policies", POLICIES[0])).read())
        shutil.copy(self.policy, self.good)
        self.start_opensm()
        self.check("at start")
        self.sample_memory()
        actions = [self.valid_edit, self.broken_edit, self.link_flap, self.forced_sweep]
        weights = [3, 3, 2, 2]
        next_report = 60
        while self.elapsed() < seconds:
            action = self.rng.choices(actions, weights)[0]
            try:
                action()
                self.check(f"after {action.__name__.replace('_', ' ')}")
            except simfabric.FabricError as e:
                self.fail(f"{action.__name__}: {str(e)[-2000:]}")
                if self.unlinked:
                    self.fabric.send_console(f'ReLink "{self.unlinked}"')
                    self.unlinked = None
            self.sample_memory()
            if self.elapsed() >= next_report:
                next_report += 60
                c = self.counts
                print(f"[{self.elapsed() / 60:5.1f} min] sweeps {c['sweeps']}, reloads {c['reloads_accepted']} "
                      f"accepted / {c['reloads_rejected']} rejected, queries {c['queries_checked']}, "
                      f"mismatches {c['mismatches']}, drift {c['drift']}, OpenSM RSS {self.rss[-1][1]} kB", flush=True)
        self.osm.stop()


def main():
    ap = argparse.ArgumentParser(description="Soak test of the ibqos OpenSM plugin on ibsim.")
    ap.add_argument("--ibqos", required=True, help="the ibqos program")
    ap.add_argument("--plugin-dir", required=True, help="the folder holding libibqos_osm.so")
    ap.add_argument("--root", required=True, help="the source tree (for samples/)")
    ap.add_argument("--minutes", type=float, default=30, help="how long to run (default 30)")
    ap.add_argument("--queries", type=int, default=40, help="PathRecord queries after each settled sweep")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-rss-growth", type=float, default=10.0,
                    help="percent OpenSM's RSS may grow after start-up (default 10)")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = ap.parse_args()
    if not simfabric.available():
        print("ibsim, OpenSM or the diags are not installed: cannot soak")
        return 77
    args.ibqos, args.plugin_dir, args.root = map(os.path.abspath, (args.ibqos, args.plugin_dir, args.root))
    work = tempfile.mkdtemp(prefix="ibqos-soak-")
    with simfabric.SimFabric(os.path.join(args.root, "samples/fabrics/qos-lab.net"), workdir=work,
                             console=True) as fabric:
        soak = Soak(args, fabric, work)
        try:
            soak.run(args.minutes * 60)
        except simfabric.FabricError as e:
            soak.fail(f"the soak stopped: {str(e)[-2000:]}")
    first, last, peak = soak.memory_growth()
    growth = 100.0 * (last - first) / first if first else 0.0
    if growth > args.max_rss_growth:
        soak.fail(f"OpenSM's memory grew {growth:.1f}% ({first} kB -> {last} kB)")
    summary = dict(soak.counts, minutes=round(soak.elapsed() / 60, 1), rss_after_startup_kb=first, rss_end_kb=last,
                   rss_peak_kb=peak, rss_growth_percent=round(growth, 2), failures=len(soak.failures))
    if args.json:
        print(json.dumps(summary))
    else:
        print("\nibqos plugin soak on ibsim (qos-lab)")
        for key, value in summary.items():
            print(f"  {key.replace('_', ' '):24} {value}")
    if soak.failures:
        print(f"{len(soak.failures)} failures; OpenSM's log and the inputs are kept in {work}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
