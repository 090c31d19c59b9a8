// SPDX-License-Identifier: MIT
// PerfMgt attribute data read and written with libibmad's field table: the PortSelect and
// CounterSelect of a request, the counters of an answer (and whether each has stopped at its
// maximum), a PMA's capability mask.
#pragma once

#include <array>
#include <cstdint>

#include "ib/perf_mgt.hpp"
#include "monitor/pma_transport.hpp"

namespace ibqos::monitor {

// One answer's counters of one port and attribute, in ib::perf::counterField order.
struct Sample {
    Clock::time_point at{};
    bool valid = false;
    std::array<uint64_t, ib::perf::Lanes> values{};
    uint16_t saturated = 0;  // bit i: values[i] is at its field's maximum, where counters stop
};

// A Get's data: the port to read (a switch's port number, a CA's own port).
PerfData requestData(ib::perf::Attribute attribute, uint8_t portSelect);
// A Set's data that clears the counters the collector reads of a port's PortCounters or lane
// attribute (the narrow counters, which stop at their maximum).
PerfData clearData(ib::perf::Attribute attribute, uint8_t portSelect);
// The counters of an answer's data.
Sample decodeSample(ib::perf::Attribute attribute, const PerfData& data, Clock::time_point at);
// ClassPortInfo.CapabilityMask and CapabilityMask2 of a PMA's answer.
uint16_t decodeCapabilityMask(const PerfData& data);
uint32_t decodeCapabilityMask2(const PerfData& data);
// The PortSelect a request carries.
uint8_t decodePortSelect(ib::perf::Attribute attribute, const PerfData& data);

// The largest value counter `index` of an attribute holds: where a narrow counter stops.
uint64_t counterMaximum(ib::perf::Attribute attribute, unsigned index);
// Writes counter `index` of an attribute into data (what a PMA answers; values above the
// counter's maximum are written as the maximum).
void encodeCounter(ib::perf::Attribute attribute, unsigned index, uint64_t value, PerfData& data);

}  // namespace ibqos::monitor
