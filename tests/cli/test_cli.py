#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ibqos and ibqos-agent behave the same everywhere: -V, POLICY as an argument (the older
--policy still taken), '-' for standard input, an unknown port as an input error, --opensm-conf
needing --topology like --partitions, -o errors naming the file asked for, the same JSON types
for the same quantity (64-bit values with an exact "0x..." companion, MTU and rate enums with
readable companions, tables as arrays). The bash completions are test_completion.py's."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None
BAD_POLICY = "qos-levels\n    qos-level\n        name: default\n        sl: 16\n    end-qos-level\nend-qos-levels\n"


def root(*parts):
    return os.path.join(ARGS.source_root, *parts)


def run(program, *args, stdin=b"", cwd=None):
    return subprocess.run([program, *args], capture_output=True, timeout=120, input=stdin, cwd=cwd)


def content(path):
    with open(path, "rb") as f:
        return f.read()


def ibqos(*args, stdin=b"", cwd=None):
    return run(ARGS.ibqos, *args, stdin=stdin, cwd=cwd)


def agent(*args, stdin=b""):
    return run(ARGS.agent, *args, stdin=stdin)


# Set by main(): the qos-lab fabric's options, a policy for it, and a host-sched policy.
LAB, LAB_POLICY, HOST_POLICY = [], "", ""


class Version(unittest.TestCase):
    def test_dash_capital_v_is_version_in_both_programs(self):
        for program, name in ((ARGS.ibqos, "ibqos"), (ARGS.agent, "ibqos-agent")):
            short, long = run(program, "-V"), run(program, "--version")
            self.assertEqual((short.returncode, long.returncode), (0, 0), short.stderr)
            self.assertEqual(short.stdout, long.stdout)
            self.assertTrue(short.stdout.decode().startswith(name + " "), short.stdout)


class UnknownPorts(unittest.TestCase):
    def test_an_sm_port_the_fabric_does_not_have_is_an_input_error_in_every_command(self):
        for command in (["check", LAB_POLICY], ["compile", LAB_POLICY, "--emit", "tables"],
                        ["query", LAB_POLICY, "--src", "6", "--dst", "7"]):
            p = ibqos(*command, *LAB, "--sm", "sm-1 HCA-1/P1")
            self.assertEqual(p.returncode, 1, (command, p.stderr))
            self.assertIn(b"--sm: no node is described as 'sm-1 HCA-1'; did you mean 'sm-01 HCA-1/P1'?",
                          p.stderr)

    def test_diff_keeps_its_own_convention_for_inputs_with_errors(self):
        p = ibqos("diff", LAB_POLICY, LAB_POLICY, *LAB, "--sm", "0x123456")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(b"ibqos diff: --sm: no port has GUID 0x123456", p.stderr)

    def test_a_node_named_without_its_port_is_told_the_port(self):
        p = ibqos("query", LAB_POLICY, *LAB, "--src", "node-01 HCA-1", "--dst", "7", "--json")
        self.assertEqual(p.returncode, 1)
        [answer] = [json.loads(line) for line in p.stdout.decode().splitlines()]
        self.assertEqual(answer["status"], "error")
        self.assertIn("did you mean 'node-01 HCA-1/P1'?", answer["message"])


