# SPDX-License-Identifier: MIT
# Deterministic random generator of OpenSM QoS policy files for the differential tests.
"""Deterministic random generator of OpenSM QoS policy files.

A differential test hands every generated policy to a real OpenSM 3.3.23 and to `ibqos check`
and compares their verdicts and SA answers. This module only writes the policies.

Design
------
* `generate(seed, profile)` draws everything from one `random.Random(seed)`; nothing else is
  random, no set is iterated into the output, so a seed always gives the same files.
* Generation runs in three steps:
    1. build a small model of the policy: port-groups, qos-levels, match rules, qos-ulps lines,
       qos-setup scopes, host-sched elements (`_build_*`, `_pg_*`, `_lv_*`, `_mr_*`, `_ulp_*`:
       one function per construct). Every value is rendered to text there (numbers in hex,
       decimal or octal, names quoted or not, references in another case), and each rendering
       records the construct it uses. A per-policy `style` decides how noisy the spelling is,
       so some policies are plain and others full of odd blanks, cases and radixes.
    2. write the model as a list of `_Line`s (`_emit*`): every line knows its indentation,
       keyword, separator, value, trailing comment and trailing blanks, whether it belongs to
       an extension (bandwidth:, host-sched), and which block it belongs to. A number list may
       go on on a continuation line after a trailing comma. Sections come in random order,
       sometimes repeated, sometimes missing; then a noise pass adds comment lines, blank lines,
       trailing comments and trailing blanks.
    3. for an invalid policy, one mutation (`_mutate_*`, one per kind) edits, inserts or
       deletes one line of that list; the line number is found again after rendering, both
       in `text` and in `stock_text` (which is `text` without the extension lines).
* Valid policies are written to be accepted by OpenSM 3.3.23 (facts from its flex lexer and
  bison grammar, osm_qos_parser_l.l / osm_qos_parser_y.y) and by ibqos without errors:
    - keywords lower case; node types and ULP words in any case; names compared without case;
    - a default level always exists (a qos-level named default or a qos-ulps `default` line);
    - port-groups and qos-ulps sections are never empty (OpenSM's grammar needs one item);
    - port-names only name ports the fabric has (OpenSM rejects an out-of-range port of a
      known node); a NodeDescription with a blank, a comma or other odd characters is quoted
      (unless the policy leaves them unquoted on purpose, construct "unquoted-inner-blank":
      ibqos then reads them as OpenSM does, blanks dropped; names with blanks are then unquoted
      everywhere, so OpenSM and ibqos both resolve them);
    - GUID ranges are narrow (OpenSM walks a GUID range one GUID at a time);
    - ipoib qos-ulps lines only name partitions with two full members (`ipoib_ok`);
    - numbers with a leading zero only use the digits 0-7 (they are the octal spelling of the
      intended value);
    - only number lists go on on a second line (OpenSM would also continue some name lists,
      ibqos does not);
    - qos-setup (ignored by OpenSM, applied by ibqos) is kept realizable: no SL a level, a
      qos-ulps line or a partition uses is mapped to VL 15, every high-priority table written
      holds VL 0 and every low-priority table covers VLs 1-7, so each of the 8 data VLs keeps a
      weight whatever scope wins on a port;
    - a file without a final newline never ends in a comment (OpenSM's lexer needs the newline
      to end a comment).
* Invalid policies are a valid policy with exactly one mutation OpenSM 3.3.23 rejects:
  bad-value, unknown-name, missing-default, duplicate-field, misspelled-keyword,
  unclosed-block, carriage-return. `mutation["line"]` / `mutation["stock_line"]` are 1-based
  line numbers in `text` / `stock_text`, counted with `text.split("\\n")` (a mutation may put a
  carriage return into a line: do not use `splitlines()`). It is where a checker should report
  the problem: the edited (or inserted) line; for unclosed-block the statement after the deleted
  `end-...` line (the block's opening line when the file ends first); for missing-default the
  first qos-levels section (the last line when there is none).

For the runner: OpenSM 3.3.23 re-reads the policy on every heavy sweep, but a parse that fails
leaves state behind for the next one: the lexer's line mode (after an error in the middle of a
line, the next file's first line is lexed in that mode and fails at line 1 until a file starts
with a newline) and the qos-ulps rules read before the error (they are added to the next policy
that parses). Restart OpenSM after a rejected policy, or load a policy that starts with a blank
line before the next one.

Command line:
    python3 policygen.py --fabric-ibnetdiscover F --partitions P --sm 0x100001 \\
        --seed S --count N --out DIR [--invalid|--valid]
writes DIR/policy-<seed>.conf, policy-<seed>.stock.conf and policy-<seed>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Public interface
# --------------------------------------------------------------------------------------------


@dataclass
class FabricProfile:
    """The fabric a policy is written for: its ports, partitions and SM port."""
    name: str
    # dicts: {"guid": int, "node_desc": str, "port": int, "type": "CA"|"SWITCH"|"ROUTER"}
    # (switch: port 0 only, its GUID; profile_from_files adds "ports": the switch's linked
    # port numbers, for port-name entries, and "num_ports", for sl2vl from/to lists; both
    # may be absent)
    ports: list
    # dicts: {"name": str, "pkey": int, "full_members": int, "ipoib_ok": bool}
    # (profile_from_files adds "sl": the partition's SL flag, default 0)
    partitions: list
    sm_guid: int


@dataclass
class GeneratedPolicy:
    """One generated policy and what the runner needs to judge it."""
    seed: int
    text: str
    stock_text: str
    intent: str
    mutation: dict | None
    constructs: set


MUTATION_KINDS = [
    "bad-value",
    "unknown-name",
    "missing-default",
    "duplicate-field",
    "misspelled-keyword",
    "unclosed-block",
    "carriage-return",
]

# Mutations that edit or insert the line they report. The others report where the problem is
# noticed: unclosed-block the statement after the deleted `end-` line (or, at the end of the
# file, the block's opening line), missing-default the first qos-levels section (or the last
# line of the file).
LINE_EDIT_KINDS = [k for k in MUTATION_KINDS if k not in ("unclosed-block", "missing-default")]

ULP_CONSTRUCTS = [
    "ulp:default",
    "ulp:any-service-id",
    "ulp:any-pkey",
    "ulp:any-target-port-guid",
    "ulp:any-source-port-guid",
    "ulp:any-source-target-port-guid",
    "ulp:sdp",
    "ulp:sdp-port-num",
    "ulp:rds",
    "ulp:rds-port-num",
    "ulp:iser",
    "ulp:iser-port-num",
    "ulp:srp-target-port-guid",
    "ulp:ipoib",
    "ulp:ipoib-pkey",
    "ulp:mixed-case",
]

ALL_CONSTRUCTS = [
    # sections
    "section:port-groups",
    "section:qos-setup",
    "section:qos-levels",
    "section:qos-match-rules",
    "section:qos-ulps",
    "section:repeated",
    "section:missing",
    "section:empty",
    "section:qos-setup-repeated",
    # extensions
    "ext:bandwidth",
    "ext:host-sched",
    "ext:pcc",
    # qos-ulps
    *ULP_CONSTRUCTS,
    # port-groups
    "port-guid:list",
    "port-guid:range",
    "port-guid:unknown",
    "port-name:quoted",
    "port-name:unquoted",
    "port-name:blank",
    "port-name:switch",
    "port-name:unknown",
    "port-name:odd-number",
    "node-type:list",
    "node-type:self",
    "node-type:mixed-case",
    "group:partition",
    "group:pkey",
    "group:empty",
    "use",
    "use:keywords",
    # qos-levels
    "level:mtu-limit",
    "level:rate-limit",
    "level:packet-life",
    "level:path-bits",
    "level:pkey",
    # qos-match-rules
    "rule:qos-class",
    "rule:source",
    "rule:destination",
    "rule:service-id",
    "rule:pkey",
    "rule:repeated-field",
    "service-id:range",
    "service-id:64bit",
    "qos-class:list",
    "pkey:range",
    "pkey:membership-bit",
    # numbers and lists
    "number:hex",
    "number:hex-upper",
    "number:decimal",
    "number:leading-zero",
    "range:reversed",
    "list:odd-spacing",
    "list:continued-line",
    # names
    "name:mixed-case",
    "name:quoted",
    "name:blank",
    "unquoted-inner-blank",
    "name:blanks-dropped-reference",
    "default:level",
    "default:ulp",
    "default:both",
    "default:spelling-upper",
    "default:ulp-twice",
    # qos-setup
    "setup:vlarb-scope",
    "setup:sl2vl-scope",
    "setup:vlarb-high",
    "setup:vlarb-low",
    "setup:vl-high-limit",
    "setup:repeated-vl-high-limit",
    "setup:repeated-tables",
    "setup:across",
    "setup:across-to",
    "setup:across-from",
    "setup:from-to",
    # lexical noise
    "noise:comment-line",
    "noise:blank-line",
    "noise:trailing-comment",
    "noise:tabs",
    "noise:trailing-blanks",
    "noise:colon-spacing",
    "noise:no-final-newline",
    # mutations
    *["mutation:" + k for k in MUTATION_KINDS],
]

# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------

SECTION_KEYWORDS = ["port-groups", "qos-setup", "qos-levels", "qos-match-rules", "qos-ulps"]

BLOCK_KEYWORDS = [
    "port-groups", "port-group", "qos-setup", "vlarb-tables", "vlarb-scope", "sl2vl-tables",
    "sl2vl-scope", "qos-levels", "qos-level", "qos-match-rules", "qos-match-rule", "qos-ulps",
    "host-sched", "sched-node", "sched-leaf",
]

FIELD_KEYWORDS = [
    "name", "use", "port-guid", "port-name", "partition", "pkey", "node-type", "group",
    "across", "across-to", "across-from", "from", "to", "vlarb-high", "vlarb-low",
    "vl-high-limit", "sl2vl-table", "bandwidth", "sl", "mtu-limit", "rate-limit", "packet-life",
    "path-bits", "qos-class", "source", "destination", "service-id", "qos-level-name",
    "parent", "bw-share", "max-avg-bw", "pcc-slot", "pcc-algorithm",
]

ULP_WORDS = ["default", "any", "sdp", "srp", "rds", "ipoib", "iser"]

ALL_KEYWORDS = set(BLOCK_KEYWORDS) | {"end-" + k for k in BLOCK_KEYWORDS} | set(FIELD_KEYWORDS)

# Fields a block may hold once (OpenSM 3.3.23 rejects a second one).
ONCE_FIELDS = {
    "port-group": ["name", "use"],
    "qos-level": ["name", "use", "sl", "mtu-limit", "rate-limit", "packet-life"],
    "qos-match-rule": ["use", "qos-level-name"],
    "sl2vl-scope": ["sl2vl-table"],
}

GROUP_NAMES = [
    "Storage", "compute", "GPU-nodes", "mgmt_net", "Hosts", "spines", "Leafs", "io.nodes",
    "backup", "Login", "dbase", "MPI", "ai_train", "fast-path", "bulk", "Video", "latency",
    "Scratch", "infra", "Tenant_A", "tenantB", "Edge", "Core", "Services", "Routers",
]
GROUP_NAMES_BLANK = ["Virtual Servers", "Tenant A", "Big Data", "Web Front", "Rack 2, Row 1"]
LEVEL_NAMES = [
    "Gold", "silver", "Bronze", "realtime", "bulk_data", "Interactive", "Lossless",
    "scavenger", "MPI-level", "storage-qos", "LowLat", "best.effort", "Premium", "control",
]
LEVEL_NAMES_BLANK = ["High Priority", "low latency", "Best Effort"]
SCHED_NAMES = [
    "tenant-a", "tenant-b", "jobs", "batch", "Inference", "training", "io_leaf", "mpi-leaf",
    "bg", "Ctrl", "fastlane", "slow.lane",
]
UNDEFINED_NAMES = ["Platinum", "nowhere", "Missing_Group", "Gold2", "tier-9", "Ghost", "nolevel"]
# Keywords OpenSM reads as plain text inside a `use:` description.
USE_KEYWORDS = ["end-qos-level", "port-group", "sl: 3", "name: x", "qos-ulps", "default: 0",
                "node-type: CA", "any, pkey"]
USE_WORDS = [
    "storage", "traffic", "for", "the", "MPI", "jobs", "tier", "2", "low", "latency", "bulk",
    "backup", "rack", "row", "b", "nightly", "SRP", "targets", "admin", "GPU", "training",
]
COMMENT_TEXTS = [
    "# managed by the fabric team", "#", "## section", "#no blank after the hash",
    "# note: values, lists: and \"quotes\" are fine here", "# end-qos-level is only a word here",
    "# TODO: revisit weights", "#\tindented with a tab", "# sl: 3 in a comment",
]
DEFAULT_LEVEL_SPELLINGS = ["default", "default", "Default", "DEFAULT", "dEfault"]
DEFAULT_ULP_SPELLINGS = ["default", "default", "Default", "DEFAULT"]
NODE_TYPES = ["CA", "SWITCH", "ROUTER", "ALL", "SELF"]

# Characters a NodeDescription may hold to be written unquoted in a port-name.
_SAFE_UNQUOTED = re.compile(r"^[A-Za-z0-9_.()/+-]+$")
# Ranges wider than this are not written (OpenSM walks GUID ranges one by one).
_MAX_GUID_SPAN = 0x1000

# --------------------------------------------------------------------------------------------
# Reading a fabric: ibnetdiscover output and partitions.conf
# --------------------------------------------------------------------------------------------

_NODE_GUID_RE = re.compile(r"^(switchguid|caguid|rtguid)=0x([0-9a-fA-F]+)(?:\(([0-9a-fA-F]+)\))?")
_NODE_RE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"[^"]*"\s*#\s*"(.*?)"')
_CA_PORT_RE = re.compile(r"^\[(\d+)\]\(([0-9a-fA-F]+)\)")
_SW_PORT_RE = re.compile(r"^\[(\d+)\]")
_NODE_TYPE_NAMES = {"Switch": "SWITCH", "Ca": "CA", "Rt": "ROUTER"}


def _parse_ibnetdiscover(text: str) -> list:
    """Ports of an ibnetdiscover topology: CA and router ports, and port 0 of each switch."""
    ports = []
    node_guid = None
    node = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _NODE_GUID_RE.match(line)
        if m:
            node_guid = int(m.group(3) or m.group(2), 16)
            continue
        m = _NODE_RE.match(line)
        if m:
            kind = _NODE_TYPE_NAMES[m.group(1)]
            node = {"type": kind, "desc": m.group(3)}
            if kind == "SWITCH":
                node["entry"] = {"guid": node_guid, "node_desc": m.group(3), "port": 0,
                                 "type": "SWITCH", "ports": [], "num_ports": int(m.group(2))}
                ports.append(node["entry"])
            continue
        if node is None:
            continue
        if node["type"] == "SWITCH":
            m = _SW_PORT_RE.match(line)
            if m:
                node["entry"]["ports"].append(int(m.group(1)))
            continue
        m = _CA_PORT_RE.match(line)
        if m:
            ports.append({"guid": int(m.group(2), 16), "node_desc": node["desc"],
                          "port": int(m.group(1)), "type": node["type"]})
    return ports


def _partition_targets(who: str, ports: list, sm_guid: int) -> list:
    """The port GUIDs one partitions.conf member names (unknown GUIDs are dropped)."""
    known = [p["guid"] for p in ports]
    word = who.strip()
    if word == "ALL":
        return known
    if word == "ALL_CAS":
        return [p["guid"] for p in ports if p["type"] == "CA"]
    if word == "ALL_SWITCHES":
        return [p["guid"] for p in ports if p["type"] == "SWITCH"]
    if word == "ALL_ROUTERS":
        return [p["guid"] for p in ports if p["type"] == "ROUTER"]
    if word == "SELF":
        return [sm_guid] if sm_guid in known else []
    try:
        guid = int(word, 16) if word.lower().startswith("0x") else int(word, 0)
    except ValueError:
        return []
    return [guid] if guid in known else []


def _parse_partitions(text: str, ports: list, sm_guid: int) -> list:
    """Partitions as OpenSM builds them from partitions.conf (enough for the sample files).

    OpenSM first makes the Default partition (0x7fff) with every port a limited member and the
    SM port a full one, then reads the file; a later mention of a port in a partition replaces
    its membership; partitions left without a member are dropped.
    """
    parts = {}  # pkey & 0x7fff -> {"name", "pkey", "sl", "members": {guid: full}}
    default = {"name": "Default", "pkey": 0x7FFF, "sl": 0, "members": {}}
    for p in ports:
        default["members"][p["guid"]] = False
    if sm_guid in default["members"]:
        default["members"][sm_guid] = True
    parts[0x7FFF] = default
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    for statement in body.split(";"):
        if ":" not in statement:
            continue
        head, members = statement.split(":", 1)
        head_items = [h.strip() for h in head.split(",")]
        name, _, pkey_text = head_items[0].partition("=")
        name = name.strip()
        if pkey_text.strip():
            try:
                pkey = int(pkey_text.strip(), 0)
            except ValueError:
                continue
        elif name == "Default":
            pkey = 0x7FFF
        else:
            continue
        sl = 0
        for flag in head_items[1:]:
            key, _, val = flag.partition("=")
            if key.strip() == "sl" and val.strip().isdigit():
                sl = int(val.strip())
        part = parts.setdefault(pkey & 0x7FFF, {"name": name or "Default", "pkey": pkey & 0x7FFF,
                                                "sl": sl, "members": {}})
        if name:
            part["name"] = name
        part["sl"] = sl
        for member in members.split(","):
            member = member.strip()
            if not member:
                continue
            who, _, flag = member.partition("=")
            full = flag.strip().lower() in ("full", "both")
            for guid in _partition_targets(who, ports, sm_guid):
                part["members"].pop(guid, None)
                part["members"][guid] = full
    result = []
    for key in sorted(parts):
        part = parts[key]
        if not part["members"]:
            continue
        full = sum(1 for f in part["members"].values() if f)
        result.append({"name": part["name"], "pkey": part["pkey"], "full_members": full,
                       "ipoib_ok": full >= 2, "sl": part["sl"]})
    return result


def profile_from_files(ibnetdiscover_text: str, partitions_text: str, sm_guid: int,
                       name: str) -> FabricProfile:
    """A FabricProfile from ibnetdiscover output and a partitions.conf."""
    ports = _parse_ibnetdiscover(ibnetdiscover_text)
    partitions = _parse_partitions(partitions_text, ports, sm_guid)
    return FabricProfile(name=name, ports=ports, partitions=partitions, sm_guid=sm_guid)


# --------------------------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Line:
    """One line of the policy, kept in pieces so that noise and mutations can change a part."""
    indent: str = ""
    key: str = ""          # keyword as written: block keyword, field keyword or ULP word
    sep: str = ""          # text between the keyword and the value (": ", ", pkey 0x1 : ")
    value: str = ""        # the value (a qos-ulps line: its SL)
    comment: str = ""      # trailing comment with the blanks before it
    trail: str = ""        # trailing blanks (or, once mutated, a carriage return)
    kind: str = "noise"    # open | close | field | ulp | cont (continued list) | noise
    ext: bool = False      # part of an extension: absent from stock_text
    vtype: str = ""        # value type of a field: num, ranges, pairs, table, text, texts, ...
    block: "_Line | None" = None   # the line that opened the enclosing block (close: its own)
    tag: str = ""          # role for mutations: default-level-name, default-ulp, ref-level, ...
    continued: bool = False  # the value goes on on the next line (after a trailing comma)

    def render(self) -> str:
        return self.indent + self.key + self.sep + self.value + self.comment + self.trail


@dataclass
class _Field:
    """A `keyword: value` line of a block, its value already written out."""
    key: str
    value: str
    vtype: str
    tag: str = ""
    ext: bool = False


@dataclass
class _Ulp:
    """A qos-ulps line in its parts."""
    word: str     # the ULP word as written ("SdP")
    head: str     # comma and qualifier (", port-num "), "" for the plain forms
    values: str   # the qualifier's numbers ("10-20, 7"), "" for the plain forms
    colon: str    # the colon and its blanks
    sl: str
    tag: str = ""


@dataclass
class _Node:
    """A section or a block: its keyword and its items (fields, ULP lines or nodes)."""
    keyword: str
    items: list
    ext: bool = False


@dataclass
class _Name:
    """A name defined once and referenced elsewhere."""
    text: str
    quoting: str   # always | never | random

    @property
    def has_blank(self) -> bool:
        return " " in self.text


class _Ctx:
    """Everything one generation shares: the random source, the fabric, what was used."""

    def __init__(self, rng: random.Random, profile: FabricProfile, allow_unquoted_blanks: bool):
        self.rng = rng
        self.profile = profile
        self.constructs = set()
        self.allow_unquoted_blanks = allow_unquoted_blanks
        self.taken = set()          # names in use, lower case without blanks
        self.groups = []            # _Name of each port-group
        self.levels = []            # _Name of each non-default qos-level
        self.default_level = None   # _Name of the qos-level named default, if any
        self.used_sls = {0}
        for part in profile.partitions:
            self.used_sls.add(part.get("sl", 0))
        self.indent_unit = rng.choice(["    ", "    ", "  ", "\t", "", " \t", "\t  "])
        # How noisy this policy is: some are plain, some are full of odd spellings.
        self.style = {
            "octal": rng.choice([0.0, 0.0, 0.04, 0.12]),       # numbers with a leading zero
            "upper": rng.choice([0.0, 0.15, 0.4]),             # hex digits in upper case
            "odd-list": rng.choice([0.0, 0.1, 0.3]),           # odd blanks around commas
            "odd-colon": rng.choice([0.0, 0.1, 0.3]),          # odd blanks around colons
            "case": rng.choice([0.0, 0.3, 0.6]),               # references in another case
            "quote": rng.choice([0.0, 0.2, 0.5]),              # names quoted without need
            "jitter": rng.choice([0.0, 0.05, 0.15]),           # lines with odd indentation
            "continue": rng.choice([0.0, 0.0, 0.1, 0.25]),     # number lists on two lines
            "tabs": rng.random() < 0.6,                        # tabs among the blanks
        }

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def add(self, construct: str) -> None:
        self.constructs.add(construct)


# --------------------------------------------------------------------------------------------
# Values: numbers, lists, names
# --------------------------------------------------------------------------------------------


def _num(ctx: _Ctx, value: int, hexish: bool = False) -> str:
    """A number in decimal, hex (either case, sometimes zero-padded) or octal (leading zero)."""
    if ctx.chance(ctx.style["octal"]):
        ctx.add("number:leading-zero")
        return "0%o" % value
    if ctx.chance(0.65 if hexish else 0.22):
        digits = "%x" % value
        if ctx.chance(0.2):
            digits = digits.zfill(ctx.rng.choice([4, 8, 16]))
        prefix = "0x"
        if ctx.chance(ctx.style["upper"]):
            digits = digits.upper()
            if ctx.chance(0.3):
                prefix = "0X"
        text = prefix + digits
        ctx.add("number:hex")
        if prefix == "0X" or any(c in "ABCDEF" for c in digits):
            ctx.add("number:hex-upper")
        return text
    ctx.add("number:decimal")
    return str(value)


def _list_sep(ctx: _Ctx) -> str:
    """The text between two list items, odd now and then."""
    if not ctx.chance(ctx.style["odd-list"]):
        return ctx.rng.choice([", ", ",", ", "])
    ctx.add("list:odd-spacing")
    return ctx.rng.choice([" , ", ",\t", "  ,  ", " ,", ", \t", "\t,\t"])


def _join(ctx: _Ctx, parts: list) -> str:
    """List items with their separators."""
    text = parts[0]
    for part in parts[1:]:
        text += _list_sep(ctx) + part
    return text


def _ranges(ctx: _Ctx, items: list, hexish: bool = False) -> str:
    """A list of numbers and ranges `a-b` (sometimes written reversed, `b-a`)."""
    parts = []
    for lo, hi in items:
        if lo == hi:
            parts.append(_num(ctx, lo, hexish))
            continue
        if ctx.chance(0.2):
            lo, hi = hi, lo
            ctx.add("range:reversed")
        dash = "-"
        if ctx.chance(ctx.style["odd-list"]):
            ctx.add("list:odd-spacing")
            dash = ctx.rng.choice([" - ", "- ", " -", "\t-\t"])
        parts.append(_num(ctx, lo, hexish) + dash + _num(ctx, hi, hexish))
    return _join(ctx, parts)


def _quote(ctx: _Ctx, text: str) -> str:
    ctx.add("name:quoted")
    return '"' + text + '"'


def _new_name(ctx: _Ctx, pool: list, blank_pool: list, blank_share: float) -> _Name:
    """A fresh name (unique without case and blanks) and how it will be quoted."""
    use_blank = blank_pool and ctx.chance(blank_share)
    candidates = [n for n in (blank_pool if use_blank else pool) if _name_key(n) not in ctx.taken]
    if not candidates:
        candidates = [n for n in pool if _name_key(n) not in ctx.taken]
    if candidates:
        text = ctx.rng.choice(candidates)
    else:
        text = "grp%d" % len(ctx.taken)
        while _name_key(text) in ctx.taken:
            text += "x"
    ctx.taken.add(_name_key(text))
    if " " in text:
        ctx.add("name:blank")
        if "," not in text and ctx.allow_unquoted_blanks and ctx.chance(0.25):
            return _Name(text, "never")
        return _Name(text, "always")
    return _Name(text, "random")


def _name_key(text: str) -> str:
    """How both OpenSM (blanks dropped) and ibqos (case ignored) could confuse two names."""
    return text.replace(" ", "").lower()


def _name_text(ctx: _Ctx, name: _Name, text: str) -> str:
    """One occurrence of a name: quoted or not, as its quoting rule says."""
    if name.quoting == "always" or (name.quoting == "random" and ctx.chance(ctx.style["quote"])):
        return _quote(ctx, text)
    if name.has_blank:
        ctx.add("unquoted-inner-blank")
    return text


def _case_variant(ctx: _Ctx, text: str) -> str:
    """The same text in another mix of upper and lower case."""
    way = ctx.rng.randrange(4)
    if way == 0:
        result = text.upper()
    elif way == 1:
        result = text.lower()
    elif way == 2:
        result = text.swapcase()
    else:
        result = "".join(c.upper() if ctx.chance(0.5) else c.lower() for c in text)
    return result


def _name_def(ctx: _Ctx, name: _Name) -> str:
    return _name_text(ctx, name, name.text)


def _name_ref(ctx: _Ctx, name: _Name) -> str:
    """A reference to a name, sometimes in another case than its definition; to an unquoted
    name with blanks, sometimes without them (or with them elsewhere), as OpenSM reads it."""
    text = name.text
    if name.quoting == "never" and name.has_blank and ctx.chance(0.5):
        squeezed = text.replace(" ", "")
        at = ctx.rng.randrange(1, len(squeezed)) if ctx.chance(0.3) else None
        text = squeezed if at is None else squeezed[:at] + " " + squeezed[at:]
        ctx.add("name:blanks-dropped-reference")
    if ctx.chance(ctx.style["case"]):
        variant = _case_variant(ctx, text)
        if variant != text:
            ctx.add("name:mixed-case")
            text = variant
    return _name_text(ctx, name, text)


def _words(ctx: _Ctx, low: int, high: int) -> str:
    """A few words of description."""
    return " ".join(ctx.rng.choice(USE_WORDS) for _ in range(ctx.rng.randint(low, high)))


def _use_text(ctx: _Ctx) -> str:
    """A `use:` description: free text, commas and colons included."""
    ctx.add("use")
    text = _words(ctx, 1, 4)
    r = ctx.rng.random()
    if r < 0.15:
        text += ", " + _words(ctx, 1, 3)
    elif r < 0.25:
        text += ": " + _words(ctx, 1, 2)
    elif r < 0.3:
        text += ' "' + _words(ctx, 1, 2) + '"'
    elif r < 0.35:
        text += " (%d-%d)" % (ctx.rng.randint(1, 9), ctx.rng.randint(10, 20))
    elif r < 0.42:
        ctx.add("use:keywords")
        text += " " + ctx.rng.choice(USE_KEYWORDS)
    return text


# --------------------------------------------------------------------------------------------
# Fabric-derived values
# --------------------------------------------------------------------------------------------


def _guids(ctx: _Ctx) -> list:
    return sorted(p["guid"] for p in ctx.profile.ports)


def _pkeys(ctx: _Ctx) -> list:
    return sorted(p["pkey"] for p in ctx.profile.partitions)


def _unknown_guid(ctx: _Ctx) -> int:
    return 0x0002C90300000000 + ctx.rng.randrange(0x1000000)


def _guid_items(ctx: _Ctx, max_items: int = 4, unknown_share: float = 0.12) -> list:
    """GUIDs and narrow GUID ranges, mostly of real ports."""
    guids = _guids(ctx)
    items = []
    for _ in range(ctx.rng.randint(1, max_items)):
        r = ctx.rng.random()
        if r < unknown_share or not guids:
            lo = _unknown_guid(ctx)
            hi = lo + (ctx.rng.randint(1, 0xFF) if ctx.chance(0.4) else 0)
            items.append((lo, hi))
            ctx.add("port-guid:unknown")
            continue
        i = ctx.rng.randrange(len(guids))
        if r < 0.45 and i + 1 < len(guids):
            j = min(len(guids) - 1, i + ctx.rng.randint(1, 4))
            if guids[j] - guids[i] <= _MAX_GUID_SPAN:
                items.append((guids[i], guids[j]))
                continue
        items.append((guids[i], guids[i]))
    return items


def _pkey_items(ctx: _Ctx, max_items: int = 3) -> list:
    """PKeys of the fabric's partitions (sometimes with the membership bit), ranges, unknowns."""
    pkeys = _pkeys(ctx)
    items = []
    for _ in range(ctx.rng.randint(1, max_items)):
        r = ctx.rng.random()
        if r < 0.12 or not pkeys:
            pk = ctx.rng.randint(0x0200, 0x6FFF)
            items.append((pk, pk))
        elif r < 0.35:
            lo = ctx.rng.choice(pkeys)
            hi = min(0x7FFF, lo + ctx.rng.randint(1, 0x40))
            items.append((lo, hi))
            ctx.add("pkey:range")
        else:
            pk = ctx.rng.choice(pkeys)
            if ctx.chance(0.2):
                pk |= 0x8000
                ctx.add("pkey:membership-bit")
            items.append((pk, pk))
    return items


