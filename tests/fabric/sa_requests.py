# SPDX-License-Identifier: MIT
"""Raw PathRecord requests of every shape a client sends, and the SA's whole answers to them
through ibqos-sa-probe: the plugin's PathRecord responder is compared with OpenSM's own handler
byte for byte (tests/e2e/responder_e2e.py, tests/conformance/run --responder).

A request is (method, component mask, the 64 bytes of the record); an answer is the probe's line:
the MAD status, the method and the whole MAD (transaction id zeroed), or "timeout".
"""
import re
import struct
import time

# PathRecord component mask bits (IBA table 207).
SERVICE_ID = 0x3
DGID, SGID, DLID, SLID = 1 << 2, 1 << 3, 1 << 4, 1 << 5
RAW_TRAFFIC, FLOW_LABEL, HOP_LIMIT, TCLASS = 1 << 6, 1 << 8, 1 << 9, 1 << 10
REVERSIBLE, NUMB_PATH, PKEY, QOS_CLASS, SL = 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15
MTU_SELECTOR, MTU, RATE_SELECTOR, RATE = 1 << 16, 1 << 17, 1 << 18, 1 << 19
LIFE_SELECTOR, LIFE = 1 << 20, 1 << 21

LINK_LOCAL = 0xfe80000000000000
SUBNET_TIMEOUT = 18


class Ports:
    """The endpoints of an ibnetdiscover file: base LID -> (port GUID, kind), kind being "ca",
    "router" or "switch" (a switch's port 0), and each one's LMC."""

    SWITCH_GUID = re.compile(r"^switchguid=0x[0-9a-fA-F]+\(([0-9a-fA-F]+)\)")
    SWITCH = re.compile(r"^Switch\s.*#.*\blid (\d+) lmc (\d+)")
    NODE = re.compile(r"^(Ca|Rt)\s")
    END = re.compile(r"^\[\d+\]\(([0-9a-fA-F]+)\)\s.*#\s*lid (\d+) lmc (\d+)")

    def __init__(self, text):
        self.endpoints, self.lmc = {}, {}
        guid = kind = None
        for line in text.splitlines():
            m = self.SWITCH_GUID.match(line)
            if m:
                guid = int(m.group(1), 16)
                continue
            m = self.SWITCH.match(line)
            if m and guid is not None:
                self.endpoints[int(m.group(1))] = (guid, "switch")
                self.lmc[int(m.group(1))] = int(m.group(2))
                continue
            m = self.NODE.match(line)
            if m:
                kind = "ca" if m.group(1) == "Ca" else "router"
                continue
            m = self.END.match(line)
            if m and kind:
                self.endpoints[int(m.group(2))] = (int(m.group(1), 16), kind)
                self.lmc[int(m.group(2))] = int(m.group(3))
        self.lids = sorted(self.endpoints)

    def any_lid(self, rng, base):
        """One of the port's LIDs (with LMC, a port answers to 2^LMC of them)."""
        return base + rng.randrange(1 << self.lmc[base])


def encode(service_id=0, dgid=(0, 0), sgid=(0, 0), dlid=0, slid=0, raw=False, flow_label=0, hop_limit=0,
           tclass=0, reversible=False, numb_path=0, pkey=0, qos_class=0, sl=0, mtu=(0, 0), rate=(0, 0),
           life=(0, 0), preference=0):
    """The 64 bytes of a PathRecord (GIDs as (prefix, guid); selector fields as (selector, value))."""
    return struct.pack(">Q QQ QQ HH I BB H H BBBB 6x", service_id, dgid[0], dgid[1], sgid[0], sgid[1], dlid, slid,
                       (raw << 31) | (flow_label << 8) | hop_limit, tclass, (reversible << 7) | numb_path, pkey,
                       (qos_class << 4) | sl, (mtu[0] << 6) | mtu[1], (rate[0] << 6) | rate[1],
                       (life[0] << 6) | life[1], preference)


def decode(record):
    """The fields of a 64-byte PathRecord, for people."""
    (sid, dp, dg, sp, sg, dlid, slid, hfr, tclass, rn, pkey, qs, mtu, rate, life, pref) = struct.unpack(
        ">Q QQ QQ HH I BB H H BBBB 6x", record)
    return {"service_id": hex(sid), "dgid": f"{dp:#x}:{dg:#x}", "sgid": f"{sp:#x}:{sg:#x}", "dlid": dlid,
            "slid": slid, "raw": hfr >> 31, "flow_label": (hfr >> 8) & 0xfffff, "hop_limit": hfr & 0xff,
            "tclass": tclass, "reversible": rn >> 7, "numb_path": rn & 0x7f, "pkey": hex(pkey),
            "qos_class": qs >> 4, "sl": qs & 15, "mtu": (mtu >> 6, mtu & 63), "rate": (rate >> 6, rate & 63),
            "packet_life": (life >> 6, life & 63), "preference": pref}


def request_line(request):
    method, mask, record = request
    return f"{method} {mask:x} {record.hex()}"


