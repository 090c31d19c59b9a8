#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Benchmark (run on demand): `ibqos check` against OpenSM 3.3.23's own reading of the same
# policy files: its QoS-policy parser and the validation it runs on the result
# (osm_qos_parse_policy_file), built from OpenSM's sources. The files are the policy families of
# tests/policy_families.hpp (ibqos-bench-analysis --generate), each with and without qos-ulps
# lines, at 10 to 10,000 rules. Each figure is CPU time on one core, the median over fresh
# processes run in turn (OpenSM's, then ibqos's):
#   - in process: OpenSM's call alone (bench/opensm/osm_qos_parse.c), against ibqos's parse and
#     every pass with the dead-rule analysis in its default budget (ibqos-bench-analysis
#     --measure-check, itself the median of repeated runs);
#   - whole process: that OpenSM program, against the `ibqos check` command (start-up and
#     output included).
#
#   bench/opensm_parse.py --build build [--sizes 10,100,1000,10000] [--family all]
#                         [--processes 3] [--cpu 0] [--opensm-src DIR|TARBALL] [--work DIR]
#                         [--json]
#
# Without --opensm-src the upstream tarball of Debian's opensm 3.3.23 source package is fetched
# with apt-get (a deb-src line of its own; the system's apt sources are left alone). The build
# and the generated files stay in --work (default: a temporary directory, removed at the end);
# with --work, a later run reuses OpenSM's build.
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
VERSION = "3.3.23"
TOOLS = "autoconf automake libtool-bin flex bison gcc make libibumad-dev"


def say(*words):
    print("opensm_parse:", *words, file=sys.stderr, flush=True)


def fail(message):
    say(message)
    sys.exit(2)


def run(cmd, cwd=None, log=None):
    """Runs cmd, its output into log (without one, its errors on our standard error)."""
    if log:
        with open(log, "a") as out:
            r = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    else:
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed (exit {r.returncode})" + (f"; see {log}" if log else ""))


