# SPDX-License-Identifier: MIT
"""A simulated InfiniBand fabric for end-to-end tests: ibsim, real OpenSM instances and the
infiniband-diags tools, each run from a scratch directory with a unique IBSIM_SOCKNAME, and all
stopped by PID when the test ends, even when it fails or is killed.

    with SimFabric("net") as fabric:
        osm = fabric.start_opensm({"qos": "TRUE"})
        print(fabric.tool(["smpquery", "sl2vl", "1", "1"]))
"""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _die_with_parent():
    # A child must not outlive a harness that is killed outright.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)


def _report(output, size=6000):
    """The part of a process's output worth showing: a sanitizer's report from its start."""
    start = output.find("ERROR: ")
    if start < 0:
        return output[-size:]
    return output[output.rfind("\n", 0, start) + 1:][:size]


def available():
    """Whether ibsim, OpenSM and the simulator library are installed."""
    return all(shutil.which(t) for t in ("ibsim", "opensm", "smpquery", "saquery")) and os.path.exists(UMAD2SIM)


class FabricError(RuntimeError):
    pass


class OpenSM:
    """One OpenSM process on the simulated fabric."""

    def __init__(self, fabric, name, process, conf_path, log_path):
        self.fabric = fabric
        self.name = name
        self.process = process
        self.conf_path = conf_path
        self.log_path = log_path

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def output(self):
        """What the process wrote on stdout and stderr (a sanitizer's report lands there)."""
        try:
            with open(os.path.join(os.path.dirname(self.log_path), "opensm.out"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def count(self, text):
        return self.log().count(text)

    def wait_for(self, text, count=1, timeout=30.0):
        """Waits until the log holds text at least count times."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count(text) >= count:
                return
            if self.process.poll() is not None:
                raise FabricError(f"{self.name} exited ({self.process.returncode}) while waiting for {text!r}:\n"
                                  + self.log()[-2000:] + "\n---- its output:\n" + _report(self.output()))
            time.sleep(0.05)
        raise FabricError(f"{self.name}: no {text!r} (x{count}) within {timeout}s:\n" + self.log()[-3000:])

    def heavy_sweep(self, timeout=30.0):
        """Forces a heavy sweep (SIGHUP) and waits until the subnet is up again; returns the
        seconds that took."""
        before = self.count("SUBNET UP")
        start = time.monotonic()
        self.process.send_signal(signal.SIGHUP)
        self.wait_for("SUBNET UP", before + 1, timeout)
        return time.monotonic() - start

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=10.0):
        _stop(self.process, timeout)


def _stop(process, timeout):
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def ld_preload(*libraries, ours=True):
    """LD_PRELOAD for a process: the given libraries (None skipped), after the sanitizer runtime
    when the process loads our code (OpenSM with the plugin, our own programs) in a sanitizer
    build: scripts/test sets IBQOS_SANITIZER_PRELOAD, and that runtime must come first. Other
    programs (a stock OpenSM, the diags tools) run as they are."""
    sanitizer = os.environ.get("IBQOS_SANITIZER_PRELOAD") if ours else None
    return " ".join(p for p in (sanitizer,) + libraries if p)


class SimFabric:
    """ibsim running one topology, plus the OpenSMs and tools of one test."""

    _serial = 0

    def __init__(self, net_path, workdir=None, console=False):
        SimFabric._serial += 1
        self.net_path = os.path.abspath(net_path)
        # A scratch directory made here is removed on close; IBQOS_KEEP_WORKDIR=1 keeps it (logs).
        self._made_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="ibqos-fabric-")
        self.sockname = f"ibqos{os.getpid()}x{SimFabric._serial}x{int(time.time() * 1000) % 100000}"
        self.console = console
        self.ibsim = None
        self.opensms = []
        self._old_handlers = {}

    # -- lifetime ---------------------------------------------------------------------------
    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, _raise_exit)
        try:
            self.start_ibsim()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for osm in self.opensms:
            osm.stop()
        if self.ibsim is not None:
            if self.console and self.ibsim.stdin:
                try:
                    self.ibsim.stdin.close()
                except OSError:
                    pass
            _stop(self.ibsim, 5.0)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()
        if self._made_workdir and not os.environ.get("IBQOS_KEEP_WORKDIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def env(self, host=None, preload=None, extra=None, ours=False):
        env = dict(os.environ)
        env["IBSIM_SOCKNAME"] = self.sockname
        env["LD_PRELOAD"] = ld_preload(preload, UMAD2SIM, ours=ours)
        if host:
            env["SIM_HOST"] = host
        env.update(extra or {})
        return env

    def start_ibsim(self):
        log = open(os.path.join(self.workdir, "ibsim.log"), "w")
        args = ["ibsim", "-s"] + ([] if self.console else ["-n"]) + [self.net_path]
        env = dict(os.environ, IBSIM_SOCKNAME=self.sockname)
        self.ibsim = subprocess.Popen(args, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.PIPE if self.console else subprocess.DEVNULL,
                                      preexec_fn=_die_with_parent)
        # ibsim is ready once its socket answers; probe with a harmless tool run.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.ibsim.poll() is not None:
                raise FabricError("ibsim exited:\n" + open(os.path.join(self.workdir, "ibsim.log")).read())
            if "MaxNetNodes" in open(os.path.join(self.workdir, "ibsim.log")).read():
                time.sleep(0.2)
                return
            time.sleep(0.05)
        raise FabricError("ibsim did not start")

    def send_console(self, command):
        """An ibsim console command: 'Unlink "H4"', 'ReLink "H4"'."""
        if not self.console:
            raise FabricError("start SimFabric with console=True to use the ibsim console")
        self.ibsim.stdin.write((command + "\n").encode())
        self.ibsim.stdin.flush()

    def start_opensm(self, options, sm_guid, host, name=None, plugin_dir=None, wait=True, preload=None,
                     extra_env=None, timeout=30.0, wrapper=()):
        """Starts OpenSM attached to node `host` with the given opensm.conf options (a dict);
        `wrapper` is a command it runs under (valgrind, say)."""
        name = name or f"opensm{len(self.opensms) + 1}"
        directory = os.path.join(self.workdir, name)
        os.makedirs(os.path.join(directory, "cache"), exist_ok=True)
        conf = dict({"guid": sm_guid, "force_log_flush": "TRUE"}, **options)
        conf_path = os.path.join(directory, "opensm.conf")
        with open(conf_path, "w") as f:
            for key, value in conf.items():
                f.write(f"{key} {value}\n")
        log_path = os.path.join(directory, "opensm.log")
        extra = {"OSM_CACHE_DIR": os.path.join(directory, "cache"), "OSM_TMP_DIR": os.path.join(directory, "cache")}
        if plugin_dir:
            extra["LD_LIBRARY_PATH"] = plugin_dir
        extra.update(extra_env or {})
        out = open(os.path.join(directory, "opensm.out"), "w")
        process = subprocess.Popen([*wrapper, "opensm", "-F", conf_path, "-f", log_path], cwd=directory,
                                   env=self.env(host, preload, extra, ours=plugin_dir is not None),
                                   stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        osm = OpenSM(self, name, process, conf_path, log_path)
        self.opensms.append(osm)
        if wait:
            osm.wait_for("SUBNET UP", 1, timeout)
        return osm

    def tool(self, args, host, timeout=30.0, check=True, preload=None, extra_env=None, input=None):
        """Runs a client (an infiniband-diags tool, or ours) attached to node `host`."""
        ours = not os.path.realpath(shutil.which(args[0]) or args[0]).startswith("/usr/")
        p = subprocess.run(args, cwd=self.workdir, env=self.env(host, preload, extra_env, ours), capture_output=True,
                           text=True, timeout=timeout, preexec_fn=_die_with_parent, input=input)
        if check and p.returncode != 0:
            raise FabricError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
        return p


# -- parsers of the tools' output ----------------------------------------------------------
_SL2VL_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|\s*$")


def parse_sl2vl(text):
    """smpquery sl2vl -> {(in, out): [16 VLs]}."""
    rows = {}
    for line in text.splitlines():
        m = _SL2VL_ROW.match(line.strip())
        if m:
            rows[(int(m.group(1)), int(m.group(2)))] = [int(v) for v in m.group(3).split("|")]
    return rows


def parse_vlarb(text):
    """smpquery vlarb -> {"low": [(vl, weight)...], "high": [...], "low_cap": n, "high_cap": n}."""
    result = {"low": [], "high": []}
    m = re.search(r"LowCap (\d+) HighCap (\d+)", text)
    if m:
        result["low_cap"], result["high_cap"] = int(m.group(1)), int(m.group(2))
    current, vls = None, None
    for line in text.splitlines():
        if "Low priority" in line:
            current = "low"
        elif "High priority" in line:
            current = "high"
        elif line.startswith("VL") and current:
            vls = [int(v, 0) for v in line.split("|")[1:-1]]
        elif line.startswith("WEIGHT") and current and vls is not None:
            weights = [int(v, 0) for v in line.split("|")[1:-1]]
            result[current].extend(zip(vls, weights))
            vls = None
    return result


def parse_pathrecord(text):
    """saquery -p output -> dict of the PathRecord's fields, or None for an empty answer."""
    if "PathRecord dump" not in text:
        return None
    record = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\w+)\.+(.*)$", line)
        if m:
            record[m.group(1).lower()] = m.group(2).strip()
    return record
