// SPDX-License-Identifier: MIT
// SA answers for the tests: one captured from OpenSM 3.3.23 on ibsim, and a builder.
#pragma once

#include <cstdint>
#include <vector>

#include "host-sched/sa-client/sa_wire.hpp"

namespace ibqos::test {

// OpenSM's SubnAdmGetTableResp to a ib::PathRecord query SLID 1 -> DLID 2 (reversible, one path)
// with transaction id 0x1142, as libumad2sim delivered it: RMPP Active flag only, no length.
inline std::vector<uint8_t> capturedGetTableResp() {
    return {0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
            0x11, 0x42, 0x00, 0x35, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x30,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00, 0x02,
            0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0x00, 0x00, 0x83, 0x83,
            0x92, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
}

// The query that answer answers.
inline host::SaQuery capturedQuery() {
    host::SaQuery q;
    q.slid = 1;
    q.dlid = 2;
    return q;
}

inline constexpr uint64_t CapturedTid = 0x1142;

// A well-formed answer to a query: the request's header turned into a response carrying the
// given records (a GetTableResp in the simulator's RMPP form unless kernelRmpp).
inline std::vector<uint8_t> answerTo(const host::SaQuery& q, uint64_t tid,
                                     const std::vector<ib::PathRecord>& records,
                                     bool kernelRmpp = false) {
    auto request = host::encodeSaQuery(q, tid);
    std::vector<uint8_t> mad(request.begin(), request.begin() + ib::SaHeaderSize);
    mad[3] |= 0x80;
    mad[8] = 0x00;  // the high half of the id is the kernel agent's
    mad[9] = 0x07;
    if (q.method == host::SaMethod::GetTable) {
        mad[26] = 0x01;
        if (kernelRmpp) {
            mad[24] = 1;
            mad[25] = 1;
            mad[26] = 0x07;
            mad[31] = 1;
            uint32_t length = 20 + 64 * static_cast<uint32_t>(records.size());
            mad[34] = static_cast<uint8_t>(length >> 8);
            mad[35] = static_cast<uint8_t>(length);
        }
    }
    mad[45] = records.empty() ? 0 : 8;
    for (const ib::PathRecord& r : records) {
        auto bytes = ib::encodePathRecord(r);
        mad.insert(mad.end(), bytes.begin(), bytes.end());
    }
    return mad;
}

// The record an SA would return for a LID query from 1 to 2.
inline ib::PathRecord goodRecord(uint8_t sl = 3) {
    ib::PathRecord r;
    r.slid = 1;
    r.dlid = 2;
    r.sgid = ib::Gid::fromParts(0xfe80000000000000ull, 0x100001);
    r.dgid = ib::Gid::fromParts(0xfe80000000000000ull, 0x200000);
    r.reversible = true;
    r.pkey = 0xffff;
    r.sl = sl;
    r.mtuSelector = 2;
    r.mtu = 5;
    r.rateSelector = 2;
    r.rate = 3;
    r.packetLifeSelector = 2;
    r.packetLife = 18;
    return r;
}

}  // namespace ibqos::test
