// SPDX-License-Identifier: MIT
// Pass 4: match rules no request can reach, because the rules before them together match every
// request they do, on every fabric the policy could meet; and, on one fabric (checkReachability),
// the rules, levels and groups no request of that fabric reaches.
//
// Without a fabric, a port has one GUID, one node type and one NodeDescription/port, any
// partitions and PKeys, and may be the SM's own. Group selectors are positive, so a rule is
// reachable exactly when a minimal witness escapes every earlier rule: a port for each selector
// of the rule's groups (in each node type; GUIDs and PKeys one per elementary interval that can
// tell the groups apart, elsewhere a GUID no group names), with one value of each elementary
// interval of the fields. Only earlier rules that can overlap the rule are compared, found
// through an index per field and per group, so a policy whose rules overlap few others is
// checked in near-linear time; a rule that would cost more than a bound gets a note.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "compiler/passes.hpp"
#include "compiler/reachability.hpp"
#include "fabric/node_type.hpp"

namespace ibqos::passes {

namespace {

constexpr NodeType Types[] = {NodeType::Ca, NodeType::Switch, NodeType::Router};
constexpr size_t WideRule = 64;            // intervals past which a rule is indexed as "wide"
constexpr uint64_t WorkBound = 1'000'000;  // witness requests x candidate words, per rule
constexpr size_t GroupIndexFrom = 64;      // field candidates past which groups are tried
constexpr size_t MaxCandidates = 1024;     // overlapping earlier rules a rule is judged against

using Cuts = ElementaryIntervals;

// A port as the rules see it.
struct Witness {
    uint64_t guid = 0;
    NodeType type = NodeType::Ca;
    bool self = false;
    const PortNameRef* name = nullptr;
    const std::string* partition = nullptr;
    std::optional<uint64_t> pkey;
};

bool holds(const PortGroup& g, const Witness& w) {
    if ((g.nodeTypes & nodeTypeBit(w.type)) || (g.self && w.self) || g.guids.contains(w.guid))
        return true;
    if (w.name) {
        // A switch answers to any of its port numbers (the name selects its port 0).
        for (const PortNameRef& n : g.portNames) {
            if (n.nodeDescription == w.name->nodeDescription &&
                (w.type == NodeType::Switch || n.port == w.name->port))
                return true;
        }
    }
    if (w.partition) {
        for (const NameRef& p : g.partitions) {
            if (sameName(p.name, *w.partition)) return true;
        }
    }
    return w.pkey && g.pkeys.contains(*w.pkey);
}

// Whether a group has a selector at all (one without holds no port on any fabric).
bool selects(const PortGroup& g) {
    return g.nodeTypes || g.self || !g.guids.empty() || !g.portNames.empty() ||
           !g.partitions.empty() || !g.pkeys.empty();
}

// Whether two groups can hold one port on some fabric.
bool mayMeet(const PortGroup& a, const PortGroup& b) {
    if (!selects(a) || !selects(b)) return false;
    // A node type, or the SM's port, can go with any GUID, name or partition of the other.
    if (a.nodeTypes || b.nodeTypes || a.self || b.self) return true;
    if (a.guids.intersects(b.guids) || a.pkeys.intersects(b.pkeys)) return true;
    // A port has one GUID but any name, partitions and PKeys besides.
    bool aGuidOnly = a.portNames.empty() && a.partitions.empty() && a.pkeys.empty();
    bool bGuidOnly = b.portNames.empty() && b.partitions.empty() && b.pkeys.empty();
    if (!aGuidOnly && !bGuidOnly) return true;
    if (aGuidOnly && bGuidOnly) return false;  // disjoint GUIDs
    return true;  // one names ports by GUID, the other by name, partition or PKey
}

// What the pass knows about a rule's fields and groups, to find the earlier rules it overlaps.
class RuleIndex {
  public:
    explicit RuleIndex(const Policy& policy) : policy_(policy), meets_(policy.groups.size()) {
        fields_[0].cuts = Cuts(UINT64_MAX);
        fields_[1].cuts = Cuts(4095);
        fields_[2].cuts = Cuts(0x7fff);
        for (const MatchRule& r : policy.rules) {
            for (size_t f = 0; f < 3; ++f) fields_[f].cuts.add(field(r, f));
        }
        for (auto& f : fields_) {
            f.cuts.finish();
            f.byInterval.resize(f.cuts.starts.size());
        }
        bySource_.resize(policy.groups.size());
        byDestination_.resize(policy.groups.size());
        for (uint32_t i = 0; i < policy.rules.size(); ++i) {
            const MatchRule& r = policy.rules[i];
            for (size_t f = 0; f < 3; ++f) {
                Field& index = fields_[f];
                const RangeSet& set = field(r, f);
                if (set.empty()) {
                    index.unnamed.push_back(i);
                    continue;
                }
                if (index.cuts.countInside(set) > WideRule) {
                    index.wide.push_back(i);
                    continue;
                }
                index.cuts.eachInside(set, [&](size_t k) { index.byInterval[k].push_back(i); });
            }
            if (r.sources.empty()) anySource_.push_back(i);
            if (r.destinations.empty()) anyDestination_.push_back(i);
            for (uint32_t g : r.sources) bySource_[g].push_back(i);
            for (uint32_t g : r.destinations) byDestination_[g].push_back(i);
        }
    }