def describe_request(request):
    method, mask, record = request
    f = decode(record)
    names = [("SID", SERVICE_ID, "service_id"), ("DGID", DGID, "dgid"), ("SGID", SGID, "sgid"),
             ("DLID", DLID, "dlid"), ("SLID", SLID, "slid"), ("RAW", RAW_TRAFFIC, "raw"),
             ("REV", REVERSIBLE, "reversible"), ("NUMB", NUMB_PATH, "numb_path"), ("PKEY", PKEY, "pkey"),
             ("QOS", QOS_CLASS, "qos_class"), ("SL", SL, "sl"), ("MTU", MTU, "mtu"), ("RATE", RATE, "rate"),
             ("LIFE", LIFE, "packet_life")]
    given = [f"{n}={f[k]}" for n, bit, k in names if mask & bit]
    selectors = [n for n, bit in (("mtu-sel", MTU_SELECTOR), ("rate-sel", RATE_SELECTOR), ("life-sel", LIFE_SELECTOR))
                 if mask & bit]
    return f"{method} mask {mask:#x}: " + " ".join(given + selectors)


def _is_record(chunk):
    """Whether 64 bytes of an answer read as a PathRecord OpenSM wrote: a link-local DGID, MTU,
    rate and packet life with the high bit of selector 2 ("exactly", ORed in: a packet life above
    63 spills into the selector's low bit), the reserved bytes zero."""
    return (len(chunk) == 64 and chunk[8:16] == struct.pack(">Q", LINK_LOCAL)
            and all(b >> 7 for b in chunk[54:57]) and not any(chunk[58:64]))


def records_of(line):
    """The records of an answer line (none for an error or no answer). Under the simulator the
    answer always fills a MAD and carries no payload length: after its records come bytes of
    OpenSM's heap, so the records are the leading 64-byte pieces that read as records."""
    if line == "timeout" or not line.startswith("0000 "):
        return []
    data = bytes.fromhex(line.split()[2])[56:]
    records = []
    for i in range(0, len(data) - 63, 64):
        if not _is_record(data[i:i + 64]):
            break
        records.append(data[i:i + 64])
    return records


def without_sl(line):
    """The answer line with its records' SLs set to 0 (for a routing engine that draws them)."""
    if not records_of(line):
        return line
    status, method, mad = line.split()
    mad = bytearray.fromhex(mad)
    for i in range(len(records_of(line))):
        mad[56 + 64 * i + 53] &= 0xf0
    return f"{status} {method} {mad.hex()}"


def record_count(line):
    return len(records_of(line))


def describe_answer(line):
    """An answer line in words: status, method and each record's fields."""
    if line == "timeout":
        return "no answer"
    status, method, _ = line.split()
    return f"status {status} method {method} records {[decode(r) for r in records_of(line)]}"


NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\d+")


def policy_values(text):
    """Service ids, QoS classes and PKeys worth asking about: the policy's own values and their
    neighbours, read roughly from its text (the requests are random anyway)."""
    sids, classes, pkeys = set(), set(), set()
    for line in text.split("\n"):
        code = line.split("#", 1)[0].lower()
        values = []
        for token in NUMBER.findall(code):
            try:
                v = int(token, 0) if not (len(token) > 1 and token[0] == "0" and token[1] not in "xX") else int(token, 8)
            except ValueError:
                continue
            values += [v, v - 1, v + 1]
        values = [v for v in values if v > 0]
        if "service-id" in code:
            sids.update(v for v in values if v < 1 << 64)
        if "port-num" in code:
            sids.update(base + v for v in values for base in (0x10000, 0x1060000) if v <= 0xffff)
        if "qos-class" in code:
            classes.update(v for v in values if v < 4096)
        if "pkey" in code:
            pkeys.update(v & 0xffff for v in values)
    sids.update([0x10000, 0x1ffff, 0x10648CA, 0x1060CBC])
    pkeys.update([0x7fff, 0xffff])
    return sorted(sids), sorted(classes), sorted(p for p in pkeys if p & 0x7fff)


