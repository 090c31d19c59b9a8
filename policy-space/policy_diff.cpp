// SPDX-License-Identifier: MIT
// The requests whose SA answer changes between two policies, on the request space of both
// (policy-space/request_space.hpp), and the qos-setup scopes that change.
//
// First the rules of the two policies are paired: the longest common prefix and suffix of the
// two lists, rules with the same conditions (the middle is unpaired). A request no unpaired rule
// matches gets its first match from a pair in both policies (the pairs keep their order), so
// outside the unpaired rules' requests (X) only the pairs whose levels answer differently, and
// the default level, can change an answer: only their reaches are computed. Inside X the space
// is walked in full, each diagram cut to X.
//
// Each rule's "reach" (the requests it gets first) is its own requests minus the earlier rules
// that overlap it, one diagram per rule: no diagram of a whole policy is ever built. The walk
// goes old rule by old rule: a request of what is left of the old rule's reach names the new
// rule that gets it; their common requests are one piece, answered under both, and taken out;
// then the requests no old rule matches, new rule by new rule; then those neither policy
// matches. Each piece is split into products, and the products into regions by the answers
// the SA gives (on a fabric, per pair of PKey tables and for loopback paths apart). On every
// fabric the answers of a piece depend on the PKey alone: the piece is cut to the PKeys whose
// answers change and split into products of the fields only, each taking the ends of the
// requests below its diagram node, listed once per node as pairs of unions of kinds of port.
// Regions are collected and joined as numbers into their parts, each part kept once, and
// written out as DiffRegions at the end.
//
// This file: the rules paired, the qos-setup scopes compared, the entry points and the texts
// for people. The walk is in diff_walk.cpp, the answers on a fabric in diff_on_fabric.cpp and
// on every fabric in diff_every_fabric.cpp, the regions as numbers in diff_regions.cpp (their
// shared declarations: diff_engine.hpp).
#include "policy-space/policy_diff.hpp"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/text.hpp"
#include "policy-space/diff_engine.hpp"

namespace ibqos {

using namespace diff_engine;

namespace {

// Pairs the rules of two policies (Pairing); groupKey(p, g) names what group g of policy p
// holds.
Pairing pairRules(const Policy& a, const Policy& b,
                  const std::function<std::string(size_t, uint32_t)>& groupKey) {
    auto ruleKey = [&](size_t p, const MatchRule& r) {
        auto side = [&](const std::vector<uint32_t>& groups) {
            std::vector<std::string> keys;
            for (uint32_t g : groups) keys.push_back(groupKey(p, g));
            std::sort(keys.begin(), keys.end());
            keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
            return keys;
        };
        return std::make_tuple(r.qosClasses.ranges(), r.serviceIds.ranges(), r.pkeys.ranges(),
                               side(r.sources), side(r.destinations));
    };
    const size_t n = a.rules.size(), m = b.rules.size();
    Pairing out;
    out.partner[0].assign(n, NoRule);
    out.partner[1].assign(m, NoRule);
    size_t head = 0;
    while (head < n && head < m && ruleKey(0, a.rules[head]) == ruleKey(1, b.rules[head])) {
        out.partner[0][head] = out.partner[1][head] = static_cast<uint32_t>(head);
        ++head;
    }
    size_t tail = 0;
    while (tail < n - head && tail < m - head &&
           ruleKey(0, a.rules[n - 1 - tail]) == ruleKey(1, b.rules[m - 1 - tail])) {
        out.partner[0][n - 1 - tail] = static_cast<uint32_t>(m - 1 - tail);
        out.partner[1][m - 1 - tail] = static_cast<uint32_t>(n - 1 - tail);
        ++tail;
    }
    out.unpaired = (n - head - tail) + (m - head - tail);
    return out;
}

// What a group selects by, as a string: two groups select the same ports on every fabric when
// their keys are equal.
std::string selectorKey(const PortGroup& g) {
    std::set<std::pair<std::string, uint32_t>> names;
    for (const PortNameRef& n : g.portNames) names.emplace(n.nodeDescription, n.port);
    std::set<std::string> partitions;
    for (const NameRef& n : g.partitions) partitions.insert(n.name);
    std::string key = g.guids.str(true) + "|" + g.pkeys.str(true) + "|" +
                      std::to_string(g.nodeTypes) + (g.self ? "|self|" : "||");
    for (const auto& [node, port] : names) key += node + "/" + std::to_string(port) + '\0';
    key += '|';
    for (const std::string& p : partitions) key += p + '\0';
    return key;
}

// Whether two groups select the same ports on every fabric (their selectors, not their names).
bool sameGroup(const PortGroup& a, const PortGroup& b) { return selectorKey(a) == selectorKey(b); }

bool sameGroups(const Policy& p, const std::vector<uint32_t>& a, const Policy& q,
                const std::vector<uint32_t>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!sameGroup(p.groups[a[i]], q.groups[b[i]])) return false;
    }
    return true;
}