    static const RangeSet& field(const MatchRule& r, size_t f) {
        return f == 0 ? r.serviceIds : f == 1 ? r.qosClasses : r.pkeys;
    }

    // Every earlier rule that can match a request rule j matches, from the most selective of
    // j's fields and groups; nullopt when there are too many to judge.
    std::optional<std::vector<uint32_t>> candidates(uint32_t j) {
        return candidates(policy_.rules[j], j);
    }
    // The same for a rule that would stand at position j (j == rules.size(): after all).
    std::optional<std::vector<uint32_t>> candidates(const MatchRule& rule, uint32_t j) {
        std::vector<const std::vector<uint32_t>*> best;
        size_t bestCount = SIZE_MAX;
        auto consider = [&](std::vector<const std::vector<uint32_t>*> lists) {
            size_t count = 0;
            for (auto* l : lists) count += before(*l, j);
            if (count < bestCount) {
                bestCount = count;
                best = std::move(lists);
            }
        };
        for (size_t f = 0; f < 3; ++f) {
            const RangeSet& set = field(rule, f);
            if (set.empty()) continue;
            Field& index = fields_[f];
            std::vector<const std::vector<uint32_t>*> lists{&index.unnamed, &index.wide};
            index.cuts.eachInside(set, [&](size_t k) { lists.push_back(&index.byInterval[k]); });
            consider(std::move(lists));
        }
        // The groups are the costlier index (a node-type group meets every group): only when
        // the fields leave many candidates.
        for (bool source : {true, false}) {
            if (bestCount <= GroupIndexFrom) break;
            const auto& groups = source ? rule.sources : rule.destinations;
            if (groups.empty()) continue;
            std::vector<const std::vector<uint32_t>*> lists{source ? &anySource_
                                                                   : &anyDestination_};
            std::vector<char> seen(policy_.groups.size());
            for (uint32_t g : groups) {
                for (uint32_t h : meeting(g)) {
                    if (seen[h]) continue;
                    seen[h] = 1;
                    lists.push_back(source ? &bySource_[h] : &byDestination_[h]);
                }
            }
            consider(std::move(lists));
        }
        std::vector<uint32_t> out;
        // Past the bound even before the overlap test: undecided.
        if ((bestCount == SIZE_MAX ? j : bestCount) > 2 * MaxCandidates) return std::nullopt;
        if (bestCount == SIZE_MAX) {
            for (uint32_t i = 0; i < j; ++i) out.push_back(i);
        } else {
            for (auto* l : best) {
                for (uint32_t i : *l) {
                    if (i >= j) break;
                    out.push_back(i);
                }
            }
            std::sort(out.begin(), out.end());
            out.erase(std::unique(out.begin(), out.end()), out.end());
        }
        // Keep those that overlap j in every field and on both sides.
        std::vector<uint32_t> overlapping;
        for (uint32_t i : out) {
            if (overlaps(policy_.rules[i], rule)) overlapping.push_back(i);
        }
        return overlapping;
    }

  private:
    struct Field {
        Cuts cuts;
        std::vector<std::vector<uint32_t>> byInterval;  // named rules whose set holds interval i
        std::vector<uint32_t> unnamed, wide;
    };