class StandardInput(unittest.TestCase):
    def test_check_reads_the_policy_from_standard_input(self):
        p = ibqos("check", "-", stdin=BAD_POLICY.encode())
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stderr.decode().startswith("<stdin>:4:"), p.stderr)
        j = ibqos("check", "-", "--json", stdin=BAD_POLICY.encode())
        self.assertEqual([d["file"] for d in json.loads(j.stdout)], ["<stdin>"])

    def test_a_fabric_from_standard_input_gives_the_same_tables(self):
        topology = content(root("samples/fabrics/qos-lab.ibnetdiscover"))
        from_file = ibqos("compile", LAB_POLICY, *LAB, "--emit", "json")
        from_stdin = ibqos("compile", LAB_POLICY, "--topology", "-", *LAB[2:], "--emit", "json", stdin=topology)
        self.assertEqual(from_stdin.returncode, 0, from_stdin.stderr)
        self.assertEqual(json.loads(from_stdin.stdout)["ports"], json.loads(from_file.stdout)["ports"])

    def test_standard_input_is_read_once(self):
        p = ibqos("query", "-", *LAB, "--batch", "-", stdin=content(LAB_POLICY))
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"standard input ('-') can be read only once", p.stderr)

    def test_the_agent_reads_a_policy_from_standard_input(self):
        text = content(HOST_POLICY)
        self.assertEqual(json.loads(agent("plan", "-", "--json", stdin=text).stdout),
                         json.loads(agent("plan", HOST_POLICY, "--json").stdout))
        p = agent("simulate", "-", "--link-mbps", "1000", stdin=text)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_simulate_says_when_a_policy_has_no_tree_instead_of_an_empty_table(self):
        plain = "qos-ulps\n    default : 0\nend-qos-ulps\n".encode()
        p = agent("simulate", "-", "--link-mbps", "1000", stdin=plain)
        self.assertEqual((p.returncode, p.stdout), (1, b""))
        self.assertIn(b"has no host-sched tree: there is nothing to simulate", p.stderr)
        p = agent("simulate", "-", "--link-mbps", "1000", "--json", stdin=plain)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(json.loads(p.stdout)["status"], "error")

    def test_the_daemon_refuses_standard_input(self):
        p = agent("run", "--policy", "-", "--socket", "/nonexistent/agent.sock")
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"give a file, not '-'", p.stderr)


class PolicyArgument(unittest.TestCase):
    def test_resolve_takes_the_policy_as_an_argument_or_with_the_older_option(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(BAD_POLICY)
            f.flush()
            # The policy is read before the SA is asked: its errors show it was taken.
            for form in ([f.name], ["--policy", f.name]):
                p = agent("resolve", *form, "--dst", "1")
                self.assertEqual(p.returncode, 1, (form, p.stderr))
                self.assertIn(f.name.encode() + b":4:", p.stderr)
            p = agent("resolve", f.name, "--policy", f.name, "--dst", "1")
            self.assertEqual(p.returncode, 2)
            self.assertIn(b"the policy is given twice", p.stderr)
        p = agent("resolve", "--dst", "1")
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"give the POLICY file", p.stderr)


class FabricOptions(unittest.TestCase):
    def test_opensm_conf_needs_a_topology_like_partitions(self):
        for option, value in (("--opensm-conf", root("samples/opensm/qos-options.conf")),
                              ("--partitions", LAB[3])):
            for command in (["check", LAB_POLICY], ["diff", LAB_POLICY, LAB_POLICY]):
                p = ibqos(*command, option, value)
                self.assertEqual(p.returncode, 2, (command, option))
                self.assertIn(option.encode() + b" requires --topology", p.stderr)


class PluginLines(unittest.TestCase):
    """`--opensm-conf` checks the lines that load the ibqos plugin: what the plugin cannot read,
    a policy file or a plugin library not found on this machine."""

    def check(self, conf_text, library_dir):
        with tempfile.TemporaryDirectory() as scratch:
            conf = os.path.join(scratch, "opensm.conf")
            with open(conf, "w") as f:
                f.write(conf_text.replace("SCRATCH", scratch))
            with open(os.path.join(scratch, "qos-policy.conf"), "w") as f:
                f.write("qos-ulps\n    default : 0\nend-qos-ulps\n")
            env = dict(os.environ, LD_LIBRARY_PATH=library_dir)
            p = subprocess.run([ARGS.ibqos, "check", LAB_POLICY, *LAB, "--opensm-conf", conf, "--json"],
                               capture_output=True, timeout=120, env=env)
            found = [d for d in json.loads(p.stdout) if d["code"] == "plugin-options"]
            return p.returncode, found

    def test_a_misspelt_key_is_an_error_at_its_line_naming_the_key_meant(self):
        with tempfile.TemporaryDirectory() as libs:
            open(os.path.join(libs, "libibqos_osm.so"), "w").close()
            code, found = self.check("qos TRUE\nevent_plugin_name ibqos_osm\n"
                                     "event_plugin_options polcy=SCRATCH/qos-policy.conf\n", libs)
        self.assertEqual(code, 1)
        self.assertEqual([(d["severity"], d["line"]) for d in found], [("error", 3)])
        self.assertIn("did you mean 'policy'?", found[0]["message"])

    def test_a_missing_policy_file_or_plugin_library_is_a_warning(self):
        with tempfile.TemporaryDirectory() as libs:
            code, found = self.check("event_plugin_name ibqos_osm\n"
                                     "event_plugin_options policy=SCRATCH/nonexistent.conf\n", libs)
            self.assertEqual(code, 0)
            self.assertEqual([(d["severity"], d["line"]) for d in found], [("warning", 1), ("warning", 2)])
            self.assertIn("libibqos_osm.so, which is in no directory", found[0]["message"])
            self.assertIn("nonexistent.conf: no such file here", found[1]["message"])
            # With the library on the loader's path and the policy there: nothing to say.
            open(os.path.join(libs, "libibqos_osm.so"), "w").close()
            code, found = self.check("event_plugin_name ibqos_osm\n"
                                     "event_plugin_options policy=SCRATCH/qos-policy.conf,pathrecord=opensm\n",
                                     libs)
            self.assertEqual((code, found), (0, []))


