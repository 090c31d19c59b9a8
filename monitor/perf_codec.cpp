// SPDX-License-Identifier: MIT
// The PerfMgt codec: every offset and width comes from libibmad's field table.
#include "monitor/perf_codec.hpp"

#include <algorithm>
#include <mutex>

namespace ibqos::monitor {

namespace perf = ib::perf;

uint64_t counterMaximum(perf::Attribute attribute, unsigned index) {
    if (perf::wideCounters(attribute)) return UINT64_MAX;
    // The width of a narrow field, found by writing all ones through libibmad's table (which
    // libibmad keeps private).
    MAD_FIELDS field = perf::counterField(attribute, index);
    static std::array<uint32_t, IB_FIELD_LAST_> maxima{};
    static std::once_flag once;
    std::call_once(once, [] {
        for (int f = IB_NO_FIELD + 1; f < IB_FIELD_LAST_; ++f) {
            uint8_t buffer[IB_MAD_SIZE] = {0};
            mad_set_field(buffer, 0, MAD_FIELDS(f), UINT32_MAX);
            maxima[static_cast<size_t>(f)] = mad_get_field(buffer, 0, MAD_FIELDS(f));
        }
    });
    return maxima[static_cast<size_t>(field)];
}

void encodeCounter(perf::Attribute attribute, unsigned index, uint64_t value, PerfData& data) {
    MAD_FIELDS field = perf::counterField(attribute, index);
    value = std::min(value, counterMaximum(attribute, index));
    if (perf::wideCounters(attribute)) {
        mad_encode_field(data.data(), field, &value);
    } else {
        auto narrow = static_cast<uint32_t>(value);
        mad_encode_field(data.data(), field, &narrow);
    }
}

PerfData requestData(perf::Attribute attribute, uint8_t portSelect) {
    PerfData data{};
    if (attribute != perf::Attribute::ClassPortInfo)
        mad_set_field(data.data(), 0, perf::portSelectField(attribute), portSelect);
    return data;
}

PerfData clearData(perf::Attribute attribute, uint8_t portSelect) {
    PerfData data = requestData(attribute, portSelect);
    if (attribute == perf::Attribute::PortCounters) {
        mad_set_field(data.data(), 0, IB_PC_COUNTER_SELECT_F,
                      perf::SelectXmitData | perf::SelectRcvData | perf::SelectXmitPkts |
                          perf::SelectRcvPkts);
        mad_set_field(data.data(), 0, IB_PC_COUNTER_SELECT2_F, perf::Select2XmitWait);
    } else if (perf::isLaneAttribute(attribute)) {
        mad_set_field(data.data(), 0, IB_PC_COUNTER_SELECT_F, perf::SelectAllLanes);
    }
    return data;
}

Sample decodeSample(perf::Attribute attribute, const PerfData& data, Clock::time_point at) {
    Sample sample;
    sample.at = at;
    sample.valid = true;
    auto* bytes = const_cast<uint8_t*>(data.data());
    for (unsigned i = 0; i < perf::counterCount(attribute); ++i) {
        MAD_FIELDS field = perf::counterField(attribute, i);
        uint64_t value = 0;
        if (perf::wideCounters(attribute)) {
            mad_decode_field(bytes, field, &value);
        } else {
            uint32_t narrow = 0;
            mad_decode_field(bytes, field, &narrow);
            value = narrow;
        }
        sample.values[i] = value;
        if (value == counterMaximum(attribute, i))
            sample.saturated |= static_cast<uint16_t>(1u << i);
    }
    return sample;
}

uint16_t decodeCapabilityMask(const PerfData& data) {
    uint32_t mask = 0;
    mad_decode_field(const_cast<uint8_t*>(data.data()), IB_CPI_CAPMASK_F, &mask);
    return static_cast<uint16_t>(mask);
}

uint32_t decodeCapabilityMask2(const PerfData& data) {
    uint32_t mask = 0;
    mad_decode_field(const_cast<uint8_t*>(data.data()), IB_CPI_CAPMASK2_F, &mask);
    return mask;
}

uint8_t decodePortSelect(perf::Attribute attribute, const PerfData& data) {
    if (attribute == perf::Attribute::ClassPortInfo) return 0;
    return static_cast<uint8_t>(
        mad_get_field(const_cast<uint8_t*>(data.data()), 0, perf::portSelectField(attribute)));
}

}  // namespace ibqos::monitor
