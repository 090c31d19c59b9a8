// SPDX-License-Identifier: MIT
// SA PathRecord MADs: encoding of requests and the checks every answer must pass.
#include "host-sched/sa_wire.hpp"
#include "common/text.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

namespace ibqos::host {

namespace {

// Offsets in the MAD (IBA 13.4.2 common header, 13.6.2.1 RMPP header, 15.2.1.1 SA header).
constexpr size_t OffBaseVersion = 0;
constexpr size_t OffClass = 1;
constexpr size_t OffClassVersion = 2;
constexpr size_t OffMethod = 3;
constexpr size_t OffStatus = 4;
constexpr size_t OffTid = 8;
constexpr size_t OffAttrId = 16;
constexpr size_t OffRmppVersion = 24;
constexpr size_t OffRmppType = 25;
constexpr size_t OffRmppFlags = 26;
constexpr size_t OffSegment = 28;
constexpr size_t OffPayloadLength = 32;
constexpr size_t OffSmKey = 36;
constexpr size_t OffAttrOffset = 44;
constexpr size_t OffComponentMask = 48;
constexpr size_t SaSpecificHeader = 20;  // SM_Key, AttributeOffset, reserved, ComponentMask

// Offsets inside a PathRecord (IBA 15.2.5.16).
constexpr size_t PrServiceId = 0;
constexpr size_t PrDgid = 8;
constexpr size_t PrSgid = 24;
constexpr size_t PrDlid = 40;
constexpr size_t PrSlid = 42;
constexpr size_t PrHopFlowRaw = 44;
constexpr size_t PrTclass = 48;
constexpr size_t PrNumPath = 49;
constexpr size_t PrPkey = 50;
constexpr size_t PrQosClassSl = 52;
constexpr size_t PrMtu = 54;
constexpr size_t PrRate = 55;
constexpr size_t PrPacketLife = 56;
constexpr size_t PrPreference = 57;

constexpr uint8_t ResponseBit = 0x80;
constexpr uint8_t RmppActive = 0x1, RmppFirst = 0x2, RmppLast = 0x4;
constexpr uint8_t SelectorExactly = 2;

uint16_t get16(std::span<const uint8_t> b, size_t at) {
    return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
uint32_t get32(std::span<const uint8_t> b, size_t at) {
    return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}
uint64_t get64(std::span<const uint8_t> b, size_t at) {
    return uint64_t{get32(b, at)} << 32 | get32(b, at + 4);
}
void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
    put16(p, static_cast<uint16_t>(v >> 16));
    put16(p + 2, static_cast<uint16_t>(v));
}
void put64(uint8_t* p, uint64_t v) {
    put32(p, static_cast<uint32_t>(v >> 32));
    put32(p + 4, static_cast<uint32_t>(v));
}

bool isUnicastLid(uint16_t lid) { return lid >= 1 && lid <= 0xBFFF; }

// The IB rate enum values a PathRecord may carry (IBA table 215 and its later additions).
bool isKnownRate(uint8_t rate) { return rate >= 2 && rate <= 22; }

DecodedAnswer invalid(DecodedAnswer answer, size_t offset, std::string field, std::string message) {
    answer.kind = AnswerKind::Invalid;
    answer.error = WireError{offset, std::move(field), std::move(message)};
    return answer;
}

const char* const saErrorNames[] = {"SA_NO_ERROR",
                                    "SA_ERR_NO_RESOURCES",
                                    "SA_ERR_REQ_INVALID",
                                    "SA_ERR_NO_RECORDS",
                                    "SA_ERR_TOO_MANY_RECORDS",
                                    "SA_ERR_REQ_INVALID_GID",
                                    "SA_ERR_REQ_INSUFFICIENT_COMPONENTS",
                                    "SA_ERR_REQ_DENIED",
                                    "SA_ERR_STATUS_PRIO_SUGGESTED"};

const char* const invalidFieldNames[] = {
    "",
    "bad base or class version",
    "method not supported",
    "method/attribute combination not supported",
    "reserved code 4",
    "reserved code 5",
    "reserved code 6",
    "invalid value in an attribute field or the attribute modifier"};

// Checks the fields of one record against the query it answers. `at` is the record's
// offset in the MAD, for the error location.
std::optional<WireError> checkRecord(const PathRecord& r, const PathQuery& q, size_t at) {
    auto error = [at](size_t field, std::string name, std::string message) {
        return WireError{at + field, std::move(name), std::move(message)};
    };
    if (q.byGid) {
        if (r.sgid != q.sgid) {
            return error(
                PrSgid, "sgid",
                "source GID " + r.sgid.toString() + " is not ours (" + q.sgid.toString() + ")");
        }
        if (r.dgid != q.dgid) {
            return error(PrDgid, "dgid",
                         "destination GID " + r.dgid.toString() + " is not the one asked for (" +
                             q.dgid.toString() + ")");
        }
    } else {
        if (!q.sgid.isZero() && r.sgid != q.sgid) {
            return error(
                PrSgid, "sgid",
                "source GID " + r.sgid.toString() + " is not ours (" + q.sgid.toString() + ")");
        }
        if (r.slid != q.slid) {
            return error(PrSlid, "slid",
                         "source LID " + std::to_string(r.slid) + " is not ours (" +
                             std::to_string(q.slid) + ")");
        }
        if (r.dlid != q.dlid) {
            return error(PrDlid, "dlid",
                         "destination LID " + std::to_string(r.dlid) +
                             " is not the one asked for (" + std::to_string(q.dlid) + ")");
        }
    }
    if (!isUnicastLid(r.dlid)) {
        return error(PrDlid, "dlid", "destination LID " + hex(r.dlid, 4) + " is not a unicast LID");
    }
    if (!isUnicastLid(r.slid)) {
        return error(PrSlid, "slid", "source LID " + hex(r.slid, 4) + " is not a unicast LID");
    }
    if (q.reversible && !r.reversible) {
        return error(PrNumPath, "reversible",
                     "the path is not reversible although a reversible path was asked for");
    }
    if (q.pkey && (r.pkey & 0x7fff) != (*q.pkey & 0x7fff)) {
        return error(PrPkey, "pkey",
                     "P_Key " + hex(r.pkey, 4) + " differs from the one asked for (" +
                         hex(*q.pkey, 4) + ")");
    }
    if (q.sl && r.sl != *q.sl) {
        return error(PrQosClassSl, "sl",
                     "SL " + std::to_string(r.sl) + " differs from the one asked for (" +
                         std::to_string(*q.sl) + ")");
    }
    if (r.mtuSelector != SelectorExactly || r.mtu < 1 || r.mtu > 5) {
        return error(PrMtu, "mtu",
                     "MTU byte " + hex(uint32_t{r.mtuSelector} << 6 | r.mtu, 2) +
                         " is not 'exactly' (selector 2) one of the MTUs 1..5");
    }
    if (r.rateSelector != SelectorExactly || !isKnownRate(r.rate)) {
        return error(PrRate, "rate",
                     "rate byte " + hex(uint32_t{r.rateSelector} << 6 | r.rate, 2) +
                         " is not 'exactly' (selector 2) a known rate 2..22");
    }
    if (r.packetLifeSelector != SelectorExactly) {
        return error(PrPacketLife, "packet_life",
                     "packet life selector " + std::to_string(r.packetLifeSelector) +
                         " is not 'exactly' (2)");
    }
    return std::nullopt;
}

}  // namespace

Gid Gid::fromParts(uint64_t prefix, uint64_t guid) {
    Gid g;
    put64(g.bytes.data(), prefix);
    put64(g.bytes.data() + 8, guid);
    return g;
}

std::optional<Gid> Gid::parse(const std::string& text) {
    Gid g;
    if (inet_pton(AF_INET6, text.c_str(), g.bytes.data()) != 1) return std::nullopt;
    return g;
}

uint64_t Gid::prefix() const { return get64(bytes, 0); }
uint64_t Gid::guid() const { return get64(bytes, 8); }
bool Gid::isZero() const {
    return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

std::string Gid::toString() const {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf)) return "?";
    return buf;
}

