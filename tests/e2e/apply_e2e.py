#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# End-to-end test of `ibqos status` and `ibqos apply` on ibsim with a real OpenSM 3.3.23 and the
# plugin (its test module, whose compilation failpoint can be limited to one policy):
#   - a fresh start: the status names the policy, the version IBQOS-0010 logged, OpenSM's pid,
#     the sweeps, and keeps a copy of the text in force; `ibqos status` exits 0;
#   - --dry-run and a second apply while one runs change nothing;
#   - a good change: exit 0, the file keeps its owner and mode, and the SA answers as a stock
#     OpenSM given NEW answers (checked at the end against a stock OpenSM on the same fabric);
#   - a broken file: exit 1, the policy file and the SA's answers untouched;
#   - a change the plugin refuses, and one whose sweep fails before its tables are set (the
#     failpoints): exit 3, the previous text, version, tables and answers back;
#   - OpenSM that does not reload: exit 4, and what is in force said;
#   - an edited file not yet reloaded: `ibqos status --policy` exits 1 and names both versions;
#   - OpenSM stopped, or a status not written for long: stale, exit 1; no status: exit 2.
import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
import plugin_opensm  # noqa: E402
import sa_requests  # noqa: E402
import simfabric  # noqa: E402

SM_HOST, SM_GUID = "Hca1", "0x100001"  # two-switch.net: Hca1's port is the SM's
SOURCE, DESTINATION = 0x100001, 0x100004  # Hca1 and Hca2
SERVICE = plugin_opensm.SERVICE
MARKER = "# refused by the test's failpoint"
UNVERIFIED = "# its sweep fails at the test's failpoint"
failures = []


def check(condition, message):
    print(("     ok   " if condition else "     FAIL ") + message)
    if not condition:
        failures.append(message)
    return condition


def policy(sl, high_weight=64, extra=""):
    """Hca1 to Hca2 with ServiceID 0x10005 gets SL `sl`, everything else SL 0; Hca2's port gets a
    VLArb high table of its own (qos-setup, which only the plugin applies)."""
    return plugin_opensm.two_group_policy(SOURCE, DESTINATION, sl, vlarb_high=high_weight, head=extra)


def fnv1a(text):
    h = 1469598103934665603
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:#018x}"


