#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of the host side against a real OpenSM on ibsim.

OpenSM with the ibqos plugin serves samples/policies/host-sched.conf, with two rules added that
put the ports of Hca3 and Hca4 on other SLs than 0 for every request. From another host,
`ibqos-agent resolve` asks the SA for paths with several ServiceIDs and QoS classes: its SLs must
equal what `ibqos query` answers offline and what `saquery -p` gets for the same requests, and
its leaves and PCC slots must follow the policy's host plan. Then a running `ibqos-agent run` hears
from a program whose QPs go through RTR with those SLs under libibqos_preload.so (the
recording stand-in below it, the simulated scheduling backend), and `ibqos-agent status`
must show each QP on its leaf and slot, and forget it on destroy or when its process dies.

SL enforcement: an agent running on Hca2 (through libumad2sim, asking the real SA) serves a
program that hard-codes SL 0 for RC QPs and a UD address handle to each other host. With the
policy's sl-enforcement block in respect mode nothing changes and nothing is asked; in audit
mode the SLs stay 0 and every QP whose SL differs from the SA's is reported (status and log); in
enforce mode the verbs calls below the library get the SA's SL (the one saquery and
`ibqos query` give for the same path), and the QPs are on that SL's leaf and PCC slot. With the
agent stopped the program still connects, on its own SL.
Exit status 77 (skipped) when ibsim or OpenSM are not installed.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--agent", required=True)
ap.add_argument("--preload", required=True)
ap.add_argument("--driver", required=True)
ap.add_argument("--ibqos", required=True)
ap.add_argument("--plugin-dir", required=True)
ap.add_argument("--source-root", required=True)
args = ap.parse_args()
for name in ("agent", "preload", "driver", "ibqos", "plugin_dir", "source_root"):
    setattr(args, name, os.path.abspath(getattr(args, name)))

sys.path.insert(0, os.path.join(args.source_root, "tests", "fabric"))
import simfabric  # noqa: E402

if not simfabric.available():
    print("skipped: ibsim, OpenSM or libumad2sim is not installed")
    sys.exit(77)

SAMPLE = os.path.join(args.source_root, "samples", "policies", "host-sched.conf")
NET = os.path.join(args.source_root, "samples", "fabrics", "two-switch.net")
# The second agent's refresh age (seconds): its table serves an answer this long, and the test
# checks that a second process reads it within that time (a sanitizer build under load starts
# processes slowly), then waits past it to see the answers asked again.
REFRESH_S = 5
failures = []
processes = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def spawn(argv, **kwargs):
    p = subprocess.Popen(argv, preexec_fn=simfabric._die_with_parent, **kwargs)
    processes.append(p)
    return p


def stop(p, sig=signal.SIGTERM, timeout=10):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


def agent(*argv, host=None, fabric=None, check_rc=None):
    command = [args.agent] + list(argv)
    if fabric:
        return fabric.tool(command, host, check=False)
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def status(sock):
    p = agent("status", "--socket", sock, "--json")
    if p.returncode != 0:
        raise RuntimeError("ibqos-agent status failed: " + p.stderr)
    return json.loads(p.stdout)["qps"]


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def read_until(stream, marker, timeout=20.0):
    """Lines of the driver's stdout up to the one holding marker."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if marker in line:
            return seen
    raise RuntimeError(f"no {marker!r} from the driver; it said:\n" + "\n".join(seen))


scratch = tempfile.mkdtemp(prefix="ibqos-e2e-host-")
# The verbs stand-in records the QPs it makes here, and the agent's test build reads them as the
# product reads the kernel's QP owners (rdma netlink).
os.environ["STANDIN_QP_OWNERS"] = os.path.join(scratch, "qp-owners")
# The sample, with the storage servers (Hca3) and the MPI nodes (Hca4) on their own SLs for
# every request no earlier rule takes: what an application that never asks the SA misses.
DESTINATION_RULES = """
port-groups
    port-group
        name: storage-servers
        port-name: Hca3/P1
    end-port-group
    port-group
        name: mpi-nodes
        port-name: Hca4/P1
    end-port-group