def _port_name_targets(ctx: _Ctx) -> list:
    """(NodeDescription, port number, is_switch) of every port a port-name may name."""
    targets = []
    for p in ctx.profile.ports:
        if '"' in p["node_desc"] or "#" in p["node_desc"]:
            continue
        if p["type"] == "SWITCH":
            for n in p.get("ports", []):
                targets.append((p["node_desc"], n, True))
        else:
            targets.append((p["node_desc"], p["port"], False))
    return targets


def _max_switch_port(ctx: _Ctx) -> int:
    """The highest port number every switch has (for sl2vl-scope from/to lists)."""
    counts = [p.get("num_ports") or max(p.get("ports") or [8]) for p in ctx.profile.ports
              if p["type"] == "SWITCH"]
    return min(counts) if counts else 8


# --------------------------------------------------------------------------------------------
# port-groups: one function per field
# --------------------------------------------------------------------------------------------


def _pg_port_guid(ctx: _Ctx) -> _Field:
    items = _guid_items(ctx)
    if len(items) > 1:
        ctx.add("port-guid:list")
    if any(lo != hi for lo, hi in items):
        ctx.add("port-guid:range")
    return _Field("port-guid", _ranges(ctx, items, hexish=True), "ranges")


def _port_name_entry(ctx: _Ctx, desc: str, port: int) -> str:
    """`NodeDescription/P<n>`, quoted unless it can safely go without quotes."""
    number = str(port)
    if ctx.chance(0.05):
        ctx.add("port-name:odd-number")   # read with strtoul(.., 0) by both
        number = ctx.rng.choice(["0%o" % port, "0x%x" % port])
    text = "%s/%s%s" % (desc, "P" if ctx.chance(0.85) else "p", number)
    if " " in desc:
        ctx.add("port-name:blank")
    unsafe = not _SAFE_UNQUOTED.match(desc.replace(" ", "")) or "," in desc
    keyword_like = any(k in desc for k in BLOCK_KEYWORDS)
    if " " in desc and not unsafe and not keyword_like and ctx.allow_unquoted_blanks and ctx.chance(0.15):
        ctx.add("unquoted-inner-blank")
        ctx.add("port-name:unquoted")
        return text
    if " " in desc or unsafe or keyword_like or ctx.chance(0.25):
        ctx.add("port-name:quoted")
        return '"' + text + '"'
    ctx.add("port-name:unquoted")
    return text


