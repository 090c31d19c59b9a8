#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real `ibqos-agent run` (as root) against another local user (uid 65534, through setpriv).

As that user: 200,000 QP reports on invented devices and QP numbers must steer nothing, leave
the agent's peak memory and its log bounded (rate-limited lines, with counts of what was held
back); 1,100 connections held open must not keep a third user's `ibqos-agent status` out; a
claim on any QP number is refused and logged. Prints the agent's VmHWM, VmRSS and log lines.
Skipped (exit 77) unless run as root with setpriv. Every process started is stopped by its pid.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--agent", required=True)
ap.add_argument("--policy", required=True)
ap.add_argument("--reports", type=int, default=200000)
ap.add_argument("--connections", type=int, default=1100)
args = ap.parse_args()

NOBODY = 65534
OTHER_USER = 65533  # a second unprivileged user, with no name
MAX_GROWTH_KB = 16 * 1024  # what 200,000 refused reports may add to the agent's peak memory
MAX_LOG_LINES = 200
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        failures.append(message)


if os.geteuid() != 0 or not shutil.which("setpriv"):
    print("skipped: needs root and setpriv to act as another user")
    sys.exit(77)


def as_user(uid, argv, **kw):
    return ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups"] + argv


# The other user's programs, given on the command line (nothing for them to read on disk).
FLOOD = r"""
import socket, sys
path, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
sent = 0
for i in range(count):
    if i % 2:  # an audit difference on an invented path: summarized, never one line each
        m = "ibqos1 ah pid=%d dev=fake%d port=1 dlid=0x%04x sl=0 mode=audit outcome=differs " \
            "app-sl=0 sa-sl=2" % (i + 1, i % 50000, 1 + i % 49151)
    else:  # a QP on an invented device: refused, the kernel knows no such QP
        m = "ibqos1 rtr pid=%d dev=fake%d port=1 dlid=0x0005 qpn=0x%06x type=rc sl=2 leaf=bulk " \
            "attached=1 mode=audit outcome=differs app-sl=0 sa-sl=2" % (i + 1, i % 50000, i % 0xffffff)
    try:
        s.send(m.encode())
        sent += 1
    except OSError:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # dropped: come back
        s.connect(path)
print(sent, flush=True)
"""

HOLD = r"""
import resource, socket, sys, time
path, count = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
deadline = time.monotonic() + 60
for i in range(count):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    while True:
        try:
            s.connect(path)
            held.append(s)
            break
        except BlockingIOError:  # the agent's backlog is full: it drains it, try again
            if time.monotonic() > deadline:
                s.close()
                break
            time.sleep(0.001)
        except OSError:
            s.close()
            break
time.sleep(1)  # the agent accepts (or refuses) every one
alive = 0
for s in held:
    s.setblocking(False)
    try:
        alive += s.recv(16) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(len(held), alive, flush=True)
sys.stdin.readline()  # hold them until told
"""

CLAIM = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
for qpn in (1, 2, 0x20):  # the kernel's first QPs, and any other user's number
    s.send(("ibqos1 rtr pid=1 dev=mlx5_0 qpn=0x%06x type=rc sl=2 leaf=bulk attached=1" % qpn).encode())
s.send(b"ibqos1 status")
while not s.recv(1024).startswith(b"ibqos1 end"):
    pass