end-port-groups

qos-match-rules
    qos-match-rule
        destination: storage-servers
        qos-level-name: storage
    end-qos-match-rule
    qos-match-rule
        destination: mpi-nodes
        qos-level-name: mpi
    end-qos-match-rule
end-qos-match-rules
"""
POLICY = os.path.join(scratch, "host-sched.conf")
with open(SAMPLE) as f:
    SAMPLE_TEXT = f.read()
with open(POLICY, "w") as f:
    f.write(SAMPLE_TEXT + DESTINATION_RULES)


def enforcing_policy(path, mode):
    """The policy with an sl-enforcement block for the test's program."""
    block = ("    sl-enforcement\n        mode: %s\n        programs: preload-driver\n"
             "        resolve-timeout: 1000\n    end-sl-enforcement\nend-host-sched\n" % mode)
    with open(path, "w") as f:
        f.write(SAMPLE_TEXT.replace("end-host-sched\n", block) + DESTINATION_RULES)


try:
    plan = json.loads(agent("plan", POLICY, "--json").stdout)
    slots = {}
    for s in plan["pcc_slots"]:
        for leaf in s["leaves"]:
            slots[leaf] = (s["slot"], s["algorithm"])

    os.makedirs(os.path.join(scratch, "fabric"))
    with simfabric.SimFabric(NET, workdir=os.path.join(scratch, "fabric")) as fabric:
        osm = fabric.start_opensm({"event_plugin_name": "ibqos_osm", "event_plugin_options": "policy=" + POLICY},
                                  "0x0000000000100001", "Hca1", plugin_dir=args.plugin_dir)
        check(osm.count("IBQOS-0010") == 1 and "ERR AC" not in osm.log(), "OpenSM has the policy in force")
        topology = os.path.join(scratch, "fabric.ibnetdiscover")
        with open(topology, "w") as f:
            f.write(fabric.tool(["ibnetdiscover"], "Hca2").stdout)

        # The hosts and their LIDs (NodeDescription by LID through SMPs).
        lids = {}
        for lid in range(1, 16):
            p = fabric.tool(["smpquery", "nodedesc", str(lid)], "Hca2", check=False)
            m = re.search(r"Node Description:\.+(\S+)", p.stdout)
            if m:
                lids[m.group(1)] = lid
        guid3 = re.search(r"PortGuid:\.+(0x[0-9a-f]+)",
                          fabric.tool(["smpquery", "nodeinfo", str(lids["Hca3"])], "Hca2").stdout).group(1)
        me = lids["Hca2"]

        # Requests: (ServiceID, QoS class); the SL the policy gives each is in the comment.
        requests = [
            (None, None),       # default: 0
            ("0x10005", None),  # storage: 2
            ("0x1ffff", None),  # storage: 2
            (None, "3"),        # mpi: 3
            ("0x20001", "5"),   # training: 4
            ("0x20001", None),  # no class: default 0
            (None, "7"),        # management: 1
            ("0x10000", "3"),   # the storage rule comes first: 2
        ]
        resolved = {}
        for dst in ("Hca1", "Hca3", "Hca4"):
            for service, qos in requests:
                extra, sq = [], ["saquery", "-p", "--slid", str(me), "--dlid", str(lids[dst])]
                if service:
                    extra += ["--service-id", service]
                    sq += ["--service_id", service]
                if qos:
                    extra += ["--qos-class", qos]
                    sq += ["-Q", qos]
                offline = subprocess.run([args.ibqos, "query", POLICY, "--topology", topology, "--sm", "0x100001",
                                          "--src", str(me), "--dst", str(lids[dst]), "--json", *extra],
                                         capture_output=True, text=True, timeout=60)
                p = agent("resolve", POLICY, "--dst", str(lids[dst]), "--json", *extra,
                          host="Hca2", fabric=fabric)
                record = simfabric.parse_pathrecord(fabric.tool(sq, "Hca2").stdout)
                what = f"to {dst} service-id {service} qos-class {qos}"
                if p.returncode != 0 or record is None:
                    check(False, f"resolve {what}: exit {p.returncode} {p.stderr.strip()}, saquery {record}")
                    continue
                answer = json.loads(p.stdout)
                sl = answer["sl"]
                check(sl == int(record["sl"], 0), f"resolve {what}: SL {sl} equals saquery's {record['sl']}")
                offline_sl = json.loads(offline.stdout)["sl"] if offline.returncode == 0 else offline.stderr.strip()
                check(offline_sl == sl, f"  and ibqos query's SL {offline_sl}")
                leaf = plan["sl_to_leaf"][sl]
                check((answer["leaf"] or {}).get("name") == leaf, f"  leaf {answer['leaf'] and answer['leaf']['name']} "
                      f"is the plan's leaf for SL {sl} ({leaf})")
                expected_slot = slots.get(leaf, (None, None))
                check((answer["pcc_slot"], answer["pcc_algorithm"]) == expected_slot,
                      f"  pcc-slot {answer['pcc_slot']} {answer['pcc_algorithm']} follows the plan {expected_slot}")
                check(answer["path"]["slid"] == me and answer["path"]["dlid"] == lids[dst], "  the path is ours")
                # Quantities have the types `ibqos query` gives them: a PKey is a number, MTU and
                # rate the IB enums, with their readable companions.
                path = answer["path"]
                check(path["pkey"] == int(record["pkey"], 0) and path["mtu"] == int(record["mtu"], 0) & 0x3f
                      and path["mtu_bytes"] == 128 << path["mtu"] and isinstance(path["rate_gbps"], (int, float))
                      and path["rate_gbps"] > 0,
                      f"  pkey {path['pkey']} (a number), mtu {path['mtu']} = {path['mtu_bytes']} bytes, "
                      f"rate {path['rate']} = {path['rate_gbps']} Gb/s, as saquery's")
                resolved[(service, qos)] = sl

        # A port GUID asks by GID and gets the same level (the policy given the older way).
        p = agent("resolve", "--policy", POLICY, "--dst", guid3, "--qos-class", "3", "--json", host="Hca2",
                  fabric=fabric)
        check(p.returncode == 0 and json.loads(p.stdout)["sl"] == resolved[(None, "3")],
              f"resolve by port GUID {guid3} gives the same SL as by LID")
        # An SL the policy contradicts: no path (as saquery: an empty answer), exit 1.
        p = agent("resolve", "--policy", POLICY, "--dst", str(lids["Hca1"]), "--qos-class", "3", "--sl", "5",
                  "--json", host="Hca2", fabric=fabric)
        sq = fabric.tool(["saquery", "-p", "--slid", str(me), "--dlid", str(lids["Hca1"]), "-Q", "3", "--sl", "5"],
                         "Hca2", check=False)
        check(p.returncode == 1 and json.loads(p.stdout)["status"] == "no-path" and
              simfabric.parse_pathrecord(sq.stdout) is None,
              "an SL the policy contradicts: no path, exit 1, like saquery's empty answer")
        p = agent("resolve", "--policy", POLICY, "--dst", str(lids["Hca1"]), "--qos-class", "3", "--sl", "3",
                  host="Hca2", fabric=fabric)
        check(p.returncode == 0 and p.stdout.startswith("sl 3\nleaf mpi"), "asking for the policy's own SL works")
        # A kernel ULP's ServiceID (NFS over RDMA, RDMA-CM TCP port 20049): the SA's SL, and no
        # leaf or slot, with the reason (kernel QPs are never attached to either).
        sq = fabric.tool(["saquery", "-p", "--slid", str(me), "--dlid", str(lids["Hca1"]), "--service_id",
                          "0x1064e51"], "Hca2")
        record = simfabric.parse_pathrecord(sq.stdout)
        p = agent("resolve", POLICY, "--dst", str(lids["Hca1"]), "--service-id", "0x1064e51", "--json",
                  host="Hca2", fabric=fabric)
        answer = json.loads(p.stdout) if p.returncode == 0 else {}
        check(record is not None and answer.get("sl") == int(record["sl"], 0) and answer.get("leaf") is None
              and answer.get("pcc_slot") is None and answer.get("kernel_ulp") == "NFS over RDMA"
              and "kernel" in answer.get("reason", ""),
              f"resolve of NFS over RDMA's ServiceID: the SA's SL, leaf and pcc_slot null with a reason ({answer})")
        p = agent("resolve", POLICY, "--dst", str(lids["Hca1"]), "--service-id", "0x10603db", host="Hca2",
                  fabric=fabric)
        lines = p.stdout.splitlines()
        check(p.returncode == 0 and len(lines) > 2 and lines[1].startswith("leaf none (ServiceID 0x10603db is Lustre")
              and lines[2].startswith("pcc-slot none (kernel"),
              f"resolve of Lustre's ServiceID in text says no leaf and no slot, and why ({lines[:3]})")

        # The daemon and the preload library.
        sock = os.path.join(scratch, "agent.sock")
        plan_path = os.path.join(scratch, "host-plan")
        agent_log = open(os.path.join(scratch, "agent.log"), "w+")
        daemon = spawn([args.agent, "run", "--policy", POLICY, "--socket", sock, "--plan", plan_path, "--pcc", "simulated",
                        "--path-table", os.path.join(scratch, "path-table")],
                       cwd=scratch, stdin=subprocess.DEVNULL, stdout=agent_log, stderr=subprocess.STDOUT)
        check(wait_until(lambda: os.path.exists(sock)), "the agent serves its socket")
        check(os.path.exists(plan_path), "the agent wrote the compiled host plan the library reads")
        env = dict(os.environ, LD_PRELOAD=simfabric.ld_preload(args.preload), IBQOS_PLAN=plan_path, IBQOS_AGENT_SOCKET=sock,
                   IBQOS_SCHED_BACKEND="simulated")
        env.pop("SIM_HOST", None)
        sls = sorted(set(resolved.values()))
        steps = ["open", "mlx5_0"]
        for i, sl in enumerate(sls):
            qpn = 0x100 + i
            steps += ["qp", "mlx5_0", hex(qpn), "rc", "rtr", hex(qpn), str(sl), "rts", hex(qpn)]
        steps += ["wait"] + sum((["destroy", hex(0x100 + i)] for i in range(len(sls))), []) + ["wait"]
        driver = spawn([args.driver] + steps, cwd=scratch, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
        read_until(driver.stdout, "driver: waiting")
        qps = wait_until(lambda: len(status(sock)) == len(sls) and status(sock))
        check(len(qps or []) == len(sls), f"the agent knows the {len(sls)} QPs that reached RTR")
        for q in qps or []:
            sl = q["sl"]
            leaf = plan["sl_to_leaf"][sl]
            check(q["pid"] == driver.pid and q["device"] == "mlx5_0" and q["attached"],
                  f"QP {q['qpn']:#x} (SL {sl}) was attached by the preloaded process {driver.pid}")
            check(q["leaf"] == leaf, f"  on leaf {q['leaf']}, the plan's leaf for SL {sl} ({leaf})")
            check((q["pcc_slot"], q["pcc_algorithm"]) == slots.get(leaf, (None, None)),
                  f"  with pcc-slot {q['pcc_slot']} {q['pcc_algorithm']}")
        driver.stdin.write("\n")
        driver.stdin.flush()
        read_until(driver.stdout, "driver: waiting")
        check(wait_until(lambda: status(sock) == []), "destroyed QPs are forgotten")
        driver.stdin.write("\n")
        driver.stdin.flush()
        check(driver.wait(10) == 0 and driver.stderr.read() == "", "the program ran undisturbed and silent")

        # A process that dies with live QPs, and a client that sends garbage.
        victim = spawn([args.driver, "open", "mlx5_0", "qp", "mlx5_0", "0x300", "rc", "rtr", "0x300", "2", "wait"],
                       cwd=scratch, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        read_until(victim.stdout, "driver: waiting")
        check(wait_until(lambda: len(status(sock)) == 1), "a QP of a second process is known")
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.connect(sock)
            for junk in (b"\x00" * 64, b"ibqos1 rtr pid=1 dev=x", os.urandom(900), b"x" * 4000):
                s.send(junk)
        stop(victim, signal.SIGKILL)
        check(wait_until(lambda: status(sock) == []), "the QPs of a killed process are forgotten")
        check(daemon.poll() is None, "the agent survives garbage and vanishing clients")

        check(stop(daemon) == 0, "SIGTERM stops the agent cleanly (exit 0)")
        check(not os.path.exists(sock), "the agent removes its socket")
        agent_log.seek(0)
        log = agent_log.read()
        check("message ignored" in log and "stopping on SIGTERM" in log, "the agent logged the garbage and its stop")

        # SL enforcement: an agent on Hca2 that asks the real SA, a program that hard-codes SL 0.
        expected = {}
        for dst in ("Hca1", "Hca3", "Hca4"):
            record = simfabric.parse_pathrecord(
                fabric.tool(["saquery", "-p", "--slid", str(me), "--dlid", str(lids[dst])], "Hca2").stdout)
            offline = subprocess.run([args.ibqos, "query", POLICY, "--topology", topology, "--sm", "0x100001",
                                      "--src", str(me), "--dst", str(lids[dst]), "--json"],
                                     capture_output=True, text=True, timeout=60)
            expected[dst] = int(record["sl"], 0)
            check(offline.returncode == 0 and json.loads(offline.stdout)["sl"] == expected[dst],
                  f"a plain request to {dst}: saquery and ibqos query both give SL {expected[dst]}")
        check(expected["Hca3"] == 2 and expected["Hca4"] == 3 and expected["Hca1"] == 0,
              f"the destination rules are in force ({expected})")
        enforced_policy = os.path.join(scratch, "enforcing.conf")
        enforcing_policy(enforced_policy, "respect")
        sock2 = os.path.join(scratch, "agent2.sock")
        plan2 = os.path.join(scratch, "host-plan2")
        agent2_log = open(os.path.join(scratch, "agent2.log"), "w+")
        table2 = os.path.join(scratch, "path-table2")
        agent2 = spawn([args.agent, "run", "--policy", enforced_policy, "--socket", sock2, "--plan", plan2,
                        "--path-table", table2,
                        "--pcc", "simulated", "--cache-refresh", str(REFRESH_S)], cwd=scratch, stdin=subprocess.DEVNULL,
                       stdout=agent2_log,
                       stderr=subprocess.STDOUT, env=fabric.env("Hca2", ours=True))
        check(wait_until(lambda: os.path.exists(sock2)), "an agent on Hca2 serves its socket")
        check(os.path.exists(table2), "the agent publishes its answers' table")
        env2 = dict(env, IBQOS_PLAN=plan2, IBQOS_AGENT_SOCKET=sock2, IBQOS_PATH_TABLE=table2, STANDIN_LID=str(me))
        env2.pop("IBQOS_SL_ENFORCEMENT", None)
        qpn = {"Hca1": 0x500, "Hca3": 0x501, "Hca4": 0x502}

        def run_hardcoded(environment):
            """The program: SL 0 on an RC QP to each host and a UD address handle to Hca3 and
            Hca4. Returns (stand-in lines, status QPs, counters, stderr)."""
            steps = ["open", "ibsim0"]
            for dst, n in qpn.items():
                steps += ["qp", "ibsim0", hex(n), "rc", "rtr-to", hex(n), str(lids[dst]), "0", "rts", hex(n)]
            steps += ["ah", "ibsim0", str(lids["Hca3"]), "0", "ah", "ibsim0", str(lids["Hca4"]), "0", "wait"]
            p = spawn([args.driver] + steps, cwd=scratch, env=environment, stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = read_until(p.stdout, "driver: waiting", timeout=60)
            qps, counters = [], None
            if os.path.exists(sock2) and agent2.poll() is None:
                qps = wait_until(lambda: len(status(sock2)) == 3 and status(sock2)) or []
                counters = json.loads(agent("status", "--socket", sock2, "--json").stdout)["counters"]
            p.stdin.write("\n")
            p.stdin.flush()
            lines += p.stdout.read().splitlines()
            p.wait(10)
            return lines, {q["qpn"]: q for q in qps}, counters, p.stderr.read(), p.returncode

        def rtr_sl(lines, n):
            for line in lines:
                m = re.search(r"ibv_modify_qp qpn=%d .*state=RTR sl=(\d+) -> 0" % n, line)
                if m:
                    return int(m.group(1))
            return None

        def ah_sl(lines, dst):
            for line in lines:
                m = re.search(r"ibv_create_ah dlid=%d sl=(\d+)" % lids[dst], line)
                if m:
                    return int(m.group(1))
            return None

        def reload_agent(mode):
            enforcing_policy(enforced_policy, mode)
            before = open(os.path.join(scratch, "agent2.log")).read().count("reloaded")
            agent2.send_signal(signal.SIGHUP)
            return wait_until(lambda: open(os.path.join(scratch, "agent2.log")).read().count("reloaded") > before)

        previous = None
        for mode in ("respect", "audit", "enforce"):
            if mode != "respect":
                check(reload_agent(mode), f"SIGHUP: the agent reloads the policy in {mode} mode")
            lines, qps, counters, stderr, rc = run_hardcoded(env2)
            check(rc == 0 and stderr == "", f"{mode}: the program ran undisturbed and silent ({rc}, {stderr!r})")
            for dst, n in qpn.items():
                sa_sl = expected[dst]
                want = sa_sl if mode == "enforce" else 0
                q = qps.get(n, {})
                check(rtr_sl(lines, n) == want, f"{mode}: the RTR to {dst} reaches the device on SL "
                      f"{rtr_sl(lines, n)} (expected {want}; the SA says {sa_sl})")
                check(q.get("sl") == want and q.get("mode") == mode and q.get("app_sl") == 0,
                      f"  status: SL {q.get('sl')}, mode {q.get('mode')}, app SL {q.get('app_sl')}")
                leaf = plan["sl_to_leaf"][want]
                check(q.get("leaf") == leaf and (q.get("pcc_slot"), q.get("pcc_algorithm")) == slots.get(leaf, (None, None)),
                      f"  on leaf {q.get('leaf')} and pcc-slot {q.get('pcc_slot')} of SL {want}")
                outcome = {"respect": None, "audit": "differs" if sa_sl else "agrees",
                           "enforce": "replaced" if sa_sl else "agrees"}[mode]
                check(q.get("outcome") == outcome and q.get("sa_sl") == (None if mode == "respect" else sa_sl),
                      f"  outcome {q.get('outcome')}, SA SL {q.get('sa_sl')}")
            for dst in ("Hca3", "Hca4"):
                want = expected[dst] if mode == "enforce" else 0
                check(ah_sl(lines, dst) == want, f"{mode}: the UD address handle to {dst} is made on SL {ah_sl(lines, dst)}")
            if previous is not None and counters is not None:
                delta = {k: counters[k] - previous[k] for k in counters}
                if mode == "audit":
                    check(delta["differs"] == 4 and delta["replaced"] == 0, f"audit: 4 differences counted ({delta})")
                if mode == "enforce":
                    check(delta["replaced"] == 4 and delta["no_answer"] == 0 and delta["resolves"] == 5,
                          f"enforce: 4 SLs replaced, none fell back, 5 paths resolved ({delta})")
                    check(delta["sa_queries"] == 5 and delta["cache_hits"] == 0,
                          f"  the reload emptied the cache: {delta['sa_queries']} SA queries, "
                          f"{delta['cache_hits']} cache hits")
            elif mode == "respect":
                check(counters is not None and counters["resolves"] == 0, f"respect: nothing asked ({counters})")
            previous = counters
        # Once more in enforce mode: every answer from the table the agent published.
        lines, qps, counters, stderr, rc = run_hardcoded(env2)
        delta = {k: counters[k] - previous[k] for k in counters} if counters and previous else {}
        check(delta.get("resolves") == 0 and delta.get("replaced") == 4 and rtr_sl(lines, qpn["Hca3"]) == 2,
              f"a second process reads the answers from the agent's table without asking ({delta})")
        shown = json.loads(agent("plan", enforced_policy, "--json").stdout)["sl_enforcement"]
        check(shown == [{"mode": "enforce", "programs": ["preload-driver"], "except_programs": [],
                         "resolve_timeout_ms": 1000}], f"ibqos-agent plan shows the block in force ({shown})")
        # OpenSM's policy changes (the storage servers move to the MPI level): answers older than
        # the refresh age are asked again, the change drops the cache, the next QPs follow it.
        with open(POLICY, "w") as f:
            f.write(SAMPLE_TEXT + DESTINATION_RULES.replace("storage-servers\n        qos-level-name: storage",
                                                            "storage-servers\n        qos-level-name: mpi"))
        osm.heavy_sweep()
        check(osm.count("IBQOS-0010") == 2, "OpenSM has the changed policy in force")
        time.sleep(REFRESH_S + 0.2)
        before = counters
        run_hardcoded(env2)  # still the cached answers; their paths are asked again
        changed = wait_until(lambda: json.loads(agent("status", "--socket", sock2, "--json").stdout)["counters"]
                             ["invalidations"] > before["invalidations"], timeout=15)
        check(changed, "the agent sees the SA answer a path differently and drops its cache")
        lines, qps, counters, stderr, rc = run_hardcoded(env2)
        check(rtr_sl(lines, qpn["Hca3"]) == 3 and qps.get(qpn["Hca3"], {}).get("leaf") == plan["sl_to_leaf"][3],
              f"the next QP to Hca3 is on the new SL {rtr_sl(lines, qpn['Hca3'])} and its leaf")
        agent2_log.seek(0)
        check(re.search(r"audit: pid \d+ \(preload-driver\) QP \d+ on ibsim0 to DLID %d uses SL 0; the SA "
                        r"answers SL 2" % lids["Hca3"], agent2_log.read()) is not None,
              "the agent logs each audited QP with its program, path and both SLs")
        # The agent stopped: the program connects on its own SL.
        check(stop(agent2) == 0, "the second agent stops cleanly")
        lines, qps, counters, stderr, rc = run_hardcoded(env2)
        check(rc == 0 and all(rtr_sl(lines, n) == 0 for n in qpn.values()) and ah_sl(lines, "Hca3") == 0,
              f"without the agent every QP connects on the application's SL 0 (exit {rc})")
        check("no agent at" in stderr, "  and the library says once that no agent answers")

        # An SA that does not answer: retries with backoff, then exit 2.
        osm.stop()
        started = time.monotonic()
        p = agent("resolve", "--policy", POLICY, "--dst", str(lids["Hca1"]), "--timeout", "100", "--retries", "2",
                  host="Hca2", fabric=fabric)
        elapsed = time.monotonic() - started
        check(p.returncode == 2 and "after 3 attempts (timeouts 100 ms, 200 ms, 400 ms)" in p.stderr,
              f"a silent SA: exit {p.returncode}, {p.stderr.strip()}")
        check(0.7 <= elapsed < 10, f"  the three attempts took their backoff ({elapsed:.2f} s)")
finally:
    for p in processes:
        stop(p, signal.SIGKILL)
    if not failures and not os.environ.get("IBQOS_KEEP_SCRATCH"):
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print("scratch kept in " + scratch)

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
