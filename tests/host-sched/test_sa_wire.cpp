// SPDX-License-Identifier: MIT
// Unit tests of the SA wire format: requests as sent, answers accepted and refused.
#include <catch2/catch.hpp>

#include "host-sched/sa-client/sa_wire.hpp"
#include "tests/host-sched/sa_answers.hpp"

using namespace ibqos;
using namespace ibqos::host;
using test::answerTo;
using test::goodRecord;

namespace {

uint64_t tid = 0x5a5a0042;
std::vector<uint64_t> tids{tid};

DecodedAnswer decode(const std::vector<uint8_t>& mad, const SaQuery& q = test::capturedQuery()) {
    return decodePathAnswer(mad, q, tids);
}

}  // namespace

TEST_CASE("a path request carries the component mask of exactly the fields asked for",
          "[host-sched][sa-wire]") {
    SaQuery q;
    q.slid = 7;
    q.dlid = 9;
    q.serviceId = 0x10005;
    q.qosClass = 3;
    auto mad = encodeSaQuery(q, 0x1122334455667788ull);
    CHECK(mad[0] == 1);
    CHECK(mad[1] == 0x03);
    CHECK(mad[2] == 2);
    CHECK(mad[3] == 0x12);  // SubnAdmGetTable
    CHECK(mad[8] == 0x11);
    CHECK(mad[15] == 0x88);
    CHECK((mad[16] << 8 | mad[17]) == 0x0035);
    uint64_t mask = 0;
    for (int i = 48; i < 56; ++i) mask = mask << 8 | mad[i];
    CHECK(mask == (ib::pr_mask::Slid | ib::pr_mask::Dlid | ib::pr_mask::ServiceId |
                   ib::pr_mask::QosClass | ib::pr_mask::NumbPath | ib::pr_mask::Reversible));
    ib::PathRecord r = ib::decodePathRecord(std::span<const uint8_t, 64>(mad.data() + 56, 64));
    CHECK(r.slid == 7);
    CHECK(r.dlid == 9);
    CHECK(r.serviceId == 0x10005);
    CHECK(r.qosClass == 3);
    CHECK(r.reversible);
    CHECK(r.numbPath == 1);

    q.method = SaMethod::Get;
    q.byGid = true;
    q.sgid = ib::Gid::fromParts(0xfe80000000000000ull, 1);
    q.dgid = ib::Gid::fromParts(0xfe80000000000000ull, 2);
    q.serviceId.reset();
    q.qosClass.reset();
    q.sl = 5;
    q.pkey = 0x8001;
    CHECK(componentMask(q) == (ib::pr_mask::Sgid | ib::pr_mask::Dgid | ib::pr_mask::Sl |
                               ib::pr_mask::Pkey | ib::pr_mask::Reversible));
}

TEST_CASE("OpenSM's answer captured on ibsim is accepted with its SL and path",
          "[host-sched][sa-wire]") {
    auto mad = test::capturedGetTableResp();
    std::vector<uint64_t> sent{test::CapturedTid};
    DecodedAnswer a = decodePathAnswer(mad, test::capturedQuery(), sent);
    REQUIRE(a.kind == AnswerKind::Path);
    CHECK(a.recordCount == 1);
    CHECK(a.record.slid == 1);
    CHECK(a.record.dlid == 2);
    CHECK(a.record.sl == 0);
    CHECK(a.record.reversible);
    CHECK(a.record.mtu == 3);
    CHECK(a.record.packetLife == 18);
    CHECK(a.record.dgid.toString() == "fe80::20:0");
}

TEST_CASE("the kernel's RMPP header and the simulator's are both accepted",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    CHECK(decode(answerTo(q, tid, {goodRecord()}, false), q).kind == AnswerKind::Path);
    DecodedAnswer k = decode(answerTo(q, tid, {goodRecord(), goodRecord(7)}, true), q);
    REQUIRE(k.kind == AnswerKind::Path);
    CHECK(k.recordCount == 2);
    CHECK(k.record.sl == 3);  // the first record is the answer
}

TEST_CASE("an empty table and ERR_NO_RECORDS both mean no path", "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    CHECK(decode(answerTo(q, tid, {}), q).kind == AnswerKind::NoPath);
    CHECK(decode(answerTo(q, tid, {}, true), q).kind == AnswerKind::NoPath);
    q.method = SaMethod::Get;
    auto mad = answerTo(q, tid, {goodRecord()});
    mad[4] = 0x03;  // SA status 3 in the high byte
    DecodedAnswer a = decode(mad, q);
    CHECK(a.kind == AnswerKind::NoPath);
    CHECK(a.error.message.find("SA_ERR_NO_RECORDS") != std::string::npos);
}

TEST_CASE("answers to other transactions are not ours, whatever the high half of the id",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    auto mad = answerTo(q, tid + 1, {goodRecord()});
    CHECK(decode(mad, q).kind == AnswerKind::NotOurs);
    auto same = answerTo(q, tid, {goodRecord()});
    same[8] = 0xff;  // only the low 32 bits are ours
    CHECK(decode(same, q).kind == AnswerKind::Path);
}

TEST_CASE("a busy SA is told apart from a refusing one", "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    auto mad = answerTo(q, tid, {goodRecord()});
    mad[5] = 0x01;
    CHECK(decode(mad, q).kind == AnswerKind::Busy);
    mad[5] = 0x02;
    DecodedAnswer redirect = decode(mad, q);
    CHECK(redirect.kind == AnswerKind::Invalid);
    CHECK(redirect.error.message.find("redirect") != std::string::npos);
    mad[5] = 0x1c;  // invalid field code 7
    CHECK(decode(mad, q).error.message.find("invalid value") != std::string::npos);
    mad[5] = 0;
    mad[4] = 0x07;
    CHECK(decode(mad, q).error.message.find("SA_ERR_REQ_DENIED") != std::string::npos);
}