    static size_t before(const std::vector<uint32_t>& sorted, uint32_t j) {
        return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), j) -
                                   sorted.begin());
    }

    const std::vector<uint32_t>& meeting(uint32_t g) {
        auto& m = meets_[g];
        if (!m) {
            m.emplace();
            for (uint32_t h = 0; h < policy_.groups.size(); ++h) {
                if (mayMeet(policy_.groups[g], policy_.groups[h])) m->push_back(h);
            }
        }
        return *m;
    }

    bool sidesMeet(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
        if (a.empty() || b.empty()) return true;
        for (uint32_t g : a) {
            const auto& m = meeting(g);
            for (uint32_t h : b) {
                if (std::binary_search(m.begin(), m.end(), h)) return true;
            }
        }
        return false;
    }

    bool overlaps(const MatchRule& a, const MatchRule& b) {
        for (size_t f = 0; f < 3; ++f) {
            const RangeSet& x = field(a, f);
            const RangeSet& y = field(b, f);
            if (!x.empty() && !y.empty() && !x.intersects(y)) return false;
        }
        return sidesMeet(a.sources, b.sources) && sidesMeet(a.destinations, b.destinations);
    }

    const Policy& policy_;
    Field fields_[3];
    std::vector<std::vector<uint32_t>> bySource_, byDestination_;
    std::vector<uint32_t> anySource_, anyDestination_;  // rules without that side
    std::vector<std::optional<std::vector<uint32_t>>> meets_;
};

// The verdict on one rule against its overlapping earlier rules.
struct Verdict {
    bool decided = true;
    bool dead = false;
    std::vector<uint32_t> coveredBy;  // the earlier rules that answer its requests
};

// The witness ports of one side of rule j: every port its groups can hold, minimally.
std::vector<Witness> witnesses(const Policy& policy, const std::vector<uint32_t>& groups,
                               const Cuts& guids, const RangeSet& namedGuids, const Cuts& pkeys) {
    // A GUID no group tells apart from others, or every GUID interval when there is none.
    std::vector<uint64_t> plain;
    for (uint64_t s : guids.starts) {
        if (!namedGuids.contains(s)) {
            plain = {s};
            break;
        }
    }
    if (plain.empty()) plain = guids.starts;

    std::vector<Witness> out;
    auto each = [&](Witness w, bool anyType) {
        for (NodeType t : Types) {
            if (!anyType && t != w.type) continue;
            w.type = t;
            out.push_back(w);
        }
    };
    auto plainPorts = [&](Witness w, bool anyType) {
        for (uint64_t g : plain) {
            w.guid = g;
            each(w, anyType);
        }
    };
    if (groups.empty()) {
        plainPorts({}, true);
        return out;
    }
    for (uint32_t gi : groups) {
        const PortGroup& g = policy.groups[gi];
        for (NodeType t : Types) {
            if (!(g.nodeTypes & nodeTypeBit(t))) continue;
            Witness w;
            w.type = t;
            plainPorts(w, false);
        }
        if (g.self) {
            Witness w;
            w.self = true;
            plainPorts(w, true);
        }
        for (uint64_t s : guids.inside(g.guids)) {
            Witness w;
            w.guid = s;
            each(w, true);
        }
        for (const PortNameRef& n : g.portNames) {
            Witness w;
            w.name = &n;
            plainPorts(w, true);
        }
        for (const NameRef& p : g.partitions) {
            Witness w;
            w.partition = &p.name;
            plainPorts(w, true);
        }
        for (uint64_t k : pkeys.inside(g.pkeys)) {
            Witness w;
            w.pkey = k;
            plainPorts(w, true);
        }
    }
    return out;
}

// The ports of a fabric by what they are in: one entry per distinct set of groups.
struct FabricPorts {
    std::vector<std::vector<uint32_t>> memberships;  // sorted group indices
};

FabricPorts fabricPorts(const BoundPolicy& bound) {
    const Fabric& fabric = *bound.fabric;
    std::vector<std::vector<uint32_t>> of(fabric.ports.size());
    for (uint32_t g = 0; g < bound.groups.size(); ++g) {
        for (uint32_t p : bound.groups[g].all(fabric)) of[p].push_back(g);
    }
    std::set<std::vector<uint32_t>> distinct;
    for (uint32_t p : fabric.endpoints()) distinct.insert(std::move(of[p]));
    return {{distinct.begin(), distinct.end()}};
}

bool meets(const std::vector<uint32_t>& sortedGroups, const std::vector<uint32_t>& side) {
    if (side.empty()) return true;
    for (uint32_t g : side) {
        if (std::binary_search(sortedGroups.begin(), sortedGroups.end(), g)) return true;
    }
    return false;
}