def random_requests(rng, ports, values, count):
    """`count` requests between random endpoints: by LID, by GID or both, GET or GetTable, each
    optional field now present, now absent; `values` = (service ids, QoS classes, PKeys) worth
    asking about (a policy's own and others). A few requests OpenSM refuses or answers from
    every port (left to its handler by the responder) are among them."""
    sids, classes, pkeys = values
    requests = []
    for _ in range(count):
        src, dst = rng.choice(ports.lids), rng.choice(ports.lids)
        sguid, dguid = ports.endpoints[src][0], ports.endpoints[dst][0]
        f, mask = {}, 0
        how = rng.random()
        if how < 0.6 or how >= 0.95:
            f.update(slid=ports.any_lid(rng, src), dlid=ports.any_lid(rng, dst))
            mask |= SLID | DLID
        if how >= 0.6:
            prefix = LINK_LOCAL
            f.update(sgid=(prefix, sguid), dgid=(prefix, dguid))
            mask |= SGID | DGID
            if rng.random() < 0.5:  # one end by LID, the other by GID
                if rng.random() < 0.5:
                    mask &= ~SGID
                    mask |= SLID
                    f["slid"] = ports.any_lid(rng, src)
                else:
                    mask &= ~DGID
                    mask |= DLID
                    f["dlid"] = ports.any_lid(rng, dst)
        if rng.random() < 0.4:
            f["service_id"] = rng.choice(sids) if sids and rng.random() < 0.8 else rng.getrandbits(64)
            mask |= SERVICE_ID
        if rng.random() < 0.35:
            f["qos_class"] = rng.choice(classes) if classes and rng.random() < 0.8 else rng.randrange(4096)
            mask |= QOS_CLASS
        if rng.random() < 0.35:
            f["pkey"] = rng.choice(pkeys) if pkeys and rng.random() < 0.8 else rng.choice([0x7fff, 0xffff, 0x8001, 0x1])
            mask |= PKEY
        if rng.random() < 0.2:
            f["sl"] = rng.randrange(16)
            mask |= SL
        for sel_bit, val_bit, key, values_of in ((MTU_SELECTOR, MTU, "mtu", range(1, 6)),
                                                 (RATE_SELECTOR, RATE, "rate", range(2, 23)),
                                                 (LIFE_SELECTOR, LIFE, "life", range(0, 64))):
            if rng.random() < 0.15:
                f[key] = (rng.randrange(4), rng.choice(values_of))
                mask |= sel_bit | val_bit
            elif rng.random() < 0.03:  # a selector without its value, or the reverse: ignored
                f[key] = (rng.randrange(4), rng.choice(values_of))
                mask |= rng.choice([sel_bit, val_bit])
        if rng.random() < 0.3:
            f["reversible"] = rng.random() < 0.7
            mask |= REVERSIBLE
        if rng.random() < 0.2:
            f["numb_path"] = rng.randrange(0, 4)
            mask |= NUMB_PATH
        if rng.random() < 0.05:
            f["raw"] = True
            mask |= RAW_TRAFFIC
        if rng.random() < 0.05:
            f["flow_label"], f["hop_limit"], f["tclass"] = rng.getrandbits(20), rng.randrange(256), rng.randrange(256)
            mask |= FLOW_LABEL | HOP_LIMIT | TCLASS
        # Rare shapes the responder leaves to OpenSM's handler.
        odd = rng.random()
        if odd < 0.02:
            mask = (mask & ~SERVICE_ID) | 0x1  # half a ServiceID: OpenSM refuses it
        elif odd < 0.04:
            f["mtu"] = (rng.randrange(4), 6 + rng.randrange(5))  # no such MTU: refused
            mask |= MTU_SELECTOR | MTU
        elif odd < 0.06:
            f["dgid"] = (0xff02 << 48, 1)  # a multicast group: OpenSM answers from the group
            mask = (mask & ~DLID) | DGID
        elif odd < 0.08:
            mask &= ~(SGID | SLID)  # no source: paths from every port (GET: the first)
        method = "get" if rng.random() < 0.5 or odd < 0.08 else "gettable"
        requests.append((method, mask, encode(**f)))
    return requests


def ask(fabric, host, probe, requests, timeout_ms=2000):
    """The SA's answer lines, in order, from ibqos-sa-probe attached to `host`."""
    text = "".join(request_line(r) + "\n" for r in requests)
    # Right after SUBNET UP a port may still be on its way to Active.
    for attempt in range(50):
        p = fabric.tool([probe, "--timeout", str(timeout_ms)], host, input=text, check=False,
                        timeout=30 + len(requests) * timeout_ms / 1000)
        if p.returncode == 0 or "not active" not in p.stderr:
            break
        time.sleep(0.2)
    lines = p.stdout.splitlines()
    if len(lines) != len(requests):
        raise RuntimeError(f"ibqos-sa-probe answered {len(lines)} of {len(requests)} requests: {p.stderr}")
    return lines


# An error answer echoes the request's SA header and record; OpenSM leaves the rest of its MAD
# as the request's buffer held it (bytes a client never sent), so only those 120 bytes count.
ERROR_ECHO = 56 + 64


def significant(line):
    """What of an answer two SAs must agree on: the SA header and the records of an answer (the
    bytes after them are not the SA's), the header and echo of an error."""
    if line == "timeout":
        return line
    status, method, mad = line.split()
    if status != "0000":
        return f"{status} {method} {mad[:2 * ERROR_ECHO]}"
    return f"{status} {method} {mad[:2 * 56]} " + "".join(r.hex() for r in records_of(line))


def compare(requests, first, second, names=("first", "second")):
    """Differences between two SAs' answers to the same requests, in words."""
    differences = []
    for r, a, b in zip(requests, first, second):
        if significant(a) != significant(b):
            where = ""
            if a != "timeout" and b != "timeout":
                x, y = bytes.fromhex(a.split()[2]), bytes.fromhex(b.split()[2])
                where = " (MAD bytes " + ", ".join(str(i) for i in range(min(len(x), len(y))) if x[i] != y[i])[:80] + ")"
            differences.append(f"{describe_request(r)}{where}\n    {names[0]}: {describe_answer(a)}"
                               f"\n    {names[1]}: {describe_answer(b)}")
    return differences