def _pg_port_name(ctx: _Ctx) -> _Field:
    targets = _port_name_targets(ctx)
    entries = []
    for _ in range(ctx.rng.randint(1, 3)):
        if not targets or ctx.chance(0.07):
            ctx.add("port-name:unknown")
            desc = ctx.rng.choice(["nosuch-node", "old-host HCA-1"])
            entries.append(_port_name_entry(ctx, desc, 1))
            continue
        desc, port, is_switch = ctx.rng.choice(targets)
        if is_switch:
            ctx.add("port-name:switch")
        entries.append(_port_name_entry(ctx, desc, port))
    return _Field("port-name", _join(ctx, entries), "texts")


def _pg_partition(ctx: _Ctx) -> _Field:
    ctx.add("group:partition")
    names = [p["name"] for p in ctx.profile.partitions]
    chosen = []
    for _ in range(ctx.rng.randint(1, 2)):
        if not names or ctx.chance(0.1):
            chosen.append(ctx.rng.choice(["old_part", "Spare"]))
        else:
            chosen.append(ctx.rng.choice(names))
    return _Field("partition", _join(ctx, chosen), "texts")


def _pg_pkey(ctx: _Ctx) -> _Field:
    ctx.add("group:pkey")
    return _Field("pkey", _ranges(ctx, _pkey_items(ctx), hexish=True), "ranges")


