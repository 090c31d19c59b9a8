// SPDX-License-Identifier: MIT
// HostPlan: the transmit-scheduling tree and congestion-control slots every host builds.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "compiler/policy.hpp"  // the host-sched section (its structs only)
#include "ib/qos.hpp"

namespace ibqos::host {

// One element of the tree below the root (the root itself has no attributes).
struct PlanElement {
    std::string name;
    bool leaf = false;
    std::optional<size_t> parent;  // index into HostPlan::elements; nullopt: the root
    uint32_t bwShare = 0;          // relative weight among siblings, 0 = device default
    uint32_t maxAvgBw = 0;         // Mbit/s, 0 = unlimited
    std::bitset<ib::SlCount> sls;  // leaves: the path SLs whose QPs attach here
    std::optional<uint32_t> pccSlot;
    std::string pccAlgorithm;
};

// A congestion-control slot and the algorithm registered into it.
struct PlanSlot {
    uint32_t slot = 0;
    std::string algorithm;
    std::vector<size_t> leaves;  // indices into HostPlan::elements
};

// The tree in creation order: every node after its parent, then the leaves, so building it
// front to back and destroying it back to front honours the device's rules.
class HostPlan {
  public:
    // Builds the plan of a checked policy (call only when it has no errors).
    static HostPlan fromPolicy(const HostSched& hostSched);
    // A plan of elements in creation order (every node after its parent, leaves last), as
    // fromPolicy() orders them and a plan file (plan_file.hpp) holds them,
    // and the sl-enforcement blocks in file order.
    static HostPlan fromElements(std::vector<PlanElement> elements,
                                 std::vector<SlEnforcement> enforcement = {});

    const std::vector<PlanElement>& elements() const { return elements_; }
    const std::vector<PlanSlot>& slots() const { return slots_; }
    const std::vector<SlEnforcement>& enforcement() const { return enforcement_; }
    // The first sl-enforcement block that applies to a program known by these names (the
    // executable's file name, argv[0]'s): nullptr when none does (the mode is respect).
    const SlEnforcement* enforcementFor(std::initializer_list<std::string_view> names) const;
    bool empty() const { return elements_.empty(); }
    // The leaf a QP on this SL attaches to, or nullopt (the device's default scheduling).
    std::optional<size_t> leafForSl(uint8_t sl) const;
    std::optional<size_t> find(std::string_view name) const;
    // Levels below the root: 1 when every leaf hangs from the root.
    unsigned depth() const;
    std::vector<size_t> children(std::optional<size_t> parent) const;

  private:
    std::vector<PlanElement> elements_;
    std::array<int32_t, ib::SlCount> leafOfSl_{-1, -1, -1, -1, -1, -1, -1, -1,
                                               -1, -1, -1, -1, -1, -1, -1, -1};
    std::vector<PlanSlot> slots_;
    std::vector<SlEnforcement> enforcement_;
};

}  // namespace ibqos::host