TEST_CASE("every broken header field of an answer is refused at its byte",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    const auto good = answerTo(q, tid, {goodRecord()});
    struct Case {
        size_t offset;
        uint8_t value;
        const char* field;
        size_t reportedAt;  // the first byte of the field
    };
    for (Case c : {Case{0, 2, "base_version", 0}, Case{1, 0x81, "mgmt_class", 1},
                   Case{2, 1, "class_version", 2}, Case{3, 0x12, "method", 3},
                   Case{3, 0x81, "method", 3}, Case{17, 0x36, "attr_id", 16},
                   Case{36, 1, "sm_key", 36}, Case{26, 0x00, "rmpp_flags", 26},
                   Case{26, 0x05, "rmpp_flags", 26}, Case{31, 1, "segment", 28},
                   Case{35, 84, "payload_length", 32}, Case{45, 4, "attr_offset", 44}}) {
        auto mad = good;
        mad[c.offset] = c.value;
        DecodedAnswer a = decode(mad, q);
        INFO("byte " << c.offset << " = " << int{c.value});
        CHECK(a.kind == AnswerKind::Invalid);
        CHECK(a.error.offset == c.reportedAt);
        CHECK(a.error.field == c.field);
    }
}

TEST_CASE("a kernel RMPP answer must be one whole segment of whole records",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    auto mad = answerTo(q, tid, {goodRecord()}, true);
    auto notLast = mad;
    notLast[26] = 0x03;
    CHECK(decode(notLast, q).error.message.find("more than one MAD") != std::string::npos);
    auto longer = mad;
    longer[35] = 20 + 128;  // claims two records, carries one
    CHECK(decode(longer, q).error.field == "payload_length");
    auto ragged = mad;
    ragged[35] = 20 + 60;
    CHECK(decode(ragged, q).error.field == "length");
    auto version = mad;
    version[24] = 2;
    CHECK(decode(version, q).error.field == "rmpp_version");
    auto cut = answerTo(q, tid, {goodRecord()});
    cut.resize(cut.size() - 10);
    CHECK(decode(cut, q).error.field == "length");
    CHECK(decode(std::vector<uint8_t>(10, 0), q).kind == AnswerKind::Invalid);
}

TEST_CASE("a record that does not answer the query is refused at its field",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    q.pkey = 0x7fff;
    q.sl = 3;
    auto check = [&](ib::PathRecord r, const char* field, size_t offset) {
        DecodedAnswer a = decode(answerTo(q, tid, {r}), q);
        INFO(field);
        CHECK(a.kind == AnswerKind::Invalid);
        CHECK(a.error.field == field);
        CHECK(a.error.offset == 56 + offset);
    };
    ib::PathRecord r = goodRecord();
    r.slid = 5;
    check(r, "slid", 42);
    r = goodRecord();
    r.dlid = 3;
    check(r, "dlid", 40);
    q.sgid = goodRecord().sgid;  // a LID query that knows its own GID checks it too
    r = goodRecord();
    r.sgid = ib::Gid::fromParts(0xfe80000000000000ull, 0x100003);
    check(r, "sgid", 24);
    q.sgid = {};
    r = goodRecord();
    r.reversible = false;
    check(r, "reversible", 49);
    r = goodRecord();
    r.pkey = 0x8002;
    check(r, "pkey", 50);
    r = goodRecord(4);
    check(r, "sl", 52);
    r = goodRecord();
    r.mtuSelector = 3;
    check(r, "mtu", 54);
    r = goodRecord();
    r.mtu = 6;
    check(r, "mtu", 54);
    r = goodRecord();
    r.rate = 1;
    check(r, "rate", 55);
    r = goodRecord();
    r.packetLifeSelector = 0;
    check(r, "packet_life", 56);

    // A full-member P_Key answers a limited-member request for the same partition.
    r = goodRecord();
    r.pkey = 0xffff;
    CHECK(decode(answerTo(q, tid, {r}), q).kind == AnswerKind::Path);

    SaQuery byGid;
    byGid.byGid = true;
    byGid.sgid = goodRecord().sgid;
    byGid.dgid = goodRecord().dgid;
    r = goodRecord();
    r.dgid = ib::Gid::fromParts(0xfe80000000000000ull, 0x999);
    DecodedAnswer a = decodePathAnswer(answerTo(byGid, tid, {r}), byGid, tids);
    CHECK(a.error.field == "dgid");
    r = goodRecord();
    r.dlid = 0xc000;  // multicast
    CHECK(decodePathAnswer(answerTo(byGid, tid, {r}), byGid, tids).error.field == "dlid");
    CHECK(decodePathAnswer(answerTo(byGid, tid, {goodRecord()}), byGid, tids).kind ==
          AnswerKind::Path);
}

TEST_CASE("a later record of a table is checked as strictly as the first",
          "[host-sched][sa-wire]") {
    SaQuery q = test::capturedQuery();
    ib::PathRecord bad = goodRecord();
    bad.slid = 9;
    DecodedAnswer a = decode(answerTo(q, tid, {goodRecord(), bad}, true), q);
    CHECK(a.kind == AnswerKind::Invalid);
    CHECK(a.error.offset == 56 + 64 + 42);
}
