// SPDX-License-Identifier: MIT
// Decoding PathRecord and MultiPathRecord request MADs, and resolving their ends on a fabric.
#include <catch2/catch.hpp>

#include <array>

#include "sa-matcher/path_request.hpp"
#include "tests/sa-matcher/matcher_fixture.hpp"

using namespace ibqos;

namespace {

// An SA request MAD written field by field (big-endian, as on the wire).
struct Mad {
    std::array<uint8_t, ib::MadSize> bytes{};

    Mad(uint8_t method, uint16_t attribute, uint64_t mask) {
        bytes[0] = 1;     // base version
        bytes[1] = 0x03;  // Subnet Administration
        bytes[2] = 2;     // class version
        bytes[3] = method;
        put(16, attribute, 2);
        put(48, mask, 8);
    }
    void put(size_t at, uint64_t value, size_t size) {
        for (size_t i = 0; i < size; ++i)
            bytes[at + i] = static_cast<uint8_t>(value >> (8 * (size - 1 - i)));
    }
    // A field of the record (after the 56-byte SA header).
    void field(size_t at, uint64_t value, size_t size) { put(56 + at, value, size); }
    DecodedRequest decode() const { return decodePathRequest(bytes); }
};

constexpr uint64_t bit(unsigned n) { return uint64_t{1} << n; }
constexpr uint8_t Get = 0x01, GetTable = 0x12, GetMulti = 0x14;
constexpr uint16_t PathRecordId = 0x35, MultiPathRecordId = 0x3a;

// A PathRecord from LID 5 to LID 7 with the given extra mask bits and fields.
Mad pathRecord(uint64_t extraMask) {
    Mad m(GetTable, PathRecordId, bit(4) | bit(5) | extraMask);
    m.field(40, 7, 2);  // DLID
    m.field(42, 5, 2);  // SLID
    m.field(0, 0x0000000000010000ULL, 8);
    m.field(50, 0x8001, 2);
    m.field(52, 0x0123, 2);  // QoS class 0x012, SL 3
    return m;
}

}  // namespace

TEST_CASE("a PathRecord's fields are present exactly when the component mask selects them",
          "[sa-matcher][decode]") {
    DecodedRequest bare = pathRecord(0).decode();
    REQUIRE(bare.ok());
    REQUIRE(bare.requests.size() == 1);
    const PathRequest& b = bare.requests[0];
    CHECK(b.kind == PathRecordKind::PathRecord);
    CHECK(b.source.lid == 5);
    CHECK(b.destination.lid == 7);
    CHECK_FALSE(b.serviceId);
    CHECK_FALSE(b.qosClass);
    CHECK_FALSE(b.pkey);
    CHECK_FALSE(b.sl);

    DecodedRequest full = pathRecord(bit(0) | bit(1) | bit(13) | bit(14) | bit(15)).decode();
    REQUIRE(full.ok());
    const PathRequest& f = full.requests[0];
    CHECK(f.serviceId == 0x10000u);
    CHECK(f.qosClass == 0x012);
    CHECK(f.sl == 3);
    CHECK(f.pkey == 0x8001);
}

TEST_CASE("a ServiceID with one half in the mask is refused, as OpenSM refuses it",
          "[sa-matcher][decode]") {
    for (uint64_t half : {bit(0), bit(1)}) {
        DecodedRequest d = pathRecord(half).decode();
        CHECK_FALSE(d.ok());
        CHECK(d.saStatus == 0x0600);  // ERR_INSUFFICIENT_COMPONENTS
    }
}

TEST_CASE("ends by GID carry the port GUID; a multicast destination or a missing end is refused",
          "[sa-matcher][decode]") {
    Mad m(Get, PathRecordId, bit(2) | bit(3));
    m.field(8, 0xfe80000000000000ULL, 8);
    m.field(16, 0x10000aULL, 8);  // DGID
    m.field(24, 0xfe80000000000000ULL, 8);
    m.field(32, 0x100003ULL, 8);  // SGID
    DecodedRequest d = m.decode();
    REQUIRE(d.ok());
    CHECK(d.requests[0].source.guid == 0x100003u);
    CHECK(d.requests[0].destination.guid == 0x10000au);
    CHECK_FALSE(d.requests[0].source.lid);

    m.field(8, 0xff12401bffff0000ULL, 8);
    CHECK_FALSE(m.decode().ok());  // multicast: answered from the group, not the policy

    Mad half(GetTable, PathRecordId, bit(5));
    half.field(42, 5, 2);
    CHECK_FALSE(half.decode().ok());  // no destination: paths to every port
}

