#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Golden files: runs `ibqos check` on every *.conf of a directory and compares stderr and the exit
# status with NAME.expect; and runs `ibqos ARGS` for every NAME.args (arguments relative to --root,
# NAME.stdin as standard input when there is one) and compares stdout, stderr and the exit status.
# --regenerate rewrites the .expect files.
import argparse
import difflib
import json
import pathlib
import re
import shlex
import subprocess
import sys

LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note): \[(?P<code>[a-z0-9-]+)\] ")


def run(ibqos, directory, name, extra):
    p = subprocess.run([ibqos, "check", name, *extra], cwd=directory, capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def run_args(ibqos, root, case):
    args = shlex.split(case.read_text())
    stdin = case.with_suffix(".stdin")
    p = subprocess.run([ibqos, *args], cwd=root, capture_output=True, timeout=120,
                       input=stdin.read_bytes() if stdin.exists() else b"")
    return (p.stdout.decode("utf-8", "replace") + "---- stderr\n" + p.stderr.decode("utf-8", "replace") +
            f"exit: {p.returncode}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--root", default=".")
    ap.add_argument("--regenerate", action="store_true")
    args = ap.parse_args()
    args.ibqos = str(pathlib.Path(args.ibqos).resolve())
    directory = pathlib.Path(args.dir)
    inputs = sorted(directory.glob("*.conf"))
    cases = sorted(directory.glob("*.args"))
    if not inputs and not cases:
        print(f"no *.conf or *.args in {directory}", file=sys.stderr)
        return 1
    failures = 0
    for case in cases:
        actual = run_args(args.ibqos, args.root, case)
        expect = case.with_suffix(".expect")
        if args.regenerate:
            expect.write_text(actual)
            continue
        wanted = expect.read_text() if expect.exists() else ""
        if actual != wanted:
            failures += 1
            print(f"FAIL {case.name}")
            sys.stdout.writelines(difflib.unified_diff(wanted.splitlines(True), actual.splitlines(True),
                                                       expect.name, "actual"))
        else:
            print(f"ok   {case.name}")
    for conf in inputs:
        code, _, err = run(args.ibqos, directory, conf.name, [])
        actual = err + f"exit: {code}\n"
        expect = conf.with_suffix(".expect")
        if args.regenerate:
            expect.write_text(actual)
            continue
        if not expect.exists():
            print(f"FAIL {conf.name}: no {expect.name} (run with --regenerate)")
            failures += 1
            continue
        wanted = expect.read_text()
        if actual != wanted:
            failures += 1
            print(f"FAIL {conf.name}")
            sys.stdout.writelines(difflib.unified_diff(wanted.splitlines(True), actual.splitlines(True),
                                                       expect.name, "actual"))
            continue
        # The JSON form must carry the same diagnostics as the text form.
        jcode, out, jerr = run(args.ibqos, directory, conf.name, ["--json"])
        try:
            items = json.loads(out)
        except json.JSONDecodeError as e:
            failures += 1
            print(f"FAIL {conf.name}: --json is not JSON: {e}")
            continue
        text = [m.groupdict() for m in map(LINE.match, err.splitlines()) if m]
        as_json = [{"file": i["file"], "line": str(i["line"]), "col": str(i["column"]), "sev": i["severity"],
                    "code": i["code"]} for i in items]
        if jcode != code or jerr or as_json != text:
            failures += 1
            print(f"FAIL {conf.name}: --json disagrees with the text diagnostics (exit {jcode} vs {code})")
            continue
        print(f"ok   {conf.name}")
    if not args.regenerate:
        total = len(inputs) + len(cases)
        print(f"{total - failures}/{total} golden files match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