template <typename T>
bool sameVector(const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b) {
    return a.has_value() == b.has_value() && (!a || *a == *b);
}

std::vector<std::string> vlarbChanges(const Policy& p, const VlArbScope& a, const Policy& q,
                                      const VlArbScope& b) {
    std::vector<std::string> out;
    if (!sameGroups(p, a.groups, q, b.groups)) out.push_back("group");
    if (!sameGroups(p, a.across, q, b.across)) out.push_back("across");
    if (!sameVector(a.high, b.high)) out.push_back("vlarb-high");
    if (!sameVector(a.low, b.low)) out.push_back("vlarb-low");
    if (a.highLimit != b.highLimit) out.push_back("vl-high-limit");
    auto shares = [](const std::optional<std::vector<VlShare>>& s) {
        std::vector<std::pair<int, int>> out;
        if (s) {
            for (const VlShare& x : *s) out.emplace_back(x.vl, x.percent);
        }
        return std::make_pair(s.has_value(), out);
    };
    if (shares(a.bandwidth) != shares(b.bandwidth)) out.push_back("bandwidth");
    return out;
}

std::vector<std::string> sl2vlChanges(const Policy& p, const Sl2VlScope& a, const Policy& q,
                                      const Sl2VlScope& b) {
    std::vector<std::string> out;
    if (!sameGroups(p, a.groups, q, b.groups)) out.push_back("group");
    if (!sameGroups(p, a.acrossFrom, q, b.acrossFrom)) out.push_back("across-from");
    if (!sameGroups(p, a.acrossTo, q, b.acrossTo)) out.push_back("across-to");
    if (a.from != b.from) out.push_back("from");
    if (a.to != b.to) out.push_back("to");
    if (a.table != b.table) out.push_back("sl2vl-table");
    return out;
}

// The qos-setup scopes whose effect may differ on some fabric: scope by scope in file order
// (a later scope overwrites an earlier one, so order matters), groups by what they select.
std::vector<ScopeChange> scopeChanges(const Policy& before, const Policy& after) {
    std::vector<ScopeChange> out;
    auto compare = [&](ScopeChange::Kind kind, size_t na, size_t nb, auto changes) {
        for (size_t i = 0; i < std::max(na, nb); ++i) {
            ScopeChange c;
            c.kind = kind;
            if (i < na) c.before = static_cast<uint32_t>(i);
            if (i < nb) c.after = static_cast<uint32_t>(i);
            if (i < na && i < nb) {
                c.fields = changes(i);
                if (c.fields.empty()) continue;
            }
            out.push_back(std::move(c));
        }
    };
    compare(ScopeChange::Kind::VlArb, before.vlarbScopes.size(), after.vlarbScopes.size(),
            [&](size_t i) {
                return vlarbChanges(before, before.vlarbScopes[i], after, after.vlarbScopes[i]);
            });
    compare(ScopeChange::Kind::Sl2Vl, before.sl2vlScopes.size(), after.sl2vlScopes.size(),
            [&](size_t i) {
                return sl2vlChanges(before, before.sl2vlScopes[i], after, after.sl2vlScopes[i]);
            });
    return out;
}

// The cuts a diff needs beyond the rules': the levels' PKeys (they decide answers), and on a
// fabric its partitions' PKeys (a requested PKey no partition has is rejected under both).
RequestSpace::Cuts diffCuts(const Policy& before, const Policy& after,
                            std::initializer_list<const Fabric*> fabrics) {
    RequestSpace::Cuts cuts;
    for (const Policy* p : {&before, &after}) {
        for (const QosLevel& l : p->levels) {
            for (const Range& r : l.pkeys.ranges()) cuts.pkeys.push_back(r);
        }
    }
    for (const Fabric* fabric : fabrics) {
        for (const Partition& p : fabric->partitions) cuts.pkeys.push_back({p.pkey, p.pkey});
    }
    return cuts;
}

}  // namespace

std::string describeAnswer(const Policy& policy, const PathAnswer& a, bool pkeyKnown) {
    if (!a.ok()) return "rejected: " + std::string(rejectionText(a.rejection));
    const QosLevel& level = policy.levels[a.match.level];
    std::string out = "level '" + level.name + "', SL " + std::to_string(a.sl);
    out += pkeyKnown ? ", PKey " + hex(a.pkey, 4) : ", PKey as requested or the fabric's";
    if (a.mtuLimit) out += ", mtu-limit " + std::to_string(*a.mtuLimit);
    if (a.rateLimit) out += ", rate-limit " + std::to_string(*a.rateLimit);
    if (a.packetLife) out += ", packet-life " + std::to_string(*a.packetLife);
    if (!level.pkeys.empty()) out += ", level pkeys " + level.pkeys.str(true);
    return out;
}