def run(args, work):
    ibqos = os.path.abspath(args.ibqos)
    # The policy OpenSM reads is a symbolic link: apply replaces the file it points to.
    real = os.path.join(work, "policy-real.conf")
    with open(real, "w") as f:
        f.write(policy(2))
    os.chmod(real, 0o640)
    path = os.path.join(work, "policy.conf")
    os.symlink(real, path)
    net = os.path.join(os.path.abspath(args.root), "samples/fabrics/two-switch.net")
    with simfabric.SimFabric(net) as fabric:
        status_path = os.path.join(work, "status", "ibqos-status.json")
        os.mkdir(os.path.dirname(status_path))
        options = plugin_opensm.plugin_options(path, status_path, module="ibqos_osm_failpoints")
        osm, points = plugin_opensm.start(fabric, work, options, SM_GUID, SM_HOST, args.plugin_dir,
                                          failpoints=True)
        lid = plugin_opensm.endpoint_lids(fabric, SM_HOST)
        pair = ("get", sa_requests.SERVICE_ID | sa_requests.SLID | sa_requests.DLID,
                sa_requests.encode(service_id=SERVICE, slid=lid[SOURCE], dlid=lid[DESTINATION]))
        plain = ("get", sa_requests.SLID | sa_requests.DLID,
                 sa_requests.encode(slid=lid[DESTINATION], dlid=lid[SOURCE]))
        requests = [pair, plain]

        def answers():
            return sa_requests.ask(fabric, SM_HOST, args.probe, requests)

        def pair_sl():
            records = sa_requests.records_of(answers()[0])
            return sa_requests.decode(records[0])["sl"] if len(records) == 1 else None

        def ibqos_run(*argv, timeout=180):
            return fabric.tool([ibqos, *argv], SM_HOST, check=False, timeout=timeout)

        def status(*extra):
            p = ibqos_run("status", "--status", status_path, "--json", *extra)
            try:
                return p.returncode, json.loads(p.stdout)
            except ValueError:
                return p.returncode, {"unreadable": p.stdout + p.stderr}

        def apply(new, *extra, timeout=60):
            start = time.monotonic()
            p = ibqos_run("apply", new, "--status", status_path, "--json", "--timeout", str(timeout), *extra)
            seconds = time.monotonic() - start
            try:
                result = json.loads(p.stdout)
            except ValueError:
                result = {"result": None, "output": p.stdout, "error": p.stderr}
            return p.returncode, result, seconds, p.stderr

        print("---- a fresh start")
        code, s = status()
        v1 = fnv1a(policy(2))
        check(code == 0, f"ibqos status exits 0 ({code})") or print(s)
        check(s.get("in_force") is True and s.get("version") == v1,
              f"the version in force is the policy file's ({s.get('version')} vs {v1})")
        check(f"({v1}) in force" in osm.log(), "it is the hash IBQOS-0010 logged")
        check(s.get("policy") == path and s.get("opensm_pid") == osm.process.pid,
              "the status names the policy file and OpenSM's pid")
        check(s.get("sweep", 0) >= 1 and s.get("since") and s.get("updated") and s.get("refused") is None,
              "the sweeps, since when and when it was updated; nothing refused")
        copy = s.get("text_in_force") or ""
        check(os.path.exists(copy) and open(copy).read() == policy(2), "a copy of the text in force sits beside it")
        text = ibqos_run("status", "--status", status_path).stdout
        check(v1 in text and path in text, "the text output names the policy and its version")
        default = fabric.tool([ibqos, "status"], SM_HOST, check=False,
                              extra_env={"OSM_CACHE_DIR": os.path.dirname(status_path)})
        check(default.returncode == 0, "without --status it reads ibqos-status.json in $OSM_CACHE_DIR")
        check(pair_sl() == 2, "the SA answers SL 2 for the pair")

        print("---- --dry-run, and a second apply while one runs")
        new = os.path.join(work, "new.conf")
        with open(new, "w") as f:
            f.write(policy(4, high_weight=32))
        v2 = fnv1a(policy(4, high_weight=32))
        code, result, _, _ = apply(new, "--dry-run")
        check(code == 0 and result.get("result") == "dry-run", f"a dry run exits 0 ({code}, {result.get('result')})")
        diff = result.get("diff") or {}
        check(diff.get("equivalent") is False and len(diff.get("regions", [])) >= 1 and len(diff.get("ports", [])) >= 1,
              "it prints the diff, as ibqos diff --json: regions of requests and ports that change")
        check(open(path).read() == policy(2), "and changes nothing")
        with open(status_path + ".apply.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            code, result, _, err = apply(new)
            fcntl.flock(lock, fcntl.LOCK_UN)
        check(code == 2 and "another ibqos apply is running" in err, f"a second apply is refused ({code}: {err.strip()})")
        check(open(path).read() == policy(2) and status()[1].get("version") == v1, "and changes nothing either")

        print("---- a good change")
        before = os.stat(real)
        code, result, seconds, err = apply(new)
        print(f"     apply took {seconds:.2f} s")
        check(code == 0 and result.get("result") == "applied", f"apply exits 0, applied ({code})") or print(result, err)
        check(result.get("old_version") == v1 and result.get("new_version") == v2, "it names both versions")
        verify = result.get("verify") or {}
        check(verify.get("ok") is True and verify.get("tables", {}).get("ports_checked", 0) > 0
              and verify.get("sa", {}).get("asked", 0) > 0, "tables and SA answers were verified")
        after = os.stat(real)
        check(open(path).read() == policy(4, high_weight=32), "the policy file holds NEW")
        check((after.st_mode & 0o7777) == 0o640 and after.st_uid == before.st_uid and after.st_gid == before.st_gid,
              "the file keeps its owner and mode")
        check(os.path.islink(path) and os.readlink(path) == real, "the link still points to it")
        check(open(real + ".previous").read() == policy(2) and (os.stat(real + ".previous").st_mode & 0o777) == 0o640,
              "the text it replaced is kept as .previous, with the same mode")
        code, s = status("--policy", path)
        check(code == 0 and s.get("version") == v2 and s.get("file_in_force") is True, "status: NEW is in force")
        check(pair_sl() == 4, "the SA answers SL 4 for the pair")
        applied_answers = answers()
        p = ibqos_run("verify", new)
        check(p.returncode == 0, "ibqos verify NEW: every port holds NEW's tables")

        print("---- a broken file")
        broken = os.path.join(work, "broken.conf")
        with open(broken, "w") as f:
            f.write(policy(5).replace("end-qos-level\n", "", 1))
        mtime = os.stat(path).st_mtime_ns
        code, result, _, _ = apply(broken)
        check(code == 1 and result.get("result") == "invalid", f"apply exits 1, invalid ({code}, {result.get('result')})")
        check(os.stat(path).st_mtime_ns == mtime and open(path).read() == policy(4, high_weight=32),
              "the policy file is untouched")
        check(answers() == applied_answers and status()[1].get("version") == v2, "the SA's answers and the version too")

        print("---- a change the plugin refuses")
        with open(os.path.join(points, "candidate-compile"), "w") as f:
            f.write(MARKER + "\n")
        refused = os.path.join(work, "refused.conf")
        refused_text = policy(6, high_weight=16, extra=MARKER)
        with open(refused, "w") as f:
            f.write(refused_text)
        code, result, seconds, err = apply(refused)
        print(f"     apply with a rollback took {seconds:.2f} s")
        check(code == 3 and result.get("result") == "rolled-back", f"apply exits 3, rolled back ({code})") or print(result, err)
        rollback = result.get("rollback") or {}
        check(rollback.get("ok") is True and "refused" in rollback.get("reason", ""),
              "it says NEW was refused and the previous policy was verified back")
        code, s = status()
        check(s.get("version") == v2 and (s.get("refused") or {}).get("version") == fnv1a(refused_text),
              "status: the previous version in force, the refused one named")
        check(any("failpoint" in d for d in (s.get("refused") or {}).get("diagnostics", [])),
              "with the reason it was refused")
        check(open(path).read() == policy(4, high_weight=32), "the policy file holds the previous text")
        check(answers() == applied_answers, "the SA answers as before")
        p = ibqos_run("verify", new)
        check(p.returncode == 0, "the tables are the previous policy's")
        os.remove(os.path.join(points, "candidate-compile"))

        print("---- a change that fails verification")
        # The sweep that puts it in force fails before the tables are set: the status and the SA
        # have NEW, the ports keep the previous tables.
        with open(os.path.join(points, "sweep-apply"), "w") as f:
            f.write(UNVERIFIED + "\n")
        unverified = os.path.join(work, "unverified.conf")
        with open(unverified, "w") as f:
            f.write(policy(5, high_weight=8, extra=UNVERIFIED))
        code, result, seconds, err = apply(unverified)
        print(f"     apply with a failed verification and a rollback took {seconds:.2f} s")
        check(code == 3 and result.get("result") == "rolled-back", f"apply exits 3, rolled back ({code})") \
            or print(result, err)
        differences = ((result.get("verify") or {}).get("tables") or {}).get("differences", [])
        check(any(d.get("name") == "Hca2/P1" and d.get("table") == "vlarb high" for d in differences),
              "the verification found the port whose table NEW changes still holding the old one")
        check("failed verification" in (result.get("rollback") or {}).get("reason", "")
              and (result.get("rollback") or {}).get("ok") is True, "and the previous policy was verified back")
        check(status()[1].get("version") == v2 and open(path).read() == policy(4, high_weight=32),
              "the previous version is in force, its text in the file")
        check(answers() == applied_answers, "the SA answers as before")
        check(ibqos_run("verify", new).returncode == 0, "the tables are the previous policy's")
        os.remove(os.path.join(points, "sweep-apply"))

        print("---- OpenSM does not reload (stopped): the way back cannot be confirmed")
        stuck = os.path.join(work, "stuck.conf")
        with open(stuck, "w") as f:
            f.write(policy(3))
        osm.process.send_signal(signal.SIGSTOP)
        try:
            code, result, seconds, err = apply(stuck, timeout=2)
        finally:
            osm.process.send_signal(signal.SIGCONT)
        check(code == 4 and result.get("result") == "rollback-failed", f"apply exits 4 ({code}, {result.get('result')})")
        message = result.get("message", "")
        check("not in force within 2 s" in message and v2 in message and "could not be confirmed" in message,
              "it says why, and what the status shows in force: " + message[:160])
        check(open(path).read() == policy(4, high_weight=32), "the previous text is back in the file")
        osm.heavy_sweep()
        check(status()[1].get("version") == v2 and answers() == applied_answers,
              "once OpenSM runs again the previous version is in force, the SA answers as before")

        print("---- an edited file not yet reloaded")
        with open(path, "w") as f:
            f.write(policy(7))
        code, s = status("--policy", path)
        check(code == 1 and s.get("file_in_force") is False, f"ibqos status --policy exits 1 ({code})")
        check(s.get("file_version") == fnv1a(policy(7)) and s.get("version") == v2, "and names both versions")
        text = ibqos_run("status", "--status", status_path, "--policy", path).stdout
        check(fnv1a(policy(7)) in text and v2 in text and "NOT in force" in text,
              "the text output names both versions too")
        code, s = status()
        check(code == 0, "without --policy the status is fine")

        print("---- a status not written for long, and OpenSM stopped")
        old = json.load(open(status_path))
        old["updated_unix"] -= 3600
        old["opensm_pid"] = os.getpid()  # a process that runs
        aged = os.path.join(work, "aged.json")
        json.dump(old, open(aged, "w"))
        p = ibqos_run("status", "--status", aged, "--json")
        s = json.loads(p.stdout)
        check(p.returncode == 1 and s.get("stale") is True and "not updated" in (s.get("stale_reason") or ""),
              f"a status an hour old is stale, exit 1 ({p.returncode}, {s.get('stale_reason')})")
        osm.stop()
        code, s = status()
        check(code == 1 and s.get("stale") is True and "not running" in (s.get("stale_reason") or ""),
              f"after OpenSM stops the status is stale, exit 1 ({code}, {s.get('stale_reason')})")
        code, _, _, err = apply(new)
        check(code == 2 and "stale" in err, "apply refuses a stale status (exit 2)")
        p = ibqos_run("status", "--status", os.path.join(work, "none.json"))
        check(p.returncode == 2 and "ibqos status:" in p.stderr, "no status: exit 2 with a message")
        for name, content in (("garbage", "{not json"), ("wrong-type", json.dumps(dict(old, in_force="yes"))),
                              ("no-pid", json.dumps({k: v for k, v in old.items() if k != "opensm_pid"}))):
            bad = os.path.join(work, name + ".json")
            with open(bad, "w") as f:
                f.write(content)
            p = ibqos_run("status", "--status", bad)
            check(p.returncode == 2 and "not a status file" in p.stderr and "internal" not in p.stderr,
                  f"a status file that is {name}: exit 2, said so ({p.returncode}: {p.stderr.strip()[:100]})")

        print("---- the SA of a stock OpenSM given NEW")
        stock = fabric.start_opensm({"qos": "TRUE", "qos_policy_file": new}, SM_GUID, SM_HOST, name="stock")
        stock.wait_for("SUBNET UP", 1, 30)
        check(answers() == applied_answers, "it answers as the plugin did after apply")
        stock.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    args.probe = os.path.abspath(args.probe)
    if not simfabric.available():
        print("SKIP: ibsim, OpenSM or libumad2sim missing")
        return 77
    with tempfile.TemporaryDirectory(prefix="ibqos-apply-") as work:
        run(args, work)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
