// SPDX-License-Identifier: MIT
// OpenSM's own matching algorithm, rule by rule in order: the reference the compiled Classifier
// is tested against, and the source of the explanations `ibqos query` prints.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/bind.hpp"
#include "sa-matcher/path_request.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos {

// The first condition of a rule that a request fails, in the order OpenSM tests them.
enum class RuleMismatch : uint8_t {
    None,             // the rule matches
    Source,           // the source port is in none of the rule's source groups
    Destination,      // the destination port is in none of its destination groups
    QosClassAbsent,   // the rule names qos-class; the request has none
    QosClass,         // the request's QoS class is not in the rule's ranges
    ServiceIdAbsent,  // the rule names service-id; the request lacks one (or a half of it)
    ServiceId,
    PkeyAbsent,  // the rule names pkey; the request has none
    Pkey,
};

constexpr uint32_t NoGroup = UINT32_MAX;

// Whether a rule matches a request, and if not, why (__qos_policy_get_match_rule_by_params).
RuleMismatch ruleMismatch(const BoundPolicy& bound, uint32_t rule, const PathQuery& query);

// The first matching rule's level, else the default level: OpenSM's scan of every rule.
QosMatch referenceMatch(const BoundPolicy& bound, const PathQuery& query);

// Why a request got its level.
struct MatchExplanation {
    QosMatch match;
    // Every rule before the decisive one (all rules for the default level), with the first
    // condition it failed.
    std::vector<std::pair<uint32_t, RuleMismatch>> earlier;
    // For the decisive rule: the first of its groups that holds each end (NoGroup when the
    // rule has no such condition).
    uint32_t sourceGroup = NoGroup;
    uint32_t destinationGroup = NoGroup;
};

MatchExplanation explainMatch(const BoundPolicy& bound, const PathQuery& query);

}  // namespace ibqos
