// SPDX-License-Identifier: MIT
// The simulated transmit scheduler: weighted water-filling with caps, top-down.
#include "host-sched/sched/sched_simulated.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>

namespace ibqos::host {

namespace {

constexpr double Unlimited = std::numeric_limits<double>::infinity();

double weightOf(const PlanElement& e) {
    return static_cast<double>(e.bwShare ? e.bwShare : DefaultBwShare);
}

double capOf(const PlanElement& e) {
    return e.maxAvgBw ? static_cast<double>(e.maxAvgBw) : Unlimited;
}

// Shares `capacity` among children with the given demands and weights: the children whose
// demand is below their weighted share get their demand, the rest is shared by weight.
void waterFill(double capacity, const std::vector<size_t>& children,
               const std::vector<double>& demand, const std::vector<double>& weight,
               std::vector<double>& rate) {
    std::vector<size_t> order;
    double totalWeight = 0;
    for (size_t c : children) {
        if (demand[c] <= 0) {
            rate[c] = 0;
            continue;
        }
        order.push_back(c);
        totalWeight += weight[c];
    }
    // Ascending demand per unit of weight: once one child cannot be satisfied, none after it can.
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return demand[a] / weight[a] < demand[b] / weight[b]; });
    double left = capacity;
    for (size_t i = 0; i < order.size(); ++i) {
        size_t c = order[i];
        double share = left * weight[c] / totalWeight;
        if (demand[c] <= share) {
            rate[c] = demand[c];
            left -= demand[c];
            totalWeight -= weight[c];
            continue;
        }
        for (size_t j = i; j < order.size(); ++j)
            rate[order[j]] = left * weight[order[j]] / totalWeight;
        return;
    }
}

}  // namespace

std::vector<double> simulateRates(const HostPlan& plan, double linkMbps,
                                  const std::vector<std::optional<double>>& leafDemand) {
    const auto& elements = plan.elements();
    size_t n = elements.size();
    std::vector<std::vector<size_t>> children(n);
    std::vector<size_t> top;
    for (size_t i = 0; i < n; ++i) {
        (elements[i].parent ? children[*elements[i].parent] : top).push_back(i);
    }
    // Demands bottom-up: elements come parent-first, so children follow their parents.
    std::vector<double> demand(n, 0), weight(n, 0), rate(n, 0);
    for (size_t k = n; k-- > 0;) {
        const PlanElement& e = elements[k];
        weight[k] = weightOf(e);
        double want = 0;
        if (e.leaf) {
            want =
                k < leafDemand.size() && leafDemand[k] ? std::max(0.0, *leafDemand[k]) : Unlimited;
        } else {
            for (size_t c : children[k]) want += demand[c];
        }
        demand[k] = std::min(want, capOf(e));
    }
    // Rates top-down: each element shares what it got among its children.
    waterFill(std::max(0.0, linkMbps), top, demand, weight, rate);
    for (size_t k = 0; k < n; ++k) {
        if (!children[k].empty()) waterFill(rate[k], children[k], demand, weight, rate);
    }
    return rate;
}

SchedStatus SimulatedSchedBackend::build(const HostPlan& plan) {
    if (plan_) return {EEXIST, "the tree is already built"};
    plan_ = plan;
    return SchedStatus::success();
}

SchedStatus SimulatedSchedBackend::attach(const QpRef& qp, size_t leaf) {
    if (!plan_) return {EINVAL, "no tree is built"};
    if (leaf >= plan_->elements().size() || !plan_->elements()[leaf].leaf) {
        return {EINVAL, "element " + std::to_string(leaf) + " is not a leaf"};
    }
    AttachRoles roles = attachRoles(qp.type);
    if (!roles.requestor) {
        return {EOPNOTSUPP, std::string("QPs of type ") + std::string(qpTypeName(qp.type)) +
                                " cannot be scheduled"};
    }
    attached_[qp.qpNum] = leaf;
    return SchedStatus::success();
}

SchedStatus SimulatedSchedBackend::detach(const QpRef& qp) {
    attached_.erase(qp.qpNum);
    return SchedStatus::success();
}

SchedStatus SimulatedSchedBackend::teardown() {
    if (!attached_.empty()) {
        return {EBUSY, std::to_string(attached_.size()) + " QPs are still attached"};
    }
    plan_.reset();
    return SchedStatus::success();
}

std::optional<size_t> SimulatedSchedBackend::leafOf(uint32_t qpNum) const {
    auto it = attached_.find(qpNum);
    if (it == attached_.end()) return std::nullopt;
    return it->second;
}

}  // namespace ibqos::host
