#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz-path_responder (fuzz/corpus/path_responder/): a control byte
# (which endpoint asks, no policy in force, OpenSM not yet parsed) before a request MAD: every
# seed of path_request, and requests that reach the responder's every step on the target's fabric.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "path_responder")
GET, GET_TABLE, PATH_RECORD = 0x01, 0x12, 0x35
LINK_LOCAL = 0xfe80000000000000
SID, DGID, SGID, DLID, SLID = 0x3, 1 << 2, 1 << 3, 1 << 4, 1 << 5
REVERSIBLE, NUMB_PATH, PKEY, QOS_CLASS, SL = 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15
MTU_SELECTOR, MTU, RATE_SELECTOR, RATE = 1 << 16, 1 << 17, 1 << 18, 1 << 19


def mad(method, mask, record):
    header = struct.pack(">BBBBHHQHHI", 1, 0x03, 2, method, 0, 0, 0x1234, PATH_RECORD, 0, 0)
    return (header + bytes(12) + struct.pack(">QHHQ", 0, 0, 0, mask) + record).ljust(256, b"\0")


def record(sid=0, dgid=(0, 0), sgid=(0, 0), dlid=0, slid=0, pkey=0, qos_class=0, sl=0, mtu=0, rate=0,
           reversible=0, numb_path=0):
    return struct.pack(">QQQQQHHIBBHHBBBB6x", sid, *dgid, *sgid, dlid, slid, 0, 0,
                       reversible << 7 | numb_path, pkey, qos_class << 4 | sl, mtu, rate, 0, 0)


SEEDS = {
    "get-lids": (0, mad(GET, SID | SLID | DLID, record(sid=0x10005, slid=1, dlid=4))),
    "table-lmc-numbpath": (2, mad(GET_TABLE, SLID | DLID | NUMB_PATH | REVERSIBLE,
                                  record(slid=5, dlid=7, numb_path=4, reversible=1))),
    "table-lmc-every-pair": (1, mad(GET_TABLE, SGID | DGID, record(sgid=(LINK_LOCAL, 0x100001),
                                                                 dgid=(LINK_LOCAL, 0x10000a)))),
    "vl15-dropped-sl": (0, mad(GET, SID | SLID | DLID, record(sid=0x20000, slid=1, dlid=5))),
    "to-switch-limits": (0, mad(GET_TABLE, SLID | DLID | MTU_SELECTOR | MTU | RATE_SELECTOR | RATE,
                                record(slid=1, dlid=3, mtu=2 << 6 | 4, rate=2 << 6 | 6))),
    "pkey-and-sl": (3, mad(GET, SLID | DLID | PKEY | SL, record(slid=4, dlid=1, pkey=0xffff, sl=5))),
    "qos-class": (0, mad(GET, SID | SLID | DLID | QOS_CLASS, record(sid=0x10001, slid=6, dlid=2, qos_class=4))),
    "no-policy": (8, mad(GET, SLID | DLID, record(slid=1, dlid=4))),
    "not-parsed-yet": (16, mad(GET, SLID | DLID, record(slid=1, dlid=4))),
}

os.makedirs(OUT, exist_ok=True)
for name, (control, data) in SEEDS.items():
    assert len(data) == 256, name
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(bytes([control]) + data)
request_seeds = os.path.join(HERE, "corpus", "path_request")
for name in sorted(os.listdir(request_seeds)):
    with open(os.path.join(request_seeds, name), "rb") as f, \
            open(os.path.join(OUT, "request-" + os.path.splitext(name)[0] + ".bin"), "wb") as out:
        out.write(b"\0" + f.read())
print(f"{len(os.listdir(OUT))} seeds in {OUT}")