TEST_CASE("malformed MADs are refused with OpenSM's status", "[sa-matcher][decode]") {
    std::array<uint8_t, 100> shortMad{};
    CHECK_FALSE(decodePathRequest(shortMad).ok());
    Mad wrongClass = pathRecord(0);
    wrongClass.bytes[1] = 0x81;
    CHECK_FALSE(wrongClass.decode().ok());
    Mad wrongVersion = pathRecord(0);
    wrongVersion.bytes[2] = 1;
    CHECK(wrongVersion.decode().saStatus == 0x0004);
    Mad set(0x02, PathRecordId, bit(4) | bit(5));
    CHECK(set.decode().saStatus == 0x000c);
    Mad response = pathRecord(0);
    response.bytes[3] = 0x92;
    CHECK_FALSE(response.decode().ok());
    Mad badRate = pathRecord(bit(18) | bit(19));
    badRate.field(55, 0x80 | 1, 1);  // rate 1 is not an IB rate
    CHECK(badRate.decode().saStatus == 0x0200);
    Mad badMtu = pathRecord(bit(16) | bit(17));
    badMtu.field(54, 6, 1);
    CHECK(badMtu.decode().saStatus == 0x0200);
    Mad onlySelector = pathRecord(bit(16));  // OpenSM ignores a selector without its value
    onlySelector.field(54, 6, 1);
    CHECK(onlySelector.decode().ok());
}

TEST_CASE("a MultiPathRecord's mask bits mean what the PathRecord ones mean",
          "[sa-matcher][decode]") {
    // QoS class (8), PKey (7), SL (9), ServiceID (16 and 21), SGIDCount (19), DGIDCount (20).
    Mad m(GetMulti, MultiPathRecordId,
          bit(7) | bit(8) | bit(9) | bit(16) | bit(21) | bit(19) | bit(20));
    m.bytes[26] = 0x01;  // RMPP active
    m.field(6, 0x8002, 2);
    m.field(8, 0x0455, 2);  // QoS class 0x045, SL 5
    m.field(13, 0x12, 1);   // ServiceID bits 63-56
    m.field(17, 0x3456789abcdef0ULL, 7);
    m.field(15, 1, 1);
    m.field(16, 2, 1);
    for (unsigned i = 0; i < 3; ++i) {
        m.field(24 + 16 * i, 0xfe80000000000000ULL, 8);
        m.field(32 + 16 * i, 0x100003ULL + 2 * i, 8);
    }
    DecodedRequest d = m.decode();
    REQUIRE(d.ok());
    REQUIRE(d.requests.size() == 2);  // one source, two destinations
    for (const PathRequest& r : d.requests) {
        CHECK(r.kind == PathRecordKind::MultiPathRecord);
        CHECK(r.serviceId == 0x123456789abcdef0u);
        CHECK(r.qosClass == 0x045);
        CHECK(r.sl == 5);
        CHECK(r.pkey == 0x8002);
        CHECK(r.source.guid == 0x100003u);
    }
    CHECK(d.requests[0].destination.guid == 0x100005u);
    CHECK(d.requests[1].destination.guid == 0x100007u);

    m.bytes[26] = 0;  // OpenSM insists on the RMPP active flag
    CHECK(m.decode().saStatus == 0x0200);
    m.bytes[26] = 1;
    m.put(48, bit(16) | bit(19) | bit(20), 8);
    CHECK(m.decode().saStatus == 0x0600);
    m.put(48, bit(19), 8);
    CHECK(m.decode().saStatus == 0x0600);  // DGIDCount missing
}

TEST_CASE("a request's ends resolve to ports by LID and by GID", "[sa-matcher][resolve]") {
    test::LabFixture lab("qos-ulps\n    default : 0\nend-qos-ulps\n");
    PathRequest r;
    r.source.gidPrefix = ib::LinkLocalPrefix;
    r.source.guid = 0x10000a;
    r.destination.lid = lab.fabric.ports[lab.port("node-05 HCA-1/P1")].lid;
    std::string error;
    auto q = resolvePathRequest(lab.fabric, r, error);
    REQUIRE(q);
    CHECK(q->source == lab.port("storage-01 HCA-1/P2"));
    CHECK(q->destination == lab.port("node-05 HCA-1/P1"));

    r.source.lid = lab.fabric.ports[lab.port("node-01 HCA-1/P1")].lid;  // not the GID's port
    CHECK_FALSE(resolvePathRequest(lab.fabric, r, error));
    r.source.lid.reset();
    r.source.gidPrefix = 0x2001000000000000ULL;  // another subnet
    CHECK_FALSE(resolvePathRequest(lab.fabric, r, error));
    r.source.gidPrefix = ib::LinkLocalPrefix;
    r.destination.lid = 999;
    CHECK_FALSE(resolvePathRequest(lab.fabric, r, error));
    CHECK(error == "destination: no port has LID 999");
}