std::string WireError::toString() const {
    return "byte " + std::to_string(offset) + " (" + field + "): " + message;
}

uint64_t componentMask(const PathQuery& q) {
    uint64_t mask = q.byGid ? (pr_mask::Sgid | pr_mask::Dgid) : (pr_mask::Slid | pr_mask::Dlid);
    if (q.method == SaMethod::GetTable) mask |= pr_mask::NumbPath;
    if (q.reversible) mask |= pr_mask::Reversible;
    if (q.serviceId) mask |= pr_mask::ServiceId;
    if (q.qosClass) mask |= pr_mask::QosClass;
    if (q.pkey) mask |= pr_mask::Pkey;
    if (q.sl) mask |= pr_mask::Sl;
    return mask;
}

std::array<uint8_t, MadSize> encodePathQuery(const PathQuery& q, uint64_t transactionId) {
    std::array<uint8_t, MadSize> mad{};
    mad[OffBaseVersion] = 1;
    mad[OffClass] = SaClass;
    mad[OffClassVersion] = SaClassVersion;
    mad[OffMethod] = static_cast<uint8_t>(q.method);
    put64(&mad[OffTid], transactionId);
    put16(&mad[OffAttrId], PathRecordAttribute);
    put64(&mad[OffComponentMask], componentMask(q));

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
    r.qosClass = static_cast<uint16_t>(q.qosClass.value_or(0) & 0x0fff);
    r.sl = static_cast<uint8_t>(q.sl.value_or(0) & 0x0f);
    auto record = encodePathRecord(r);
    std::copy(record.begin(), record.end(), mad.begin() + SaHeaderSize);
    return mad;
}

