#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian packages, built and used: dpkg-buildpackage -us -uc -b on a copy of the source tree
(the tree itself stays clean), lintian (no error or warning that debian/*.lintian-overrides does
not override), every package unpacked into a scratch root (dpkg -x), the unpacked ibqos checking
the sample policies and the man page's example, the man pages and the completion in place, and a
stock OpenSM on ibsim loading the unpacked plugin by its name with the shipped opensm.conf
snippet until the plugin logs IBQOS-0010 (a policy in force).

  tests/packaging/test_packages.py [--keep]

Exit status 0 when every check passes, 1 when one fails, 77 (skipped) when the packaging tools
are missing (scripts/test installs them). Everything it starts is stopped by PID, and its
scratch directory is removed (--keep, or IBQOS_KEEP_WORKDIR=1, keeps it).
"""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fabric"))
import simfabric  # noqa: E402

PACKAGES = ["ibqos", "ibqos-opensm-plugin", "ibqos-agent"]
TOOLS = ["dpkg-buildpackage", "dpkg-checkbuilddeps", "dpkg-architecture", "dh", "lintian"]
FABRIC = "samples/fabrics/two-switch.net"
SM_HOST, SM_GUID = "Hca1", "0x100001"  # ibsim's first port is the SM's
PLUGIN_POLICY = "samples/policies/storage-mpi-ai.conf"
BUILD_TIMEOUT = 3600


class Failure(Exception):
    pass


class Checks:
    def __init__(self):
        self.passed = 0

    def ok(self, what):
        self.passed += 1
        print(f"ok - {what}", flush=True)


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)


def run(args, cwd=None, env=None, timeout=600, log=None):
    """Runs a command in its own process group; on a timeout or an interruption the whole
    group (the command's pid) is killed, so nothing it started outlives the test."""
    out = open(log, "w") if log else subprocess.PIPE
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    finally:
        if log:
            out.close()
    if log:
        with open(log, errors="replace") as f:
            stdout = f.read()
    return process.returncode, stdout


def copy_tree(source, target):
    """The files of the source tree (git's tracked and untracked ones, not the ignored build
    output); a tree outside git is copied whole but for build folders."""
    listing = subprocess.run(["git", "-C", source, "ls-files", "-z", "-co", "--exclude-standard"],
                             capture_output=True)
    if listing.returncode != 0:
        shutil.copytree(source, target, symlinks=True,
                        ignore=shutil.ignore_patterns("build*", "obj-*", ".git", "__pycache__"))
        return
    for name in listing.stdout.decode().split("\0"):
        path = os.path.join(source, name)
        if not name or not os.path.lexists(path):
            continue  # deleted in the work tree
        os.makedirs(os.path.join(target, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(path, os.path.join(target, name), follow_symlinks=False)


def build(source, work, checks):
    src = os.path.join(work, "src")
    copy_tree(source, src)
    rc, out = run(["dpkg-checkbuilddeps"], cwd=src)
    if rc != 0:
        raise Failure("build dependencies missing (scripts/test installs them):\n" + out)
    # No debug symbol packages: they take time and nothing here looks at them. Every core compiles
    # (without parallel=N debhelper runs one compiler at a time). What this checks is the packages
    # themselves (their files, dependencies, maintainer scripts, lintian and the commands and the
    # plugin as installed), not the code generation, which both test builds check: so the code is
    # compiled without optimization (noopt, which debian/rules honours through dpkg-buildflags)
    # and without debug information, in about half the time of -O2 -g (cli/cmd_diff.cpp: 32 s
    # against 16 s).
    env = dict(os.environ, DEB_BUILD_OPTIONS=f"noddebs nocheck noopt parallel={os.cpu_count() or 1}",
               DEB_CFLAGS_STRIP="-g", DEB_CXXFLAGS_STRIP="-g")
    env.pop("IBQOS_SANITIZER_PRELOAD", None)
    log = os.path.join(work, "dpkg-buildpackage.log")
    rc, out = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, timeout=BUILD_TIMEOUT, log=log)
    if rc != 0:
        raise Failure(f"dpkg-buildpackage failed ({rc}):\n" + out[-6000:])
    changes = glob.glob(os.path.join(work, "ibqos_*.changes"))
    debs = {p: glob.glob(os.path.join(work, f"{p}_*.deb")) for p in PACKAGES}
    if len(changes) != 1 or any(len(v) != 1 for v in debs.values()):
        raise Failure(f"expected one .changes and one .deb per package, found {os.listdir(work)}")
    checks.ok("dpkg-buildpackage -us -uc -b built " + ", ".join(os.path.basename(d[0]) for d in debs.values()))
    return changes[0], {p: d[0] for p, d in debs.items()}


def run_lintian(changes, checks):
    # The verdict: --fail-on fails on any error or warning that no override covers.
    rc, out = run(["lintian", "--fail-on", "error,warning", "--display-info", changes])
    shown = [line for line in out.splitlines() if "root privileges" not in line]
    print("\n".join(shown))
    tags = [line for line in shown if re.match(r"^[EW]: ", line)]
    if rc != 0 or tags:
        raise Failure(f"lintian reports errors or warnings ({rc}):\n" + "\n".join(tags))
    # The overridden tags, with their justifications, for the log (lintian then exits 2 for
    # overridden errors, so this run gives no verdict).
    _, out = run(["lintian", "--show-overrides", changes])
    overridden = [line for line in out.splitlines() if line.startswith(("O: ", "N: "))]
    print("\n".join(overridden))
    count = len([line for line in overridden if line.startswith("O: ")])
    checks.ok(f"lintian: no error or warning ({count} overridden tags, each justified in debian/)")


def unpack(debs, root, checks):
    for deb in debs.values():
        rc, out = run(["dpkg", "-x", deb, root])
        if rc != 0:
            raise Failure(f"dpkg -x {deb}: {out}")
    checks.ok(f"unpacked into {root}")


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True, check=True).stdout.strip()


def check_package_metadata(debs, checks):
    depends = field(debs["ibqos-opensm-plugin"], "Depends")
    installed = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libopensm-dev"], capture_output=True,
                               text=True).stdout.strip()
    if f"opensm (= {installed})" not in depends:
        raise Failure(f"ibqos-opensm-plugin should depend on opensm (= {installed}): Depends: {depends}")
    checks.ok(f"ibqos-opensm-plugin depends on the OpenSM it was built against: opensm (= {installed})")


def check_files(root, multiarch, checks):
    expected = [
        "usr/bin/ibqos",
        "usr/libexec/ibqos/ibqos-monitor",
        "usr/sbin/ibqos-agent",
        f"usr/lib/{multiarch}/libibqos_osm.so",
        f"usr/lib/{multiarch}/libibqos_preload.so",
        "lib/systemd/system/ibqos-agent.service",
        "lib/systemd/system/ibqos-monitor.service",
        "usr/share/bash-completion/completions/ibqos",
        "usr/share/bash-completion/completions/ibqos-agent",
        "usr/share/man/man1/ibqos.1.gz",
        "usr/share/man/man5/ibqos-policy.5.gz",
        "usr/share/man/man8/ibqos_osm.8.gz",
        "usr/share/man/man8/ibqos-agent.8.gz",
        "usr/share/doc/ibqos-opensm-plugin/README.Debian",
        "usr/share/doc/ibqos-opensm-plugin/examples/ibqos-plugin.conf",
        "usr/share/doc/ibqos-agent/sl-enforcement.md.gz",
    ]
    missing = [p for p in expected if not os.path.exists(os.path.join(root, p))]
    if missing:
        raise Failure("not in the packages: " + ", ".join(missing))
    checks.ok("every command, library, unit, man page, completion and plugin document is in place")

    unit = open(os.path.join(root, "lib/systemd/system/ibqos-agent.service")).read()
    if "ExecStart=/usr/sbin/ibqos-agent run" not in unit:
        raise Failure("the unit does not start /usr/sbin/ibqos-agent:\n" + unit)
    checks.ok("the unit starts /usr/sbin/ibqos-agent")
    unit = open(os.path.join(root, "lib/systemd/system/ibqos-monitor.service")).read()
    if "ExecStart=/usr/bin/ibqos monitor " not in unit or "Type=notify" not in unit:
        raise Failure("the monitor's unit does not start /usr/bin/ibqos monitor as Type=notify:\n" + unit)
    checks.ok("the monitor's unit starts /usr/bin/ibqos monitor (Type=notify)")

    for command in ("ibqos", "ibqos-agent"):
        rc, out = run(["bash", "-n", os.path.join(root, "usr/share/bash-completion/completions", command)])
        if rc != 0:
            raise Failure(f"the bash completion of {command} does not parse: " + out)
    checks.ok("the bash completions of ibqos and ibqos-agent parse")

    if shutil.which("man"):
        # As "man 5 ibqos-policy" finds them once installed, with the unpacked tree as MANPATH.
        for section, name in (("5", "ibqos-policy"), ("8", "ibqos_osm"), ("1", "ibqos"), ("8", "ibqos-agent")):
            env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
            p = subprocess.run(["man", "--warnings", "-M", os.path.join(root, "usr/share/man"), section, name],
                               capture_output=True, text=True, env=env)
            if p.returncode != 0 or p.stderr.strip() or "NAME" not in p.stdout:
                raise Failure(f"man {section} {name} ({p.returncode}): {p.stderr.strip()}")
        checks.ok("man 5 ibqos-policy, man 8 ibqos_osm, man 1 ibqos and man 8 ibqos-agent render without a warning")
    else:
        print("note: man is not installed: the pages were not rendered")


def check_commands(root, work, checks):
    ibqos = os.path.join(root, "usr/bin/ibqos")
    agent = os.path.join(root, "usr/sbin/ibqos-agent")
    version = subprocess.run([ibqos, "--version"], capture_output=True, text=True).stdout.strip()
    meson_version = re.search(r"version:\s*'([^']+)'", open(os.path.join(ROOT, "meson.build")).read()).group(1)
    if version != f"ibqos {meson_version}":
        raise Failure(f"ibqos --version says {version!r}, meson.build {meson_version}")
    checks.ok(f"the unpacked ibqos is {version}")

    policies = sorted(glob.glob(os.path.join(ROOT, "samples/policies/*.conf")))
    for policy in policies:
        p = subprocess.run([ibqos, "check", policy], capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"ibqos check {os.path.relpath(policy, ROOT)} exited {p.returncode}:\n{p.stderr}")
    checks.ok(f"the unpacked ibqos check accepts the {len(policies)} sample policies")

    # The complete example of ibqos-policy(5) is a valid policy.
    page = open(os.path.join(ROOT, "docs/ibqos-policy.5.scd")).read()
    example = re.search(r"^# EXAMPLE\n.*?^```\n(.*?)^```", page, re.S | re.M).group(1)
    path = os.path.join(work, "man-example.conf")
    with open(path, "w") as f:
        f.write(example)
    p = subprocess.run([ibqos, "check", "--json", path], capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f"the example of ibqos-policy(5) has errors:\n{p.stdout}{p.stderr}")
    checks.ok("the example of ibqos-policy(5) passes ibqos check")

    p = subprocess.run([agent, "plan", os.path.join(ROOT, "samples/policies/host-sched.conf")], capture_output=True,
                       text=True)
    if p.returncode != 0 or "storage" not in p.stdout:
        raise Failure(f"ibqos-agent plan exited {p.returncode}:\n{p.stdout}{p.stderr}")
    checks.ok("the unpacked ibqos-agent plans the sample host-sched policy")

    p = subprocess.run([ibqos, "monitor", "--help"], capture_output=True, text=True)
    if p.returncode != 0 or "--listen" not in p.stdout:
        raise Failure(f"ibqos monitor --help exited {p.returncode}:\n{p.stdout}{p.stderr}")
    checks.ok("the unpacked ibqos has the monitor command")


def snippet_options(root):
    """The opensm.conf lines of the shipped example, as a dict."""
    options = {}
    with open(os.path.join(root, "usr/share/doc/ibqos-opensm-plugin/examples/ibqos-plugin.conf")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                key, _, value = line.partition(" ")
                options[key] = value.strip()
    return options


def check_plugin(root, multiarch, checks):
    if not simfabric.available():
        print("SKIP plugin on ibsim: ibsim, OpenSM or infiniband-diags is missing (scripts/test installs them)")
        return
    options = snippet_options(root)
    if options.get("event_plugin_name") != "ibqos_osm" or not options.get("event_plugin_options", "").startswith(
            "policy=/etc/opensm/ibqos-policy.conf"):
        raise Failure(f"the example snippet does not hold the two documented lines: {options}")
    # The package is not installed: the dynamic linker finds it through LD_LIBRARY_PATH here.
    options["event_plugin_options"] = options["event_plugin_options"].replace(
        "/etc/opensm/ibqos-policy.conf", os.path.join(ROOT, PLUGIN_POLICY))
    plugin_dir = os.path.join(root, "usr/lib", multiarch)
    with simfabric.SimFabric(os.path.join(ROOT, FABRIC)) as fabric:
        osm = fabric.start_opensm(options, SM_GUID, SM_HOST, plugin_dir=plugin_dir)
        osm.wait_for("IBQOS-0010", timeout=60)
        osm.wait_for("IBQOS-0100", timeout=60)
        log = osm.log()
        if "Failed to open event plugin" in log or "version mismatch" in log:
            raise Failure("OpenSM did not load the plugin:\n" + log[-3000:])
        loaded = next(line for line in log.splitlines() if "IBQOS-0001" in line)
        if plugin_dir not in open(f"/proc/{osm.process.pid}/maps").read():
            raise Failure("OpenSM's plugin is not the unpacked one")
        in_force = next(line for line in log.splitlines() if "IBQOS-0010" in line)
    checks.ok("a stock OpenSM loads the unpacked plugin by name (event_plugin_name ibqos_osm): "
              + loaded.split("IBQOS-", 1)[1].strip())
    checks.ok("the plugin puts the policy in force: " + in_force.split("IBQOS-", 1)[1].strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        print(f"SKIP packaging: {', '.join(missing)} not installed (scripts/test installs them)")
        return 77
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _raise_exit)
    os.environ.pop("IBQOS_SANITIZER_PRELOAD", None)  # the packaged plugin is not instrumented
    multiarch = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                               check=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="ibqos-packaging-")
    checks = Checks()
    try:
        changes, debs = build(ROOT, work, checks)
        run_lintian(changes, checks)
        check_package_metadata(debs, checks)
        root = os.path.join(work, "root")
        unpack(debs, root, checks)
        check_files(root, multiarch, checks)
        check_commands(root, work, checks)
        check_plugin(root, multiarch, checks)
    except (Failure, simfabric.FabricError) as e:
        print(f"FAIL: {e}", flush=True)
        print(f"packaging: {checks.passed} passed, 1 failed")
        return 1
    finally:
        if args.keep or os.environ.get("IBQOS_KEEP_WORKDIR"):
            print(f"scratch directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"packaging: {checks.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
