// SPDX-License-Identifier: MIT
// The rule-by-rule scan of __qos_policy_get_match_rule_by_params() in osm_qos_policy.c.
#include "sa-matcher/reference_match.hpp"

#include "ib/qos.hpp"

namespace ibqos {

namespace {

// The first of the groups that holds the endpoint, or NoGroup.
uint32_t holdingGroup(const BoundPolicy& bound, const std::vector<uint32_t>& groups,
                      uint32_t endpoint) {
    for (uint32_t g : groups) {
        if (bound.groups[g].contains(*bound.fabric, endpoint)) return g;
    }
    return NoGroup;
}

}  // namespace

RuleMismatch ruleMismatch(const BoundPolicy& bound, uint32_t index, const PathQuery& query) {
    const MatchRule& rule = bound.policy->rules[index];
    // A rule with only sources tests the source, with only destinations the destination, with
    // both, both; OpenSM's three cases come down to this.
    if (!rule.sources.empty() && holdingGroup(bound, rule.sources, query.source) == NoGroup) {
        return RuleMismatch::Source;
    }
    if (!rule.destinations.empty() &&
        holdingGroup(bound, rule.destinations, query.destination) == NoGroup) {
        return RuleMismatch::Destination;
    }
    if (!rule.qosClasses.empty()) {
        if (!query.qosClass) return RuleMismatch::QosClassAbsent;
        if (!rule.qosClasses.contains(*query.qosClass)) return RuleMismatch::QosClass;
    }
    if (!rule.serviceIds.empty()) {
        if (!query.serviceId) return RuleMismatch::ServiceIdAbsent;
        if (!rule.serviceIds.contains(*query.serviceId)) return RuleMismatch::ServiceId;
    }
    if (!rule.pkeys.empty()) {
        if (!query.pkey) return RuleMismatch::PkeyAbsent;
        if (!rule.pkeys.contains(ib::pkeyBase(*query.pkey))) return RuleMismatch::Pkey;
    }
    return RuleMismatch::None;
}

QosMatch referenceMatch(const BoundPolicy& bound, const PathQuery& query) {
    const Policy& policy = *bound.policy;
    for (uint32_t r = 0; r < policy.rules.size(); ++r) {
        if (ruleMismatch(bound, r, query) == RuleMismatch::None) return {policy.rules[r].level, r};
    }
    return {policy.defaultLevel, NoRule};
}

MatchExplanation explainMatch(const BoundPolicy& bound, const PathQuery& query) {
    const Policy& policy = *bound.policy;
    MatchExplanation e;
    e.match = {policy.defaultLevel, NoRule};
    for (uint32_t r = 0; r < policy.rules.size(); ++r) {
        RuleMismatch why = ruleMismatch(bound, r, query);
        if (why != RuleMismatch::None) {
            e.earlier.emplace_back(r, why);
            continue;
        }
        const MatchRule& rule = policy.rules[r];
        e.match = {rule.level, r};
        e.sourceGroup = holdingGroup(bound, rule.sources, query.source);
        e.destinationGroup = holdingGroup(bound, rule.destinations, query.destination);
        break;
    }
    return e;
}

}  // namespace ibqos