class Inputs(unittest.TestCase):
    @staticmethod
    def commands(path):
        return (["check", path], ["check", LAB_POLICY, "--topology", path],
                ["check", LAB_POLICY, *LAB[:2], "--partitions", path],
                ["diff", LAB_POLICY, path], ["query", LAB_POLICY, *LAB, "--batch", path])

    def test_a_directory_given_as_a_file_is_named_as_one(self):
        with tempfile.TemporaryDirectory() as scratch:
            for args in self.commands(scratch):
                p = ibqos(*args)
                self.assertEqual(p.returncode, 2, args)
                self.assertIn(f"cannot read '{scratch}': Is a directory".encode(), p.stderr, args)
            p = agent("plan", scratch)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"cannot read '{scratch}': Is a directory".encode(), p.stderr)

    def test_a_missing_file_is_named_with_the_same_words_by_every_command(self):
        with tempfile.TemporaryDirectory() as scratch:
            missing = os.path.join(scratch, "missing.conf")
            for args in self.commands(missing):
                p = ibqos(*args)
                self.assertEqual(p.returncode, 2, args)
                self.assertIn(f"cannot open '{missing}': No such file or directory".encode(),
                              p.stderr, args)
            p = agent("plan", missing)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"cannot open '{missing}': No such file or directory".encode(), p.stderr)


class FindingsByCause(unittest.TestCase):
    """A rule that shadows many later rules is one warning in text, every finding in JSON."""

    @staticmethod
    def policy(shadowed):
        rules = "".join("    qos-match-rule\n        service-id: %d\n        qos-level-name: gold\n"
                        "    end-qos-match-rule\n" % (100 + i) for i in range(shadowed))
        return ("qos-levels\n    qos-level\n        name: default\n        sl: 0\n    end-qos-level\n"
                "    qos-level\n        name: gold\n        sl: 1\n    end-qos-level\nend-qos-levels\n"
                "qos-match-rules\n    qos-match-rule\n        qos-level-name: gold\n    end-qos-match-rule\n"
                + rules + "end-qos-match-rules\n")

    def test_one_cause_is_one_warning_in_text_and_every_finding_in_json(self):
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "shadow.conf")
            with open(path, "w") as f:
                f.write(self.policy(40))
            p = ibqos("check", path)
            text = p.stderr.decode()
            self.assertEqual(p.returncode, 0)
            self.assertEqual(text.count("[shadowed-rule]"), 1, text)
            self.assertIn("(and at 39 more places: 19:5, 23:5, 27:5, 31:5, 35:5, ...", text)
            self.assertIn("0 errors, 40 warnings, from 1 cause", text)
            p = ibqos("check", path, "--json")
            findings = json.loads(p.stdout)
            self.assertEqual(len(findings), 1)
            lines = [findings[0]["line"]] + [r["line"] for r in findings[0]["related"]]
            self.assertEqual(lines, [15 + 4 * i for i in range(40)])
            self.assertTrue(all(set(r) == {"file", "line", "column"} for r in findings[0]["related"]))

    def test_ignore_leaves_out_warnings_never_errors(self):
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "shadow.conf")
            with open(path, "w") as f:
                f.write(self.policy(3).replace("sl: 1", "sl: 99"))
            p = ibqos("check", path, "--ignore", "shadowed-rule,value-range")
            text = p.stderr.decode()
            self.assertNotIn("[shadowed-rule]", text)
            self.assertEqual(p.returncode, 1, text)
            self.assertIn("error:", text)

    def test_commands_that_use_a_policy_print_its_errors_and_count_its_warnings(self):
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "shadow.conf")
            with open(path, "w") as f:
                f.write(self.policy(3))
            p = ibqos("query", path, *LAB, "--src", "1", "--dst", "2")
            text = p.stderr.decode()
            self.assertEqual(p.returncode, 0, text)
            self.assertNotIn("warning:", text)
            self.assertRegex(text, r"^0 errors, [0-9]+ warnings \(`ibqos check` shows the warnings\)\n$")


