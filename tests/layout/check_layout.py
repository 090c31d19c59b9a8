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

# Include order (STYLE.md): a source file includes its own header first, then the standard
# library and the system and third-party headers (<...>), then ours ("..."). Checked: a .cpp
# with a header of its own name includes it first, and no <...> comes after a "..." (a .cpp's
# first include, the header it implements, aside: compiler/elaborate_*.cpp implement
# elaborator.hpp). The order within the <...> headers is not checked (Google style puts the C
# system headers first; the tests put Catch2 first).
any_include = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
for path in files:
    if not path.endswith((".cpp", ".hpp")):
        continue
    found = list(any_include.finditer((ROOT / path).read_text(errors="replace")))
    if path.endswith(".cpp"):
        own = str(Path(path).with_suffix(".hpp"))
        names = [m.group(2) for m in found if m.group(1) == '"']
        if own in names and found[0].group(2) != own:
            fail(f"{path}: includes its own header \"{own}\" after other headers (own header first)")
        if found and found[0].group(1) == '"':
            found = found[1:]
    ours = next((m for m in found if m.group(1) == '"'), None)
    late = next((m for m in found if m.group(1) == "<" and ours and m.start() > ours.start()),
                None)
    if late:
        line = (ROOT / path).read_text(errors="replace").count("\n", 0, late.start()) + 1
        fail(f"{path}:{line}: includes <{late.group(2)}> after \"{ours.group(2)}\" (the standard "
             f"library and other <...> headers before ours)")

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
# Keywords inside longer literals, as an emitter writes a policy's lines: a literal that starts
# with indentation or a line end and then a keyword followed by ':' or a line end ("        sl: ",
# "\nqos-levels\n"), that starts with a keyword and a line end ("end-qos-level\n"), or that is
# a block keyword with only blanks and line ends around it ("sl-enforcement "). Prose is left
# alone: it quotes a keyword with a blank or a quote after it ("qos-level 'x' uses ..."), or
# starts with a keyword and a colon without indentation ("source: " + why, a message's second
# line "vl-high-limit: or bandwidth:").
field_words = re.findall(r'"([a-z0-9-]+)"', re.search(r"keyNames\[\] = \{(.*?)\};",
                                                       keyword_table, re.S).group(1))
any_word = "|".join(map(re.escape, sorted(set(words) | set(field_words), key=len, reverse=True)))
block_word = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
defined_only_in("a keyword written in a literal (use keyName, openKeyword, closeKeyword)",
                r'"(?:(?:\s|\\n)+(?:%s)(?::|\\n)|(?:%s)\\n|(?:\s|\\n)*(?:%s)(?:\s|\\n)*")'
                % (any_word, any_word, block_word),
                {"policy-grammar/keywords.hpp"},
                lambda p: product(p) and p.endswith((".cpp", ".hpp")))
# The host-sched section's value words (host_words.hpp, part of the keyword table): the
# sl-enforcement modes and the congestion-control algorithms. host-sched/pcc/ registers each
# algorithm under its word and may not include the grammar (tests/host-sched/test_pcc.cpp holds
# the two equal).
host_words = re.findall(r'"([a-z0-9-]+)"',
                        (ROOT / "policy-grammar/host_words.hpp").read_text())
defined_only_in("the host-sched value words (policy-grammar/host_words.hpp)",
                r'"(?:%s)"' % "|".join(map(re.escape, host_words)),
                {"policy-grammar/host_words.hpp"},
                lambda p: product(p) and not p.startswith("host-sched/pcc/"))
# The node types: ordinary words elsewhere (the monitor's labels), so only the grammar is held to
# the table.
node_types = re.findall(r'"([a-z]+)"', re.search(r"nodeTypeWords\[\] = \{(.*?)\};",
                                                 keyword_table, re.S).group(1))
defined_only_in("the node-type words", r'"(?:%s)"' % "|".join(node_types),
                {"policy-grammar/keywords.hpp"}, lambda p: p.startswith("policy-grammar/"))
# The InfiniBand encodings and limits are written in ib/ only.
defined_only_in("P_Key base and membership masks (ib/qos.hpp)", r"(?i)\b0x0*7fff\b|\b0x8000\b",
                {"ib/"})
defined_only_in("the QoS class's width (ib/qos.hpp)", r"\b4095\b|(?i:\b0x0?fff\b)", {"ib/"})
defined_only_in("the SL's width (ib/qos.hpp)", r"(?i)^(?=[^\n]*\bsls?\b)[^\n]*\b1[56]\b",
                {"ib/"}, code_only=True)
defined_only_in("4-bit fields packed by hand (SL2VL nibbles: ib/sl2vl_vlarb.hpp)",
                r"(?:<<|>>)\s*4\b|&\s*0x0?[fF]\b", {"ib/"}, code_only=True)
defined_only_in("VLArb block addressing (ib/sl2vl_vlarb.hpp)",
                r"\bIB_NUM_VL_ARB_ELEMENTS_IN_BLOCK\b|[A-Za-z_)\]]\s*<<\s*16\b", {"ib/"},
                code_only=True)