def _pg_node_type(ctx: _Ctx) -> _Field:
    chosen = ctx.rng.sample(NODE_TYPES, ctx.rng.randint(1, 3))
    words = []
    for word in chosen:
        if word == "SELF":
            ctx.add("node-type:self")
        if ctx.chance(ctx.style["case"]):
            variant = _case_variant(ctx, word)
            if variant != word:
                ctx.add("node-type:mixed-case")
            word = variant
        words.append(word)
    if len(words) > 1:
        ctx.add("node-type:list")
    return _Field("node-type", _join(ctx, words), "types")


def _build_port_group(ctx: _Ctx) -> _Node:
    """A port-group: a name, maybe a use, and one to three kinds of members."""
    name = _new_name(ctx, GROUP_NAMES, GROUP_NAMES_BLANK, 0.2)
    ctx.groups.append(name)
    fields = [_Field("name", _name_def(ctx, name), "text")]
    if ctx.chance(0.35):
        fields.append(_Field("use", _use_text(ctx), "desc"))
    makers = [_pg_port_guid, _pg_port_name, _pg_partition, _pg_pkey, _pg_node_type]
    count = ctx.rng.randint(1, 3)
    if ctx.chance(0.04):
        ctx.add("group:empty")
        count = 0
    for maker in ctx.rng.sample(makers, count):
        fields.append(maker(ctx))
        if ctx.chance(0.1):
            fields.append(maker(ctx))
    return _Node("port-group", _shuffled_fields(ctx, fields))


def _shuffled_fields(ctx: _Ctx, fields: list) -> list:
    """Fields in random order now and then (order does not matter in a block)."""
    if ctx.chance(0.4):
        fields = list(fields)
        ctx.rng.shuffle(fields)
    return fields


# --------------------------------------------------------------------------------------------
# qos-levels
# --------------------------------------------------------------------------------------------


def _lv_sl(ctx: _Ctx) -> _Field:
    sl = ctx.rng.randint(0, 15)
    ctx.used_sls.add(sl)
    return _Field("sl", _num(ctx, sl), "num")


def _lv_mtu(ctx: _Ctx) -> _Field:
    ctx.add("level:mtu-limit")
    return _Field("mtu-limit", _num(ctx, ctx.rng.randint(1, 5)), "num", tag="mtu")


def _lv_rate(ctx: _Ctx) -> _Field:
    ctx.add("level:rate-limit")
    return _Field("rate-limit", _num(ctx, ctx.rng.randint(2, 22)), "num", tag="rate")


def _lv_packet_life(ctx: _Ctx) -> _Field:
    ctx.add("level:packet-life")
    return _Field("packet-life", _num(ctx, ctx.rng.randint(0, 63)), "num")


def _lv_path_bits(ctx: _Ctx) -> _Field:
    ctx.add("level:path-bits")
    items = []
    for _ in range(ctx.rng.randint(1, 3)):
        lo = ctx.rng.randint(0, 32)
        items.append((lo, lo + (ctx.rng.randint(1, 8) if ctx.chance(0.4) else 0)))
    return _Field("path-bits", _ranges(ctx, items), "ranges")


def _lv_pkey(ctx: _Ctx) -> _Field:
    ctx.add("level:pkey")
    return _Field("pkey", _ranges(ctx, _pkey_items(ctx), hexish=True), "ranges")


def _build_level(ctx: _Ctx, name: _Name, name_text: str, tag: str = "") -> _Node:
    """A qos-level: name and sl, and some of the optional fields."""
    fields = [_Field("name", name_text, "text", tag=tag), _lv_sl(ctx)]
    if ctx.chance(0.3):
        fields.append(_Field("use", _use_text(ctx), "desc"))
    for maker, p in ((_lv_mtu, 0.4), (_lv_rate, 0.4), (_lv_packet_life, 0.3),
                     (_lv_path_bits, 0.12), (_lv_pkey, 0.3)):
        if ctx.chance(p):
            fields.append(maker(ctx))
    return _Node("qos-level", _shuffled_fields(ctx, fields))


def _default_level_text(ctx: _Ctx) -> str:
    spelling = ctx.rng.choice(DEFAULT_LEVEL_SPELLINGS)
    if spelling != "default":
        ctx.add("default:spelling-upper")
    if ctx.chance(0.3):
        return _quote(ctx, spelling)
    return spelling


def _build_levels(ctx: _Ctx, default_as_level: bool) -> list:
    """The qos-levels, one of them named default when the default is a level."""
    levels = []
    for _ in range(ctx.rng.randint(1, 4)):
        name = _new_name(ctx, LEVEL_NAMES, LEVEL_NAMES_BLANK, 0.12)
        ctx.levels.append(name)
        levels.append(_build_level(ctx, name, _name_def(ctx, name)))
    if default_as_level:
        ctx.add("default:level")
        ctx.default_level = _Name("default", "random")
        ctx.taken.add("default")
        text = _default_level_text(ctx)
        levels.insert(ctx.rng.randint(0, len(levels)), _build_level(ctx, ctx.default_level, text,
                                                                    tag="default-level-name"))
    return levels


# --------------------------------------------------------------------------------------------
# qos-match-rules
# --------------------------------------------------------------------------------------------


def _service_id_items(ctx: _Ctx) -> list:
    """ServiceIDs and ranges: random 64-bit ones, the SDP range, small ones."""
    items = []
    for _ in range(ctx.rng.randint(1, 3)):
        r = ctx.rng.random()
        if r < 0.3:
            lo = ctx.rng.getrandbits(64)
            ctx.add("service-id:64bit")
            hi = lo if ctx.chance(0.5) else min(2**64 - 1, lo + ctx.rng.randint(1, 2**32))
        elif r < 0.55:
            lo, hi = 0x10000, 0x1FFFF
        else:
            lo = ctx.rng.randint(0, 0xFFFFFF)
            hi = lo + (ctx.rng.randint(1, 0xFFFF) if ctx.chance(0.5) else 0)
        if lo != hi:
            ctx.add("service-id:range")
        items.append((lo, hi))
    return items


def _group_refs(ctx: _Ctx) -> str:
    """A list of one or two port-group references."""
    chosen = ctx.rng.sample(ctx.groups, min(len(ctx.groups), ctx.rng.randint(1, 2)))
    return _join(ctx, [_name_ref(ctx, g) for g in chosen])


def _mr_qos_class(ctx: _Ctx) -> _Field:
    ctx.add("rule:qos-class")
    items = []
    for _ in range(ctx.rng.randint(1, 3)):
        lo = ctx.rng.randint(0, 4095) if ctx.chance(0.95) else ctx.rng.randint(4096, 9000)
        items.append((lo, lo + (ctx.rng.randint(1, 9) if ctx.chance(0.3) else 0)))
    if len(items) > 1 or items[0][0] != items[0][1]:
        ctx.add("qos-class:list")
    return _Field("qos-class", _ranges(ctx, items), "ranges")


def _mr_source(ctx: _Ctx) -> _Field:
    ctx.add("rule:source")
    return _Field("source", _group_refs(ctx), "texts", tag="ref-group")


def _mr_destination(ctx: _Ctx) -> _Field:
    ctx.add("rule:destination")
    return _Field("destination", _group_refs(ctx), "texts", tag="ref-group")


def _mr_service_id(ctx: _Ctx) -> _Field:
    ctx.add("rule:service-id")
    return _Field("service-id", _ranges(ctx, _service_id_items(ctx), hexish=True), "ranges")


