// SPDX-License-Identifier: MIT
// Pass 4: a match rule that can never match because an earlier rule matches every request it does.
#include <string>

#include "compiler/passes.hpp"

namespace ibqos::passes {

namespace {

bool subset(const std::vector<NameRef>& small, const std::vector<NameRef>& big) {
    for (const NameRef& s : small) {
        bool found = false;
        for (const NameRef& b : big) found |= sameName(s.name, b.name);
        if (!found) return false;
    }
    return true;
}

// True when every port of b is certainly in a, judged from the definitions alone (membership
// is the union of the group's selectors, so b's selectors being a's selectors is enough).
bool groupCovers(const PortGroup& a, const PortGroup& b) {
    if (&a == &b) return true;
    if ((b.nodeTypes & ~a.nodeTypes) != 0 || (b.self && !a.self)) return false;
    if (!a.guids.covers(b.guids) || !a.pkeys.covers(b.pkeys)) return false;
    if (!subset(b.partitions, a.partitions)) return false;
    for (const PortNameRef& n : b.portNames) {
        bool found = false;
        for (const PortNameRef& m : a.portNames)
            found |= m.nodeDescription == n.nodeDescription && m.port == n.port;
        if (!found) return false;
    }
    return true;
}

// Every port that can satisfy later's group list also satisfies earlier's.
bool groupsCover(const Policy& p, const std::vector<uint32_t>& earlier,
                 const std::vector<uint32_t>& later) {
    if (earlier.empty()) return true;
    if (later.empty()) return false;
    for (uint32_t l : later) {
        bool covered = false;
        for (uint32_t e : earlier) covered |= groupCovers(p.groups[e], p.groups[l]);
        if (!covered) return false;
    }
    return true;
}

bool fieldCovers(const RangeSet& earlier, const RangeSet& later) {
    if (earlier.empty()) return true;
    return !later.empty() && earlier.covers(later);
}

bool ruleCovers(const Policy& p, const MatchRule& earlier, const MatchRule& later) {
    return fieldCovers(earlier.qosClasses, later.qosClasses) &&
           fieldCovers(earlier.serviceIds, later.serviceIds) &&
           fieldCovers(earlier.pkeys, later.pkeys) &&
           groupsCover(p, earlier.sources, later.sources) &&
           groupsCover(p, earlier.destinations, later.destinations);
}

std::string describe(const MatchRule& rule) {
    if (rule.fromUlps) return "the qos-ulps line at line " + std::to_string(rule.location.line);
    return "the match rule at line " + std::to_string(rule.location.line);
}

}  // namespace

void findShadowedRules(const Reporter& report, const Policy& policy) {
    const auto& rules = policy.rules;
    for (size_t j = 1; j < rules.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
            if (!ruleCovers(policy, rules[i], rules[j])) continue;
            std::string what = rules[j].fromUlps ? "this qos-ulps line" : "this match rule";
            std::string extra = rules[j].fromUlps && !rules[i].fromUlps
                                    ? " (qos-ulps lines come after every qos-match-rule)"
                                    : "";
            report.warning("shadowed-rule", rules[j].location,
                           what + " can never match: " + describe(rules[i]) +
                               " matches every request it does" + extra);
            break;
        }
    }
}

}  // namespace ibqos::passes
