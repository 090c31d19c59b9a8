// SPDX-License-Identifier: MIT
// Pass 6: the host-sched tree (extension): one leaf per SL, parents, caps, congestion-control
// slots.
#include <map>
#include <string>

#include "compiler/passes.hpp"
#include "compiler/pcc_algorithms.hpp"

namespace ibqos::passes {

namespace {

// A program takes the first sl-enforcement block that names it: one for every program hides
// the blocks after it.
void checkEnforcement(const Reporter& report, const HostSched& host) {
    for (size_t i = 1; i < host.enforcement.size(); ++i) {
        const SlEnforcement& first = host.enforcement[i - 1];
        if (!first.programs.empty() || !first.exceptPrograms.empty()) continue;
        for (size_t j = i; j < host.enforcement.size(); ++j) {
            report.warning("unused-enforcement", host.enforcement[j].location,
                           "no program reaches this sl-enforcement block: the one at line " +
                               std::to_string(first.location.line) + " applies to every program");
        }
        break;
    }
}

// Every SL goes to at most one leaf: fills leafOfSl.
void assignSls(const Reporter& report, HostSched& host) {
    for (uint32_t i = 0; i < host.leaves.size(); ++i) {
        const SchedLeaf& leaf = host.leaves[i];
        if (leaf.sls.none()) {
            report.warning(
                "unused-leaf", leaf.location,
                "sched-leaf '" + leaf.name + "' lists no 'sl:', so no QP will attach to it");
        }
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (!leaf.sls.test(sl)) continue;
            int16_t& owner = host.leafOfSl[sl];
            if (owner >= 0) {
                const SchedLeaf& other = host.leaves[static_cast<size_t>(owner)];
                report.stricterError("sl-on-two-leaves", leaf.slLocation,
                                     "SL " + std::to_string(sl) + " is already on sched-leaf '" +
                                         other.name + "' (line " +
                                         std::to_string(other.location.line) +
                                         "); a QP can only attach to one leaf");
                continue;
            }
            owner = static_cast<int16_t>(i);
        }
    }
}

// Parents: no cycles (a cycle is cut where it is found); a child's cap above its parent's can
// never be reached; a node without children is warned about.
void checkParents(const Reporter& report, HostSched& host) {
    for (uint32_t i = 0; i < host.nodes.size(); ++i) {
        std::optional<uint32_t> p = host.nodes[i].parent;
        for (size_t steps = 0; p && steps <= host.nodes.size(); ++steps) {
            if (*p == i) {
                report.stricterError("sched-cycle", host.nodes[i].location,
                                     "sched-node '" + host.nodes[i].name + "' is its own ancestor");
                host.nodes[i].parent.reset();
                break;
            }
            p = host.nodes[*p].parent;
        }
    }
    std::vector<size_t> children(host.nodes.size(), 0);
    auto checkCap = [&](const SchedElement& child) {
        if (!child.parent) return;
        ++children[*child.parent];
        const SchedElement& parent = host.nodes[*child.parent];
        if (parent.maxAvgBw != 0 && child.maxAvgBw > parent.maxAvgBw) {
            report.warning("sched-cap", child.location,
                           "'" + child.name + "' may send " + std::to_string(child.maxAvgBw) +
                               " Mbit/s but its parent '" + parent.name + "' is capped at " +
                               std::to_string(parent.maxAvgBw) + " Mbit/s");
        }
    };
    for (const SchedElement& n : host.nodes) checkCap(n);
    for (const SchedLeaf& l : host.leaves) checkCap(l);
    for (uint32_t i = 0; i < host.nodes.size(); ++i) {
        if (children[i] == 0) {
            report.warning("unused-node", host.nodes[i].location,
                           "sched-node '" + host.nodes[i].name + "' has no children");
        }
    }
}

// Congestion-control slots: a slot holds one algorithm.
void checkPccSlots(const Reporter& report, const HostSched& host) {
    std::map<uint32_t, const SchedLeaf*> slotOwner;
    for (const SchedLeaf& leaf : host.leaves) {
        bool hasAlgorithm = !leaf.pccAlgorithm.empty();
        if (leaf.pccSlot.has_value() != hasAlgorithm) {
            report.stricterError(
                "pcc-slot", leaf.location,
                "sched-leaf '" + leaf.name + "' needs both 'pcc-slot:' and 'pcc-algorithm:'");
            continue;
        }
        if (!hasAlgorithm) continue;
        if (!isKnownPccAlgorithm(leaf.pccAlgorithm)) {
            report.stricterError("pcc-slot", leaf.location,
                                 "unknown pcc-algorithm '" + leaf.pccAlgorithm +
                                     "'; known: " + knownPccAlgorithmList());
            continue;
        }
        auto [it, fresh] = slotOwner.emplace(*leaf.pccSlot, &leaf);
        if (!fresh && !sameName(it->second->pccAlgorithm, leaf.pccAlgorithm)) {
            report.stricterError("pcc-slot", leaf.location,
                                 "pcc-slot " + std::to_string(*leaf.pccSlot) + " already holds '" +
                                     it->second->pccAlgorithm + "' (sched-leaf '" +
                                     it->second->name + "'); a slot holds one algorithm");
        }
    }
}

}  // namespace

void checkHostSched(const Reporter& report, Policy& policy) {
    HostSched& host = policy.hostSched;
    if (!host.present) return;
    checkEnforcement(report, host);
    assignSls(report, host);
    checkParents(report, host);
    checkPccSlots(report, host);
}

}  // namespace ibqos::passes
