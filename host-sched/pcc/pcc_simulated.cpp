// SPDX-License-Identifier: MIT
// The simulated PCC engine: slots, per-QP parameter blocks, windows, one cycle at a time.
#include "host-sched/pcc/pcc_simulated.hpp"

#include <algorithm>
#include <cerrno>

namespace ibqos::host {

SimulatedPccEngine::SimulatedPccEngine(uint32_t initialWindow) : initialWindow_(initialWindow) {}

PccStatus SimulatedPccEngine::configureInterval(uint32_t intervalUs) {
    if (intervalUs == 0) return {-EINVAL, "the interval must be at least 1 us"};
    intervalUs_ = intervalUs;
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::registerAlgorithm(uint32_t slot, const PccAlgorithm& algorithm,
                                                std::span<const uint8_t> initialParams) {
    if (slot >= SlotCount)
        return {-EINVAL, "slot " + std::to_string(slot) + " does not exist (0..15)"};
    if (slots_.count(slot)) {
        return {-EBUSY, "slot " + std::to_string(slot) + " already holds '" +
                            std::string(slots_[slot].algorithm->name) + "'; unregister it first"};
    }
    if (!algorithm.event || initialParams.size() != algorithm.paramSize) {
        return {-EINVAL, "the parameter block of '" + std::string(algorithm.name) + "' has " +
                             std::to_string(initialParams.size()) + " bytes, not " +
                             std::to_string(algorithm.paramSize)};
    }
    slots_[slot] = Slot{&algorithm, {initialParams.begin(), initialParams.end()}};
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::unregisterAlgorithm(uint32_t slot) {
    if (!slots_.erase(slot))
        return {-ENOENT, "slot " + std::to_string(slot) + " holds no algorithm"};
    for (auto& [qpn, qp] : qps_) {
        if (qp.slot == slot) {
            qp.slot.reset();
            qp.params.clear();
        }
    }
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::assign(uint32_t slot, Qp& qp) {
    if (qp.slot == slot) return PccStatus::success();  // already there: keep its state
    qp.slot = slot;
    qp.params = slots_[slot].initialParams;
    qp.windowUpdates = 0;  // seed 003: the count restarts when another slot is applied
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::apply(uint32_t slot, std::span<const uint32_t> qps) {
    if (!slots_.count(slot))
        return {-ENOENT, "slot " + std::to_string(slot) + " holds no algorithm"};
    for (uint32_t qpn : qps) {
        auto [it, fresh] = qps_.try_emplace(qpn);
        if (fresh) it->second.window = initialWindow_;
        assign(slot, it->second);
    }
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::applyToAll(uint32_t slot) {
    if (!slots_.count(slot))
        return {-ENOENT, "slot " + std::to_string(slot) + " holds no algorithm"};
    for (auto& [qpn, qp] : qps_) assign(slot, qp);
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::run(unsigned threads) {
    if (threads == 0) return {-EINVAL, "the engine needs at least one thread"};
    running_ = true;
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::stop() {
    running_ = false;
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::walkParams(uint32_t slot, const PccParamVisitor& visit, bool write) {
    auto it = slots_.find(slot);
    if (it == slots_.end())
        return {-ENOENT, "slot " + std::to_string(slot) + " holds no algorithm"};
    const PccAlgorithm& algorithm = *it->second.algorithm;
    auto walk = [&](std::vector<uint8_t>& block) {
        for (const mango_pcc_param_t& p : algorithm.params)
            visit(p.name, p.type, block.data() + p.offset);
    };
    if (write) {
        walk(it->second.initialParams);  // QPs applied later get the new values too
        for (auto& [qpn, qp] : qps_) {
            if (qp.slot == slot) walk(qp.params);
        }
        return PccStatus::success();
    }
    for (auto& [qpn, qp] : qps_) {
        if (qp.slot == slot) {
            walk(qp.params);
            return PccStatus::success();
        }
    }
    std::vector<uint8_t> copy = it->second.initialParams;
    walk(copy);
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::window(uint32_t qpNum, uint32_t& window) {
    auto it = qps_.find(qpNum);
    if (it == qps_.end()) return {-ENOENT, "QP " + std::to_string(qpNum) + " is unknown"};
    window = it->second.window;
    return PccStatus::success();
}

PccStatus SimulatedPccEngine::release(std::span<const uint32_t> qps) {
    for (uint32_t qpn : qps) {
        auto it = qps_.find(qpn);
        if (it == qps_.end()) continue;
        it->second.slot.reset();
        it->second.params.clear();
        it->second.windowUpdates = 0;
    }
    return PccStatus::success();
}

void SimulatedPccEngine::addQp(uint32_t qpNum) {
    auto [it, fresh] = qps_.try_emplace(qpNum);
    if (fresh) it->second.window = initialWindow_;
}

void SimulatedPccEngine::removeQp(uint32_t qpNum) { qps_.erase(qpNum); }

void SimulatedPccEngine::signal(uint32_t qpNum, const QpSignals& signals) {
    auto it = qps_.find(qpNum);
    if (it == qps_.end()) return;
    Qp& qp = it->second;
    qp.pending.cnps += signals.cnps;
    qp.cnpTotal += signals.cnps;
    if (signals.rttUpdated) {
        qp.pending.rttUpdated = true;
        qp.lastRttNs = signals.rttNs;
    }
}

size_t SimulatedPccEngine::cycle() {
    if (!running_) return 0;
    uint32_t active = 0;
    for (auto& [qpn, qp] : qps_) active += qp.slot.has_value();
    size_t ran = 0;
    for (auto& [qpn, qp] : qps_) {
        if (!qp.slot) continue;
        const PccAlgorithm& algorithm = *slots_[*qp.slot].algorithm;
        // Only the metrics the algorithm asked for are filled in; the rest reads 0.
        mango_pcc_context_t ctx{};
        ctx.current_window = qp.window;
        if (algorithm.requiredMetrics & MANGO_PCC_METRIC_CNP) ctx.cnp_delta = qp.pending.cnps;
        if (algorithm.requiredMetrics & MANGO_PCC_METRIC_RTT) {
            ctx.latest_rtt_ns = qp.lastRttNs;
            ctx.rtt_updated = qp.pending.rttUpdated;
        }
        ctx.active_qp_count = active;
        mango_pcc_result_t result = algorithm.event(qp.params.data(), &ctx);
        qp.window = std::max<uint32_t>(result.new_window, 1);
        ++qp.windowUpdates;
        qp.pending = {};
        ++ran;
    }
    return ran;
}

std::optional<uint32_t> SimulatedPccEngine::slotOf(uint32_t qpNum) const {
    auto it = qps_.find(qpNum);
    if (it == qps_.end()) return std::nullopt;
    return it->second.slot;
}

uint32_t SimulatedPccEngine::windowUpdates(uint32_t qpNum) const {
    auto it = qps_.find(qpNum);
    return it == qps_.end() ? 0 : it->second.windowUpdates;
}

uint64_t SimulatedPccEngine::cnpCount(uint32_t qpNum) const {
    auto it = qps_.find(qpNum);
    return it == qps_.end() ? 0 : it->second.cnpTotal;
}

}  // namespace ibqos::host
