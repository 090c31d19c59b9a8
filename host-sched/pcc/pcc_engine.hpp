// SPDX-License-Identifier: MIT
// PccEngine: one device's programmable congestion-control engine, as seed 003 describes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "host-sched/pcc/pcc_algorithm.hpp"

namespace ibqos::host {

// The outcome of an engine call: the seed's status (0, or negative) and a message.
struct PccStatus {
    int code = 0;
    std::string message;
    bool ok() const { return code == 0; }
    static PccStatus success() { return {}; }
};

// Visits one parameter of a slot: its name, type and value (writable in write mode).
using PccParamVisitor =
    std::function<void(const char* name, mango_pcc_param_type_e type, void* value)>;

// The calls of seed 003 the agent needs, on one device. Implemented by libmango when it is
// installed and by the simulated engine otherwise.
class PccEngine {
  public:
    virtual ~PccEngine() = default;
    virtual std::string_view kind() const = 0;
    virtual PccStatus configureInterval(uint32_t intervalUs) = 0;
    // mango_pcc_ctrl_reg_algo_event + mango_pcc_params_register. The engine copies the block.
    virtual PccStatus registerAlgorithm(uint32_t slot, const PccAlgorithm& algorithm,
                                        std::span<const uint8_t> initialParams) = 0;
    virtual PccStatus unregisterAlgorithm(uint32_t slot) = 0;
    // mango_pcc_ctrl_apply_algo with a list; applyToAll with NULL (every QP of the device).
    virtual PccStatus apply(uint32_t slot, std::span<const uint32_t> qps) = 0;
    virtual PccStatus applyToAll(uint32_t slot) = 0;
    // Takes QPs off their slot: they go back to the device's own congestion control.
    virtual PccStatus release(std::span<const uint32_t> qps) = 0;
    virtual PccStatus run(unsigned threads) = 0;
    virtual PccStatus stop() = 0;
    // mango_pcc_walk_params: read mode visits the first QP's block, write mode every QP's.
    virtual PccStatus walkParams(uint32_t slot, const PccParamVisitor& visit, bool write) = 0;
    virtual PccStatus window(uint32_t qpNum, uint32_t& window) = 0;
};

// Opens a device's engine: "mango" (libmango, when it can be loaded), "simulated", or "auto"
// (mango if available, else simulated). nullptr and error set when it cannot be opened.
std::unique_ptr<PccEngine> openPccEngine(std::string_view kind, const std::string& device,
                                         std::string& error);

}  // namespace ibqos::host
