// SPDX-License-Identifier: MIT
// The SLs one kind of request gets between host ports: for stacks that take one SL a process
// (NCCL, UCX, MPI), whether every pair of CA ports gets the same SL for it, and if not, which
// pairs get which, on one fabric or on every fabric the policy could meet.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/bind.hpp"
#include "ib/path_record.hpp"
#include "policy-space/policy_diff.hpp"

namespace ibqos {

// The port pairs that get one SL: the regions of requests (ends limited to CA ports) that the
// policy answers with it. A region's `before` is the policy's answer; `after` means nothing.
struct SlShare {
    uint8_t sl = 0;
    std::vector<DiffRegion> regions;
    std::vector<uint32_t> rules;   // every deciding rule (NoRule: the default level), ascending
    std::vector<uint32_t> levels;  // the levels that give it, ascending
    uint64_t portPairs = 0;        // with a fabric: the CA port pairs that get it
    // With a fabric, per region: its CA sources and destinations (Fabric::ports indices).
    std::vector<std::vector<uint32_t>> sources, destinations;
};

// The SLs the requests of one kind get between CA ports, lowest SL first. Empty when the policy
// answers no such request.
struct RequestSls {
    std::vector<SlShare> sls;
};

// The requests that carry exactly `fields`' ServiceID, QoS class and PKey (an unset field:
// requests without it; the SL is ignored), between any two CA ports of the bound fabric, or of
// every fabric the policy could meet. nullopt when the work budget (decision-diagram steps, 0:
// none) is spent first.
std::optional<RequestSls> requestSls(const BoundPolicy& bound, const ib::QosFields& fields,
                                     uint64_t workBudget = 0);
std::optional<RequestSls> requestSls(const Policy& policy, const ib::QosFields& fields,
                                     uint64_t workBudget = 0);

}  // namespace ibqos
