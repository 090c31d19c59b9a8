// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as an SA answer MAD, checked as the client checks it against a
// LID query, a GID query and a SubnAdmGet query with P_Key and SL.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "host-sched/sa-client/sa_wire.hpp"

using namespace ibqos::host;

namespace {

std::vector<SaQuery> queries() {
    SaQuery byLid;
    byLid.slid = 1;
    byLid.dlid = 2;
    SaQuery byGid;
    byGid.byGid = true;
    byGid.sgid = ibqos::ib::Gid::fromParts(0xfe80000000000000ull, 0x100001);
    byGid.dgid = ibqos::ib::Gid::fromParts(0xfe80000000000000ull, 0x200000);
    SaQuery get = byLid;
    get.method = SaMethod::Get;
    get.pkey = 0xffff;
    get.sl = 3;
    get.serviceId = 0x10005;
    return {byLid, byGid, get};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<SaQuery> all = queries();
    const uint64_t tids[] = {0x1142, 0x5a5a0042};
    for (const SaQuery& q : all) {
        DecodedAnswer a = decodePathAnswer(std::span<const uint8_t>(data, size), q, tids);
        if (a.kind == AnswerKind::Path) {
            // What the client hands on must be what it promised to check.
            const ibqos::ib::PathRecord& r = a.record;
            bool sound = r.sl < 16 && r.mtu >= 1 && r.mtu <= 5 && r.mtuSelector == 2 &&
                         r.rateSelector == 2 && r.packetLifeSelector == 2 && r.dlid >= 1 &&
                         r.dlid <= 0xBFFF && a.recordCount >= 1 &&
                         (!q.reversible || r.reversible) && (!q.sl || r.sl == *q.sl) &&
                         (q.byGid ? r.dgid == q.dgid : r.dlid == q.dlid);
            if (!sound) std::abort();
        }
        if (a.kind == AnswerKind::Invalid && a.error.offset > size) std::abort();  // located inside
        (void)a.error.toString();
    }
    (void)ibqos::ib::describeMadStatus(size >= 6 ? static_cast<uint16_t>(data[4] << 8 | data[5])
                                                 : 0);
    return 0;
}
