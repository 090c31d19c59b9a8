// SPDX-License-Identifier: MIT
// requestSls: the policy cut to the requests of one kind (the rules they can match, with the
// field conditions that then always hold dropped), and the regions of the requests it answers,
// found as the difference from the same policy with every level's SL made one no path has: the
// diff's exact regions (policy-space/policy_diff.cpp) hold every request the policy answers, and
// each has one answer. The regions are then cut to CA ports at both ends and grouped by SL.
#include "policy-space/request_sls.hpp"

#include <algorithm>
#include <map>

#include "ib/qos.hpp"

namespace ibqos {

namespace {

bool carried(const RangeSet& named, std::optional<uint64_t> value) {
    return named.empty() || (value && named.contains(*value));
}

// Whether a rule's fields match every request with these fields (groups aside).
bool fieldsMatch(const MatchRule& rule, const ib::QosFields& f) {
    std::optional<uint64_t> pkey;
    if (f.pkey) pkey = ib::pkeyBase(*f.pkey);
    return carried(rule.qosClasses, f.qosClass) && carried(rule.serviceIds, f.serviceId) &&
           carried(rule.pkeys, pkey);
}

// The policy as the requests of one kind see it; kept[i] is the index its rule i has in the
// policy.
Policy restrictedTo(const Policy& policy, const ib::QosFields& fields,
                    std::vector<uint32_t>& kept) {
    Policy out = policy;
    out.rules.clear();
    out.firstUlpRule = 0;
    for (uint32_t r = 0; r < policy.rules.size(); ++r) {
        if (!fieldsMatch(policy.rules[r], fields)) continue;
        MatchRule rule = policy.rules[r];
        rule.qosClasses = RangeSet{};
        rule.serviceIds = RangeSet{};
        rule.pkeys = RangeSet{};
        out.rules.push_back(std::move(rule));
        kept.push_back(r);
        if (r < policy.firstUlpRule) out.firstUlpRule = out.rules.size();
    }
    return out;
}

// The same policy answering no request: every level's SL is one OpenSM answers no path for.
Policy answeringNothing(const Policy& policy) {
    Policy out = policy;
    for (QosLevel& level : out.levels) level.sl = ib::SlCount;
    return out;
}

// Whether a region's values of a field hold the request's (or its absence).
bool holds(const FieldValues& values, std::optional<uint64_t> value) {
    if (values.any) return true;
    if (!value) return values.absent;
    return std::any_of(values.ranges.begin(), values.ranges.end(),
                       [&](const Range& r) { return r.lo <= *value && *value <= r.hi; });
}

bool holdsRequest(const DiffRegion& r, const ib::QosFields& f) {
    std::optional<uint64_t> qos, pkey;
    if (f.qosClass) qos = *f.qosClass;
    if (f.pkey) pkey = *f.pkey;
    return holds(r.qosClasses, qos) && holds(r.serviceIds, f.serviceId) && holds(r.pkeys, pkey);
}

// Kinds of port cut to CA ports: those a CA may be, without their node types. False when
// none is left.
bool keepCaKinds(std::vector<PortKind>& kinds, bool any) {
    if (any) return true;
    std::vector<PortKind> kept;
    for (PortKind& k : kinds) {
        if (k.nodeTypes &&
            std::find(k.nodeTypes->begin(), k.nodeTypes->end(), NodeType::Ca) == k.nodeTypes->end())
            continue;
        k.nodeTypes.reset();
        kept.push_back(std::move(k));
    }
    kinds = std::move(kept);
    return !kinds.empty();
}

void addSorted(std::vector<uint32_t>& into, const std::vector<uint32_t>& more) {
    into.insert(into.end(), more.begin(), more.end());
    std::sort(into.begin(), into.end());
    into.erase(std::unique(into.begin(), into.end()), into.end());
}

// The regions grouped by SL, the rules mapped back to the policy's.
RequestSls group(PolicyDiff&& diff, const ib::QosFields& fields, const std::vector<uint32_t>& kept,
                 const Fabric* fabric) {
    std::map<uint8_t, SlShare> bySl;
    for (DiffRegion& r : diff.regions) {
        if (!r.before.ok() || !holdsRequest(r, fields)) continue;
        std::vector<uint32_t> from, to;
        if (fabric) {
            auto cas = [&](const EndpointSet& ports) {
                std::vector<uint32_t> out;
                for (uint32_t p : ports.list()) {
                    if (fabric->typeOf(p) == NodeType::Ca) out.push_back(p);
                }
                return out;
            };
            from = cas(r.sources);
            to = cas(r.destinations);
            if (from.empty() || to.empty()) continue;
        } else if (!keepCaKinds(r.sourceKinds, r.anySource) ||
                   !keepCaKinds(r.destinationKinds, r.anyDestination)) {
            continue;
        }
        SlShare& share = bySl[r.before.sl];
        share.sl = r.before.sl;
        std::vector<uint32_t> rules;
        for (uint32_t rule : r.beforeRules) rules.push_back(rule == NoRule ? NoRule : kept[rule]);
        addSorted(share.rules, rules);
        addSorted(share.levels, {r.before.match.level});
        if (fabric) {
            // Every answer that differs counts loopback paths too: a process may reach its
            // own port through the fabric.
            share.portPairs += uint64_t{from.size()} * to.size();
            share.sources.push_back(std::move(from));
            share.destinations.push_back(std::move(to));
        }
        share.regions.push_back(std::move(r));
    }
    RequestSls out;
    for (auto& [sl, share] : bySl) out.sls.push_back(std::move(share));
    return out;
}

}  // namespace

std::optional<RequestSls> requestSls(const BoundPolicy& bound, const ib::QosFields& fields,
                                     uint64_t workBudget) {
    std::vector<uint32_t> kept;
    const Policy policy = restrictedTo(*bound.policy, fields, kept);
    const Policy nothing = answeringNothing(policy);
    const BoundPolicy before{&policy, bound.fabric, bound.groups};
    const BoundPolicy after{&nothing, bound.fabric, bound.groups};
    std::optional<PolicyDiff> diff = diffPolicies(before, after, workBudget);
    if (!diff) return std::nullopt;
    return group(std::move(*diff), fields, kept, bound.fabric);
}

std::optional<RequestSls> requestSls(const Policy& original, const ib::QosFields& fields,
                                     uint64_t workBudget) {
    std::vector<uint32_t> kept;
    const Policy policy = restrictedTo(original, fields, kept);
    std::optional<PolicyDiff> diff = diffPolicies(policy, answeringNothing(policy), workBudget);
    if (!diff) return std::nullopt;
    return group(std::move(*diff), fields, kept, nullptr);
}

}  // namespace ibqos
