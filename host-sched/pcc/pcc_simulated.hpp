// SPDX-License-Identifier: MIT
// The simulated PCC engine: seed 003's contract, running event-style algorithms in-process.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "host-sched/pcc/pcc_engine.hpp"

namespace ibqos::host {

// What the network told a QP since the engine last ran its algorithm.
struct QpSignals {
    uint32_t cnps = 0;
    uint64_t rttNs = 0;
    bool rttUpdated = false;
};

// Holds slots, QPs and their per-QP parameter blocks like the device would, and runs one
// engine cycle on request (a link model drives it; in the agent nothing does).
class SimulatedPccEngine : public PccEngine {
  public:
    static constexpr uint32_t SlotCount = 16;

    explicit SimulatedPccEngine(uint32_t initialWindow = 65536);

    std::string_view kind() const override { return "simulated"; }
    PccStatus configureInterval(uint32_t intervalUs) override;
    PccStatus registerAlgorithm(uint32_t slot, const PccAlgorithm& algorithm,
                                std::span<const uint8_t> initialParams) override;
    PccStatus unregisterAlgorithm(uint32_t slot) override;
    PccStatus apply(uint32_t slot, std::span<const uint32_t> qps) override;
    PccStatus applyToAll(uint32_t slot) override;
    PccStatus release(std::span<const uint32_t> qps) override;
    PccStatus run(unsigned threads) override;
    PccStatus stop() override;
    PccStatus walkParams(uint32_t slot, const PccParamVisitor& visit, bool write) override;
    PccStatus window(uint32_t qpNum, uint32_t& window) override;

    // The device side: QPs it knows, the signals they see, one cycle of the algorithms.
    void addQp(uint32_t qpNum);
    void removeQp(uint32_t qpNum);
    void signal(uint32_t qpNum, const QpSignals& signals);
    // Calls every QP's algorithm once (when running); returns how many ran.
    size_t cycle();

    uint32_t intervalUs() const { return intervalUs_; }
    bool running() const { return running_; }
    std::optional<uint32_t> slotOf(uint32_t qpNum) const;
    uint32_t windowUpdates(uint32_t qpNum) const;
    uint64_t cnpCount(uint32_t qpNum) const;

  private:
    struct Slot {
        const PccAlgorithm* algorithm = nullptr;
        std::vector<uint8_t> initialParams;
    };
    struct Qp {
        std::optional<uint32_t> slot;
        std::vector<uint8_t> params;
        uint32_t window = 0;
        QpSignals pending;
        uint64_t lastRttNs = 0;
        uint32_t windowUpdates = 0;
        uint64_t cnpTotal = 0;
    };

    PccStatus assign(uint32_t slot, Qp& qp);

    uint32_t initialWindow_;
    uint32_t intervalUs_ = 10;
    bool running_ = false;
    std::map<uint32_t, Slot> slots_;
    std::map<uint32_t, Qp> qps_;
};

}  // namespace ibqos::host
