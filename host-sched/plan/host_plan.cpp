// SPDX-License-Identifier: MIT
// HostPlan: ordering the host-sched section into a buildable tree.
#include "host-sched/plan/host_plan.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "common/text.hpp"

namespace ibqos::host {

HostPlan HostPlan::fromPolicy(const HostSched& host) {
    HostPlan plan;
    if (!host.present) return plan;

    // Nodes parent-first, in file order among the ready ones. The compiler has removed
    // cycles, so every node becomes ready; a leftover would be a compiler bug.
    std::vector<size_t> nodeIndex(host.nodes.size(), SIZE_MAX);
    for (size_t placed = 0; placed < host.nodes.size();) {
        size_t before = placed;
        for (size_t i = 0; i < host.nodes.size(); ++i) {
            const SchedElement& n = host.nodes[i];
            if (nodeIndex[i] != SIZE_MAX) continue;
            if (n.parent && nodeIndex[*n.parent] == SIZE_MAX) continue;
            PlanElement e;
            e.name = n.name;
            if (n.parent) e.parent = nodeIndex[*n.parent];
            e.bwShare = n.bwShare;
            e.maxAvgBw = n.maxAvgBw;
            nodeIndex[i] = plan.elements_.size();
            plan.elements_.push_back(std::move(e));
            ++placed;
        }
        if (placed == before) throw std::logic_error("host-sched nodes form a cycle");
    }

    for (size_t i = 0; i < host.leaves.size(); ++i) {
        const SchedLeaf& l = host.leaves[i];
        PlanElement e;
        e.name = l.name;
        e.leaf = true;
        if (l.parent) e.parent = nodeIndex[*l.parent];
        e.bwShare = l.bwShare;
        e.maxAvgBw = l.maxAvgBw;
        e.pccSlot = l.pccSlot;
        e.pccAlgorithm = l.pccAlgorithm;
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (host.leafOfSl[sl] == static_cast<int16_t>(i)) e.sls.set(sl);
        }
        plan.elements_.push_back(std::move(e));
    }
    return fromElements(std::move(plan.elements_), host.enforcement);
}

HostPlan HostPlan::fromElements(std::vector<PlanElement> elements,
                                std::vector<SlEnforcement> enforcement) {
    HostPlan plan;
    plan.elements_ = std::move(elements);
    plan.enforcement_ = std::move(enforcement);
    std::map<uint32_t, size_t> slotIndex;
    for (size_t index = 0; index < plan.elements_.size(); ++index) {
        const PlanElement& e = plan.elements_[index];
        if (!e.leaf) continue;
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (e.sls[sl]) plan.leafOfSl_[sl] = static_cast<int32_t>(index);
        }
        if (e.pccSlot) {
            auto [it, fresh] = slotIndex.emplace(*e.pccSlot, plan.slots_.size());
            if (fresh) plan.slots_.push_back(PlanSlot{*e.pccSlot, e.pccAlgorithm, {}});
            plan.slots_[it->second].leaves.push_back(index);
        }
    }
    std::sort(plan.slots_.begin(), plan.slots_.end(),
              [](const PlanSlot& a, const PlanSlot& b) { return a.slot < b.slot; });
    return plan;
}

std::optional<size_t> HostPlan::leafForSl(uint8_t sl) const {
    if (sl >= ib::SlCount || leafOfSl_[sl] < 0) return std::nullopt;
    return static_cast<size_t>(leafOfSl_[sl]);
}

const SlEnforcement* HostPlan::enforcementFor(std::initializer_list<std::string_view> names) const {
    auto named = [&names](const std::vector<std::string>& list) {
        for (std::string_view n : names) {
            if (!n.empty() && std::find(list.begin(), list.end(), n) != list.end()) return true;
        }
        return false;
    };
    for (const SlEnforcement& e : enforcement_) {
        if ((e.programs.empty() || named(e.programs)) && !named(e.exceptPrograms)) return &e;
    }
    return nullptr;
}

std::optional<size_t> HostPlan::find(std::string_view name) const {
    for (size_t i = 0; i < elements_.size(); ++i) {
        if (sameName(elements_[i].name, name)) return i;
    }
    return std::nullopt;
}

unsigned HostPlan::depth() const {
    unsigned deepest = 0;
    for (const PlanElement& e : elements_) {
        unsigned d = 1;
        for (auto p = e.parent; p; p = elements_[*p].parent) ++d;
        deepest = std::max(deepest, d);
    }
    return deepest;
}

std::vector<size_t> HostPlan::children(std::optional<size_t> parent) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < elements_.size(); ++i) {
        if (elements_[i].parent == parent) out.push_back(i);
    }
    return out;
}

}  // namespace ibqos::host