// Whether requests matching `rule` can escape the `overlapping` earlier rules: on every fabric
// (ports == nullptr: minimal witness ports), or on the ports of one fabric.
Verdict judge(const Policy& policy, const MatchRule& rule,
              const std::optional<std::vector<uint32_t>>& overlapping, const FabricPorts* ports) {
    Verdict v;
    // Which groups each witness of a side is in (the side's own and the earlier rules').
    std::vector<std::vector<uint32_t>> sources, destinations;
    if (ports) {
        for (const auto& m : ports->memberships) {
            if (meets(m, rule.sources)) sources.push_back(m);
            if (meets(m, rule.destinations)) destinations.push_back(m);
        }
        if (sources.empty() || destinations.empty()) {
            v.dead = true;  // no port pair of the fabric
            return v;
        }
    }
    if (overlapping && overlapping->empty()) return v;
    // A quick way out for most rules: a request without the fields the rule does not name, with
    // the lowest value of each it names, that no earlier rule's fields let through.
    auto holdsPorts = [&](const std::vector<uint32_t>& side) {
        if (ports || side.empty()) return true;
        return std::any_of(side.begin(), side.end(),
                           [&](uint32_t g) { return selects(policy.groups[g]); });
    };
    if (!holdsPorts(rule.sources) || !holdsPorts(rule.destinations)) {
        v.dead = true;  // its groups hold no port on any fabric
        return v;
    }
    auto probeEscapes = [&](const std::vector<uint32_t>& earlier) {
        for (uint32_t i : earlier) {
            bool lets = true;
            for (size_t f = 0; f < 3 && lets; ++f) {
                const RangeSet& theirs = RuleIndex::field(policy.rules[i], f);
                const RangeSet& mine = RuleIndex::field(rule, f);
                lets = theirs.empty() || (!mine.empty() && theirs.contains(mine.lowest()));
            }
            if (lets) return false;
        }
        return true;
    };
    if (overlapping && probeEscapes(*overlapping)) return v;
    if (!overlapping || overlapping->size() > MaxCandidates) {
        v.decided = false;
        return v;
    }
    const std::vector<uint32_t>& earlier = *overlapping;

    // Cuts from rule j and the earlier rules only: other rules cannot tell its requests apart.
    Cuts guids(UINT64_MAX), groupPkeys(0x7fff);
    Cuts fields[3] = {Cuts(UINT64_MAX), Cuts(4095), Cuts(0x7fff)};
    // The witness ports' GUIDs and PKeys (on a fabric, its ports are the witnesses).
    std::vector<Range> named;
    auto addGroups = [&](const MatchRule& r) {
        for (const auto* side : {&r.sources, &r.destinations}) {
            for (uint32_t g : *side) {
                guids.add(policy.groups[g].guids);
                const auto& ranges = policy.groups[g].guids.ranges();
                named.insert(named.end(), ranges.begin(), ranges.end());
                groupPkeys.add(policy.groups[g].pkeys);
            }
        }
    };
    if (!ports) {
        addGroups(rule);
        for (uint32_t i : earlier) addGroups(policy.rules[i]);
    }
    const RangeSet namedGuids = RangeSet::build(std::move(named));
    for (size_t f = 0; f < 3; ++f) {
        fields[f].add(RuleIndex::field(rule, f));
        for (uint32_t i : earlier) fields[f].add(RuleIndex::field(policy.rules[i], f));
    }
    guids.finish();
    groupPkeys.finish();
    // Field values j's requests can carry: each interval inside its set, or, where it names
    // none, every interval and no value at all.
    std::vector<std::optional<uint64_t>> values[3];
    for (size_t f = 0; f < 3; ++f) {
        fields[f].finish();
        const RangeSet& set = RuleIndex::field(rule, f);
        if (set.empty()) {
            values[f].push_back(std::nullopt);
            for (uint64_t s : fields[f].starts) values[f].push_back(s);
        } else {
            for (uint64_t s : fields[f].inside(set)) values[f].push_back(s);
        }
    }
    if (!ports) {
        std::vector<uint32_t> relevant;
        auto addSides = [&](const MatchRule& r) {
            relevant.insert(relevant.end(), r.sources.begin(), r.sources.end());
            relevant.insert(relevant.end(), r.destinations.begin(), r.destinations.end());
        };
        addSides(rule);
        for (uint32_t i : earlier) addSides(policy.rules[i]);
        std::sort(relevant.begin(), relevant.end());
        relevant.erase(std::unique(relevant.begin(), relevant.end()), relevant.end());
        auto memberships = [&](const std::vector<uint32_t>& side) {
            std::vector<std::vector<uint32_t>> out;
            for (const Witness& w : witnesses(policy, side, guids, namedGuids, groupPkeys)) {
                std::vector<uint32_t> in;
                for (uint32_t g : relevant) {
                    if (holds(policy.groups[g], w)) in.push_back(g);
                }
                out.push_back(std::move(in));
            }
            return out;
        };
        sources = memberships(rule.sources);
        destinations = memberships(rule.destinations);
    }

    const size_t words = (earlier.size() + 63) / 64;
    uint64_t work = static_cast<uint64_t>(words) * sources.size() * destinations.size();
    for (auto& list : values) work *= list.size();
    if (work > WorkBound) {
        v.decided = false;
        return v;
    }

    // Which earlier rules each witness and field value satisfies, as bitsets over `earlier`.
    using Bits = std::vector<uint64_t>;
    auto bitsFor = [&](auto satisfies) {
        Bits b(words);
        for (size_t k = 0; k < earlier.size(); ++k) {
            if (satisfies(policy.rules[earlier[k]])) b[k / 64] |= uint64_t{1} << (k % 64);
        }
        return b;
    };
    auto sideBits = [&](const std::vector<std::vector<uint32_t>>& ws, bool source) {
        std::vector<Bits> out;
        for (const auto& m : ws) {
            out.push_back(bitsFor(
                [&](const MatchRule& r) { return meets(m, source ? r.sources : r.destinations); }));
        }
        return out;
    };
    std::vector<Bits> src = sideBits(sources, true), dst = sideBits(destinations, false);
    std::vector<Bits> field[3];
    for (size_t f = 0; f < 3; ++f) {
        for (const auto& value : values[f]) {
            field[f].push_back(bitsFor([&](const MatchRule& r) {
                const RangeSet& set = RuleIndex::field(r, f);
                return set.empty() || (value && set.contains(*value));
            }));
        }
    }

    std::vector<char> used(earlier.size());
    Bits both(words), alone(words, ~uint64_t{0});  // alone: the rules matching every request
    for (const Bits& s : src) {
        for (const Bits& d : dst) {
            for (size_t w = 0; w < words; ++w) both[w] = s[w] & d[w];
            for (const Bits& a : field[0]) {
                for (const Bits& b : field[1]) {
                    for (const Bits& c : field[2]) {
                        size_t first = SIZE_MAX;
                        for (size_t w = 0; w < words; ++w) {
                            uint64_t m = both[w] & a[w] & b[w] & c[w];
                            alone[w] &= m;
                            if (m && first == SIZE_MAX)
                                first = w * 64 + static_cast<size_t>(__builtin_ctzll(m));
                        }
                        if (first == SIZE_MAX) return v;  // this request escapes: reachable
                        used[first] = 1;
                    }
                }
            }
        }
    }
    v.dead = true;
    // One rule that matches all of them says it best; else the first match of each request.
    for (size_t k = 0; k < earlier.size(); ++k) {
        if (alone[k / 64] >> (k % 64) & 1) {
            v.coveredBy = {earlier[k]};
            return v;
        }
    }
    for (size_t k = 0; k < earlier.size(); ++k) {
        if (used[k]) v.coveredBy.push_back(earlier[k]);
    }
    return v;
}