class Output(unittest.TestCase):
    def test_an_output_that_cannot_be_written_names_the_file_asked_for(self):
        with tempfile.TemporaryDirectory() as scratch:
            target = os.path.join(scratch, "missing", "tables.json")
            for program, args in ((ARGS.ibqos, ["compile", LAB_POLICY, *LAB, "--emit", "json", "-o", target]),
                                  (ARGS.agent, ["plan", HOST_POLICY, "-o", target])):
                p = run(program, *args)
                self.assertEqual(p.returncode, 2)
                self.assertIn(f"cannot write '{target}': No such file or directory".encode(), p.stderr)
                self.assertNotIn(b".tmp.", p.stderr)

    def test_emit_opensm_creates_its_directory_and_says_what_it_froze(self):
        with tempfile.TemporaryDirectory() as scratch:
            target = os.path.join(scratch, "new", "opensm")
            p = ibqos("compile", LAB_POLICY, *LAB, "--emit", "opensm", "-o", target)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(os.listdir(target)), ["opensm-qos.conf", "qos-policy.conf"])
            header = content(os.path.join(target, "qos-policy.conf")).decode()
            self.assertIn("Make both files again", header)
            self.assertIn("whenever a port\n# is added, removed or replaced", header)
            blocked = os.path.join(scratch, "file")
            open(blocked, "w").close()
            p = ibqos("compile", LAB_POLICY, *LAB, "--emit", "opensm", "-o", os.path.join(blocked, "dir"))
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"cannot create '{blocked}/dir': Not a directory".encode(), p.stderr)


