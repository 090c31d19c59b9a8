// SPDX-License-Identifier: MIT
// The one InfiniBand vocabulary: rdma-core's layouts, and what the host sends is what the SA
// model reads.
#include <catch2/catch.hpp>

#include <endian.h>
#include <infiniband/sa.h>

#include <cstring>
#include <string>

#include "host-sched/sa-client/sa_wire.hpp"
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/qos.hpp"
#include "ib/sl2vl_vlarb.hpp"
#include "sa-matcher/path_request.hpp"

using namespace ibqos;

TEST_CASE("a PathRecord is laid out as rdma-core's struct ibv_path_record", "[ib][codec]") {
    ib::PathRecord r;
    r.serviceId = 0x0102030405060708;
    r.dgid = ib::Gid::fromParts(0xfe80000000000000, 0x0002c90300001111);
    r.sgid = ib::Gid::fromParts(0xfe80000000000000, 0x0002c90300002222);
    r.dlid = 0x1234;
    r.slid = 0x0042;
    r.flowLabel = 0x12345;
    r.hopLimit = 7;
    r.trafficClass = 9;
    r.reversible = true;
    r.numbPath = 3;
    r.pkey = 0x8001;
    r.qosClass = 0xabc;
    r.sl = 5;
    r.mtuSelector = 2;
    r.mtu = 4;
    r.rateSelector = 2;
    r.rate = 16;
    r.packetLifeSelector = 2;
    r.packetLife = 18;
    auto bytes = ib::encodePathRecord(r);
    ibv_path_record v;
    static_assert(sizeof v == ib::PathRecordSize);
    std::memcpy(&v, bytes.data(), sizeof v);
    CHECK(be64toh(v.service_id) == r.serviceId);
    CHECK(std::memcmp(v.dgid.raw, r.dgid.bytes.data(), 16) == 0);
    CHECK(std::memcmp(v.sgid.raw, r.sgid.bytes.data(), 16) == 0);
    CHECK(be16toh(v.dlid) == r.dlid);
    CHECK(be16toh(v.slid) == r.slid);
    CHECK(be32toh(v.flowlabel_hoplimit) == (0x12345u << 8 | 7u));
    CHECK(v.tclass == 9);
    CHECK(v.reversible_numpath == (IBV_PATH_RECORD_REVERSIBLE | 3));
    CHECK(be16toh(v.pkey) == 0x8001);
    CHECK(be16toh(v.qosclass_sl) == (0xabc << 4 | 5));
    CHECK(v.mtu == (2 << 6 | 4));
    CHECK(v.rate == (2 << 6 | 16));
    CHECK(v.packetlifetime == (2 << 6 | 18));
    CHECK(ib::decodePathRecord(bytes) == r);
}

TEST_CASE("what the host's SA client sends, the SA model reads with the same fields",
          "[ib][codec]") {
    host::SaQuery q;
    q.method = host::SaMethod::Get;
    q.slid = 7;
    q.dlid = 12;
    q.serviceId = 0x1060cbc;
    q.qosClass = 0x123;
    q.pkey = 0x8100;
    q.sl = 3;
    auto mad = host::encodeSaQuery(q, 0x42);
    DecodedRequest d = decodePathRequest(mad);
    REQUIRE(d.ok());
    REQUIRE(d.requests.size() == 1);
    const PathRequest& r = d.requests[0];
    CHECK(r.kind == PathRecordKind::PathRecord);
    CHECK(r.source.lid == 7);
    CHECK(r.destination.lid == 12);
    CHECK(r.serviceId == q.serviceId);
    CHECK(r.qosClass == q.qosClass);
    CHECK(r.pkey == q.pkey);
    CHECK(r.sl == q.sl);

    // By GID, with no QoS field: the model sees the ports' GUIDs and nothing else.
    host::SaQuery g;
    g.byGid = true;
    g.sgid = ib::Gid::fromParts(ib::LinkLocalPrefix, 0x100003);
    g.dgid = ib::Gid::fromParts(ib::LinkLocalPrefix, 0x10000e);
    d = decodePathRequest(host::encodeSaQuery(g, 1));
    REQUIRE(d.ok());
    CHECK(d.requests[0].source.guid == 0x100003);
    CHECK(d.requests[0].destination.guid == 0x10000e);
    CHECK_FALSE(d.requests[0].serviceId.has_value());
    CHECK_FALSE(d.requests[0].pkey.has_value());
}

