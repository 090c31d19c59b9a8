// SPDX-License-Identifier: MIT
// The SA's post-processing of a level, offline: the PKey chosen (in OpenSM's order), the
// requested SL and PKey checks, packet life on loopback, the level's limits.
#include <catch2/catch.hpp>

#include "sa-matcher/qos_answer.hpp"
#include "sa-matcher/reference_match.hpp"
#include "tests/sa-matcher/matcher_fixture.hpp"

using namespace ibqos;
using test::LabFixture;

namespace {

const char* const policyText = R"(
port-groups
    port-group
        name: storage-ports
        partition: storage
    end-port-group
end-port-groups
qos-ulps
    default : 0
end-qos-ulps
qos-levels
    qos-level
        name: storage
        sl: 1
        mtu-limit: 4
        rate-limit: 6
        packet-life: 14
        pkey: 0x0001, 0x0100
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        destination: storage-ports
        service-id: 0x1000
        qos-level-name: storage
    end-qos-match-rule
end-qos-match-rules
)";

struct Answering : LabFixture {
    PkeyTables pkeys{fabric};
    Answering() : LabFixture(policyText) {}

    PathAnswer answer(PathQuery q) const {
        return answerPath(policy(), pkeys, q, referenceMatch(bound, q));
    }
    uint32_t referenceLevel(const PathQuery& q) const { return referenceMatch(bound, q).level; }
};

}  // namespace

TEST_CASE("without a requested PKey, the common PKey comes in OpenSM's map order",
          "[sa-matcher][pkey]") {
    Answering a;
    // node-01 and node-03 share compute (0x0100, both full), storage (0x0001, both limited:
    // not shared) and lab (0x7001, one full). OpenSM's map is ordered by the byte-swapped
    // PKey, so 0x0100 comes first, before 0x0001 and 0x7001.
    PathAnswer x = a.answer(a.query("node-01 HCA-1/P1", "node-03 HCA-1/P1"));
    REQUIRE(x.ok());
    CHECK(x.pkey == 0x8100);
    // storage-02 is a limited member of compute (its later statement wins): the answer is
    // the source's own entry, membership bit as the source holds it.
    x = a.answer(a.query("storage-02 HCA-1/P1", "storage-01 HCA-1/P1"));
    REQUIRE(x.ok());
    CHECK(x.pkey == 0x0100);
    x = a.answer(a.query("storage-01 HCA-1/P1", "storage-02 HCA-1/P1"));
    CHECK(x.pkey == 0x8100);
}

TEST_CASE(
    "a level with pkeys answers the first of them both ends share, without the membership bit",
    "[sa-matcher][pkey]") {
    Answering a;
    PathQuery q = a.query("node-01 HCA-1/P1", "storage-01 HCA-1/P1");
    q.serviceId = 0x1000;
    PathAnswer x = a.answer(q);
    REQUIRE(x.ok());
    CHECK(a.policy().levels[x.match.level].name == "storage");
    CHECK(x.pkey == 0x0001);  // 0x0001 before 0x0100 in the level's ascending order
    CHECK(x.sl == 1);
    CHECK(x.mtuLimit == 4);
    CHECK(x.rateLimit == 6);
    CHECK(x.packetLife == 14);
}

TEST_CASE("a requested PKey must be shared, and in the level's pkeys when it has some",
          "[sa-matcher][pkey]") {
    Answering a;
    PathQuery q = a.query("node-01 HCA-1/P1", "node-04 HCA-1/P1");
    q.pkey = 0xf001;  // lab, node-01 and node-04 both full
    PathAnswer x = a.answer(q);
    REQUIRE(x.ok());
    CHECK(x.pkey == 0xf001);  // the requested value, as sent
    q.pkey = 0x0001;          // storage: node-04 is not a member
    CHECK(a.answer(q).rejection == Rejection::PkeyNotShared);
    q = a.query("node-01 HCA-1/P1", "storage-01 HCA-1/P1");
    q.serviceId = 0x1000;
    q.pkey = 0x7fff;  // Default: only the SM is a full member
    CHECK(a.answer(q).rejection == Rejection::PkeyNotShared);
    q = a.query("node-03 HCA-1/P1", "node-05 HCA-1/P1");
    q.pkey = 0xf001;  // lab: node-05 limited, node-03 limited
    CHECK(a.answer(q).rejection == Rejection::PkeyNotShared);
    q = a.query("node-01 HCA-1/P1", "storage-01 HCA-1/P1");
    q.serviceId = 0x1000;
    q.pkey = 0x8100;  // shared, but the storage level lists 0x0001 and 0x0100
    CHECK(a.answer(q).ok());
}

TEST_CASE("ports that share no partition get no path", "[sa-matcher][pkey]") {
    Answering a;
    // The router is only a limited member of Default and mgmt.
    PathAnswer x = a.answer(a.query("gw-01/P1", "node-01 HCA-1/P1"));
    CHECK(x.rejection == Rejection::NoSharedPartition);
    CHECK(x.pkey == 0);
    x = a.answer(a.query("gw-01/P1", "leaf-02/P0"));  // mgmt: the switch is a full member
    REQUIRE(x.ok());
    CHECK(x.pkey == 0x0002);
}

TEST_CASE("a requested SL other than the level's gets no answer", "[sa-matcher][sl]") {
    Answering a;
    PathQuery q = a.query("node-01 HCA-1/P1", "node-02 HCA-1/P1");
    q.sl = 0;
    CHECK(a.answer(q).ok());
    q.sl = 1;
    CHECK(a.answer(q).rejection == Rejection::SlMismatch);
}

TEST_CASE("a loopback path has packet life 0", "[sa-matcher][limits]") {
    Answering a;
    PathQuery q = a.query("storage-01 HCA-1/P1", "storage-01 HCA-1/P1");
    q.serviceId = 0x1000;
    PathAnswer x = a.answer(q);
    REQUIRE(x.ok());
    CHECK(x.packetLife == 0);
    q = a.query("node-01 HCA-1/P1", "node-01 HCA-1/P1");
    x = a.answer(q);
    CHECK(x.packetLife == 0);
    CHECK(x.pkey == 0x8100);  // a port shares with itself only where it is a full member
}

TEST_CASE("a level's sl above 15 is answered as OpenSM reads it: the low four bits, or no path",
          "[sa-matcher][sl]") {
    // ibqos check reports such an sl; the policy keeps OpenSM's 8-bit reading of it.
    Answering a;
    PathQuery q = a.query("node-01 HCA-1/P1", "node-02 HCA-1/P1");
    QosLevel& level = a.compiled.policy.levels[a.referenceLevel(q)];
    level.sl = 33;
    PathAnswer x = a.answer(q);
    REQUIRE(x.ok());
    CHECK(x.sl == 1);
    q.sl = 1;  // OpenSM compares the requested SL with the level's whole sl
    CHECK(a.answer(q).rejection == Rejection::SlMismatch);
    q.sl.reset();
    level.sl = 16;
    CHECK(a.answer(q).rejection == Rejection::InvalidSl);
    level.sl = 48;
    CHECK(a.answer(q).rejection == Rejection::InvalidSl);
}

TEST_CASE("a packet-life above 63 is answered in the PathRecord's six bits",
          "[sa-matcher][limits]") {
    Answering a;
    PathQuery q = a.query("node-01 HCA-1/P1", "node-02 HCA-1/P1");
    a.compiled.policy.levels[a.referenceLevel(q)].packetLife = 70;
    CHECK(a.answer(q).packetLife == 6);
}
