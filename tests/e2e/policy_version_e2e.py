#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# End-to-end test of one policy version for every SA answer: a real OpenSM 3.3.23 on ibsim with
# the plugin (its test module, for the failure injection point of a compilation). Requests the
# responder answers (a PathRecord naming both ends) and requests it leaves to OpenSM's handler (a
# GetTable with the destination open) must always come from the same version:
#   - while the plain policy cannot be written (a directory stands where the plugin writes its
#     temporary file: a real error, root included), everything keeps the old version, the error
#     is logged once, and the new version takes over everywhere once the write succeeds;
#   - under a stream of both kinds of request while the policy changes back and forth, the
#     answers change version once per change and never disagree between the two kinds;
#   - opensm.conf read again at every heavy sweep is news (IBQOS-0005) only when its QoS options
#     changed; an unchanged policy, fabric and options compile nothing;
#   - a candidate whose compilation fails is dropped with one IBQOS-0900, and the policy in force
#     is compiled again when the fabric changes.
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import plugin_opensm  # noqa: E402
import sa_requests  # noqa: E402
import simfabric  # noqa: E402

SM_HOST, SM_GUID = "Hca1", "0x100001"  # two-switch.net: Hca1's port is the SM's
SOURCE, DESTINATION = 0x100001, 0x100004  # Hca1 and Hca2
SERVICE = plugin_opensm.SERVICE
failures = []


def check(condition, message):
    print(("     ok   " if condition else "     FAIL ") + message)
    if not condition:
        failures.append(message)
    return condition


def policy(sl):
    """Hca1 to Hca2 with ServiceID 0x10005 gets SL `sl`; everything else SL 0."""
    return plugin_opensm.two_group_policy(SOURCE, DESTINATION, sl)


class Probes:
    """The two kinds of request for the pair: `pair` (SubnAdmGet, both ends by LID: the
    responder's) and `open` (SubnAdmGetTable from the source with the destination open and an SL
    asked for: OpenSM's handler's, one record when the version gives the pair that SL)."""

    def __init__(self, slid, dlid):
        self.slid, self.dlid = slid, dlid
        self.pair = ("get", sa_requests.SERVICE_ID | sa_requests.SLID | sa_requests.DLID,
                     sa_requests.encode(service_id=SERVICE, slid=slid, dlid=dlid))

    def open(self, sl):
        return ("gettable", sa_requests.SERVICE_ID | sa_requests.SLID | sa_requests.SL,
                sa_requests.encode(service_id=SERVICE, slid=self.slid, sl=sl))


def pair_sl(answer):
    records = sa_requests.records_of(answer)
    return sa_requests.decode(records[0])["sl"] if len(records) == 1 else None


def open_gives(answer, dlid):
    """Whether a GetTable answer holds the path to dlid."""
    return any(sa_requests.decode(r)["dlid"] == dlid for r in sa_requests.records_of(answer))


def versions_seen(answers, probes, sls):
    """What each answer of the stream of (pair, open(sls[0]), open(sls[1])) triples, in the order
    they were answered, shows: (kind, SL) for an answer that shows a version (the pair's SL; an
    open table holding the path to the destination, at the SL it asked for), None for one that
    shows none (an open table without it: the other version, or no path while OpenSM routes)."""
    seen = []
    for i in range(0, len(answers) - 2, 3):
        pair = answers[i]
        seen.append(("pair", pair_sl(pair)) if pair_sl(pair) is not None else None)
        for sl, answer in zip(sls, answers[i + 1:i + 3]):
            seen.append(("open", sl) if open_gives(answer, probes.dlid) else None)
    return seen