def _mr_pkey(ctx: _Ctx) -> _Field:
    ctx.add("rule:pkey")
    return _Field("pkey", _ranges(ctx, _pkey_items(ctx), hexish=True), "ranges")


def _mr_level_name(ctx: _Ctx) -> _Field:
    choices = list(ctx.levels) + ([ctx.default_level] if ctx.default_level else [])
    level = ctx.rng.choice(choices)
    tag = "ref-default" if level is ctx.default_level else "ref-level"
    return _Field("qos-level-name", _name_ref(ctx, level), "text", tag=tag)


def _build_match_rule(ctx: _Ctx) -> _Node:
    """A qos-match-rule: a qos-level-name and some criteria."""
    fields = [_mr_level_name(ctx)]
    if ctx.chance(0.3):
        fields.append(_Field("use", _use_text(ctx), "desc"))
    makers = [(_mr_qos_class, 0.4), (_mr_service_id, 0.45), (_mr_pkey, 0.25)]
    if ctx.groups:
        makers += [(_mr_source, 0.4), (_mr_destination, 0.4)]
    for maker, p in makers:
        if ctx.chance(p):
            fields.append(maker(ctx))
            if ctx.chance(0.08):
                ctx.add("rule:repeated-field")
                fields.append(maker(ctx))
    return _Node("qos-match-rule", _shuffled_fields(ctx, fields))


# --------------------------------------------------------------------------------------------
# qos-ulps: one function per form
# --------------------------------------------------------------------------------------------


def _ulp_word(ctx: _Ctx, word: str) -> str:
    if ctx.chance(ctx.style["case"]):
        variant = _case_variant(ctx, word)
        if variant != word:
            ctx.add("ulp:mixed-case")
            return variant
    return word


def _ulp_colon(ctx: _Ctx) -> str:
    if not ctx.chance(ctx.style["odd-colon"]):
        return ctx.rng.choice([" : ", " : ", ":", ": "])
    ctx.add("noise:colon-spacing")
    return ctx.rng.choice([" :", "\t:\t", "   : ", ":\t", " \t: "])


def _ulp_comma(ctx: _Ctx) -> str:
    if not ctx.chance(ctx.style["odd-list"]):
        return ctx.rng.choice([", ", ", ", ","])
    ctx.add("list:odd-spacing")
    return ctx.rng.choice([" , ", "\t,", " ,\t", "  ,  "])


def _ulp_sl(ctx: _Ctx) -> str:
    sl = ctx.rng.randint(0, 15)
    ctx.used_sls.add(sl)
    return _num(ctx, sl)


def _ulp_plain(ctx: _Ctx, word: str, construct: str) -> _Ulp:
    ctx.add(construct)
    return _Ulp(_ulp_word(ctx, word), "", "", _ulp_colon(ctx), _ulp_sl(ctx))


def _ulp_qualified(ctx: _Ctx, word: str, qualifier: str, values: str, construct: str) -> _Ulp:
    ctx.add(construct)
    blank = ctx.rng.choice([" ", " ", "  ", "\t"])
    head = _ulp_comma(ctx) + qualifier + blank
    return _Ulp(_ulp_word(ctx, word), head, values, _ulp_colon(ctx), _ulp_sl(ctx))


def _port_num_items(ctx: _Ctx) -> list:
    """TCP-style port numbers and ranges (at most 0xffff) for port-num."""
    items = []
    for _ in range(ctx.rng.randint(1, 3)):
        lo = ctx.rng.randint(1, 0xFFFF)
        hi = min(0xFFFF, lo + ctx.rng.randint(1, 500)) if ctx.chance(0.3) else lo
        items.append((lo, hi))
    return items


def _ulp_default(ctx: _Ctx) -> _Ulp:
    """The `default : sl` line, in one of its spellings."""
    ctx.add("ulp:default")
    ctx.add("default:ulp")
    word = ctx.rng.choice(DEFAULT_ULP_SPELLINGS)
    if word != "default":
        ctx.add("default:spelling-upper")
    return _Ulp(word, "", "", _ulp_colon(ctx), _ulp_sl(ctx), tag="default-ulp")


def _ulp_any_service_id(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "any", "service-id",
                          _ranges(ctx, _service_id_items(ctx), hexish=True), "ulp:any-service-id")


def _ulp_any_pkey(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "any", "pkey", _ranges(ctx, _pkey_items(ctx), hexish=True),
                          "ulp:any-pkey")


def _ulp_any_target(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "any", "target-port-guid",
                          _ranges(ctx, _guid_items(ctx, 3, 0.1), hexish=True),
                          "ulp:any-target-port-guid")


def _ulp_any_source(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "any", "source-port-guid",
                          _ranges(ctx, _guid_items(ctx, 3, 0.1), hexish=True),
                          "ulp:any-source-port-guid")


def _ulp_any_source_target(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "any", "source-target-port-guid",
                          _ranges(ctx, _guid_items(ctx, 3, 0.1), hexish=True),
                          "ulp:any-source-target-port-guid")


def _ulp_sdp(ctx: _Ctx) -> _Ulp:
    return _ulp_plain(ctx, "sdp", "ulp:sdp")


def _ulp_sdp_port(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "sdp", "port-num", _ranges(ctx, _port_num_items(ctx)),
                          "ulp:sdp-port-num")


def _ulp_rds(ctx: _Ctx) -> _Ulp:
    return _ulp_plain(ctx, "rds", "ulp:rds")


def _ulp_rds_port(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "rds", "port-num", _ranges(ctx, _port_num_items(ctx)),
                          "ulp:rds-port-num")


def _ulp_iser(ctx: _Ctx) -> _Ulp:
    return _ulp_plain(ctx, "iser", "ulp:iser")


def _ulp_iser_port(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "iser", "port-num", _ranges(ctx, _port_num_items(ctx)),
                          "ulp:iser-port-num")


def _ulp_srp(ctx: _Ctx) -> _Ulp:
    return _ulp_qualified(ctx, "srp", "target-port-guid",
                          _ranges(ctx, _guid_items(ctx, 3, 0.1), hexish=True),
                          "ulp:srp-target-port-guid")


def _ipoib_partitions(ctx: _Ctx) -> list:
    """Partitions an ipoib qos-ulps line may name (two full members)."""
    return [p for p in ctx.profile.partitions if p["ipoib_ok"]]


def _ulp_ipoib(ctx: _Ctx) -> _Ulp:
    return _ulp_plain(ctx, "ipoib", "ulp:ipoib")


def _ulp_ipoib_pkey(ctx: _Ctx) -> _Ulp:
    """ipoib, pkey: only PKeys of partitions with two full members, one by one."""
    parts = _ipoib_partitions(ctx)
    chosen = ctx.rng.sample(parts, ctx.rng.randint(1, min(2, len(parts))))
    items = []
    for part in chosen:
        pk = part["pkey"] | (0x8000 if ctx.chance(0.25) else 0)
        items.append((pk, pk))
    return _ulp_qualified(ctx, "ipoib", "pkey", _ranges(ctx, items, hexish=True), "ulp:ipoib-pkey")


def _ulp_makers(ctx: _Ctx) -> list:
    """The qos-ulps forms this fabric allows (ipoib only with a partition fit for it)."""
    makers = [_ulp_any_service_id, _ulp_any_pkey, _ulp_any_target, _ulp_any_source,
              _ulp_any_source_target, _ulp_sdp, _ulp_sdp_port, _ulp_rds, _ulp_rds_port,
              _ulp_iser, _ulp_iser_port, _ulp_srp]
    if any(p["pkey"] == 0x7FFF for p in _ipoib_partitions(ctx)):
        makers.append(_ulp_ipoib)
    if _ipoib_partitions(ctx):
        makers.append(_ulp_ipoib_pkey)
    return makers


def _build_ulps(ctx: _Ctx, with_default: bool) -> list:
    """Some qos-ulps lines of distinct forms, and the default line if asked."""
    makers = _ulp_makers(ctx)
    ulps = [maker(ctx) for maker in ctx.rng.sample(makers, ctx.rng.randint(1, min(7, len(makers))))]
    if with_default:
        ulps.insert(ctx.rng.randint(0, len(ulps)), _ulp_default(ctx))
        if ctx.chance(0.05):
            ctx.add("default:ulp-twice")   # OpenSM keeps the last one
            ulps.insert(ctx.rng.randint(0, len(ulps)), _ulp_default(ctx))
    return ulps


# --------------------------------------------------------------------------------------------
# qos-setup
# --------------------------------------------------------------------------------------------


def _pairs(ctx: _Ctx, pairs: list, percent: bool = False) -> str:
    """`VL:weight` (or `VL:percent%`) pairs."""
    parts = []
    for vl, weight in pairs:
        colon = ":"
        if ctx.chance(ctx.style["odd-colon"]):
            ctx.add("noise:colon-spacing")
            colon = ctx.rng.choice([" : ", ": ", " :", "\t:"])
        parts.append(_num(ctx, vl) + colon + _num(ctx, weight) + ("%" if percent else ""))
    return _join(ctx, parts)


def _weight(ctx: _Ctx) -> int:
    return ctx.rng.choice([64, 128, 192, 255]) if ctx.chance(0.5) else ctx.rng.randint(1, 255)


def _vlarb_high(ctx: _Ctx) -> _Field:
    """A high-priority table: VL 0 and a few more (so VL 0 keeps a weight on every port)."""
    ctx.add("setup:vlarb-high")
    vls = [0] + ctx.rng.sample(range(1, 8), ctx.rng.randint(0, 3))
    ctx.rng.shuffle(vls)
    pairs = [(vl, _weight(ctx)) for vl in vls]
    if len(pairs) < 8 and ctx.chance(0.2):
        pairs.append((ctx.rng.randint(8, 14), ctx.rng.randint(0, 255)))
    return _Field("vlarb-high", _pairs(ctx, pairs), "pairs")


def _vlarb_low(ctx: _Ctx) -> _Field:
    """A low-priority table covering VLs 1-7 in random order, at most 8 entries."""
    ctx.add("setup:vlarb-low")
    vls = list(range(1, 8))
    ctx.rng.shuffle(vls)
    pairs = [(vl, _weight(ctx)) for vl in vls]
    if ctx.chance(0.3):
        pairs.insert(ctx.rng.randint(0, len(pairs)), (0, _weight(ctx)))
    return _Field("vlarb-low", _pairs(ctx, pairs), "pairs")


