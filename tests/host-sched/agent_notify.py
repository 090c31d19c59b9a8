#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos-agent run` under a service manager: what systemd hears from a Type=notify unit.

The test plays systemd's part: it serves $NOTIFY_SOCKET (and $WATCHDOG_USEC) and starts the
daemon. READY=1 must come only once the agent's socket answers `ibqos-agent status`; a
watchdog ping must come at least every half interval; SIGHUP must give RELOADING=1 then
READY=1; SIGTERM STOPPING=1 and exit status 0. Without $WATCHDOG_USEC no ping may come.
"""
import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--agent", required=True)
ap.add_argument("--policy", required=True)
args = ap.parse_args()
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def receive(listener, timeout):
    """The next notification as a set of lines, or None after timeout seconds."""
    listener.settimeout(timeout)
    try:
        return set(listener.recv(4096).decode().split("\n"))
    except socket.timeout:
        return None


def wait_for(listener, line, timeout=10.0):
    """Reads notifications until one carries line; the ones before it, or None on timeout."""
    seen = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        message = receive(listener, left)
        if message is None:
            break
        if line in message:
            return seen, message
        seen.append(message)
    return seen, None


@contextlib.contextmanager
def daemon(scratch, env):
    """The agent serving SCRATCH/agent.sock, and a bound $NOTIFY_SOCKET listener; both gone after."""
    notify_path = os.path.join(scratch, "notify")
    if os.path.exists(notify_path):
        os.unlink(notify_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(notify_path)
    sock = os.path.join(scratch, "agent.sock")
    argv = [args.agent, "run", args.policy, "--socket", sock,
            "--plan", os.path.join(scratch, "host-plan"), "--path-table", os.path.join(scratch, "path-table"),
            "--pcc", "simulated"]
    p = subprocess.Popen(argv, env=dict(env, NOTIFY_SOCKET=notify_path), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        yield sock, p, listener
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        listener.close()


def status_answers(sock):
    r = subprocess.run([args.agent, "status", "--socket", sock, "--timeout", "2000"],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0


with tempfile.TemporaryDirectory(prefix="ibqos-notify-") as scratch:
    env = dict(os.environ, WATCHDOG_USEC="200000")
    env.pop("WATCHDOG_PID", None)
    with daemon(scratch, env) as (sock, p, listener):
        _, ready = wait_for(listener, "READY=1")
        check(ready is not None, "READY=1 arrives after the start")
        check(ready is not None and any(line.startswith("STATUS=serving " + sock) for line in ready),
              "READY=1 carries STATUS=serving SOCKET")
        check(status_answers(sock), "the socket answers `ibqos-agent status` once READY=1 is sent")

        started = time.monotonic()
        pings = 0
        while time.monotonic() - started < 1.0:
            message = receive(listener, 0.5)
            if message is None:
                break
            pings += "WATCHDOG=1" in message
        check(pings >= 4, f"WATCHDOG=1 at least every 100 ms for WATCHDOG_USEC=200000 ({pings} in 1 s)")

        p.send_signal(signal.SIGHUP)
        _, reloading = wait_for(listener, "RELOADING=1")
        check(reloading is not None, "SIGHUP: RELOADING=1")
        _, ready = wait_for(listener, "READY=1")
        check(ready is not None, "SIGHUP: READY=1 once the policy is read again")

        p.send_signal(signal.SIGTERM)
        _, stopping = wait_for(listener, "STOPPING=1")
        check(stopping is not None, "SIGTERM: STOPPING=1")
        check(p.wait(timeout=10) == 0, "SIGTERM: exit status 0")

    env.pop("WATCHDOG_USEC")
    with daemon(scratch, env) as (sock, p, listener):
        _, ready = wait_for(listener, "READY=1")
        check(ready is not None, "without a watchdog: READY=1")
        message = receive(listener, 0.5)
        check(message is None or "WATCHDOG=1" not in message, "without WATCHDOG_USEC: no ping")
        p.send_signal(signal.SIGTERM)
        check(p.wait(timeout=10) == 0, "without a watchdog: SIGTERM gives exit status 0")

sys.exit(1 if failures else 0)