std::array<uint8_t, PathRecordSize> encodePathRecord(const PathRecord& r) {
    std::array<uint8_t, PathRecordSize> b{};
    put64(&b[PrServiceId], r.serviceId);
    std::copy(r.dgid.bytes.begin(), r.dgid.bytes.end(), b.begin() + PrDgid);
    std::copy(r.sgid.bytes.begin(), r.sgid.bytes.end(), b.begin() + PrSgid);
    put16(&b[PrDlid], r.dlid);
    put16(&b[PrSlid], r.slid);
    put32(&b[PrHopFlowRaw],
          uint32_t{r.rawTraffic} << 31 | (r.flowLabel & 0xfffff) << 8 | r.hopLimit);
    b[PrTclass] = r.trafficClass;
    b[PrNumPath] = static_cast<uint8_t>(uint32_t{r.reversible} << 7 | (r.numbPath & 0x7f));
    put16(&b[PrPkey], r.pkey);
    put16(&b[PrQosClassSl], static_cast<uint16_t>((r.qosClass & 0x0fff) << 4 | (r.sl & 0x0f)));
    b[PrMtu] = static_cast<uint8_t>((r.mtuSelector & 3) << 6 | (r.mtu & 0x3f));
    b[PrRate] = static_cast<uint8_t>((r.rateSelector & 3) << 6 | (r.rate & 0x3f));
    b[PrPacketLife] = static_cast<uint8_t>((r.packetLifeSelector & 3) << 6 | (r.packetLife & 0x3f));
    b[PrPreference] = r.preference;
    return b;
}

PathRecord decodePathRecord(std::span<const uint8_t, PathRecordSize> b) {
    PathRecord r;
    r.serviceId = get64(b, PrServiceId);
    std::copy(b.begin() + PrDgid, b.begin() + PrDgid + 16, r.dgid.bytes.begin());
    std::copy(b.begin() + PrSgid, b.begin() + PrSgid + 16, r.sgid.bytes.begin());
    r.dlid = get16(b, PrDlid);
    r.slid = get16(b, PrSlid);
    uint32_t hopFlowRaw = get32(b, PrHopFlowRaw);
    r.rawTraffic = hopFlowRaw >> 31;
    r.flowLabel = (hopFlowRaw >> 8) & 0xfffff;
    r.hopLimit = static_cast<uint8_t>(hopFlowRaw);
    r.trafficClass = b[PrTclass];
    r.reversible = b[PrNumPath] >> 7;
    r.numbPath = b[PrNumPath] & 0x7f;
    r.pkey = get16(b, PrPkey);
    uint16_t qosClassSl = get16(b, PrQosClassSl);
    r.qosClass = qosClassSl >> 4;
    r.sl = qosClassSl & 0x0f;
    r.mtuSelector = b[PrMtu] >> 6;
    r.mtu = b[PrMtu] & 0x3f;
    r.rateSelector = b[PrRate] >> 6;
    r.rate = b[PrRate] & 0x3f;
    r.packetLifeSelector = b[PrPacketLife] >> 6;
    r.packetLife = b[PrPacketLife] & 0x3f;
    r.preference = b[PrPreference];
    return r;
}