def _bandwidth(ctx: _Ctx) -> _Field:
    """Extension: VL:percent pairs for VLs 1-7 (and maybe 0), each >= 5 %, total <= 100 %."""
    ctx.add("ext:bandwidth")
    vls = list(range(1, 8)) + ([0] if ctx.chance(0.3) else [])
    ctx.rng.shuffle(vls)
    shares = [5] * len(vls)
    spare = ctx.rng.randint(0, 100 - 5 * len(vls))
    for _ in range(spare):
        shares[ctx.rng.randrange(len(shares))] += 1
    return _Field("bandwidth", _pairs(ctx, list(zip(vls, shares)), percent=True), "pairs", ext=True)


def _build_vlarb_scope(ctx: _Ctx) -> _Node:
    """A vlarb-scope: group and/or across, tables, maybe bandwidth: and vl-high-limit."""
    ctx.add("setup:vlarb-scope")
    fields = []
    if ctx.chance(0.8):
        fields.append(_Field("group", _group_refs(ctx), "texts", tag="ref-group"))
    if not fields or ctx.chance(0.3):
        ctx.add("setup:across")
        fields.append(_Field("across", _group_refs(ctx), "texts", tag="ref-group"))
    if ctx.chance(0.75):
        fields.append(_vlarb_high(ctx))
    low = ctx.rng.random()
    if low < 0.45:
        fields.append(_vlarb_low(ctx))
    elif low < 0.75:
        fields.append(_bandwidth(ctx))
    if ctx.chance(0.5):
        ctx.add("setup:vl-high-limit")
        fields.append(_Field("vl-high-limit", _num(ctx, ctx.rng.randint(0, 255)), "num"))
        if ctx.chance(0.12):
            ctx.add("setup:repeated-vl-high-limit")   # OpenSM keeps the last one
            fields.append(_Field("vl-high-limit", _num(ctx, ctx.rng.randint(0, 255)), "num"))
    return _Node("vlarb-scope", _shuffled_fields(ctx, fields))


def _sl2vl_table(ctx: _Ctx) -> str:
    """16 VLs; an SL in use never goes to VL 15 (ibqos would call it dropped)."""
    vls = []
    for sl in range(16):
        if sl in ctx.used_sls:
            vls.append(ctx.rng.randint(0, 7) if ctx.chance(0.9) else ctx.rng.randint(8, 14))
        else:
            vls.append(ctx.rng.choice([15, ctx.rng.randint(0, 14)]))
    return _join(ctx, [_num(ctx, vl) for vl in vls])


def _port_list(ctx: _Ctx) -> str:
    """`*` or port numbers every switch has."""
    if ctx.chance(0.35):
        return "*"
    top = _max_switch_port(ctx)
    items = []
    for _ in range(ctx.rng.randint(1, 3)):
        lo = ctx.rng.randint(0, top)
        items.append((lo, min(top, lo + ctx.rng.randint(1, 4)) if ctx.chance(0.4) else lo))
    return _ranges(ctx, items)


def _build_sl2vl_scope(ctx: _Ctx) -> _Node:
    """An sl2vl-scope: at least one group selector, maybe from/to, and the table."""
    ctx.add("setup:sl2vl-scope")
    fields = []
    for key, p in (("group", 0.7), ("across", 0.2), ("across-to", 0.25), ("across-from", 0.25)):
        if ctx.chance(p):
            if key != "group":
                ctx.add("setup:" + key)
            fields.append(_Field(key, _group_refs(ctx), "texts", tag="ref-group"))
    if not fields:
        fields.append(_Field("group", _group_refs(ctx), "texts", tag="ref-group"))
    for key in ("from", "to"):
        if ctx.chance(0.3):
            ctx.add("setup:from-to")
            fields.append(_Field(key, _port_list(ctx), "ports"))
    fields.append(_Field("sl2vl-table", _sl2vl_table(ctx), "table"))
    return _Node("sl2vl-scope", _shuffled_fields(ctx, fields))


def _build_setup(ctx: _Ctx) -> list:
    """The items of one qos-setup section: vlarb-tables and sl2vl-tables in either order."""
    items = []
    if ctx.chance(0.8):
        items.append(_Node("vlarb-tables", [_build_vlarb_scope(ctx)
                                            for _ in range(ctx.rng.randint(0, 3))]))
    if ctx.chance(0.8):
        items.append(_Node("sl2vl-tables", [_build_sl2vl_scope(ctx)
                                            for _ in range(ctx.rng.randint(0, 3))]))
    if items and ctx.chance(0.1):
        ctx.add("setup:repeated-tables")
        maker = _build_vlarb_scope if ctx.chance(0.5) else _build_sl2vl_scope
        keyword = "vlarb-tables" if maker is _build_vlarb_scope else "sl2vl-tables"
        items.append(_Node(keyword, [maker(ctx) for _ in range(ctx.rng.randint(0, 2))]))
    ctx.rng.shuffle(items)
    return items


# --------------------------------------------------------------------------------------------
# host-sched (extension)
# --------------------------------------------------------------------------------------------


def _build_host_sched(ctx: _Ctx) -> list:
    """sched-nodes (parents only among earlier nodes: no cycle) and sched-leaves."""
    ctx.add("ext:host-sched")
    blocks = []
    nodes = []
    for _ in range(ctx.rng.randint(0, 3)):
        name = _new_name(ctx, SCHED_NAMES, [], 0)
        fields = [_Field("name", _name_def(ctx, name), "text", ext=True)]
        if nodes and ctx.chance(0.4):
            fields.append(_Field("parent", _name_ref(ctx, ctx.rng.choice(nodes)), "text", ext=True))
        fields += _sched_shares(ctx)
        nodes.append(name)
        blocks.append(_Node("sched-node", _shuffled_fields(ctx, fields), ext=True))
    sls = list(range(16))
    ctx.rng.shuffle(sls)
    slot_algorithms = {}
    for _ in range(ctx.rng.randint(1, 4)):
        name = _new_name(ctx, SCHED_NAMES, [], 0)
        fields = [_Field("name", _name_def(ctx, name), "text", ext=True)]
        if nodes and ctx.chance(0.6):
            fields.append(_Field("parent", _name_ref(ctx, ctx.rng.choice(nodes)), "text", ext=True))
        count = ctx.rng.randint(1, 3)
        mine, sls = sorted(sls[:count]), sls[count:]
        if mine:
            fields.append(_Field("sl", _ranges(ctx, _compact(mine)), "ranges", ext=True))
        fields += _sched_shares(ctx)
        if ctx.chance(0.6):
            ctx.add("ext:pcc")
            slot = ctx.rng.randint(0, 15)
            algorithm = slot_algorithms.setdefault(slot, ctx.rng.choice(["dcqcn", "swift"]))
            fields.append(_Field("pcc-slot", _num(ctx, slot), "num", ext=True))
            fields.append(_Field("pcc-algorithm", algorithm, "text", ext=True))
        blocks.append(_Node("sched-leaf", _shuffled_fields(ctx, fields), ext=True))
    return blocks


def _sched_shares(ctx: _Ctx) -> list:
    """The optional bw-share and max-avg-bw of a scheduling element."""
    fields = []
    if ctx.chance(0.6):
        fields.append(_Field("bw-share", _num(ctx, ctx.rng.randint(1, 100)), "num", ext=True))
    if ctx.chance(0.3):
        fields.append(_Field("max-avg-bw", _num(ctx, ctx.rng.choice([0, 10000, 40000, 100000])),
                             "num", ext=True))
    return fields


def _compact(values: list) -> list:
    """Sorted numbers as (lo, hi) runs."""
    runs = []
    for v in values:
        if runs and runs[-1][1] + 1 == v:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


# --------------------------------------------------------------------------------------------
# The whole policy model
# --------------------------------------------------------------------------------------------


def _split_section(ctx: _Ctx, keyword: str, items: list, min_items: int) -> list:
    """One section, or (sometimes) the same section twice with the items shared out."""
    if len(items) >= 2 * max(min_items, 1) and ctx.chance(0.15):
        ctx.add("section:repeated")
        cut = ctx.rng.randint(max(min_items, 1), len(items) - max(min_items, 1))
        return [_Node(keyword, items[:cut]), _Node(keyword, items[cut:])]
    return [_Node(keyword, items)]


def _build_sections(ctx: _Ctx) -> list:
    """Every section of the policy, in random order."""
    sections = []
    groups = []
    if ctx.chance(0.85):
        groups = [_build_port_group(ctx) for _ in range(ctx.rng.randint(1, 5))]
    has_levels = ctx.chance(0.85)
    default_mode = "ulp"
    if has_levels:
        default_mode = ctx.rng.choices(["level", "ulp", "both"], [0.5, 0.35, 0.15])[0]
        if default_mode == "both":
            ctx.add("default:both")
    levels = _build_levels(ctx, default_mode != "ulp") if has_levels else []
    rules = []
    if levels and ctx.chance(0.8):
        rules = [_build_match_rule(ctx) for _ in range(ctx.rng.randint(1, 5))]
    ulps = []
    if default_mode != "level" or ctx.chance(0.75):
        ulps = _build_ulps(ctx, default_mode != "level")
    setup = _build_setup(ctx) if groups and ctx.chance(0.55) else []
    host_sched = _build_host_sched(ctx) if ctx.chance(0.3) else []

    if groups:
        ctx.add("section:port-groups")
        sections += _split_section(ctx, "port-groups", groups, 1)
    if levels or ctx.chance(0.04):
        ctx.add("section:qos-levels")
        if not levels:
            ctx.add("section:empty")
        sections += _split_section(ctx, "qos-levels", levels, 1)
    if rules or (levels and ctx.chance(0.05)):
        ctx.add("section:qos-match-rules")
        if not rules:
            ctx.add("section:empty")
        sections += _split_section(ctx, "qos-match-rules", rules, 1)
    if ulps:
        ctx.add("section:qos-ulps")
        sections += _split_section(ctx, "qos-ulps", ulps, 1)
    if setup or (groups and ctx.chance(0.04)):
        ctx.add("section:qos-setup")
        if not setup:
            ctx.add("section:empty")
        setup_sections = _split_section(ctx, "qos-setup", setup, 0)
        if len(setup_sections) > 1:
            ctx.add("section:qos-setup-repeated")
        sections += setup_sections
    if host_sched:
        sections.append(_Node("host-sched", host_sched, ext=True))
    present = {s.keyword for s in sections}
    if any(k not in present for k in SECTION_KEYWORDS):
        ctx.add("section:missing")
    ctx.rng.shuffle(sections)
    return sections


