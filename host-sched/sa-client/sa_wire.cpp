// SPDX-License-Identifier: MIT
// SA PathRecord MADs: encoding of requests and the checks every answer must pass.
#include "host-sched/sa-client/sa_wire.hpp"
#include "common/text.hpp"
#include "ib/qos.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

namespace ibqos::host {

namespace {

using ib::get16;
using ib::get32;
using ib::get64;
using ib::Gid;
using ib::PathRecord;
using ib::PathRecordSize;
using ib::SaHeaderSize;
namespace pr_at = ib::pr_at;

constexpr uint8_t SelectorExactly = UMAD_SA_SELECTOR_EXACTLY;
// SM_Key, AttributeOffset, reserved and ComponentMask: counted in an RMPP payload length.
constexpr size_t SaSpecificHeader = SaHeaderSize - ib::at::SmKey;

bool isUnicastLid(uint16_t lid) { return lid >= 1 && lid <= 0xBFFF; }

// The IB rate enum values a PathRecord may carry (IBA table 215 and its later additions).
bool isKnownRate(uint8_t rate) { return rate >= 2 && rate <= 22; }

DecodedAnswer invalid(DecodedAnswer answer, size_t offset, std::string field, std::string message) {
    answer.kind = AnswerKind::Invalid;
    answer.error = WireError{offset, std::move(field), std::move(message)};
    return answer;
}

// Checks the fields of one record against the query it answers. `at` is the record's
// offset in the MAD, for the error location.
std::optional<WireError> checkRecord(const PathRecord& r, const SaQuery& q, size_t at) {
    auto error = [at](size_t field, std::string name, std::string message) {
        return WireError{at + field, std::move(name), std::move(message)};
    };
    if (q.byGid) {
        if (r.sgid != q.sgid) {
            return error(
                pr_at::Sgid, "sgid",
                "source GID " + r.sgid.toString() + " is not ours (" + q.sgid.toString() + ")");
        }
        if (r.dgid != q.dgid) {
            return error(pr_at::Dgid, "dgid",
                         "destination GID " + r.dgid.toString() + " is not the one asked for (" +
                             q.dgid.toString() + ")");
        }
    } else {
        if (!q.sgid.isZero() && r.sgid != q.sgid) {
            return error(
                pr_at::Sgid, "sgid",
                "source GID " + r.sgid.toString() + " is not ours (" + q.sgid.toString() + ")");
        }
        if (r.slid != q.slid) {
            return error(pr_at::Slid, "slid",
                         "source LID " + std::to_string(r.slid) + " is not ours (" +
                             std::to_string(q.slid) + ")");
        }
        if (r.dlid != q.dlid) {
            return error(pr_at::Dlid, "dlid",
                         "destination LID " + std::to_string(r.dlid) +
                             " is not the one asked for (" + std::to_string(q.dlid) + ")");
        }
    }
    if (!isUnicastLid(r.dlid)) {
        return error(pr_at::Dlid, "dlid",
                     "destination LID " + hex(r.dlid, 4) + " is not a unicast LID");
    }
    if (!isUnicastLid(r.slid)) {
        return error(pr_at::Slid, "slid", "source LID " + hex(r.slid, 4) + " is not a unicast LID");
    }
    if (q.reversible && !r.reversible) {
        return error(pr_at::ReversibleNumbPath, "reversible",
                     "the path is not reversible although a reversible path was asked for");
    }
    if (q.pkey && ib::pkeyBase(r.pkey) != ib::pkeyBase(*q.pkey)) {
        return error(pr_at::Pkey, "pkey",
                     "P_Key " + hex(r.pkey, 4) + " differs from the one asked for (" +
                         hex(*q.pkey, 4) + ")");
    }
    if (q.sl && r.sl != *q.sl) {
        return error(pr_at::QosClassSl, "sl",
                     "SL " + std::to_string(r.sl) + " differs from the one asked for (" +
                         std::to_string(*q.sl) + ")");
    }
    if (r.mtuSelector != SelectorExactly || r.mtu < 1 || r.mtu > 5) {
        return error(pr_at::Mtu, "mtu",
                     "MTU byte " + hex(uint32_t{r.mtuSelector} << 6 | r.mtu, 2) +
                         " is not 'exactly' (selector 2) one of the MTUs 1..5");
    }
    if (r.rateSelector != SelectorExactly || !isKnownRate(r.rate)) {
        return error(pr_at::Rate, "rate",
                     "rate byte " + hex(uint32_t{r.rateSelector} << 6 | r.rate, 2) +
                         " is not 'exactly' (selector 2) a known rate 2..22");
    }
    if (r.packetLifeSelector != SelectorExactly) {
        return error(pr_at::PacketLife, "packet_life",
                     "packet life selector " + std::to_string(r.packetLifeSelector) +
                         " is not 'exactly' (2)");
    }
    return std::nullopt;
}

// The MAD header's verdict on an answer: `a` gets its transaction id and status; an answer is
// returned when the header alone decides it (not ours, invalid, busy, an error status).
std::optional<DecodedAnswer> headerVerdict(std::span<const uint8_t> mad, const SaQuery& q,
                                           std::span<const uint64_t> transactionIds,
                                           DecodedAnswer& a) {
    if (mad.size() < ib::at::AttributeId + 4) {
        return invalid(
            a, mad.size(), "length",
            "the answer has " + std::to_string(mad.size()) + " bytes, less than a MAD header");
    }
    a.transactionId = get64(mad, ib::at::TransactionId);
    a.status = get16(mad, ib::at::Status);
    bool ours = std::any_of(transactionIds.begin(), transactionIds.end(), [&](uint64_t tid) {
        return static_cast<uint32_t>(tid) == static_cast<uint32_t>(a.transactionId);
    });
    if (!ours) {
        a.kind = AnswerKind::NotOurs;
        return a;
    }
    if (auto wrong = ib::checkSaHeader(mad)) {
        return invalid(a, wrong->offset, wrong->field, wrong->message);
    }
    uint8_t expectedMethod = static_cast<uint8_t>(q.method) | ib::ResponseBit;
    if (mad[ib::at::Method] != expectedMethod) {
        return invalid(a, ib::at::Method, "method",
                       "method " + hex(mad[ib::at::Method], 2) + " does not answer " +
                           hex(static_cast<uint8_t>(q.method), 2) + " (expected " +
                           hex(expectedMethod, 2) + ")");
    }
    if (get16(mad, ib::at::AttributeId) != ib::PathRecordAttribute) {
        return invalid(
            a, ib::at::AttributeId, "attr_id",
            "attribute " + hex(get16(mad, ib::at::AttributeId), 4) + " is not PathRecord (0x0035)");
    }
    if (a.status & ib::StatusBusy) {
        a.kind = AnswerKind::Busy;
        return a;
    }
    if (a.status != 0) {
        a.error = WireError{ib::at::Status, "status",
                            "the SA answered " + ib::describeMadStatus(a.status)};
        if (a.status == ib::StatusNoRecords || a.status == ib::StatusInvalidGid) {
            a.kind = AnswerKind::NoPath;
            return a;
        }
        a.kind = AnswerKind::Invalid;
        return a;
    }
    if (mad.size() < SaHeaderSize) {
        return invalid(a, mad.size(), "length",
                       "the answer has " + std::to_string(mad.size()) +
                           " bytes, less than the SA header (56)");
    }
    if (get64(mad, ib::at::SmKey) != 0) {
        return invalid(a, ib::at::SmKey, "sm_key", "an answer must carry SM_Key 0 (C15-0.1.5)");
    }
    return std::nullopt;
}

// A SubnAdmGetResp: one record, no RMPP.
DecodedAnswer decodeGetResp(std::span<const uint8_t> mad, const SaQuery& q, DecodedAnswer a) {
    uint8_t rmppFlags = mad[ib::at::RmppFlags] & 0x7;
    uint16_t attrOffset = get16(mad, ib::at::AttributeOffset);
    size_t dataBytes = mad.size() - SaHeaderSize;
    if (rmppFlags & ib::RmppActive) {
        return invalid(a, ib::at::RmppFlags, "rmpp_flags", "a SubnAdmGetResp must not use RMPP");
    }
    if (attrOffset != 0 && attrOffset * 8u < PathRecordSize) {
        return invalid(a, ib::at::AttributeOffset, "attr_offset",
                       "attribute offset " + std::to_string(attrOffset) +
                           " (8-byte words) is smaller than a PathRecord");
    }
    if (dataBytes < PathRecordSize) {
        return invalid(a, mad.size(), "length", "the answer is too short to hold a PathRecord");
    }
    a.recordCount = 1;
    a.record = ib::decodePathRecord(mad.subspan<SaHeaderSize, PathRecordSize>());
    if (auto e = checkRecord(a.record, q, SaHeaderSize))
        return invalid(a, e->offset, e->field, e->message);
    a.kind = AnswerKind::Path;
    return a;
}

// The RMPP header of a SubnAdmGetTableResp. Two are accepted: the one the kernel's RMPP layer
// delivers (version 1, DATA, first and last segment, segment 1, a payload length), and the one
// an SA puts on the wire before that layer fills it in (only the Active flag, segment 0, no
// length), which is what a simulator without RMPP reassembly hands over. `dataBytes` becomes
// the payload's length when the header gives one.
std::optional<WireError> checkTableRmpp(std::span<const uint8_t> mad, size_t& dataBytes) {
    uint8_t rmppVersion = mad[ib::at::RmppVersion], rmppType = mad[ib::at::RmppType];
    uint8_t rmppFlags = mad[ib::at::RmppFlags] & 0x7;
    uint32_t segment = get32(mad, ib::at::Segment),
             payloadLength = get32(mad, ib::at::PayloadLength);
    if (!(rmppFlags & ib::RmppActive)) {
        return WireError{ib::at::RmppFlags, "rmpp_flags",
                         "a SubnAdmGetTableResp must have the RMPP Active flag"};
    }
    bool kernelHeader = (rmppFlags & ib::RmppFirst) != 0;
    if (!kernelHeader) {
        if (rmppFlags & ib::RmppLast) {
            return WireError{ib::at::RmppFlags, "rmpp_flags", "Last flag without First"};
        }
        if (segment != 0 || payloadLength != 0) {
            return WireError{
                segment != 0 ? ib::at::Segment : ib::at::PayloadLength,
                segment != 0 ? "segment" : "payload_length",
                "segment number and payload length must both be 0 without the First flag"};
        }
        return std::nullopt;
    }
    if (rmppVersion != 1) {
        return WireError{ib::at::RmppVersion, "rmpp_version",
                         "RMPP version " + std::to_string(rmppVersion) + " is not 1"};
    }
    if (rmppType != 1) {
        return WireError{ib::at::RmppType, "rmpp_type",
                         "RMPP type " + std::to_string(rmppType) + " is not DATA (1)"};
    }
    if (!(rmppFlags & ib::RmppLast)) {
        return WireError{ib::at::RmppFlags, "rmpp_flags",
                         "the answer spans more than one MAD; one record was asked for"};
    }
    if (segment != 1) {
        return WireError{ib::at::Segment, "segment",
                         "first segment numbered " + std::to_string(segment) + ", not 1"};
    }
    if (payloadLength < SaSpecificHeader || payloadLength - SaSpecificHeader > dataBytes) {
        return WireError{ib::at::PayloadLength, "payload_length",
                         "payload length " + std::to_string(payloadLength) + " does not fit the " +
                             std::to_string(mad.size()) + "-byte answer"};
    }
    dataBytes = payloadLength - SaSpecificHeader;
    return std::nullopt;
}

// A SubnAdmGetTableResp: its RMPP header, then every record.
DecodedAnswer decodeGetTableResp(std::span<const uint8_t> mad, const SaQuery& q, DecodedAnswer a) {
    uint16_t attrOffset = get16(mad, ib::at::AttributeOffset);
    size_t dataBytes = mad.size() - SaHeaderSize;
    if (auto e = checkTableRmpp(mad, dataBytes)) {
        return invalid(a, e->offset, e->field, e->message);
    }
    if (attrOffset == 0) {
        if (dataBytes != 0) {
            return invalid(
                a, ib::at::AttributeOffset, "attr_offset",
                "attribute offset 0 with " + std::to_string(dataBytes) + " bytes of records");
        }
        a.kind = AnswerKind::NoPath;
        a.error =
            WireError{ib::at::AttributeOffset, "attr_offset", "the SA answered an empty table"};
        return a;
    }
    size_t stride = size_t{attrOffset} * 8;
    if (stride < PathRecordSize) {
        return invalid(a, ib::at::AttributeOffset, "attr_offset",
                       "attribute offset " + std::to_string(attrOffset) +
                           " (8-byte words) is smaller than a PathRecord");
    }
    if (dataBytes % stride != 0) {
        return invalid(a, SaHeaderSize + dataBytes - dataBytes % stride, "length",
                       std::to_string(dataBytes) + " bytes of records are not a whole number of " +
                           std::to_string(stride) + "-byte records");
    }
    a.recordCount = dataBytes / stride;
    if (a.recordCount == 0) {
        a.kind = AnswerKind::NoPath;
        a.error = WireError{SaHeaderSize, "records", "the SA answered an empty table"};
        return a;
    }
    for (size_t i = 0; i < a.recordCount; ++i) {
        size_t at = SaHeaderSize + i * stride;
        PathRecord r = ib::decodePathRecord(
            std::span<const uint8_t, PathRecordSize>(mad.data() + at, PathRecordSize));
        if (auto e = checkRecord(r, q, at)) return invalid(a, e->offset, e->field, e->message);
        if (i == 0) a.record = r;
    }
    a.kind = AnswerKind::Path;
    return a;
}

}  // namespace

std::string WireError::toString() const {
    return "byte " + std::to_string(offset) + " (" + field + "): " + message;
}

uint64_t componentMask(const SaQuery& q) {
    uint64_t mask =
        q.byGid ? (ib::pr_mask::Sgid | ib::pr_mask::Dgid) : (ib::pr_mask::Slid | ib::pr_mask::Dlid);
    if (q.method == SaMethod::GetTable) mask |= ib::pr_mask::NumbPath;
    if (q.reversible) mask |= ib::pr_mask::Reversible;
    if (q.serviceId) mask |= ib::pr_mask::ServiceId;
    if (q.qosClass) mask |= ib::pr_mask::QosClass;
    if (q.pkey) mask |= ib::pr_mask::Pkey;
    if (q.sl) mask |= ib::pr_mask::Sl;
    return mask;
}

std::array<uint8_t, ib::MadSize> encodeSaQuery(const SaQuery& q, uint64_t transactionId) {
    std::array<uint8_t, ib::MadSize> mad{};
    mad[ib::at::BaseVersion] = ib::BaseVersion;
    mad[ib::at::MgmtClass] = ib::SaClass;
    mad[ib::at::ClassVersion] = ib::SaClassVersion;
    mad[ib::at::Method] = static_cast<uint8_t>(q.method);
    ib::put64(&mad[ib::at::TransactionId], transactionId);
    ib::put16(&mad[ib::at::AttributeId], ib::PathRecordAttribute);
    ib::put64(&mad[ib::at::ComponentMask], componentMask(q));

    PathRecord r;
    r.serviceId = q.serviceId.value_or(0);
    if (q.byGid) {
        r.sgid = q.sgid;
        r.dgid = q.dgid;
    } else {
        r.slid = q.slid;
        r.dlid = q.dlid;
    }
    r.reversible = q.reversible;
    r.numbPath = q.method == SaMethod::GetTable ? 1 : 0;
    r.pkey = q.pkey.value_or(0);
    r.qosClass = q.qosClass.value_or(0);
    r.sl = q.sl.value_or(0);
    auto record = ib::encodePathRecord(r);
    std::copy(record.begin(), record.end(), mad.begin() + SaHeaderSize);
    return mad;
}

DecodedAnswer decodePathAnswer(std::span<const uint8_t> mad, const SaQuery& q,
                               std::span<const uint64_t> transactionIds) {
    DecodedAnswer a;
    if (auto decided = headerVerdict(mad, q, transactionIds, a)) return *decided;
    if (q.method == SaMethod::Get) return decodeGetResp(mad, q, std::move(a));
    return decodeGetTableResp(mad, q, std::move(a));
}

}  // namespace ibqos::host
