#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz-path_request (fuzz/corpus/path_request/): SA request MADs,
# PathRecord and MultiPathRecord, well-formed and not, naming ports of the target's fabric.
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "path_request")
GET, GET_TABLE, GET_MULTI = 0x01, 0x12, 0x14
PATH_RECORD, MULTI_PATH_RECORD = 0x35, 0x3a
LINK_LOCAL = 0xfe80000000000000


def bit(n):
    return 1 << n


def mad(method, attribute, mask, record, rmpp=0, class_version=2, mgmt_class=0x03):
    header = struct.pack(">BBBBHHQHHI", 1, mgmt_class, class_version, method, 0, 0, 0x1234, attribute, 0, 0)
    rmpp_header = struct.pack(">BBBBII", 1, 0, rmpp, 0, 0, 0)
    sa = struct.pack(">QHHQ", 0, 0, 0, mask)
    body = (header + rmpp_header + sa + record).ljust(256, b"\0")
    return body[:256]


def path_record(sid=0, dgid=(0, 0), sgid=(0, 0), dlid=0, slid=0, pkey=0, qos_class=0, sl=0, mtu=0, rate=0):
    return struct.pack(">QQQQQHHIBBHHBBBB6x", sid, *dgid, *sgid, dlid, slid, 0, 0, 0x81, pkey,
                       qos_class << 4 | sl, mtu, rate, 0, 0)


def multi_path_record(gids, sources, sid=0, pkey=0, qos_class=0, sl=0):
    head = struct.pack(">IBBHHBBBBBBB", 0, 0, 0x81, pkey, qos_class << 4 | sl, 0, 0, 0, sid >> 56, 0,
                       sources, len(gids) - sources)
    head += (sid & ((1 << 56) - 1)).to_bytes(7, "big")
    return head + b"".join(struct.pack(">QQ", LINK_LOCAL, g) for g in gids)


SID = bit(0) | bit(1)
SEEDS = {
    "pr-lids": mad(GET_TABLE, PATH_RECORD, bit(4) | bit(5), path_record(dlid=4, slid=1)),
    "pr-get-all-fields": mad(GET, PATH_RECORD, bit(4) | bit(5) | SID | bit(13) | bit(14) | bit(15),
                             path_record(sid=0x10010, dlid=2, slid=1, pkey=0x8001, qos_class=5, sl=3)),
    "pr-gids": mad(GET_TABLE, PATH_RECORD, bit(2) | bit(3) | bit(13),
                   path_record(dgid=(LINK_LOCAL, 0x10000a), sgid=(LINK_LOCAL, 0x100007), pkey=0x0100)),
    "pr-gid-and-lid": mad(GET_TABLE, PATH_RECORD, bit(3) | bit(5) | bit(4),
                          path_record(sgid=(LINK_LOCAL, 0x100001), slid=1, dlid=3)),
    "pr-half-sid": mad(GET_TABLE, PATH_RECORD, bit(4) | bit(5) | bit(0), path_record(sid=5, dlid=4, slid=1)),
    "pr-multicast": mad(GET_TABLE, PATH_RECORD, bit(2) | bit(5),
                        path_record(dgid=(0xff12401bffff0000, 1), slid=1)),
    "pr-bad-rate": mad(GET_TABLE, PATH_RECORD, bit(4) | bit(5) | bit(18) | bit(19),
                       path_record(dlid=4, slid=1, rate=0x81)),
    "pr-no-source": mad(GET_TABLE, PATH_RECORD, bit(4), path_record(dlid=4)),
    "pr-response": mad(0x92, PATH_RECORD, bit(4) | bit(5), path_record(dlid=4, slid=1)),
    "mpr-one-pair": mad(GET_MULTI, MULTI_PATH_RECORD, bit(7) | bit(8) | bit(9) | bit(16) | bit(21) | bit(19) | bit(20),
                        multi_path_record([0x100001, 0x100004], 1, sid=0x10020, pkey=0x0001, qos_class=4, sl=3),
                        rmpp=1),
    "mpr-apm": mad(GET_MULTI, MULTI_PATH_RECORD, bit(19) | bit(20),
                   multi_path_record([0x100001, 0x100007, 0x100004, 0x10000a], 2), rmpp=1),
    "mpr-no-rmpp": mad(GET_MULTI, MULTI_PATH_RECORD, bit(19) | bit(20), multi_path_record([0x100001, 0x100004], 1)),
    "mpr-too-many-gids": mad(GET_MULTI, MULTI_PATH_RECORD, bit(19) | bit(20),
                             multi_path_record([0x100001] * 11, 9)[:24] + b"\x00" * 176, rmpp=1),
    "wrong-class": mad(GET, PATH_RECORD, bit(4) | bit(5), path_record(dlid=4, slid=1), mgmt_class=0x81),
    "wrong-version": mad(GET, PATH_RECORD, bit(4) | bit(5), path_record(dlid=4, slid=1), class_version=1),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    assert len(data) == 256, name
    with open(os.path.join(OUT, name + ".mad"), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {OUT}")