std::string describeValues(const FieldValues& values, bool hexValues) {
    if (values.any) return "any";
    if (values.absent) return "absent";
    return RangeSet::build(values.ranges).str(hexValues);
}

std::string describePortKind(const PortKind& kind) {
    std::string out;
    // Appended in place: a region of a random policy names hundreds of GUID ranges.
    auto part = [&](const char* head) {
        if (!out.empty()) out += ", ";
        out += head;
    };
    auto list = [&](const std::vector<std::string>& items) {
        for (size_t i = 0; i < items.size(); ++i) {
            out += i ? ", '" : "'";
            out += items[i];
            out += '\'';
        }
    };
    auto ranges = [&](std::vector<Range> r) { RangeSet::build(std::move(r)).appendTo(out, true); };
    if (kind.nodeTypes) {
        part("node type ");
        for (size_t i = 0; i < kind.nodeTypes->size(); ++i) {
            if (i) out += " or ";
            out += nodeTypeName((*kind.nodeTypes)[i]);
        }
    }
    if (kind.sm) part(*kind.sm ? "the SM's port" : "not the SM's port");
    if (kind.names) {
        part("named ");
        if (kind.names->empty()) out += "nothing";
        list(*kind.names);
    }
    if (kind.notNames && !kind.notNames->empty()) {
        part("not named ");
        list(*kind.notNames);
    }
    if (kind.guids) {
        part("GUID ");
        ranges(*kind.guids);
    }
    if (!kind.inPartitions.empty()) {
        part("in partition ");
        list(kind.inPartitions);
    }
    if (!kind.notInPartitions.empty()) {
        part("not in partition ");
        list(kind.notInPartitions);
    }
    if (!kind.inPkeys.empty()) {
        part("member of PKey ");
        ranges(kind.inPkeys);
    }
    if (!kind.notInPkeys.empty()) {
        part("not member of PKey ");
        ranges(kind.notInPkeys);
    }
    return out.empty() ? "any port" : out;
}

bool answersDiffer(const Policy& before, const PathAnswer& a, const Policy& after,
                   const PathAnswer& b) {
    if (!a.ok() && !b.ok()) return false;
    if (a.ok() != b.ok()) return true;
    return a.sl != b.sl || a.mtuLimit != b.mtuLimit || a.rateLimit != b.rateLimit ||
           a.packetLife != b.packetLife || a.pkey != b.pkey ||
           before.levels[a.match.level].pkeys != after.levels[b.match.level].pkeys;
}

std::optional<PolicyDiff> diffPolicies(const BoundPolicy& before, const BoundPolicy& after,
                                       uint64_t workBudget) {
    try {
        DecisionDiagram dd(workBudget);
        // The two sides' fabrics are one topology; partitions.conf may differ.
        const Fabric& fabric = *before.fabric;
        if (after.fabric->ports.size() != fabric.ports.size())
            throw std::logic_error("diffPolicies: the two policies are bound to other topologies");
        // Classes of endpoints with one PKey table each, before and after: the answers of a
        // class are one.
        const PkeyTables pkeys[] = {PkeyTables(fabric), PkeyTables(*after.fabric)};
        std::vector<uint32_t> tableOf(fabric.ports.size(), 0);
        std::map<std::pair<uint32_t, uint32_t>, uint32_t> tables;
        for (uint32_t e : fabric.endpoints()) {
            tableOf[e] =
                tables.emplace(std::pair(pkeys[0].tableId(e), pkeys[1].tableId(e)), tables.size())
                    .first->second;
        }
        RequestSpace space(dd, std::vector<const BoundPolicy*>{&before, &after},
                           diffCuts(*before.policy, *after.policy, {&fabric, after.fabric}),
                           tableOf);
        // On a fabric, groups are the same when they hold the same ports: numbered once.
        const BoundPolicy* bound[] = {&before, &after};
        // (Keyed by the groups themselves, compared by what they hold: a large fabric's groups
        // hold tens of thousands of ports each, not to be copied.)
        auto sameMembers = [](const GroupMembers* a, const GroupMembers* b) {
            return std::tie(a->nodeTypes, a->ports) < std::tie(b->nodeTypes, b->ports);
        };
        std::map<const GroupMembers*, uint32_t, decltype(sameMembers)> groupNumbers(sameMembers);
        std::vector<std::string> groupIds[2];
        for (size_t p = 0; p < 2; ++p) {
            for (const GroupMembers& m : bound[p]->groups) {
                const uint32_t id =
                    groupNumbers.emplace(&m, static_cast<uint32_t>(groupNumbers.size()))
                        .first->second;
                groupIds[p].push_back(std::to_string(id));
            }
        }
        auto groupKey = [&](size_t p, uint32_t g) { return groupIds[p][g]; };
        PolicyDiff diff;
        RegionParts parts;
        const auto classes = std::make_shared<const EndpointSet::Classes>(space.classes());
        for (const PackedRegion& r :
             joinRegions(Differ(space, {&pkeys[0], &pkeys[1]},
                                pairRules(*before.policy, *after.policy, groupKey), parts)
                             .run(),
                         parts))
            diff.regions.push_back(unpack(r, parts, classes));
        // The port pairs each region holds.
        for (DiffRegion& r : diff.regions) {
            const std::vector<uint32_t>& from = r.sources.classes();
            const std::vector<uint32_t>& to = r.destinations.classes();
            std::vector<uint32_t> shared;
            std::set_intersection(from.begin(), from.end(), to.begin(), to.end(),
                                  std::back_inserter(shared));
            uint64_t same = 0;
            for (uint32_t c : shared) same += (*classes)[c].size();
            const uint64_t sources = r.sources.size(), destinations = r.destinations.size();
            r.portPairs = r.loopback == Loopback::Only       ? sources
                          : r.loopback == Loopback::Excluded ? sources * destinations - same
                                                             : sources * destinations;
        }
        return diff;
    } catch (const AnalysisBudgetSpent&) {
        return std::nullopt;
    }
}