# --------------------------------------------------------------------------------------------
# Writing lines
# --------------------------------------------------------------------------------------------


def _indent(ctx: _Ctx, depth: int) -> str:
    """The indentation of a line at this depth (now and then an odd one)."""
    if depth and ctx.chance(ctx.style["jitter"]):
        return "".join(ctx.rng.choice([" ", "\t"]) for _ in range(ctx.rng.randint(1, 5)))
    return ctx.indent_unit * depth


def _field_sep(ctx: _Ctx) -> str:
    """The colon after a field keyword, with its blanks."""
    if not ctx.chance(ctx.style["odd-colon"]):
        return ctx.rng.choice([": ", ": ", ":"])
    ctx.add("noise:colon-spacing")
    return ctx.rng.choice([" : ", ":\t", "\t:\t", "  :   ", ": \t", " :"])


def _split_list(ctx: _Ctx, value: str):
    """A number list cut after one of its commas, the rest going on on the next line
    (OpenSM's lexer allows it for numbers only); (value, None) when not cut."""
    commas = [i for i, c in enumerate(value) if c == ","]
    if not commas or not ctx.chance(ctx.style["continue"]):
        return value, None
    ctx.add("list:continued-line")
    cut = ctx.rng.choice(commas)
    return value[:cut + 1], value[cut + 1:].lstrip(" \t")


def _continuation(ctx: _Ctx, depth: int, text: str, ext: bool, opener: _Line) -> _Line:
    return _Line(indent=_indent(ctx, depth + 2), value=text, kind="cont", ext=ext, block=opener)


def _emit_field(ctx: _Ctx, item: _Field, depth: int, lines: list, opener: _Line, ext: bool):
    """A field line, and its continuation line when its number list is cut."""
    ext = ext or item.ext
    value, rest = item.value, None
    if item.vtype in ("ranges", "pairs", "table", "ports"):
        value, rest = _split_list(ctx, item.value)
    lines.append(_Line(indent=_indent(ctx, depth), key=item.key, sep=_field_sep(ctx), value=value,
                       kind="field", ext=ext, vtype=item.vtype, block=opener, tag=item.tag,
                       continued=rest is not None))
    if rest is not None:
        lines.append(_continuation(ctx, depth, rest, ext, opener))


def _emit_ulp(ctx: _Ctx, item: _Ulp, depth: int, lines: list, opener: _Line, ext: bool):
    """A qos-ulps line; its SL is the line's value, unless its numbers go on on a second line."""
    first, rest = _split_list(ctx, item.values)
    if rest is None:
        lines.append(_Line(indent=_indent(ctx, depth), key=item.word,
                           sep=item.head + item.values + item.colon, value=item.sl, kind="ulp",
                           ext=ext, vtype="num", block=opener, tag=item.tag))
        return
    lines.append(_Line(indent=_indent(ctx, depth), key=item.word, sep=item.head, value=first,
                       kind="ulp", ext=ext, vtype="ranges", block=opener, tag=item.tag,
                       continued=True))
    lines.append(_continuation(ctx, depth, rest + item.colon + item.sl, ext, opener))


def _emit(ctx: _Ctx, node: _Node, depth: int, lines: list, ext: bool) -> None:
    """Write a section or block and everything in it."""
    ext = ext or node.ext
    opener = _Line(indent=_indent(ctx, depth), key=node.keyword, kind="open", ext=ext)
    opener.block = opener
    lines.append(opener)
    for item in node.items:
        if isinstance(item, _Node):
            _emit(ctx, item, depth + 1, lines, ext)
        elif isinstance(item, _Field):
            _emit_field(ctx, item, depth + 1, lines, opener, ext)
        else:
            _emit_ulp(ctx, item, depth + 1, lines, opener, ext)
    lines.append(_Line(indent=_indent(ctx, depth), key="end-" + node.keyword, kind="close",
                       ext=ext, block=opener))


def _noise_line(ctx: _Ctx, ext: bool) -> _Line:
    """A whole-line comment or a blank line."""
    if ctx.chance(0.5):
        ctx.add("noise:comment-line")
        return _Line(indent=ctx.rng.choice(["", ctx.indent_unit, "\t", "  "]),
                     value=ctx.rng.choice(COMMENT_TEXTS), ext=ext)
    ctx.add("noise:blank-line")
    return _Line(trail=ctx.rng.choice(["", "", "", " ", "\t", "   "]), ext=ext)


def _add_noise(ctx: _Ctx, lines: list) -> list:
    """Comment and blank lines anywhere, trailing comments and blanks on some lines."""
    result = []
    share = ctx.rng.choice([0.0, 0.03, 0.08, 0.15])
    for i in range(len(lines) + 1):
        while ctx.chance(share):
            prev_ext = lines[i - 1].ext if i > 0 else True
            next_ext = lines[i].ext if i < len(lines) else True
            result.append(_noise_line(ctx, prev_ext and next_ext))
        if i < len(lines):
            result.append(lines[i])
    comment_share = ctx.rng.choice([0.0, 0.05, 0.12])
    blank_share = ctx.rng.choice([0.0, 0.03, 0.08])
    for line in result:
        if line.kind == "noise":
            continue
        if ctx.chance(comment_share):
            ctx.add("noise:trailing-comment")
            line.comment = ctx.rng.choice(["  ", " ", "\t", ""]) + ctx.rng.choice(COMMENT_TEXTS)
        if ctx.chance(blank_share):
            ctx.add("noise:trailing-blanks")
            line.trail = ctx.rng.choice([" ", "  ", "\t", " \t "])
    return result


def _detab(lines: list) -> None:
    """Blanks for tabs outside comments (a policy without tabs)."""
    for line in lines:
        line.indent = line.indent.replace("\t", " ")
        line.sep = line.sep.replace("\t", " ")
        line.trail = line.trail.replace("\t", " ")
        if line.kind != "noise":
            line.value = line.value.replace("\t", " ")


def _note_whitespace(ctx: _Ctx, lines: list) -> None:
    """Record tabs used outside comments."""
    for line in lines:
        value = line.value if line.kind != "noise" else ""
        if "\t" in line.indent + line.sep + value + line.trail:
            ctx.add("noise:tabs")
            return


def _stock(lines: list) -> list:
    """The lines a stock OpenSM gets: no extension lines."""
    return [line for line in lines if not line.ext]


def _fix_tail(lines: list) -> None:
    """Before dropping the final newline: no comment may end the file (text or stock)."""
    while True:
        changed = False
        for view in (lines, _stock(lines)):
            if view and view[-1].kind == "noise":
                lines.remove(view[-1])
                changed = True
                break
        if not changed:
            break
    for view in (lines, _stock(lines)):
        if view:
            view[-1].comment = ""


def _render(lines: list, final_newline: bool) -> str:
    """The text of some lines."""
    text = "\n".join(line.render() for line in lines)
    return text + "\n" if final_newline and lines else text


END_OF_FILE = None  # a mutation target: the last line of the file


def _line_number(lines: list, target: "_Line | None") -> int:
    """The 1-based line number of a line in a rendering (END_OF_FILE: the last line)."""
    if target is END_OF_FILE:
        return len(lines)
    for i, line in enumerate(lines):
        if line is target:
            return i + 1
    raise ValueError("line not in view")


# --------------------------------------------------------------------------------------------
# Mutations (invalid policies): each returns (target line, detail) or None if not applicable
# --------------------------------------------------------------------------------------------


def _core(lines: list) -> list:
    """Lines a mutation may touch: real statements outside the extensions."""
    return [line for line in lines if line.kind != "noise" and not line.ext]


def _letter_for_digit(value: str) -> str | None:
    """The value with its first digit replaced by a look-alike letter (0 -> O, 1 -> l)."""
    for i, c in enumerate(value):
        if c.isdigit():
            letter = {"0": "O", "1": "l"}.get(c, "o")
            return value[:i] + letter + value[i + 1:]
    return None


def _mutate_bad_value(ctx: _Ctx, lines: list):
    """A letter in a number, or a value OpenSM range-checks out of its range."""
    options = []
    for line in _core(lines):
        numeric = line.vtype in ("num", "ranges", "pairs", "table", "ports")
        if line.kind in ("field", "ulp") and numeric and _letter_for_digit(line.value):
            options.append(("letter", line))
        if line.continued:
            continue   # the other edits need the whole value on the line
        if line.kind == "field" and line.key == "mtu-limit":
            options.append(("mtu", line))
        if line.kind == "field" and line.key == "rate-limit":
            options.append(("rate", line))
        if line.kind == "field" and line.key == "sl2vl-table":
            options.append(("table-length", line))
            options.append(("table-vl", line))
        if line.kind == "ulp":
            options.append(("ulp-sl", line))
        if line.kind == "field" and line.key in ("from", "to"):
            options.append(("port", line))
    if not options:
        return None
    how, line = ctx.rng.choice(options)
    old = line.value
    if how == "letter":
        line.value = _letter_for_digit(old)
        detail = "a letter where a number goes"
    elif how == "mtu":
        line.value = ctx.rng.choice(["0", "6", "7", "10", "0x8"])
        detail = "mtu-limit out of range 1..5"
    elif how == "rate":
        line.value = ctx.rng.choice(["0", "1", "30", "64", "255"])
        detail = "rate-limit out of range 2..22"
    elif how == "table-length":
        entries = [e.strip() for e in old.split(",")]
        if ctx.chance(0.5):
            entries.pop(ctx.rng.randrange(len(entries)))
        else:
            entries.append(str(ctx.rng.randint(0, 7)))
        line.value = ", ".join(entries)
        detail = "sl2vl-table with %d entries instead of 16" % len(entries)
    elif how == "table-vl":
        entries = [e.strip() for e in old.split(",")]
        entries[ctx.rng.randrange(len(entries))] = str(ctx.rng.randint(16, 31))
        line.value = ", ".join(entries)
        detail = "sl2vl-table VL above 15"
    elif how == "ulp-sl":
        line.value = str(ctx.rng.randint(16, 63))
        detail = "qos-ulps SL above 15"
    else:
        line.value = ctx.rng.choice(["128", "200", "1-130", "0x80"])
        detail = "sl2vl-scope port number 128 or more"
    return line, "%s (%r: %r -> %r)" % (detail, line.key, old, line.value)