std::string describe(const MatchRule& rule) {
    if (rule.fromUlps) return "the qos-ulps line at line " + std::to_string(rule.location.line);
    return "the match rule at line " + std::to_string(rule.location.line);
}

}  // namespace

void findShadowedRules(const Reporter& report, const Policy& policy) {
    const auto& rules = policy.rules;
    RuleIndex index(policy);
    for (uint32_t j = 1; j < rules.size(); ++j) {
        Verdict v = judge(policy, rules[j], index.candidates(j), nullptr);
        const std::string what = rules[j].fromUlps ? "this qos-ulps line" : "this match rule";
        if (!v.decided) {
            report.note("reachability-undecided", rules[j].location,
                        "whether " + what +
                            " can match was not decided: it overlaps too many earlier rules");
            continue;
        }
        if (!v.dead) continue;
        if (v.coveredBy.empty()) {
            report.warning(
                "shadowed-rule", rules[j].location,
                what + " can never match: its source or destination groups hold no port");
            continue;
        }
        std::string by;
        bool ulpsAfterRules = rules[j].fromUlps;
        for (size_t k = 0; k < v.coveredBy.size(); ++k) {
            const MatchRule& r = rules[v.coveredBy[k]];
            by += (k == 0 ? "" : k + 1 == v.coveredBy.size() ? " and " : ", ") + describe(r);
            ulpsAfterRules = ulpsAfterRules && !r.fromUlps;
        }
        const bool one = v.coveredBy.size() == 1;
        report.warning(
            "shadowed-rule", rules[j].location,
            what + " can never match: " + by + (one ? " matches" : " together match") +
                " every request it does" +
                (ulpsAfterRules ? " (qos-ulps lines come after every qos-match-rule)" : ""));
    }
}

}  // namespace ibqos::passes

