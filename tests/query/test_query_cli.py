#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ibqos query` as a user runs it: answers, explanations, JSON, batches with hostile lines, exit
codes (the command-line contract), on the sample fabric qos-lab and its partitions."""
import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def samples(*parts):
    return os.path.join(ARGS.samples, *parts)


def run(*args, stdin=None):
    return subprocess.run([ARGS.ibqos, "query", *args], capture_output=True, timeout=60,
                          input=stdin if isinstance(stdin, bytes) else (stdin or "").encode())


def lab(policy, *args, stdin=None):
    return run(samples("policies", policy), "--topology", samples("fabrics", "qos-lab.ibnetdiscover"),
               "--partitions", samples("fabrics", "qos-lab.partitions.conf"), "--sm", "sm-01 HCA-1/P1",
               *args, stdin=stdin)


def lines(p):
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


class SingleQuery(unittest.TestCase):
    def test_the_answer_names_level_sl_limits_pkey_and_rule(self):
        p = lab("qos-lab-guid-ranges.conf", "--src", "node-01 HCA-1/P1", "--dst", "0x10000e", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        [a] = lines(p)
        self.assertEqual(a["status"], "ok")
        self.assertEqual(a["level"], "storage-write")
        self.assertEqual((a["sl"], a["mtu_limit"], a["rate_limit"], a["packet_life"], a["pkeys"]), (3, 4, 3, None, None))
        self.assertEqual(a["rule"], {"index": 1, "line": 71})  # its qos-match-rule line
        self.assertEqual(a["pkey"], 0x8100)  # compute: both full, first in OpenSM's map order

    def test_a_level_name_with_backslash_accents_and_a_stray_byte_is_valid_json(self):
        policy = ("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\n"
                  " qos-level\n  name: \"tier\\2 caf\u00e9 \xff\"\n  sl: 5\n end-qos-level\n"
                  "end-qos-levels\nqos-match-rules\n qos-match-rule\n"
                  "  qos-level-name: \"tier\\2 caf\u00e9 \xff\"\n end-qos-match-rule\nend-qos-match-rules\n"
                  ).encode("latin-1")
        policy = policy.replace("café".encode("latin-1"), "café".encode("utf-8"))
        with tempfile.NamedTemporaryFile(suffix=".conf") as f:
            f.write(policy)
            f.flush()
            p = run(f.name, "--topology", samples("fabrics", "qos-lab.ibnetdiscover"), "--src", "6", "--dst", "7",
                    "--json")
            q = run(f.name, "--topology", samples("fabrics", "qos-lab.ibnetdiscover"), "--batch", "-",
                    stdin="6 7 - - - -\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        [a] = lines(p)
        self.assertEqual(a["level"], "tier\\2 caf\u00e9 \ufffd")  # the stray byte is U+FFFD
        self.assertEqual((a["sl"], a["rule"]["index"]), (5, 0))
        self.assertEqual(lines(q), [a])  # a batch line is the same object

    def test_the_default_level_has_no_rule(self):
        p = lab("qos-lab-fields.conf", "--src", "6", "--dst", "7", "--json")
        [a] = lines(p)
        self.assertIsNone(a["rule"])
        self.assertEqual(a["level"], "default")

    def test_a_contradicting_sl_is_rejected_and_still_exit_0(self):
        p = lab("qos-lab-guid-ranges.conf", "--src", "node-01 HCA-1/P1", "--dst", "0x10000e", "--sl", "2", "--json")
        self.assertEqual(p.returncode, 0)
        [a] = lines(p)
        self.assertEqual(a["status"], "rejected")
        self.assertIn("1F1F", a["reason"])
        self.assertIsNone(a["pkey"])
        self.assertEqual(a["sl"], 3)

    def test_the_explanation_gives_the_rule_the_values_and_why_earlier_rules_lost(self):
        p = lab("qos-lab-fields.conf", "--src", "6", "--dst", "7", "--qos-class", "5", "--pkey", "0x8100",
                "--service-id", "0x300")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assertIn("level 'c'", out)
        self.assertIn("Decided by rule 2 (", out)
        self.assertIn("qos-class 5 is in 4-7", out)
        self.assertIn("pkey 0x8100 is in 0x100", out)
        self.assertIn("rule 0 (", out)
        self.assertIn("service-id 0x300 is not in 0x100-0x1ff", out)
        self.assertIn("PKey 0x8100 (requested)", out)

    def test_an_explanation_of_the_default_level_lists_every_rule(self):
        p = lab("qos-lab-names-and-types.conf", "--src", "node-03 HCA-1/P1", "--dst", "storage-01 HCA-1/P1")
        out = p.stdout.decode()
        self.assertIn("No rule matched", out)
        self.assertEqual(out.count("\n  rule "), 8)
        self.assertIn("source node-03 HCA-1/P1 is in none of 'the-sm'", out)

    def test_an_unknown_port_is_an_input_error(self):
        p = lab("qos-lab-fields.conf", "--src", "6", "--dst", "999")
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"no port has LID 999", p.stderr)
        p = lab("qos-lab-fields.conf", "--src", "nobody/P1", "--dst", "6", "--json")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(lines(p)[0]["status"], "error")

    def test_usage_errors_exit_2(self):
        policy = samples("policies", "qos-lab-fields.conf")
        topology = samples("fabrics", "qos-lab.ibnetdiscover")
        for args in ([policy, "--src", "1", "--dst", "2"],                       # no topology
                     [policy, "--topology", topology, "--src", "1"],               # no destination
                     [policy, "--topology", topology, "--src", "1", "--dst", "2", "--qos-class", "4096"],
                     [policy, "--topology", topology, "--src", "1", "--dst", "2", "--sl", "-1"],
                     [policy, "--topology", topology, "--batch", "-", "--src", "1"],
                     [policy, "--topology", topology, "--src", "1", "--dst", "2", "--frobnicate"],
                     ["/nonexistent.conf", "--topology", topology, "--src", "1", "--dst", "2"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"", args)

    def test_a_policy_with_errors_prints_diagnostics_and_no_answer(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("qos-levels\n qos-level\n  name: default\n  sl: 16\n end-qos-level\nend-qos-levels\n")
        p = run(f.name, "--topology", samples("fabrics", "qos-lab.ibnetdiscover"), "--src", "6", "--dst", "7")
        os.unlink(f.name)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"error: [value-range]", p.stderr)

    def test_a_topology_with_errors_gives_no_answer(self):
        with tempfile.NamedTemporaryFile("w", suffix=".ibnetdiscover", delete=False) as f:
            f.write('Switch 4 "S1"\n[1] "H1"[1]\n\nHca 1 "H1"\n[1] "S9"[1]\n')
        p = run(samples("policies", "qos-lab-fields.conf"), "--topology", f.name, "--src", "1", "--dst", "2")
        os.unlink(f.name)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"error:", p.stderr)

    def test_help_documents_the_options_and_exit_status(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        for text in (b"--batch FILE", b"--service-id", b"rejected", b"Exit status"):
            self.assertIn(text, p.stdout)


class Batch(unittest.TestCase):
    def test_every_line_gets_its_answer_in_order(self):
        text = ("6 12 0x1000 - - -\n"
                "\"node-01 HCA-1/P1\" 0x10000e - - - -\n"
                "6 12 - 5 0x8100 -\n"
                "6 12 - - - 9\n")
        p = lab("qos-lab-fields.conf", "--batch", "-", stdin=text)
        self.assertEqual(p.returncode, 0, p.stderr)
        a = lines(p)
        self.assertEqual([x["status"] for x in a], ["ok", "ok", "ok", "rejected"])
        self.assertEqual([x["level"] for x in a], ["c", "default", "c", "default"])
        for x in a:
            self.assertEqual(set(x) - {"reason"}, {"status", "level", "sl", "mtu_limit", "mtu_limit_bytes", "rate_limit",
                                                   "rate_limit_gbps", "packet_life", "pkeys", "pkey", "rule"})

    def test_hostile_lines_are_errors_on_their_own_line_and_the_batch_goes_on(self):
        hostile = [
            b"",                                        # empty
            b"6 12",                                    # too few fields
            b"6 12 - - - - -",                          # too many
            b"\"node-01 HCA-1/P1 12 - - - -",           # unclosed quote
            b"6 12 99999999999999999999999 - - -",      # ServiceID past 64 bits
            b"6 12 - 4096 - -",                         # QoS class past 12 bits
            b"6 12 - - 0x10000 -",                      # PKey past 16 bits
            b"6 12 - - - 16",                           # SL past 4 bits
            b"6 999 - - - -",                           # unknown LID
            b"0xdeadbeef 12 - - - -",                   # unknown GUID
            b"nobody/P1 12 - - - -",                    # unknown node
            b"6 12 +1 - - -",                           # a sign
            b"6 12 1e3 - - -",                          # not an integer
            b"x" * 100000,                              # longer than a line may be
            b"\x00\x01\xfe\xff 12 - - - -",             # binary
            b"\xff\xfe \"\xc3\x28\" - - - -",           # invalid UTF-8, echoed safely
        ]
        good = b"6 12 0x1000 - - -"
        text = b"\n".join(x for h in hostile for x in (h, good)) + b"\n"
        p = lab("qos-lab-fields.conf", "--batch", "-", stdin=text)
        self.assertEqual(p.returncode, 1)
        a = lines(p)  # every line is valid JSON
        self.assertEqual(len(a), 2 * len(hostile))
        for i in range(len(hostile)):
            self.assertEqual(a[2 * i]["status"], "error", hostile[i][:40])
            self.assertTrue(a[2 * i]["message"])
            self.assertEqual(a[2 * i + 1]["status"], "ok")

    def test_an_unknown_port_gets_the_whole_reason_and_a_long_field_is_cut(self):
        p = lab("qos-lab-fields.conf", "--batch", "-",
                stdin=b"nosuchport 12 - - - -\n" + b"y" * 5000 + b" 12 - - - -\n")
        first, second = lines(p)
        self.assertTrue(first["message"].endswith("a LID, or NodeDescription/P<n>"), first["message"])
        self.assertLess(len(second["message"]), 120)
        self.assertIn("is not a port of the fabric", second["message"])

    def test_random_bytes_give_one_valid_json_line_per_line(self):
        import random
        rng = random.Random(7)
        alphabet = b' \t"-0123456789abcdefx/P\n\x00\xff' + bytes(range(0x20, 0x7f))
        data = bytes(rng.choice(alphabet) for _ in range(200000))
        p = lab("qos-lab-mixed.conf", "--batch", "-", stdin=data)
        self.assertIn(p.returncode, (0, 1))
        a = lines(p)
        self.assertEqual(len(a), data.count(b"\n") + (not data.endswith(b"\n")))

    def test_a_batch_file_with_crlf_endings_and_no_final_newline_is_read(self):
        with tempfile.NamedTemporaryFile("wb", delete=False) as f:
            f.write(b"6 12 0x1000 - - -\r\n6 6 - - - -")
        p = lab("qos-lab-fields.conf", "--batch", f.name)
        os.unlink(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        a = lines(p)
        self.assertEqual(len(a), 2)
        self.assertEqual(a[1]["packet_life"], 0)  # a loopback path

    def test_a_co_process_gets_each_answer_before_it_writes_the_next_request(self):
        # A program that asks one request at a time over a pipe must not wait on a buffer.
        p = subprocess.Popen([ARGS.ibqos, "query", samples("policies", "qos-lab-fields.conf"),
                              "--topology", samples("fabrics", "qos-lab.ibnetdiscover"),
                              "--partitions", samples("fabrics", "qos-lab.partitions.conf"),
                              "--batch", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            for request in (b"6 12 0x1000 - - -\n", b"6 6 - - - -\n", b"not a request\n"):
                p.stdin.write(request)
                p.stdin.flush()
                ready, _, _ = select.select([p.stdout], [], [], 10)
                self.assertTrue(ready, f"no answer to {request!r} within 10 s")
                self.assertIn(json.loads(p.stdout.readline())["status"], ("ok", "rejected", "error"))
            p.stdin.close()
            self.assertEqual(p.wait(timeout=10), 1)  # the unreadable line
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_a_missing_batch_file_is_an_io_error(self):
        p = lab("qos-lab-fields.conf", "--batch", "/nonexistent/batch")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, b"")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ibqos", required=True)
    ap.add_argument("--samples", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