def _fresh_undefined_name(ctx: _Ctx) -> str:
    """A name no port-group, qos-level or sched element uses."""
    while True:
        name = ctx.rng.choice(UNDEFINED_NAMES)
        if ctx.chance(0.5):
            name += str(ctx.rng.randint(2, 99))
        if _name_key(name) not in ctx.taken and name.lower() != "default":
            ctx.taken.add(_name_key(name))
            return name


def _mutate_unknown_name(ctx: _Ctx, lines: list):
    """A match rule naming a qos-level or port-group that does not exist."""
    options = [line for line in _core(lines)
               if line.block is not None and line.block.key == "qos-match-rule"
               and line.tag in ("ref-level", "ref-default", "ref-group")]
    if not options:
        return None
    line = ctx.rng.choice(options)
    old = line.value
    what = "qos-level" if line.tag != "ref-group" else "port-group"
    only_ulp_default = ctx.default_level is None and any(x.tag == "default-ulp" for x in lines)
    if line.tag == "ref-level" and only_ulp_default and ctx.chance(0.3):
        # OpenSM looks qos-level-name up among the qos-levels only, not the qos-ulps default.
        line.value = ctx.rng.choice(["default", "Default"])
        return line, "qos-level-name names the qos-ulps default, which is no qos-level " \
                     "(%r -> %r)" % (old, line.value)
    line.value = _fresh_undefined_name(ctx)
    return line, "%s names an undefined %s (%r -> %r)" % (line.key, what, old, line.value)


def _mutate_missing_default(ctx: _Ctx, lines: list):
    """The only default level renamed away (only when nothing names it). The target is where
    the default belongs: the first qos-levels section, or the end of the file without one."""
    definers = [line for line in lines if line.tag in ("default-level-name", "default-ulp")]
    references = [line for line in lines if line.tag == "ref-default"]
    if len(definers) != 1 or references or definers[0].ext:
        return None
    line = definers[0]
    old = line.render().strip()
    if line.tag == "default-level-name":
        line.value = _fresh_undefined_name(ctx)
        detail = "the qos-level named default renamed"
    else:
        line.key = ctx.rng.choice(["sdp", "iser", "rds"])
        line.sep = " : "
        detail = "the qos-ulps default line turned into another ULP line"
    sections = [x for x in lines if x.kind == "open" and x.key == "qos-levels"]
    return (sections[0] if sections else END_OF_FILE,
            "%s (%r -> %r): no default level left" % (detail, old, line.render().strip()))


def _duplicate_value(ctx: _Ctx, line: _Line) -> str:
    """A valid value for a second copy of this field."""
    key = line.key
    if key == "name":
        return _fresh_undefined_name(ctx)
    if key == "use":
        return _words(ctx, 1, 3)
    if key == "sl":
        return str(ctx.rng.randint(0, 15))
    if key == "mtu-limit":
        return str(ctx.rng.randint(1, 5))
    if key == "rate-limit":
        return str(ctx.rng.randint(2, 22))
    if key == "packet-life":
        return str(ctx.rng.randint(0, 63))
    if key == "qos-level-name":
        return _name_ref(ctx, ctx.rng.choice(ctx.levels)) if ctx.levels else line.value
    if key == "sl2vl-table":
        return _sl2vl_table(ctx)
    return line.value


def _statement_end(lines: list, line: _Line) -> int:
    """The index after a statement's last line (its continuation line included)."""
    end = lines.index(line) + 1
    j = end
    while j < len(lines) and lines[j].kind in ("noise", "cont"):
        if lines[j].kind == "cont":
            end = j + 1
        j += 1
    return end


def _mutate_duplicate_field(ctx: _Ctx, lines: list):
    """A second copy, with another value, of a field a block may hold once."""
    options = [line for line in _core(lines)
               if line.kind == "field" and line.key in ONCE_FIELDS.get(line.block.key, [])]
    if not options:
        return None
    line = ctx.rng.choice(options)
    copy = _Line(indent=line.indent, key=line.key, sep=": ", value=_duplicate_value(ctx, line),
                 kind="field", vtype=line.vtype, block=line.block)
    lines.insert(_statement_end(lines, line), copy)
    return copy, "second %r in one %s" % (line.key + ":", line.block.key)


def _misspell(word: str) -> str | None:
    """Swap two neighbouring letters near the start: never another keyword."""
    for i in (1, 0, 2):
        if i + 1 < len(word) and word[i].isalpha() and word[i + 1].isalpha() \
                and word[i].lower() != word[i + 1].lower():
            result = word[:i] + word[i + 1] + word[i] + word[i + 2:]
            if result.lower() not in ALL_KEYWORDS and result.lower() not in ULP_WORDS:
                return result
    return None


def _mutate_misspelled_keyword(ctx: _Ctx, lines: list):
    """Two letters of a keyword (block, field or ULP word) swapped."""
    options = [line for line in _core(lines) if _misspell(line.key)]
    if not options:
        return None
    line = ctx.rng.choice(options)
    old = line.key
    line.key = _misspell(old)
    return line, "keyword %r misspelled %r" % (old, line.key)


def _next_statement(lines: list, line: _Line) -> "_Line | None":
    """The first line after `line` that is not noise, or END_OF_FILE."""
    for after in lines[lines.index(line) + 1:]:
        if after.kind != "noise":
            return after
    return END_OF_FILE


def _mutate_unclosed_block(ctx: _Ctx, lines: list):
    """An `end-...` line deleted. The target is where the missing line is noticed: the next
    statement (it cannot be an extension's, so both renderings hold it), or, at the end of the
    file, the line that opened the block."""
    options = [line for line in _core(lines) if line.kind == "close"
               and (_next_statement(lines, line) is END_OF_FILE or not _next_statement(lines, line).ext)]
    if not options:
        return None
    line = ctx.rng.choice(options)
    target = _next_statement(lines, line)
    lines.remove(line)
    return (line.block if target is END_OF_FILE else target,
            "%r line deleted: the block opened at %r is never closed" % (line.key, line.block.render().strip()))


def _mutate_carriage_return(ctx: _Ctx, lines: list):
    """A carriage return after a keyword or a number, before the newline."""
    options = [line for line in _core(lines)
               if line.kind in ("open", "close")
               or (line.kind in ("field", "ulp") and line.vtype == "num" and not line.continued)]
    if not options:
        return None
    line = ctx.rng.choice(options)
    line.comment = ""
    line.trail = "\r"
    return line, "a carriage return at the end of %r" % line.render().strip()


_MUTATORS = {
    "bad-value": _mutate_bad_value,
    "unknown-name": _mutate_unknown_name,
    "missing-default": _mutate_missing_default,
    "duplicate-field": _mutate_duplicate_field,
    "misspelled-keyword": _mutate_misspelled_keyword,
    "unclosed-block": _mutate_unclosed_block,
    "carriage-return": _mutate_carriage_return,
}


def _mutate(ctx: _Ctx, lines: list):
    """Apply one mutation; returns (kind, target line, detail)."""
    kinds = list(MUTATION_KINDS)
    first = ctx.rng.choice(kinds)
    kinds.remove(first)
    ctx.rng.shuffle(kinds)
    for kind in [first] + kinds:
        outcome = _MUTATORS[kind](ctx, lines)
        if outcome is not None:
            return kind, outcome[0], outcome[1]
    raise RuntimeError("no mutation applies")


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


def _generate(seed: int, profile: FabricProfile, invalid: bool | None = None):
    """The policy, and the unmutated text and stock text it was made from."""
    rng = random.Random(seed)
    if invalid is None:
        invalid = rng.random() < 0.25
    ctx = _Ctx(rng, profile, allow_unquoted_blanks=not invalid and rng.random() < 0.4)
    lines = []
    for section in _build_sections(ctx):
        _emit(ctx, section, 0, lines, False)
    lines = _add_noise(ctx, lines)
    if not ctx.style["tabs"]:
        _detab(lines)
    final_newline = not ctx.chance(0.08)
    if not final_newline:
        ctx.add("noise:no-final-newline")
        _fix_tail(lines)
    _note_whitespace(ctx, lines)
    base_text = _render(lines, final_newline)
    base_stock = _render(_stock(lines), final_newline)

    mutation = None
    if invalid:
        kind, target, detail = _mutate(ctx, lines)
        ctx.add("mutation:" + kind)
        mutation = {"kind": kind, "line": _line_number(lines, target),
                    "stock_line": _line_number(_stock(lines), target), "detail": detail}
    policy = GeneratedPolicy(
        seed=seed,
        text=_render(lines, final_newline),
        stock_text=_render(_stock(lines), final_newline),
        intent="invalid" if invalid else "valid",
        mutation=mutation,
        constructs=set(ctx.constructs),
    )
    return policy, base_text, base_stock


def generate(seed: int, profile: FabricProfile, invalid: bool | None = None) -> GeneratedPolicy:
    """One policy for this seed: valid (about 75 %) or invalid, unless `invalid` says which."""
    return _generate(seed, profile, invalid)[0]


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _policy_json(policy: GeneratedPolicy, fabric: str) -> dict:
    return {
        "seed": policy.seed,
        "fabric": fabric,
        "intent": policy.intent,
        "mutation": policy.mutation,
        "constructs": sorted(policy.constructs),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Generate random OpenSM QoS policy files.")
    ap.add_argument("--fabric-ibnetdiscover", required=True, help="ibnetdiscover output")
    ap.add_argument("--partitions", required=True, help="partitions.conf")
    ap.add_argument("--sm", required=True, help="port GUID of the SM (0x...)")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--count", type=int, default=1, help="number of policies")
    ap.add_argument("--out", required=True, help="output directory")
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--invalid", action="store_true", help="only invalid policies")
    kind.add_argument("--valid", action="store_true", help="only valid policies")
    args = ap.parse_args(argv)

    with open(args.fabric_ibnetdiscover, encoding="utf-8") as f:
        topology = f.read()
    with open(args.partitions, encoding="utf-8") as f:
        partitions = f.read()
    name = os.path.basename(args.fabric_ibnetdiscover).split(".")[0]
    profile = profile_from_files(topology, partitions, int(args.sm, 0), name)
    invalid = True if args.invalid else False if args.valid else None
    os.makedirs(args.out, exist_ok=True)
    for seed in range(args.seed, args.seed + args.count):
        policy = generate(seed, profile, invalid)
        base = os.path.join(args.out, "policy-%d" % seed)
        with open(base + ".conf", "w", encoding="utf-8", newline="") as f:
            f.write(policy.text)
        with open(base + ".stock.conf", "w", encoding="utf-8", newline="") as f:
            f.write(policy.stock_text)
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(_policy_json(policy, profile.name), f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
