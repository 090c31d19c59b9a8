// SPDX-License-Identifier: MIT
// What carries Performance Management MADs to the fabric's PMAs and their answers back: the
// collector's one view of the wire. The real transport is libibumad's (umad_pma_transport);
// tests and benchmarks use a fake PMA with its own clock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ib/perf_mgt.hpp"

namespace ibqos::monitor {

using Clock = std::chrono::steady_clock;

// The attribute data of a PerfMgt MAD (the 192 bytes after the 64-byte header), where
// libibmad's IB_PC_* and IB_CPI_* fields lie.
using PerfData = std::array<uint8_t, IB_PC_DATA_SZ>;

struct PmaRequest {
    uint32_t tid = 0;  // the transaction, as the answer carries it back (low 32 bits)
    uint16_t lid = 0;  // where the PMA answers
    ib::perf::Attribute attribute = ib::perf::Attribute::PortCounters;
    uint8_t method = IB_MAD_METHOD_GET;  // GET, or SET to clear counters
    PerfData data{};
};

struct PmaAnswer {
    uint32_t tid = 0;
    bool timedOut = false;  // the transport gave up on the request (no answer will come)
    uint16_t status = 0;    // the MAD status of an answer
    PerfData data{};
};

class PmaTransport {
  public:
    virtual ~PmaTransport() = default;
    // The transport's clock: real time, or a fake PMA's simulated time.
    virtual Clock::time_point now() const = 0;
    // Sends a request; false with the reason in error when it could not go out.
    virtual bool send(const PmaRequest& request, std::string& error) = 0;
    // Waits until something arrives or until `until`, then appends every answer that is there.
    // Answers to transactions the caller no longer waits for may come too (it drops them).
    virtual void wait(Clock::time_point until, std::vector<PmaAnswer>& answers) = 0;
};

}  // namespace ibqos::monitor
