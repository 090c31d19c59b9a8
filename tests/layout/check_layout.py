#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the code against docs/architecture.md: every include goes down the folder table, and
each concept the page names is defined only in its owning file.

usage: check_layout.py SOURCE_ROOT
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
SOURCES = (".cpp", ".hpp", ".c", ".h")
TOP = ("cli/", "bench/", "fuzz/", "tests/")  # may include every folder

failures = []


def fail(message):
    failures.append(message)


def tracked():
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout:
        return [p for p in out.stdout.splitlines() if p.endswith(SOURCES) and (ROOT / p).exists()]
    # Not a git checkout (a source package): the source files of the project's own folders.
    tops = {f.split("/")[0] for f in list(allowed) + list(TOP)}
    return [str(p.relative_to(ROOT)) for top in sorted(tops) for p in (ROOT / top).rglob("*")
            if p.suffix in SOURCES]


def table(doc, heading):
    """The rows of the first table after a '## heading' line, as lists of cells."""
    lines = doc.splitlines()
    start = lines.index("## " + heading)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:]  # without the header


def folders_in(cell):
    return re.findall(r"`([a-z0-9/_-]+/)`", cell)


doc = (ROOT / "docs/architecture.md").read_text()
allowed = {}
for row in table(doc, "Folders"):
    (folder,) = folders_in(row[0])
    allowed[folder] = set(folders_in(row[2]))
owners = {row[0]: row[1].strip("`") for row in table(doc, "Owners")}
files = tracked()


def owner_folder(path):
    best = None
    for folder in allowed:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


# Every folder with sources is in the table (or on top).
for path in files:
    if not path.startswith(TOP) and "/" in path and owner_folder(path) is None:
        fail(f"{path}: its folder is not in docs/architecture.md's folder table")

# Includes go down the table.
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for path in files:
    here = owner_folder(path)
    if here is None:
        continue
    text = (ROOT / path).read_text(errors="replace")
    for m in include.finditer(text):
        target = owner_folder(m.group(1))
        if target is None:
            if "/" in m.group(1) and not m.group(1).startswith(TOP):
                fail(f"{path}: includes \"{m.group(1)}\", which is in no folder of the table")
            elif m.group(1).startswith(TOP) and not here.startswith("tests/"):
                fail(f"{path}: includes \"{m.group(1)}\" from tests/")
            continue
        if target != here and target not in allowed[here]:
            line = text.count("\n", 0, m.start()) + 1
            fail(f"{path}:{line}: includes \"{m.group(1)}\": {here} may not include {target}")

# Owners: each file the page names exists.
for concept, path in owners.items():
    if not (ROOT / path).exists():
        fail(f"docs/architecture.md names {path} as the owner of {concept}, and it does not exist")


def product(path):
    return not path.startswith(("tests/", "bench/", "fuzz/"))


def without_comments(text):
    # Comments blanked (lines kept), so that prose may name what code may not.
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"^[ \t]*//.*$|(?<=[;{}),])[ \t]*//.*$", "", text, flags=re.M)


def without_strings(text):
    # String literals emptied too, so that messages may say what code may not write.
    text = re.sub(r'R"([^(\s]*)\(.*?\)\1"', '""', text, flags=re.S)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def defined_only_in(concept, pattern, owners_ok, scope=product, code_only=False):
    """Every file matching pattern outside owners_ok (files, a header and its source file
    counting as one, or folders ending in '/') is a failure. code_only: string literals are not
    looked at."""
    rx = re.compile(pattern, re.M)
    stems = {str(Path(p).with_suffix("")) for p in owners_ok if not p.endswith("/")}
    folders = tuple(p for p in owners_ok if p.endswith("/"))
    found_in_owner = False
    for path in files:
        if not scope(path):
            continue
        text = without_comments((ROOT / path).read_text(errors="replace"))
        if code_only:
            text = without_strings(text)
        m = rx.search(text)
        if not m:
            continue
        if str(Path(path).with_suffix("")) in stems or path.startswith(folders):
            found_in_owner = True
            continue
        line = text.count("\n", 0, m.start()) + 1
        fail(f"{path}:{line}: {concept} outside {', '.join(sorted(owners_ok))}")
    if not found_in_owner:
        fail(f"{concept}: not found in {', '.join(sorted(owners_ok))} (the check is stale)")


def definition(*names):
    # A function definition at namespace scope: a return type, the name, parameters, a brace.
    return r"^[A-Za-z_][\w:<>,\s\*&]*\b(?:%s)\s*\([^;{}]*\)\s*(?:const\s*)?\{" % "|".join(names)


# The fabric stage: the three calls together in one place only (tests included).
everywhere = lambda path: True
defined_only_in("the fabric stage (computeTables, checkRealizability calls)",
                r"\b(?:computeTables|checkRealizability)\s*\((?!const)",
                {"compiler/fabric_compilation.cpp", "compiler/tables.cpp",
                 "compiler/realizability.cpp"}, everywhere)
# The pass list: the compiler's two halves are run, with the dead-rule analysis between them, in
# one place only (tests included).
defined_only_in("the pass list (resolvePolicy, finishPolicy calls)",
                r"\b(?:resolvePolicy|finishPolicy)\s*\(", {"compiler/compile_policy.cpp",
                                                          "policy-space/load_policy.cpp"},
                everywhere)