namespace ibqos {

void checkReachability(const BoundPolicy& bound, Diagnostics& diagnostics) {
    using namespace passes;
    const Policy& policy = *bound.policy;
    const FabricPorts ports = fabricPorts(bound);
    RuleIndex index(policy);
    std::vector<char> levelReached(policy.levels.size());
    std::vector<char> groupUsed(policy.groups.size());
    auto warn = [&](const char* code, SourceLocation where, std::string message) {
        diagnostics.warning(code, policy.file, where, std::move(message));
    };
    for (uint32_t j = 0; j < policy.rules.size(); ++j) {
        const MatchRule& rule = policy.rules[j];
        for (const auto* side : {&rule.sources, &rule.destinations}) {
            for (uint32_t g : *side) groupUsed[g] = 1;
        }
        auto candidates = index.candidates(j);
        Verdict here = judge(policy, rule, candidates, &ports);
        if (!here.decided || !here.dead) {
            levelReached[rule.level] = 1;
            continue;
        }
        const std::string what = rule.fromUlps ? "this qos-ulps line" : "this match rule";
        if (here.coveredBy.empty()) {
            warn("unreachable-rule", rule.location,
                 what + " matches no port pair of " + bound.fabric->source +
                     ": its source or destination groups hold no port there");
        } else if (!judge(policy, rule, candidates, nullptr).dead) {
            // (A rule dead on every fabric already has its shadowed-rule warning.)
            std::string by;
            for (size_t k = 0; k < here.coveredBy.size(); ++k) {
                by += (k == 0                           ? ""
                       : k + 1 == here.coveredBy.size() ? " and "
                                                        : ", ") +
                      std::string("line ") +
                      std::to_string(policy.rules[here.coveredBy[k]].location.line);
            }
            warn("unreachable-rule", rule.location,
                 what + " can never match on " + bound.fabric->source + ": the rules before it (" +
                     by + ") match every request it does there");
        }
    }
    // The default level: is there a request no rule matches?
    MatchRule everything;
    auto all = index.candidates(everything, static_cast<uint32_t>(policy.rules.size()));
    Verdict fallThrough = judge(policy, everything, all, &ports);
    if ((!fallThrough.decided || !fallThrough.dead) && policy.hasDefaultLevel)
        levelReached[policy.defaultLevel] = 1;
    for (uint32_t l = 0; l < policy.levels.size(); ++l) {
        const QosLevel& level = policy.levels[l];
        if (levelReached[l] || level.generated) continue;
        warn("unreachable-level", level.location,
             "no request can get level '" + level.name + "' on " + bound.fabric->source +
                 (l == policy.defaultLevel ? ": the rules match every request"
                                           : ": no rule that can match leads to it"));
    }
    auto use = [&](const std::vector<uint32_t>& groups) {
        for (uint32_t g : groups) groupUsed[g] = 1;
    };
    for (const VlArbScope& scope : policy.vlarbScopes) {
        use(scope.groups);
        use(scope.across);
    }
    for (const Sl2VlScope& scope : policy.sl2vlScopes) {
        use(scope.groups);
        use(scope.acrossFrom);
        use(scope.acrossTo);
    }
    for (uint32_t g = 0; g < policy.groups.size(); ++g) {
        const PortGroup& group = policy.groups[g];
        if (groupUsed[g] || group.origin != GroupOrigin::Written) continue;
        warn("unused-group", group.location,
             "port-group '" + group.name + "' is used by no rule or qos-setup scope");
    }
}

}  // namespace ibqos