"""


def memory_kb(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
    return out


def agent_env():
    """The agent's environment. Under AddressSanitizer (scripts/test's second build) its quarantine
    of freed memory is kept to 1 MB, so that peak memory measures what the agent holds, not what
    the sanitizer keeps back to catch use after free."""
    env = dict(os.environ)
    if env.get("ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=1"
    return env


def status(sock, uid):
    return subprocess.run(as_user(uid, [args.agent, "status", "--socket", sock, "--timeout", "5000",
                                        "--json"]), capture_output=True, text=True, timeout=30)


scratch = tempfile.mkdtemp(prefix="ibqos-hostile-")
os.chmod(scratch, 0o755)  # the other users reach the socket, as under /run/ibqos
sock = os.path.join(scratch, "agent.sock")
log_path = os.path.join(scratch, "agent.log")
started = []
agent = None
try:
    with open(log_path, "w") as log:
        agent = subprocess.Popen([args.agent, "run", args.policy, "--socket", sock,
                                  "--plan", os.path.join(scratch, "host-plan"),
                                  "--path-table", os.path.join(scratch, "path-table"),
                                  "--pcc", "simulated"],
                                 stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                                 env=agent_env())
    started.append(agent)
    for _ in range(200):
        if os.path.exists(sock) and status(sock, 0).returncode == 0:
            break
        time.sleep(0.05)
    check(status(sock, 0).returncode == 0, "the agent serves its socket")
    before = memory_kb(agent.pid)

    # The flood.
    t0 = time.monotonic()
    flood = subprocess.run(as_user(NOBODY, [sys.executable, "-c", FLOOD, sock, str(args.reports)]),
                           capture_output=True, text=True, timeout=600)
    check(flood.returncode == 0 and flood.stdout.strip() == str(args.reports),
          "uid %d sent %d reports (%s)" % (NOBODY, args.reports, flood.stdout.strip() or flood.stderr[-300:]))
    answer = status(sock, 0)  # answered after every report was read
    elapsed = time.monotonic() - t0
    check(answer.returncode == 0 and '"qps":[]' in answer.stdout.replace(" ", ""),
          "no invented QP is tracked after the flood")
    after = memory_kb(agent.pid)
    with open(log_path) as f:
        lines = f.read().splitlines()
    print("measured: %d reports from uid %d in %.1f s: agent VmHWM %d kB -> %d kB, VmRSS %d kB -> %d kB, "
          "%d log lines" % (args.reports, NOBODY, elapsed, before["VmHWM"], after["VmHWM"], before["VmRSS"],
                            after["VmRSS"], len(lines)), flush=True)
    check(after["VmHWM"] - before["VmHWM"] <= MAX_GROWTH_KB,
          "the agent's peak memory grew by %d kB (at most %d)" % (after["VmHWM"] - before["VmHWM"], MAX_GROWTH_KB))
    check(len(lines) <= MAX_LOG_LINES, "the log holds %d lines (at most %d)" % (len(lines), MAX_LOG_LINES))
    check(any("refused: pid" in l and "uid %d" % NOBODY in l for l in lines),
          "the refused reports are logged with the user's uid")
    check(any(l.startswith("ibqos-agent: audit: pid") for l in lines),
          "audit differences are logged, up to the log's budget")

    # The lock-out attempt: nobody holds connections, a third user asks for the status.
    hold = subprocess.Popen(as_user(NOBODY, [sys.executable, "-c", HOLD, sock, str(args.connections)]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started.append(hold)
    held = hold.stdout.readline().split()
    check(len(held) == 2, "uid %d opened its connections (%s)" % (NOBODY, " ".join(held)))
    if len(held) == 2:
        print("measured: uid %d connected %s times, %s connections stayed open" % (NOBODY, held[0], held[1]))
        check(int(held[1]) < args.connections, "the agent refused part of %d connections" % args.connections)
    other = status(sock, OTHER_USER)
    check(other.returncode == 0, "uid %d's `ibqos-agent status` works meanwhile (exit %d%s)"
          % (OTHER_USER, other.returncode, (": " + other.stderr.strip()) if other.returncode else ""))
    hold.stdin.write("\n")
    hold.stdin.flush()
    hold.wait(timeout=30)
    with open(log_path) as f:
        lines = f.read().splitlines()
    check(any("uid %d: connection refused" % NOBODY in l for l in lines),
          "the refused connections are logged with the user's uid")

    # A claim on QPs that are not the user's.
    claim = subprocess.run(as_user(NOBODY, [sys.executable, "-c", CLAIM, sock]), capture_output=True,
                           text=True, timeout=60)
    check(claim.returncode == 0, "uid %d's claims were read" % NOBODY)
    answer = status(sock, 0)
    check(answer.returncode == 0 and '"qps":[]' in answer.stdout.replace(" ", ""),
          "no claimed QP is on a PCC slot")

    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    with open(log_path) as f:
        lines = f.read().splitlines()
    check(any("audit differences:" in l and "were not written" in l for l in lines),
          "the audit differences past the budget are summarized with their count")
    check(any("refused for a limit:" in l and "were not written" in l for l in lines),
          "the refused connections past the first line are summarized with their count")
    print("measured: %d log lines in all, the agent stopped; the log:" % len(lines))
    for line in lines:
        print("    " + line)
finally:
    for p in reversed(started):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if agent is not None:
        check(agent.returncode == 0, "the agent stopped cleanly on SIGTERM")
    shutil.rmtree(scratch, ignore_errors=True)

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