# The PathRecord codec: rdma-core's layouts are read in ib/ only, the codec defined once.
defined_only_in("rdma-core's PathRecord and SA layouts", r"\b(?:ibv_path_record|umad_sa_packet)\b",
                {"ib/mad.hpp", "ib/path_record.cpp"})
defined_only_in("the PathRecord codec", definition("encodePathRecord", "decodePathRecord"),
                {"ib/path_record.cpp"}, everywhere)
# The keyword table: keywords as string literals only there.
keywords = re.findall(r'\{"([a-z0-9-]+)", "(end-[a-z0-9-]+)"',
                      (ROOT / "policy-grammar/keywords.hpp").read_text())
words = sorted({w for pair in keywords for w in pair})
defined_only_in("the language's block keywords", r'"(?:%s)"' % "|".join(map(re.escape, words)),
                {"policy-grammar/keywords.hpp"},
                lambda p: product(p) and p.endswith((".cpp", ".hpp")))
# Every word of the language in the keyword table, value words included: the ULPs and their
# qualifiers are not spelled out elsewhere ("default" and "any" are ordinary words too, and
# "service-id" and "pkey" field keywords; fabric/ reads other files' words), nor listed.
keyword_table = (ROOT / "policy-grammar/keywords.hpp").read_text()
value_words = [w for table in ("ulpWords", "ulpQualifierWords")
               for w in re.findall(r'"([a-z-]+)"', re.search(
                   table + r"\[\] = \{(.*?)\};", keyword_table, re.S).group(1))]
own_words = sorted(set(value_words) - {"default", "any"} - set(
    re.findall(r'"([a-z0-9-]+)"', re.search(r"keyNames\[\] = \{(.*?)\};", keyword_table,
                                            re.S).group(1))))
defined_only_in("the qos-ulps words", r'"(?:%s)"' % "|".join(map(re.escape, own_words)),
                {"policy-grammar/keywords.hpp"},
                lambda p: product(p) and not p.startswith("fabric/"))
word = r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(set(value_words) - {""})))
defined_only_in("a list of qos-ulps words", r'%s(?:"?\s*[,|]\s*"?%s){2,}' % (word, word),
                {"policy-grammar/keywords.hpp"})
# The InfiniBand encodings and limits are written in ib/ only.
defined_only_in("P_Key base and membership masks (ib/qos.hpp)", r"(?i)\b0x0*7fff\b|\b0x8000\b",
                {"ib/"})
defined_only_in("the QoS class's width (ib/qos.hpp)", r"\b4095\b|(?i:\b0x0?fff\b)", {"ib/"})
defined_only_in("the SL's width (ib/qos.hpp)", r"(?i)^(?=[^\n]*\bsls?\b)[^\n]*\b1[56]\b",
                {"ib/"}, code_only=True)
defined_only_in("4-bit fields packed by hand (SL2VL nibbles: ib/tables.hpp)",
                r"(?:<<|>>)\s*4\b|&\s*0x0?[fF]\b", {"ib/"}, code_only=True)
defined_only_in("VLArb block addressing (ib/tables.hpp)",
                r"\bIB_NUM_VL_ARB_ELEMENTS_IN_BLOCK\b|[A-Za-z_)\]]\s*<<\s*16\b", {"ib/"},
                code_only=True)
defined_only_in("the SA header check (ib::checkSaHeader)",
                r"\[\s*(?:ib::)?at::(?:BaseVersion|MgmtClass|ClassVersion)\s*\]\s*!=",
                {"ib/mad.cpp"}, code_only=True)
# fabric/ owns its text formats: ibnetdiscover text is written beside its reader only (programs
# build a Fabric as a model; a benchmark that needs the file writes it with writeTopology).
defined_only_in("an ibnetdiscover writer", r"(?:switchguid|caguid|rtguid)=",
                {"fabric/topology_writer.cpp"}, lambda p: product(p) or p.startswith("bench/"))
# JSON: documents built with nlohmann-json and printed by common/json.cpp; JSON written as text
# only where a comment there says why (the streamed port list, the query batch's hot path).
defined_only_in("JSON written by hand", r'"[^"\n]*\\"[a-z_]+\\"\s*:',
                {"compiler/emit_tables.cpp", "cli/answer_json.hpp"})
defined_only_in("the JSON printers", definition("dumpJson", "jsonNumber"), {"common/json.cpp"},
                everywhere)
defined_only_in("text and hash helpers", definition("fnv1a", "parseNumber", "hex"),
                {"common/text.hpp"}, everywhere)
defined_only_in("OpenSM's QoS MAD counts",
                definition("vlArbBlockLength", "sl2vlInPorts", "countFullProgramming"),
                {"osm-plugin/qos_mads.cpp"}, everywhere)
# OpenSM's lock: taken and released only by the scope guard, so that no exception leaves it held.
defined_only_in("OpenSM's lock taken or released by hand (use OpenSmLock)", r"\bcl_plock_\w+\s*\(",
                {"osm-plugin/opensm_lock.hpp"})

for f in failures:
    print(f, file=sys.stderr)
print(f"{len(files)} files, {len(allowed)} folders, {len(owners)} owners: "
      f"{len(failures)} problem(s)")
sys.exit(1 if failures else 0)
