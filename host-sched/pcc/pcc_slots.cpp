// SPDX-License-Identifier: MIT
// PccSlots: registration, application to QPs, parameters by name; and opening an engine.
#include "host-sched/pcc/pcc_slots.hpp"

#include <cerrno>
#include <cstring>

#include "host-sched/pcc/pcc_mango.hpp"
#include "host-sched/pcc/pcc_simulated.hpp"

namespace ibqos::host {

std::unique_ptr<PccEngine> openPccEngine(std::string_view kind, const std::string& device,
                                         std::string& error) {
    if (kind == "simulated") return std::make_unique<SimulatedPccEngine>();
    if (kind == "mango" || kind == "auto") {
        std::string why;
        if (auto engine = MangoPccEngine::open(device, why)) return engine;
        if (kind == "auto") return std::make_unique<SimulatedPccEngine>();
        error = why;
        return nullptr;
    }
    error = "unknown PCC engine '" + std::string(kind) + "' (auto, mango or simulated)";
    return nullptr;
}

PccSlots::PccSlots(std::unique_ptr<PccEngine> engine, uint32_t intervalUs)
    : engine_(std::move(engine)), intervalUs_(intervalUs) {}

PccSlots::~PccSlots() { uninstall(); }

PccStatus PccSlots::install(const HostPlan& plan, unsigned threads) {
    if (PccStatus s = engine_->configureInterval(intervalUs_); !s.ok()) return s;
    for (const PlanSlot& slot : plan.slots()) {
        const PccAlgorithm* algorithm = findPccAlgorithm(slot.algorithm);
        if (!algorithm) {
            uninstall();
            return {-EINVAL, "pcc-slot " + std::to_string(slot.slot) + ": no algorithm named '" +
                                 slot.algorithm + "'"};
        }
        std::vector<uint8_t> block = defaultParamBlock(*algorithm);
        host::setParam(*algorithm, block, "interval_us", std::to_string(intervalUs_));
        if (PccStatus s = engine_->registerAlgorithm(slot.slot, *algorithm, block); !s.ok()) {
            uninstall();
            s.message =
                "pcc-slot " + std::to_string(slot.slot) + " (" + slot.algorithm + "): " + s.message;
            return s;
        }
        registered_[slot.slot] = algorithm;
    }
    if (registered_.empty()) return PccStatus::success();  // nothing to run
    if (PccStatus s = engine_->run(threads); !s.ok()) {
        uninstall();
        return s;
    }
    running_ = true;
    return PccStatus::success();
}

PccStatus PccSlots::uninstall() {
    PccStatus first;
    if (running_) {
        first = engine_->stop();
        running_ = false;
    }
    for (auto& [slot, algorithm] : registered_) {
        PccStatus s = engine_->unregisterAlgorithm(slot);
        if (first.ok() && !s.ok()) first = s;
    }
    registered_.clear();
    qpSlot_.clear();
    return first;
}

PccStatus PccSlots::apply(uint32_t slot, std::span<const uint32_t> qpNums) {
    if (!registered_.count(slot)) {
        return {-ENOENT, "pcc-slot " + std::to_string(slot) + " holds no algorithm"};
    }
    PccStatus s = engine_->apply(slot, qpNums);
    if (s.ok()) {
        for (uint32_t qpNum : qpNums) qpSlot_[qpNum] = slot;
    }
    return s;
}

PccStatus PccSlots::forgetQp(uint32_t qpNum) {
    auto it = qpSlot_.find(qpNum);
    if (it == qpSlot_.end()) return PccStatus::success();
    qpSlot_.erase(it);
    return engine_->release({&qpNum, 1});
}

std::optional<uint32_t> PccSlots::slotOfQp(uint32_t qpNum) const {
    auto it = qpSlot_.find(qpNum);
    if (it == qpSlot_.end()) return std::nullopt;
    return it->second;
}

const PccAlgorithm* PccSlots::algorithmOf(uint32_t slot) const {
    auto it = registered_.find(slot);
    return it == registered_.end() ? nullptr : it->second;
}

PccStatus PccSlots::params(uint32_t slot, std::vector<std::pair<std::string, std::string>>& out) {
    out.clear();
    return engine_->walkParams(
        slot,
        [&out](const char* name, mango_pcc_param_type_e type, void* value) {
            out.emplace_back(name, formatParamValue(type, value));
        },
        false);
}

PccStatus PccSlots::setParam(uint32_t slot, const std::string& name, const std::string& value) {
    const PccAlgorithm* algorithm = algorithmOf(slot);
    if (!algorithm) return {-ENOENT, "pcc-slot " + std::to_string(slot) + " holds no algorithm"};
    const mango_pcc_param_t* param = nullptr;
    for (const mango_pcc_param_t& p : algorithm->params) {
        if (name == p.name) param = &p;
    }
    if (!param) {
        return {-EINVAL, "'" + std::string(algorithm->name) + "' has no parameter '" + name + "'"};
    }
    std::vector<uint8_t> parsed(8);
    if (!parseParamValue(param->type, value, parsed.data())) {
        return {-EINVAL, "'" + value + "' is not a value for " + name};
    }
    return engine_->walkParams(
        slot,
        [&](const char* n, mango_pcc_param_type_e type, void* at) {
            if (name == n && type == param->type) {
                std::memcpy(at, parsed.data(), type == MANGO_PCC_PARAM_U32 ? 4 : 8);
            }
        },
        true);
}

}  // namespace ibqos::host