def fetch_source(work, mirror):
    """The upstream tarball of Debian's opensm source package, with apt-get and a source list
    of its own."""
    found = glob.glob(os.path.join(work, f"opensm_{VERSION}*.orig.tar.*"))
    if found:
        return found[0]
    lists = os.path.join(work, "apt-lists")
    os.makedirs(os.path.join(lists, "partial"), exist_ok=True)
    sources = os.path.join(work, "sources.list")
    with open(sources, "w") as f:
        f.write(f"deb-src {mirror} bookworm main\n")
    apt = ["apt-get", "-qq", "-o", f"Dir::Etc::SourceList={sources}",
           "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::State::Lists={lists}",
           "-o", "Debug::NoLocking=1"]
    say(f"fetching OpenSM {VERSION}'s sources from {mirror}")
    subprocess.run(apt + ["update"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Only the upstream tarball is needed: a missing Debian part does not matter here.
    subprocess.run(apt + ["source", "--download-only", "opensm"], cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = glob.glob(os.path.join(work, f"opensm_{VERSION}*.orig.tar.*"))
    if not found:
        fail(f"could not fetch OpenSM {VERSION}'s sources (apt-get source opensm from {mirror}); "
             "give an unpacked tree or its tarball with --opensm-src")
    return found[0]


def build_opensm(args, work):
    """OpenSM built from its sources (autogen, configure, make), and the timing program linked
    with its objects. Returns the program's path."""
    program = os.path.join(work, "osm-qos-parse")
    if os.path.exists(program):
        return program
    r = subprocess.run(["bash", "-c", f'. "{ROOT}/scripts/lib.sh" && ensure_packages {TOOLS}'])
    if r.returncode != 0:
        fail(f"OpenSM's build needs {TOOLS}")
    tree = os.path.join(work, f"opensm-{VERSION}")
    if not os.path.isdir(tree):
        src = args.opensm_src or fetch_source(work, args.mirror)
        if not os.path.exists(src):
            fail(f"--opensm-src {src}: no such file or directory")
        # Unpacked beside the tree, then renamed: a failed attempt leaves no tree behind.
        unpacking = tree + ".partial"
        shutil.rmtree(unpacking, ignore_errors=True)
        if os.path.isdir(src):
            shutil.copytree(src, unpacking, symlinks=True)
        else:
            os.makedirs(unpacking)
            run(["tar", "xf", src, "-C", unpacking, "--strip-components=1"])
        os.rename(unpacking, tree)
    log = os.path.join(work, "build.log")
    say(f"building OpenSM in {tree} (about a minute on 2 cores; log: {log})")
    if not os.path.exists(os.path.join(tree, "configure")):
        run(["./autogen.sh"], cwd=tree, log=log)
    if not os.path.exists(os.path.join(tree, "Makefile")):
        run(["./configure", "--quiet"], cwd=tree, log=log)
    run(["make", f"-j{os.cpu_count() or 1}"], cwd=tree, log=log)
    objects = sorted(o for o in glob.glob(os.path.join(tree, "opensm", "*.o"))
                     if os.path.basename(o) != "main.o")
    libs = [os.path.join(tree, d, ".libs", f) for d, f in
            (("libopensm", "libopensm.a"), ("libvendor", "libosmvendor.a"),
             ("complib", "libosmcomp.a"))]
    # OpenSM's own flags (-g -O2, configure's default).
    run(["gcc", "-g", "-O2", "-DHAVE_CONFIG_H", f"-I{tree}", f"-I{tree}/include",
         os.path.join(HERE, "opensm", "osm_qos_parse.c"), "-o", program] + objects + libs +
        ["-libumad", "-lpthread", "-ldl"], log=log)
    return program


def without_qos_setup(path):
    """The file without its qos-setup section, which OpenSM ignores and whose `bandwidth:`
    lines (an ibqos extension) it refuses: both programs read this copy."""
    text = open(path).read()
    cut = re.sub(r"(?ms)^\s*qos-setup\s*$.*?^\s*end-qos-setup\s*$\n?", "", text)
    if cut != text:
        with open(path, "w") as f:
            f.write(cut)


def measure(cmd, cpu):
    """Runs cmd once: its standard output and error, exit status and CPU time (wait4's
    rusage, as /usr/bin/time reports it)."""
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, preexec_fn=pre)
        _, status, usage = os.wait4(p.pid, 0)
        out.seek(0)
        err.seek(0)
        return (out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)


def words(text):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", text)}


def main():
    ap = argparse.ArgumentParser(description="ibqos check against OpenSM 3.3.23's own policy "
                                 "reading (parser and validation, built from its sources), on "
                                 "the same files: the policy families at 10 to 10,000 rules.")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the ibqos build folder (default: build)")
    ap.add_argument("--sizes", default="10,100,1000,10000",
                    help="rule counts (default 10,100,1000,10000)")
    ap.add_argument("--family", default="all",
                    help="shifted, nested, same-ranges, pair-rules, random or all (default)")
    ap.add_argument("--processes", type=int, default=3,
                    help="fresh processes per figure, their median taken (default 3)")
    ap.add_argument("--cpu", type=int, help="run every measured process on this CPU")
    ap.add_argument("--opensm-src", help="OpenSM 3.3.23's sources: an unpacked tree or a tarball")
    ap.add_argument("--mirror", default="http://deb.debian.org/debian",
                    help="the Debian mirror the sources come from")
    ap.add_argument("--work", help="keep OpenSM's build and the files here (and reuse them)")
    ap.add_argument("--json", action="store_true", help="one JSON object per figure and line")
    args = ap.parse_args()
    if args.processes < 1:
        fail("--processes must be 1 or more")

    ibqos = os.path.join(args.build, "cli", "ibqos")
    bench = os.path.join(args.build, "bench", "ibqos-bench-analysis")
    for p in (ibqos, bench):
        if not os.access(p, os.X_OK):
            fail(f"{p} is missing: build ibqos first (its benchmarks too)")
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="opensm-parse-")
    os.makedirs(work, exist_ok=True)
    try:
        program = build_opensm(args, work)
        files_dir = os.path.join(work, "policies")
        r = subprocess.run([bench, "--generate", "--write", files_dir, "--sizes", args.sizes,
                            "--family", args.family], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"generating the policies failed: {r.stderr.strip()}")
        files = r.stdout.split()
        rows = []
        for path in files:
            without_qos_setup(path)
            name = os.path.basename(path)[:-len(".conf")]
            family, rules = name.rsplit("-", 1)
            say(f"measuring {name}")
            osm_in, osm_proc, ib_in, ib_proc, status, ib_exit = [], [], [], [], set(), set()
            for _ in range(args.processes):
                out, err, _, cpu = measure([program, path], args.cpu)
                f = words(out)
                if "seconds" not in f:
                    fail(f"{program} {path}: {out.strip()} {err.strip()}")
                osm_in.append(float(f["seconds"]))
                osm_proc.append(cpu)
                status.add(int(f["status"]))
                _, err, code, _ = measure(
                    [bench, "--measure-check", path, "--budget", "default"], args.cpu)
                f = words(err)
                if code != 0 or "seconds" not in f:
                    fail(f"{bench} --measure-check {path} failed: {err.strip()}")
                ib_in.append(float(f["seconds"]))
                _, _, code, cpu = measure([ibqos, "check", path], args.cpu)
                ib_proc.append(cpu)
                ib_exit.add(code)
            mb = os.path.getsize(path) / 1e6
            opensm, ib = statistics.median(osm_in), statistics.median(ib_in)
            opensm_process, ib_process = statistics.median(osm_proc), statistics.median(ib_proc)
            row = {"family": family.replace("-ulps", ""), "ulps": family.endswith("-ulps"),
                   "rules": int(rules), "file_mb": round(mb, 6),
                   "opensm_status": max(status), "ibqos_exit": max(ib_exit),
                   "opensm": opensm, "opensm_mbs": mb / opensm,
                   "ibqos": ib, "ibqos_mbs": mb / ib, "speedup": opensm / ib,
                   "opensm_process": opensm_process, "ibqos_process": ib_process,
                   "command_speedup": opensm_process / ib_process}
            rows.append(row)
            report(row, args)
        if not args.json:
            print_table(rows)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def report(row, args):
    if not args.json:
        return
    params = {k: row[k] for k in ("family", "ulps", "rules", "file_mb", "opensm_status",
                                  "ibqos_exit")}
    if args.cpu is not None:
        params["cpu"] = args.cpu
    figures = [
        ("opensm_parse_time", row["opensm"], "s"),
        ("opensm_parse_throughput", row["opensm_mbs"], "MB/s"),
        ("ibqos_check_time", row["ibqos"], "s"),
        ("ibqos_check_throughput", row["ibqos_mbs"], "MB/s"),
        ("ibqos_speedup", row["speedup"], "x"),
        ("opensm_process_cpu", row["opensm_process"], "s"),
        ("ibqos_command_cpu", row["ibqos_process"], "s"),
        ("ibqos_command_speedup", row["command_speedup"], "x"),
    ]
    for name, value, unit in figures:
        print(json.dumps({"name": name, "value": round(value, 9), "unit": unit, **params}),
              flush=True)


def print_table(rows):
    head = ("policy", "rules", "MB", "OpenSM s", "MB/s", "ibqos s", "MB/s", "x",
            "OpenSM proc s", "ibqos cmd s", "x")
    lines = [head]
    for r in rows:
        name = r["family"] + (" + qos-ulps" if r["ulps"] else "")
        if r["opensm_status"]:
            name += " (OpenSM refuses)"
        lines.append((name, str(r["rules"]), f"{r['file_mb']:.3f}", f"{r['opensm']:.5f}",
                      f"{r['opensm_mbs']:.1f}", f"{r['ibqos']:.5f}", f"{r['ibqos_mbs']:.1f}",
                      f"{r['speedup']:.1f}", f"{r['opensm_process']:.4f}",
                      f"{r['ibqos_process']:.4f}", f"{r['command_speedup']:.1f}"))
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(l, widths))))


if __name__ == "__main__":
    main()
