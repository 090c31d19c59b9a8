#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bash completions of ibqos and ibqos-agent offer, for each command, exactly the options its
--help declares (ibqos monitor's as ibqos-monitor --help declares them too), a file name after an
option whose value is a file, and name no option that no command of the program declares."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None

# bash-completion's helpers, stood in for: _filedir offers the one word FILE.
STUBS = r'''
_init_completion() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]};
                     words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
_filedir() { COMPREPLY=(FILE); }
'''

# An option line of the Options section of CLI11's help as ibqos lays it out: the names, one
# blank and the name of the value (none for a flag), then the description ("  -o,--output PATH
# text...", "  --json                  text...").
OPTION_LINE = re.compile(r"^  (-[\w-]+(?:,\s*-[\w-]+)*)(?: (?! )(\S+))?")
# The names of values that are files (a POLICY given as --policy is one).
FILE_VALUES = {"FILE", "PATH", "DIR", "POLICY"}


def run(program, *args):
    return subprocess.run([program, *args], capture_output=True, text=True, timeout=60)


def declared(program, command=None):
    """{option: the name of its value, or None for a flag} from `program [command] --help`."""
    p = run(program, *([command] if command else []), "--help")
    if p.returncode != 0:
        raise AssertionError(f"{program} {command or ''} --help exited {p.returncode}: {p.stderr}")
    options = {}
    # The Options section runs to the first blank line; the footer after it may quote options.
    section = p.stdout.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            for name in m.group(1).split(","):
                options[name.strip()] = m.group(2)
    options.pop("-h", None)
    return options


def commands_of(program):
    """The commands `program --help` lists."""
    return set(re.findall(r"^\s{2}(\w[\w-]*)\s", run(program, "--help").stdout, re.M)) - {"help"}


class Completion:
    def __init__(self, script, function):
        self.script, self.function = script, function
        with open(script) as f:
            self.text = f.read()

    def offered(self, words):
        line = " ".join(f"'{w}'" for w in words)
        bash = (STUBS + f"source '{self.script}'\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}\n"
                f"{self.function}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
        p = subprocess.run(["bash", "-c", bash], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise AssertionError(f"{self.script}: {p.stderr}")
        return set(p.stdout.split())

    def named(self):
        """Every long option the script names, in its lists and its cases."""
        code = "\n".join(line for line in self.text.splitlines() if not line.lstrip().startswith("#"))
        return set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", code))


class Completions(unittest.TestCase):
    def programs(self):
        """(program, its completion, {command: {option: value}}) of each program."""
        out = []
        for program, script, function in ((ARGS.ibqos, "ibqos.bash-completion", "_ibqos"),
                                          (ARGS.agent, "ibqos-agent.bash-completion", "_ibqos_agent")):
            completion = Completion(os.path.join(ARGS.source_root, "docs", script), function)
            commands = {c: declared(program, c) for c in commands_of(program)}
            out.append((program, completion, commands))
        return out

    def setUp(self):
        if not shutil.which("bash"):
            self.skipTest("no bash")

    def test_each_command_is_offered_exactly_the_options_it_declares(self):
        for program, completion, commands in self.programs():
            name = os.path.basename(program)
            offered = completion.offered([name, ""])
            self.assertTrue(commands and set(commands) <= offered,
                            f"{name}: commands {sorted(set(commands) - offered)} not offered")
            self.assertEqual(completion.offered([name, "-"]), set(declared(program)), name)
            for command, options in sorted(commands.items()):
                want, got = set(options), completion.offered([name, command, "-"])
                self.assertEqual(got, want, f"{name} {command}: the completion offers {sorted(got - want)} "
                                            f"that --help does not declare, and lacks {sorted(want - got)}")

    def test_the_monitor_program_declares_what_ibqos_monitor_is_offered(self):
        if not ARGS.monitor:
            self.skipTest("built without the monitor")
        self.assertEqual(commands_of(ARGS.monitor), {"monitor"})
        completion = Completion(os.path.join(ARGS.source_root, "docs", "ibqos.bash-completion"), "_ibqos")
        want = set(declared(ARGS.monitor, "monitor"))
        got = completion.offered(["ibqos", "monitor", "-"])
        self.assertEqual(got, want, f"ibqos-monitor monitor --help declares {sorted(want - got)} not offered, "
                                    f"and not {sorted(got - want)} that the completion offers")

    def test_a_file_is_offered_after_every_option_whose_value_is_a_file(self):
        for program, completion, commands in self.programs():
            name = os.path.basename(program)
            for command, options in sorted(commands.items()):
                for option, value in sorted(options.items()):
                    if value in FILE_VALUES:
                        self.assertEqual(completion.offered([name, command, option, ""]), {"FILE"},
                                         f"{name} {command} {option} {value}: no file offered")

    def test_the_completion_names_no_option_that_no_command_declares(self):
        for program, completion, commands in self.programs():
            name = os.path.basename(program)
            known = set(declared(program)) | {"-h"}
            for options in commands.values():
                known |= set(options)
            stray = completion.named() - known
            self.assertFalse(stray, f"{completion.script} names {sorted(stray)}, which no {name} command declares")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--monitor", help="ibqos-monitor, where the build has it")
    ap.add_argument("--source-root", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.ibqos, ARGS.agent = os.path.abspath(ARGS.ibqos), os.path.abspath(ARGS.agent)
    if ARGS.monitor:
        ARGS.monitor = os.path.abspath(ARGS.monitor)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
