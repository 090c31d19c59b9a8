// SPDX-License-Identifier: MIT
// The Performance Management class (IBA 16.1): its attributes, the ClassPortInfo capability bits
// of a PMA, the unit of its data counters, and which of libibmad's IB_PC_* fields holds each
// counter (libibmad's field table gives every offset and width).
#pragma once

#include <infiniband/mad.h>

#include <cstdint>

namespace ibqos::ib::perf {

inline constexpr uint8_t Class = IB_PERFORMANCE_CLASS;
inline constexpr uint8_t ClassVersion = 1;

// The attributes a collector reads (IBA 16.1.2 table 212, 16.1.4 and 16.1.5).
enum class Attribute : uint16_t {
    ClassPortInfo = CLASS_PORT_INFO,
    PortCounters = IB_GSI_PORT_COUNTERS,
    PortCountersExtended = IB_GSI_PORT_COUNTERS_EXT,
    PortVlXmitWaitCounters = IB_GSI_PORT_PORT_VL_XMIT_WAIT_COUNTERS,
    PortVlOpData = IB_GSI_PORT_PORT_VL_OP_DATA,
    PortVlOpPackets = IB_GSI_PORT_PORT_VL_OP_PACKETS,
    PortXmitDataSl = IB_GSI_PORT_XMIT_DATA_SL,
    PortRcvDataSl = IB_GSI_PORT_RCV_DATA_SL,
};

// The attribute's name as the specification (and ibsim's console) spells it.
constexpr const char* attributeName(Attribute a) {
    switch (a) {
        case Attribute::ClassPortInfo:
            return "ClassPortInfo";
        case Attribute::PortCounters:
            return "PortCounters";
        case Attribute::PortCountersExtended:
            return "PortCountersExtended";
        case Attribute::PortVlXmitWaitCounters:
            return "PortVLXmitWaitCounters";
        case Attribute::PortVlOpData:
            return "PortVLOpData";
        case Attribute::PortVlOpPackets:
            return "PortVLOpPackets";
        case Attribute::PortXmitDataSl:
            return "PortXmitDataSL";
        case Attribute::PortRcvDataSl:
            return "PortRcvDataSL";
    }
    return "?";
}

// ClassPortInfo.CapabilityMask bits of a PMA (IBA 16.1.3.1 table 215, host order). No bit says
// whether the per-VL or per-SL attributes are there: only an answer tells.
inline constexpr uint16_t CapAllPortSelect = 1u << 8;
inline constexpr uint16_t CapExtendedWidth = 1u << 9;         // PortCountersExtended, all fields
inline constexpr uint16_t CapExtendedWidthNoIetf = 1u << 10;  // ... its data and packet fields
inline constexpr uint16_t CapXmitWait = 1u << 12;             // PortCounters.PortXmitWait
// ClassPortInfo.CapabilityMask2 (IBA 16.1.3.1 table 216): IsAdditionalPortCountersExtended-
// Supported, PortCountersExtended's error and XmitWait counters (64 bits wide).
inline constexpr uint32_t Cap2AdditionalExtended = 1u << 1;

// PortXmitData, PortRcvData (both widths), PortVLOpData and PortXmitDataSL/PortRcvDataSL count
// octets divided by 4, whatever the link's width (IBA 16.1.3.5).
inline constexpr unsigned DataWordBytes = 4;

// Counters per lane attribute: one per VL (0-15) or per SL (0-15).
inline constexpr unsigned Lanes = 16;

// MAD status of an attribute or method the agent does not support (IBA 13.4.7, table 111:
// bits 2-4 = 3), and the mask of the status field's code bits.
inline constexpr uint16_t StatusUnsupportedAttribute = 3u << 2;
inline constexpr uint16_t StatusCodeMask = 7u << 2;

// PortCounters.CounterSelect bits of the data, packet counters (IBA 16.1.3.5 table 227), and
// CounterSelect2's bit of PortXmitWait. A lane attribute's CounterSelect has a bit per lane.
inline constexpr uint16_t SelectXmitData = 1u << 12, SelectRcvData = 1u << 13,
                          SelectXmitPkts = 1u << 14, SelectRcvPkts = 1u << 15;
inline constexpr uint8_t Select2XmitWait = 1u << 0;
inline constexpr uint16_t SelectAllLanes = 0xffff;

// The IB_PC_* field holding lane `lane` (0-15) of a lane attribute; libibmad numbers each
// attribute's lanes consecutively.
constexpr MAD_FIELDS laneField(Attribute a, unsigned lane) {
    int first = 0;
    switch (a) {
        case Attribute::PortVlXmitWaitCounters:
            first = IB_PC_PORT_VL_XMIT_WAIT0_F;
            break;
        case Attribute::PortVlOpData:
            first = IB_PC_PORT_VL_OP_DATA0_F;
            break;
        case Attribute::PortVlOpPackets:
            first = IB_PC_PORT_VL_OP_PACKETS0_F;
            break;
        case Attribute::PortXmitDataSl:
            first = IB_PC_XMT_DATA_SL0_F;
            break;
        case Attribute::PortRcvDataSl:
            first = IB_PC_RCV_DATA_SL0_F;
            break;
        default:
            return IB_NO_FIELD;
    }
    return static_cast<MAD_FIELDS>(first + static_cast<int>(lane));
}

// Whether an attribute holds one counter per lane.
constexpr bool isLaneAttribute(Attribute a) { return laneField(a, 0) != IB_NO_FIELD; }

// The port-wide counters a collector reads, in this order, in both PortCounters and
// PortCountersExtended (64 bits wide; its XmitWait only where Cap2AdditionalExtended says so).
enum class PortCounter : uint8_t { XmitData, RcvData, XmitPkts, RcvPkts, XmitWait };
inline constexpr unsigned PortCounterCount = 5;

// PortCountersExtended's counters are 64 bits wide; every other counter a collector reads is at
// most 32 bits wide (libibmad's table gives its exact width) and stops at its maximum.
constexpr bool wideCounters(Attribute a) { return a == Attribute::PortCountersExtended; }

// How many counters of an attribute a collector reads: 5, a lane each, or none.
constexpr unsigned counterCount(Attribute a) {
    return a == Attribute::PortCounters || a == Attribute::PortCountersExtended ? PortCounterCount
           : isLaneAttribute(a)                                                 ? Lanes
                                                                                : 0;
}

// The IB_PC_* field of an attribute's counter `index` (a PortCounter, or a lane).
constexpr MAD_FIELDS counterField(Attribute a, unsigned index) {
    constexpr MAD_FIELDS portCounters[] = {IB_PC_XMT_BYTES_F, IB_PC_RCV_BYTES_F, IB_PC_XMT_PKTS_F,
                                           IB_PC_RCV_PKTS_F, IB_PC_XMT_WAIT_F};
    constexpr MAD_FIELDS extended[] = {IB_PC_EXT_XMT_BYTES_F, IB_PC_EXT_RCV_BYTES_F,
                                       IB_PC_EXT_XMT_PKTS_F, IB_PC_EXT_RCV_PKTS_F,
                                       IB_PC_EXT_XMT_WAIT_F};
    if (index >= counterCount(a)) return IB_NO_FIELD;
    if (a == Attribute::PortCounters) return portCounters[index];
    if (a == Attribute::PortCountersExtended) return extended[index];
    return laneField(a, index);
}

// The PortSelect field of an attribute's request.
constexpr MAD_FIELDS portSelectField(Attribute a) {
    return a == Attribute::PortCountersExtended ? IB_PC_EXT_PORT_SELECT_F : IB_PC_PORT_SELECT_F;
}

}  // namespace ibqos::ib::perf