TEST_CASE("GIDs read and print in IPv6 notation", "[ib][codec]") {
    auto g = ib::Gid::parse("fe80::2:c903:0:1");
    REQUIRE(g);
    CHECK(g->prefix() == 0xfe80000000000000ull);
    CHECK(g->guid() == 0x0002c90300000001ull);
    CHECK(g->toString() == "fe80::2:c903:0:1");
    CHECK_FALSE(ib::Gid::parse("fe80::zz"));
    CHECK(ib::describeMadStatus(0x0300) == "0x0300 (SA_ERR_NO_RECORDS)");
}

TEST_CASE("the SA header is checked once: the host and the SA model name a wrong field alike",
          "[ib][codec]") {
    host::SaQuery q;
    q.slid = 7;
    q.dlid = 12;
    auto request = host::encodeSaQuery(q, 0x42);
    CHECK_FALSE(ib::checkSaHeader(request));
    struct Case {
        size_t offset;
        uint8_t value;
        const char* field;
        const char* message;
    };
    for (Case c : {Case{ib::at::BaseVersion, 2, "base_version", "base version 2 is not 1"},
                   Case{ib::at::MgmtClass, 0x81, "mgmt_class",
                        "management class 0x81 is not Subnet Administration (0x03)"},
                   Case{ib::at::ClassVersion, 1, "class_version", "SA class version 1 is not 2"}}) {
        auto mad = request;
        mad[c.offset] = c.value;
        auto wrong = ib::checkSaHeader(mad);
        REQUIRE(wrong);
        CHECK(wrong->offset == c.offset);
        CHECK(wrong->field == c.field);
        CHECK(wrong->message == c.message);
        CHECK(decodePathRequest(mad).error == c.message);
        mad[ib::at::Method] |= ib::ResponseBit;
        const uint64_t tid = 0x42;
        host::DecodedAnswer a = host::decodePathAnswer(mad, q, {&tid, 1});
        CHECK(a.kind == host::AnswerKind::Invalid);
        CHECK(a.error.toString() ==
              "byte " + std::to_string(c.offset) + " (" + c.field + "): " + c.message);
    }
}

TEST_CASE("an SL2VL table is two SLs a byte, the even SL in the high nibble", "[ib][tables]") {
    Sl2VlTable table{};
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) table[sl] = static_cast<uint8_t>(sl);
    const ib::PackedSl2Vl bytes = ib::packSl2Vl(table);
    CHECK(bytes == ib::PackedSl2Vl{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef});
    CHECK(ib::unpackSl2Vl(bytes) == table);
    CHECK(ib::sl2VlEntry(0x13) == 3);
    // A switch's (in-port, out-port) table: the in-port in the modifier's second byte.
    CHECK(ib::sl2VlModifier(2, 5) == 0x0205);
}

TEST_CASE("VLArb blocks: 32 entries each, low table first, numbered from 1 on the wire",
          "[ib][tables]") {
    CHECK(ib::vlArbModifier(ib::vlArbBlock(false, 0), 3) == 0x10003);
    CHECK(ib::vlArbModifier(ib::vlArbBlock(false, 1), 3) == 0x20003);
    CHECK(ib::vlArbModifier(ib::vlArbBlock(true, 0), 0) == 0x30000);
    CHECK(ib::vlArbModifier(ib::vlArbBlock(true, 1), 5) == 0x40005);
    CHECK_FALSE(ib::vlArbBlockIsHigh(ib::vlArbBlock(false, 1)));
    CHECK(ib::vlArbBlockIsHigh(ib::vlArbBlock(true, 0)));
    CHECK(ib::vlArbFirstEntry(ib::vlArbBlock(true, 0)) == 0);
    CHECK(ib::vlArbFirstEntry(ib::vlArbBlock(true, 1)) == ib::VlArbBlockEntries);
    // The VL is the low 4 bits of an entry's first byte (the others are reserved).
    CHECK(ib::vlArbEntry(0xf3, 64) == VlArbEntry{3, 64});
}

TEST_CASE("a P_Key is a 15-bit base and the full-membership bit", "[ib][pkey]") {
    CHECK(ib::pkeyBase(0xffff) == ib::DefaultPkey);
    CHECK(ib::pkeyBase(0x8001) == 0x0001);
    CHECK(ib::pkeyOf(0x0001, true) == 0x8001);
    CHECK(ib::pkeyOf(0x8001, false) == 0x0001);
}

TEST_CASE("every IB rate has a link name that reads back as the same rate", "[ib][link]") {
    CHECK(linkName(16) == "4xEDR");
    CHECK(linkName(0).empty());
    for (uint8_t rate = 2; rate <= 22; ++rate) {
        std::string name = linkName(rate);
        INFO("rate " << unsigned{rate} << ": " << name);
        size_t x = name.find('x');
        REQUIRE(x != std::string::npos);
        CHECK(rateForLink(std::stoul(name.substr(0, x)), name.substr(x + 1)) == rate);
    }
}