class JsonTypes(unittest.TestCase):
    def test_query_gives_mtu_and_rate_limits_with_readable_companions(self):
        p = ibqos("query", root("samples/policies/qos-lab-guid-ranges.conf"), *LAB, "--src", "node-01 HCA-1/P1",
                  "--dst", "0x10000e", "--json")
        a = json.loads(p.stdout)
        self.assertEqual((a["mtu_limit"], a["mtu_limit_bytes"], a["rate_limit"], a["rate_limit_gbps"]),
                         (4, 2048, 3, 10))

    def diff_of(self, policy):
        """`ibqos diff --json` of policy(1) against policy(2): they differ."""
        with tempfile.TemporaryDirectory() as scratch:
            paths = []
            for sl in (1, 2):
                paths.append(os.path.join(scratch, f"{sl}.conf"))
                with open(paths[-1], "w", encoding="utf-8") as f:
                    f.write(policy(sl))
            p = ibqos("diff", *paths, "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        return json.loads(p.stdout)

    def test_a_json_command_whose_input_has_errors_prints_an_error_object(self):
        with tempfile.TemporaryDirectory() as scratch:
            bad = os.path.join(scratch, "bad.conf")
            with open(bad, "w") as f:
                f.write(BAD_POLICY)
            for args, code in ((["query", bad, *LAB, "--src", "0x100003", "--dst", "0x100004", "--json"], 1),
                               (["diff", bad, LAB_POLICY, "--json"], 2),
                               (["compile", bad, *LAB, "--emit", "json"], 1)):
                p = ibqos(*args)
                self.assertEqual(p.returncode, code, args)
                out = json.loads(p.stdout)
                self.assertEqual(out["status"], "error", args)
                self.assertEqual([d["code"] for d in out["diagnostics"] if d["severity"] == "error"],
                                 ["value-range"], args)
                self.assertEqual(out.get("ports", []), [], "no tables for a policy with errors")
                self.assertIn(b"error: [value-range]", p.stderr)

    def test_diff_gives_64_bit_service_ids_exactly_as_hex_strings_too(self):
        def policy(sl):
            return ("qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\n"
                    f" qos-level\n  name: big\n  sl: {sl}\n end-qos-level\nend-qos-levels\n"
                    "qos-match-rules\n qos-match-rule\n  service-id: 0x8000000000000001-0xfffffffffffffffe\n"
                    "  qos-level-name: big\n end-qos-match-rule\nend-qos-match-rules\n")
        [region] = self.diff_of(policy)["regions"]
        self.assertEqual(region["service_ids"], [[0x8000000000000001, 0xfffffffffffffffe]])
        self.assertEqual(region["service_ids_hex"], [["0x8000000000000001", "0xfffffffffffffffe"]])

    def test_diff_writes_names_that_need_escaping_as_valid_json(self):
        # A region is written as text member by member: a backslash, a quote and UTF-8 in names
        # must come back as the policy wrote them (quotes and the blanks outside them dropped,
        # as OpenSM reads the name).
        def policy(sl):
            return ("port-groups\n port-group\n  name: odd\n"
                    '  port-name: rack\\1 "caf\u00e9" HCA-1/P1\n'
                    " end-port-group\nend-port-groups\n"
                    "qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\n"
                    f" qos-level\n  name: lev\\el\n  sl: {sl}\n end-qos-level\nend-qos-levels\n"
                    "qos-match-rules\n qos-match-rule\n  source: odd\n  qos-class: 3\n"
                    "  qos-level-name: lev\\el\n end-qos-match-rule\nend-qos-match-rules\n")
        [region] = self.diff_of(policy)["regions"]
        self.assertEqual(region["sources"], [{"port_names": ["rack\\1caf\u00e9HCA-1/P1"]}])
        self.assertEqual((region["destinations"], region["qos_classes"]), (None, [[3, 3]]))
        self.assertEqual((region["old"]["level"], region["old"]["sl"], region["new"]["sl"]), ("lev\\el", 1, 2))
        self.assertEqual(region["old"]["rule"], [{"index": 0, "line": 18}])

    def test_diff_gives_changed_tables_in_compiles_form(self):
        setup = root("samples/policies/qos-lab-setup.conf")
        d = json.loads(ibqos("diff", LAB_POLICY, setup, *LAB, "--json").stdout)
        after = {(p["guid"], p["port"]): p for p in json.loads(ibqos("compile", setup, *LAB, "--emit", "json").stdout)["ports"]}
        self.assertTrue(d["ports"])
        for port in d["ports"]:
            self.assertEqual(port["name"].rsplit("/P", 1)[1], str(port["port"]))
            for change in port["changes"]:
                new = after[(port["guid"], port["port"])]
                if change["table"] == "vlarb low":
                    self.assertEqual(change["new"], new["vlarb_low"])
                elif change["table"] == "vlarb high":
                    self.assertEqual(change["new"], new["vlarb_high"])
                elif change["table"] == "vl-high-limit":
                    self.assertEqual(change["new"], new["high_limit"])
                else:
                    source = int(change["table"].split()[-1])
                    self.assertEqual(change["new"], next(t["vl"] for t in new["sl2vl"] if t["in"] == source))


def main():
    global ARGS, LAB, LAB_POLICY, HOST_POLICY
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--source-root", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.ibqos, ARGS.agent = os.path.abspath(ARGS.ibqos), os.path.abspath(ARGS.agent)
    LAB = ["--topology", root("samples/fabrics/qos-lab.ibnetdiscover"),
           "--partitions", root("samples/fabrics/qos-lab.partitions.conf")]
    LAB_POLICY = root("samples/policies/qos-lab-handwritten.conf")
    HOST_POLICY = root("samples/policies/host-sched.conf")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