std::optional<PolicyDiff> diffPolicies(const Policy& before, const Policy& after,
                                       uint64_t workBudget) {
    try {
        DecisionDiagram dd(workBudget);
        RequestSpace space(dd, std::vector<const Policy*>{&before, &after},
                           diffCuts(before, after, {}));
        // On every fabric, groups are the same when they select by the same things (their
        // keys written once per group: rules are compared by them).
        std::vector<std::string> selectors[2];
        for (const PortGroup& g : before.groups) selectors[0].push_back(selectorKey(g));
        for (const PortGroup& g : after.groups) selectors[1].push_back(selectorKey(g));
        auto groupKey = [&](size_t p, uint32_t g) { return selectors[p][g]; };
        PolicyDiff diff;
        RegionParts parts;
        for (const PackedRegion& r : joinRegions(
                 Differ(space, {nullptr, nullptr}, pairRules(before, after, groupKey), parts).run(),
                 parts))
            diff.regions.push_back(unpack(r, parts, nullptr));
        diff.scopes = scopeChanges(before, after);
        diff.qosSetupApplied[0] = before.hasQosSetup && !before.qosSetupIgnored;
        diff.qosSetupApplied[1] = after.hasQosSetup && !after.qosSetupIgnored;
        return diff;
    } catch (const AnalysisBudgetSpent&) {
        return std::nullopt;
    }
}

EndpointSet::EndpointSet(std::shared_ptr<const Classes> classes, std::vector<uint32_t> members)
    : classes_(std::move(classes)), members_(std::move(members)) {
    for (uint32_t c : members_) size_ += (*classes_)[c].size();
}

bool EndpointSet::contains(uint32_t endpoint) const {
    return std::any_of(members_.begin(), members_.end(), [&](uint32_t c) {
        const std::vector<uint32_t>& ports = (*classes_)[c];
        return std::binary_search(ports.begin(), ports.end(), endpoint);
    });
}

std::vector<uint32_t> EndpointSet::list(size_t most) const {
    const auto n = static_cast<size_t>(std::min<uint64_t>(most, size_));
    if (members_.size() == 1) {
        const std::vector<uint32_t>& ports = (*classes_)[members_[0]];
        return {ports.begin(), ports.begin() + static_cast<ptrdiff_t>(n)};
    }
    std::vector<uint32_t> out;
    out.reserve(n);
    // The classes' lists merged: the smallest head next (a class's endpoints are in port order).
    using Head = std::pair<uint32_t, uint32_t>;  // (endpoint, member), next position below
    std::vector<size_t> at(members_.size(), 0);
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    for (uint32_t m = 0; m < members_.size(); ++m) {
        const std::vector<uint32_t>& ports = (*classes_)[members_[m]];
        if (!ports.empty()) heads.push({ports[0], m});
    }
    while (!heads.empty() && out.size() < most) {
        const auto [endpoint, m] = heads.top();
        heads.pop();
        out.push_back(endpoint);
        const std::vector<uint32_t>& ports = (*classes_)[members_[m]];
        if (++at[m] < ports.size()) heads.push({ports[at[m]], m});
    }
    return out;
}

}  // namespace ibqos