def camel(word):
    """word as a word of an identifier or of prose, any case, plural too: "mtu" finds mtu, MTU,
    mtuLimit and MaxMtu, not smtu."""
    head = "[%s%s]%s" % (word[0], word[0].upper(), "".join(
        "[%s%s]" % (c, c.upper()) for c in word[1:]))
    capital = word[0].upper() + "".join("[%s%s]" % (c, c.upper()) for c in word[1:])
    return r"(?:(?<![A-Za-z])%s|(?<=[a-z])%s)s?(?![a-z])" % (head, capital)


def statements(text):
    """The lines of text with their continuation lines joined (a line that does not end in ';',
    '{', '}' or ':' goes on on the next), each with its first line's number."""
    start, joined = 1, []
    for number, line in enumerate(text.splitlines(), 1):
        if not joined:
            start = number
        joined.append(line.strip())
        if not line.strip() or line.rstrip().endswith((";", "{", "}", ":")):
            yield start, " ".join(joined)
            joined = []
    if joined:
        yield start, " ".join(joined)


def named_on_line(concept, name, pattern, owners_ok):
    """A statement (comments aside; a line with its continuation lines) of a product file that
    names `name` (camel) anywhere, its string literals included, and whose code (string literals
    emptied) matches pattern, outside owners_ok (folders ending in '/'). Prose in messages
    ("(1..5)") is left alone."""
    word, rx = re.compile(camel(name)), re.compile(pattern)
    found_in_owner = False
    for path in files:
        if not product(path) or not path.endswith((".cpp", ".hpp")):
            continue
        text = without_comments((ROOT / path).read_text(errors="replace"))
        # Raw strings blanked with their lines kept, so that lines stay lines.
        text = re.sub(r'R"([^(\s]*)\(.*?\)\1"', lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                      text, flags=re.S)
        for number, line in statements(text):
            if not word.search(line) or not rx.search(without_strings(line)):
                continue
            if path.startswith(owners_ok):
                found_in_owner = True
                continue
            fail(f"{path}:{number}: {concept} outside {', '.join(owners_ok)}")
    if not found_in_owner:
        fail(f"{concept}: not found in {', '.join(owners_ok)} (the check is stale)")


# The link encodings (ib/link.hpp) and limits (ib/qos.hpp): a statement that names the field and
# writes one of its bounds as a number, in code (a message may quote the range):
# - the rate enum 2..22: a bare 22, or a comparison with 2 ("rate > 22", "bounded(n, 2, 22");
# - the MTU enum 1..5: a bare 5, or a comparison with 1 ("mtu < 1 || mtu > 5", "? 5 :");
# - the data VLs 0-14: a bare 14 or 15 ("vl < 15", "vl & 15", "0, 14", "% 15"), not after
#   + - * / (a drawing's coordinates);
# - the P_Key's maximum: 0xffff on a line that names a P_Key (0xffff is also a LID, a port
#   number and a mask of 16 SLs elsewhere).
bare = r"(?<![\w.])%s(?![\w.])"
compare = r"(?<![<>])[<>]=?\s*%s(?![\w.])"
named_on_line("the rate enum's range (ib::MinRate, ib::MaxRate, ib::isRate)", "rate",
              "%s|%s" % (bare % "22", compare % "2"), ("ib/",))
named_on_line("the MTU enum's range (ib::MinMtu, ib::MaxMtu, ib::isMtu)", "mtu",
              "%s|%s" % (bare % "5", compare % "1"), ("ib/",))
named_on_line("the data VLs (ib::DataVlCount, ib::MaxDataVl, ib::MaxVl)", "vl",
              r"(?<![-+*/]\s)(?<![-+*/])" + bare % "1[45]", ("ib/",))
named_on_line("the P_Key's maximum (ib::MaxPkey)", "pkey", r"(?i)\b0xffff\b", ("ib/",))
# The MTU from and to its bytes ("== 4096 ? 5", "case 4096:", "128 << mtu") and the OperVLs code from and to its VLs
# (">= 5 ? 15", "case 15: return 5", a table indexed by VLs) are written in ib/link.hpp only.
defined_only_in("the MTU enum and its bytes (ib::mtuForBytes, mtuBytes)",
                r"\b(?:256|512|1024|2048|4096)\s*\?\s*[1-5]\b|\bcase\s+(?:2048|4096)\s*:|\b128u?\s*<<",
                {"ib/"}, code_only=True)
defined_only_in("the OperVLs encoding (ib::dataVls, ib::vlEncoding)",
                r">=\s*(?:5|MaxVlEncoding)\s*\?\s*(?:15u?|DataVlCount)\b|\bcase\s+15\s*:\s*return\s+5\b"
                r"|\b0,\s*3,\s*0,\s*0,\s*0,\s*4\b", {"ib/"}, code_only=True)
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
# The option groups (FabricOptions, LocalPortOptions, addAnalysisBudget): each option of a group
# is declared once, by its owner, for every command that takes it.
group_options = ["topology", "partitions", "sm", "vls", "port-caps", "opensm-conf", "hca", "port",
                 "analysis-budget"]
defined_only_in("an option of a shared group declared by a command (use its owner)",
                r'\b(?:add_option|add_flag|addValue)\s*\([^;]*?"--(?:%s)"' % "|".join(
                    map(re.escape, group_options)),
                {"cli/commands.cpp", "cli/command_line.cpp"})
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