std::string describeMadStatus(uint16_t status) {
    std::string text = hex(status, 4);
    std::string words;
    auto add = [&words](const std::string& w) { words += (words.empty() ? "" : ", ") + w; };
    if (status & 0x1) add("busy");
    if (status & 0x2) add("redirect required");
    if (unsigned code = (status >> 2) & 0x7) add(invalidFieldNames[code]);
    if (unsigned sa = status >> 8) {
        add(sa < std::size(saErrorNames) ? saErrorNames[sa] : "SA error " + std::to_string(sa));
    }
    return words.empty() ? text : text + " (" + words + ")";
}

DecodedAnswer decodePathAnswer(std::span<const uint8_t> mad, const PathQuery& q,
                               std::span<const uint64_t> transactionIds) {
    DecodedAnswer a;
    if (mad.size() < OffAttrId + 4) {
        return invalid(
            a, mad.size(), "length",
            "the answer has " + std::to_string(mad.size()) + " bytes, less than a MAD header");
    }
    a.transactionId = get64(mad, OffTid);
    a.status = get16(mad, OffStatus);
    bool ours = std::any_of(transactionIds.begin(), transactionIds.end(), [&](uint64_t tid) {
        return static_cast<uint32_t>(tid) == static_cast<uint32_t>(a.transactionId);
    });
    if (!ours) {
        a.kind = AnswerKind::NotOurs;
        return a;
    }
    if (mad[OffBaseVersion] != 1) {
        return invalid(a, OffBaseVersion, "base_version",
                       "base version " + std::to_string(mad[OffBaseVersion]) + " is not 1");
    }
    if (mad[OffClass] != SaClass) {
        return invalid(a, OffClass, "mgmt_class",
                       "management class " + hex(mad[OffClass], 2) + " is not SA (0x03)");
    }
    if (mad[OffClassVersion] != SaClassVersion) {
        return invalid(a, OffClassVersion, "class_version",
                       "SA class version " + std::to_string(mad[OffClassVersion]) + " is not 2");
    }
    uint8_t expectedMethod = static_cast<uint8_t>(q.method) | ResponseBit;
    if (mad[OffMethod] != expectedMethod) {
        return invalid(a, OffMethod, "method",
                       "method " + hex(mad[OffMethod], 2) + " does not answer " +
                           hex(static_cast<uint8_t>(q.method), 2) + " (expected " +
                           hex(expectedMethod, 2) + ")");
    }
    if (get16(mad, OffAttrId) != PathRecordAttribute) {
        return invalid(
            a, OffAttrId, "attr_id",
            "attribute " + hex(get16(mad, OffAttrId), 4) + " is not PathRecord (0x0035)");
    }
    if (a.status & 0x1) {
        a.kind = AnswerKind::Busy;
        return a;
    }
    if (a.status != 0) {
        unsigned saStatus = a.status >> 8;
        bool onlySaStatus = (a.status & 0xff) == 0;
        a.error = WireError{OffStatus, "status", "the SA answered " + describeMadStatus(a.status)};
        if (onlySaStatus && (saStatus == 3 || saStatus == 5)) {  // NO_RECORDS, REQ_INVALID_GID
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
    if (get64(mad, OffSmKey) != 0) {
        return invalid(a, OffSmKey, "sm_key", "an answer must carry SM_Key 0 (C15-0.1.5)");
    }

    uint8_t rmppVersion = mad[OffRmppVersion], rmppType = mad[OffRmppType];
    uint8_t rmppFlags = mad[OffRmppFlags] & 0x7;
    uint32_t segment = get32(mad, OffSegment), payloadLength = get32(mad, OffPayloadLength);
    uint16_t attrOffset = get16(mad, OffAttrOffset);
    size_t dataBytes = mad.size() - SaHeaderSize;

    if (q.method == SaMethod::Get) {
        if (rmppFlags & RmppActive) {
            return invalid(a, OffRmppFlags, "rmpp_flags", "a SubnAdmGetResp must not use RMPP");
        }
        if (attrOffset != 0 && attrOffset * 8u < PathRecordSize) {
            return invalid(a, OffAttrOffset, "attr_offset",
                           "attribute offset " + std::to_string(attrOffset) +
                               " (8-byte words) is smaller than a PathRecord");
        }
        if (dataBytes < PathRecordSize) {
            return invalid(a, mad.size(), "length", "the answer is too short to hold a PathRecord");
        }
        a.recordCount = 1;
        a.record = decodePathRecord(mad.subspan<SaHeaderSize, PathRecordSize>());
        if (auto e = checkRecord(a.record, q, SaHeaderSize))
            return invalid(a, e->offset, e->field, e->message);
        a.kind = AnswerKind::Path;
        return a;
    }

    // SubnAdmGetTableResp. Two RMPP headers are accepted: the one the kernel's RMPP layer
    // delivers (version 1, DATA, first and last segment, segment 1, a payload length), and the
    // one an SA puts on the wire before that layer fills it in (only the Active flag, segment 0,
    // no length), which is what a simulator without RMPP reassembly hands over.
    if (!(rmppFlags & RmppActive)) {
        return invalid(a, OffRmppFlags, "rmpp_flags",
                       "a SubnAdmGetTableResp must have the RMPP Active flag");
    }
    bool kernelHeader = (rmppFlags & RmppFirst) != 0;
    if (kernelHeader) {
        if (rmppVersion != 1) {
            return invalid(a, OffRmppVersion, "rmpp_version",
                           "RMPP version " + std::to_string(rmppVersion) + " is not 1");
        }
        if (rmppType != 1) {
            return invalid(a, OffRmppType, "rmpp_type",
                           "RMPP type " + std::to_string(rmppType) + " is not DATA (1)");
        }
        if (!(rmppFlags & RmppLast)) {
            return invalid(a, OffRmppFlags, "rmpp_flags",
                           "the answer spans more than one MAD; one record was asked for");
        }
        if (segment != 1) {
            return invalid(a, OffSegment, "segment",
                           "first segment numbered " + std::to_string(segment) + ", not 1");
        }
        if (payloadLength < SaSpecificHeader || payloadLength - SaSpecificHeader > dataBytes) {
            return invalid(a, OffPayloadLength, "payload_length",
                           "payload length " + std::to_string(payloadLength) +
                               " does not fit the " + std::to_string(mad.size()) + "-byte answer");
        }
        dataBytes = payloadLength - SaSpecificHeader;
    } else {
        if (rmppFlags & RmppLast) {
            return invalid(a, OffRmppFlags, "rmpp_flags", "Last flag without First");
        }
        if (segment != 0 || payloadLength != 0) {
            return invalid(
                a, segment != 0 ? OffSegment : OffPayloadLength,
                segment != 0 ? "segment" : "payload_length",
                "segment number and payload length must both be 0 without the First flag");
        }
    }
    if (attrOffset == 0) {
        if (dataBytes != 0) {
            return invalid(
                a, OffAttrOffset, "attr_offset",
                "attribute offset 0 with " + std::to_string(dataBytes) + " bytes of records");
        }
        a.kind = AnswerKind::NoPath;
        a.error = WireError{OffAttrOffset, "attr_offset", "the SA answered an empty table"};
        return a;
    }
    size_t stride = size_t{attrOffset} * 8;
    if (stride < PathRecordSize) {
        return invalid(a, OffAttrOffset, "attr_offset",
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
        PathRecord r = decodePathRecord(
            std::span<const uint8_t, PathRecordSize>(mad.data() + at, PathRecordSize));
        if (auto e = checkRecord(r, q, at)) return invalid(a, e->offset, e->field, e->message);
        if (i == 0) a.record = r;
    }
    a.kind = AnswerKind::Path;
    return a;
}

}  // namespace ibqos::host