def run(plugin_dir, probe, root, work):
    path = os.path.join(work, "policy.conf")
    with open(path, "w") as f:
        f.write(policy(2))
    net = os.path.join(root, "samples/fabrics/two-switch.net")
    with simfabric.SimFabric(net, console=True) as fabric:
        options = plugin_opensm.plugin_options(path, module="ibqos_osm_failpoints")
        osm, points = plugin_opensm.start(fabric, work, options, SM_GUID, SM_HOST, plugin_dir, failpoints=True)
        lid = plugin_opensm.endpoint_lids(fabric, SM_HOST)
        probes = Probes(lid[SOURCE], lid[DESTINATION])

        def ask(requests):
            return sa_requests.ask(fabric, SM_HOST, probe, requests)

        def state(label, sl, other):
            pair, at_sl, at_other = ask([probes.pair, probes.open(sl), probes.open(other)])
            check(pair_sl(pair) == sl, f"{label}: the responder answers SL {sl} (got {pair_sl(pair)})")
            check(open_gives(at_sl, probes.dlid) and not open_gives(at_other, probes.dlid),
                  f"{label}: OpenSM's handler answers SL {sl} too (a table from the source, the "
                  f"destination open)")

        state("version 1", 2, 3)
        plain = os.path.join(os.path.dirname(osm.log_path), "cache", "ibqos-policy.conf")
        plain_v1 = open(plain).read()

        print("---- the plain policy cannot be written")
        blocker = plain + ".tmp"
        os.mkdir(blocker)
        open(os.path.join(blocker, "keep"), "w").close()  # not removable as a file, nor rmdir'ed
        written, in_force = osm.count("IBQOS-0021"), osm.count("IBQOS-0010")
        with open(path, "w") as f:
            f.write(policy(3))
        for _ in range(3):
            osm.heavy_sweep()
        check(osm.count("IBQOS-0021") == written + 1,
              f"the failed write is logged once over three sweeps ({osm.count('IBQOS-0021') - written})")
        check(osm.count("IBQOS-0010") == in_force, "the new version is not put in force")
        check(open(plain).read() == plain_v1, "the plain policy on disk is still version 1's")
        state("write failing", 2, 3)

        print("---- the write succeeds again")
        shutil.rmtree(blocker)
        osm.heavy_sweep()
        check(osm.count("IBQOS-0010") == in_force + 1, "the new version is in force")
        check(osm.count("IBQOS-0023") == 1, "the plugin says the plain policy can be written again")
        state("version 2", 3, 2)

        print("---- unchanged policy, fabric and options")
        compiled = osm.count("(compiled)")
        for _ in range(3):
            osm.heavy_sweep()
        check(osm.count("(compiled)") == compiled and osm.count("nothing compiled") >= 3,
              "three heavy sweeps with nothing changed compile nothing")
        check(osm.count("IBQOS-0005") == 0,
              "opensm.conf read again at every heavy sweep, unchanged: no IBQOS-0005")

        print("---- opensm.conf's QoS options change")
        with open(osm.conf_path, "a") as f:
            f.write("qos_vlarb_high 0:4,1:0,2:0,3:0\n")
        osm.heavy_sweep()
        for _ in range(2):
            osm.heavy_sweep()
        check(osm.count("IBQOS-0005") == 1, f"a real change is logged once ({osm.count('IBQOS-0005')})")
        check(osm.count("(compiled)") == compiled + 1, "the change compiles once")
        state("options changed", 3, 2)

        print("---- a policy change under a stream of requests")
        stop = threading.Event()
        answers, broken = [], []

        def stream():
            # One probe for the whole stream, one request at a time: a request every millisecond
            # or so, so that the short time between HEAVY_SWEEP_DONE and OpenSM's parse is met.
            process = subprocess.Popen([probe, "--timeout", "2000"], cwd=fabric.workdir,
                                       env=fabric.env(SM_HOST, ours=True), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                while not stop.is_set():
                    for request in (probes.pair, probes.open(3), probes.open(2)):
                        process.stdin.write(sa_requests.request_line(request) + "\n")
                        process.stdin.flush()
                        line = process.stdout.readline()
                        if not line:
                            raise RuntimeError("the probe stopped: " + process.stderr.read())
                        answers.append(line.strip())
            except Exception as e:  # noqa: BLE001 - reported below
                broken.append(str(e))
            finally:
                process.stdin.close()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

        thread = threading.Thread(target=stream)
        thread.start()
        changes = 0
        for sl in (2, 3, 2, 3, 2, 3):
            before = len(answers)
            with open(path, "w") as f:
                f.write(policy(sl))
            osm.heavy_sweep()
            changes += 1
            while len(answers) < before + 300 and thread.is_alive():
                threading.Event().wait(0.05)
        stop.set()
        thread.join()
        check(not broken, "the stream of requests ran to the end " + " ".join(broken))
        seen = versions_seen(answers, probes, (3, 2))
        shown = [v for v in seen if v]
        switches = sum(1 for a, b in zip(shown, shown[1:]) if a[1] != b[1])
        check({("pair", 2), ("pair", 3), ("open", 2), ("open", 3)} <= set(shown),
              f"both kinds of answer show both versions ({len(shown)} of {len(answers)} answers show one)")
        check(switches <= changes,
              f"the answers, in order, change version {switches} times for {changes} changes: no "
              f"answer of one kind comes from another version than its neighbours of the other")
        check(osm.count("IBQOS-0010") == in_force + 1 + changes, "every change was put in force")

        print("---- a candidate whose compilation fails")
        open(os.path.join(points, "candidate-compile"), "w").close()
        errors = osm.count("IBQOS-0900")
        with open(path, "w") as f:
            f.write(policy(5))
        for _ in range(3):
            osm.heavy_sweep()
        check(osm.count("IBQOS-0900") == errors + 1, "the failing candidate is logged once (IBQOS-0900)")
        state("candidate dropped", 3, 5)
        os.remove(os.path.join(points, "candidate-compile"))
        compiled = osm.count("(compiled)")
        fabric.send_console('Unlink "Hca4"')
        osm.heavy_sweep()
        osm.heavy_sweep()
        check(osm.count("(compiled)") > compiled, "the policy in force is compiled again for the new fabric")
        check(osm.count("IBQOS-0900") == errors + 1, "and the dropped candidate is not tried again")
        state("new fabric", 3, 5)
        check(osm.count("with OpenSM's lock held") == 0, "the plugin never returned with OpenSM's lock held")
        counts = " ".join(line for line in osm.log().splitlines() if "IBQOS-0101" in line)
        answered = sum(int(n) for n in re.findall(r": (\d+) PathRecord requests answered", counts))
        waiting = sum(int(n) for n in re.findall(r"policy-change (\d+)", counts))
        print(f"     the responder answered {answered} requests; {waiting} arrived while OpenSM had "
              f"not yet parsed a new plain policy and went to its handler")
        osm.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    if not simfabric.available():
        print("SKIP: ibsim, OpenSM or libumad2sim missing")
        return 77
    with tempfile.TemporaryDirectory(prefix="ibqos-version-") as work:
        run(os.path.abspath(args.plugin_dir), os.path.abspath(args.probe), os.path.abspath(args.root), work)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
