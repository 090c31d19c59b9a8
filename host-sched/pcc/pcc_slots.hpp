// SPDX-License-Identifier: MIT
// PccSlots: a device's congestion-control slots as the host plan sets them, and their QPs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "host-sched/pcc/pcc_engine.hpp"
#include "host-sched/plan/host_plan.hpp"

namespace ibqos::host {

// Owns one device's engine. Registers each plan slot's algorithm (defaults of its paper,
// the engine's interval), applies slots to QPs, and keeps which QP is on which slot.
class PccSlots {
  public:
    PccSlots(std::unique_ptr<PccEngine> engine, uint32_t intervalUs = 10);
    ~PccSlots();
    PccSlots(const PccSlots&) = delete;
    PccSlots& operator=(const PccSlots&) = delete;

    // Configures the engine, registers every slot of the plan and runs the engine. On
    // failure what was registered is unregistered again.
    PccStatus install(const HostPlan& plan, unsigned threads = 1);
    // Stops the engine and unregisters every slot (also done by the destructor).
    PccStatus uninstall();

    // Applies a slot's algorithm to a list of QPs (one engine call), or to one.
    PccStatus apply(uint32_t slot, std::span<const uint32_t> qpNums);
    PccStatus applyToQp(uint32_t slot, uint32_t qpNum) { return apply(slot, {&qpNum, 1}); }
    // The QP is no longer the agent's to steer: takes it off its slot (back to the device's
    // own congestion control) and stops tracking it. A QP on no slot needs no engine call.
    PccStatus forgetQp(uint32_t qpNum);
    std::optional<uint32_t> slotOfQp(uint32_t qpNum) const;
    const std::map<uint32_t, uint32_t>& qps() const { return qpSlot_; }

    // The algorithm registered in a slot, or nullptr.
    const PccAlgorithm* algorithmOf(uint32_t slot) const;
    // A slot's parameters as (name, value) (read mode: the first QP's, else the defaults).
    PccStatus params(uint32_t slot, std::vector<std::pair<std::string, std::string>>& out);
    // Sets one parameter on the slot and all its QPs (write mode).
    PccStatus setParam(uint32_t slot, const std::string& name, const std::string& value);

    PccEngine& engine() { return *engine_; }

  private:
    std::unique_ptr<PccEngine> engine_;
    uint32_t intervalUs_;
    bool running_ = false;
    std::map<uint32_t, const PccAlgorithm*> registered_;
    std::map<uint32_t, uint32_t> qpSlot_;
};

}  // namespace ibqos::host
