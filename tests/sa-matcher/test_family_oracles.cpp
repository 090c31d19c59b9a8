// SPDX-License-Identifier: MIT
// Oracles for the policy-space analyses that share nothing with their engine (the decision
// diagrams of policy-space/request_space): on every policy family of tests/policy_families.hpp,
// with and without qos-ulps, the shadowed-rule, unreachable-rule and unreachable-level verdicts and
// the regions of ibqos diff are checked request by request against OpenSM's rule-by-rule scan
// (sa-matcher/reference_match) and the SA's answer (answerPath), over every request the
// policies can tell apart: both ends of every elementary interval of the values the policies
// write, every field absent too, and every kind of port, on a fabric or on "every fabric" (a
// fabric built to hold a port of every kind the groups can tell apart).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/bind.hpp"
#include "policy-space/policy_diff.hpp"
#include "policy-space/reachability.hpp"
#include "sa-matcher/qos_answer.hpp"
#include "sa-matcher/reference_match.hpp"
#include "tests/policy_families.hpp"
#include "tests/policy_text.hpp"

using namespace ibqos;
using ibqos::test::Change;
using ibqos::test::Family;
using ibqos::test::FamilyPolicy;

namespace {

// The families' GUIDs: offset k of a family is the 256 GUIDs from GuidBase + 256 k, so that
// one offset has room for ports of every kind.
constexpr uint64_t GuidBase = 0x100000;
constexpr unsigned Stride = 256;
constexpr unsigned Span = 48;   // the offsets a family's GUID ranges spread over
constexpr unsigned Rules = 32;  // match rules a case (one fewer after Change::RuleDropped)

FamilyPolicy familyOptions(Family family, bool ulps, uint64_t seed, Change change = Change::None,
                           unsigned rules = Rules) {
    FamilyPolicy o;
    o.family = family;
    o.rules = rules;
    o.seed = seed;
    o.ulps = ulps;
    o.change = change;
    o.changeSeed = seed * 31 + 7;
    o.guidBase = GuidBase;
    o.guidSpan = Span;
    o.guidStride = Stride;
    return o;
}

std::string caseName(Family family, bool ulps, uint64_t seed, Change change = Change::None) {
    static const char* const changes[] = {"none",        "level-sl",     "rule-dropped",
                                          "range-moved", "level-limits", "bandwidth"};
    return std::string(test::familyName(family)) + (ulps ? "+ulps" : "") + " seed " +
           std::to_string(seed) + " change " + changes[static_cast<int>(change)];
}

// A set of small numbers (rules, groups, regions).
struct Bits {
    std::vector<uint64_t> words;
    explicit Bits(size_t n = 0) : words((n + 63) / 64) {}
    void set(size_t i) { words[i / 64] |= uint64_t{1} << (i % 64); }
    bool test(size_t i) const { return (words[i / 64] >> (i % 64) & 1) != 0; }
    Bits& operator&=(const Bits& o) {
        for (size_t i = 0; i < words.size(); ++i) words[i] &= o.words[i];
        return *this;
    }
    size_t first() const {
        for (size_t i = 0; i < words.size(); ++i) {
            if (words[i]) return i * 64 + static_cast<size_t>(__builtin_ctzll(words[i]));
        }
        return SIZE_MAX;
    }
    bool any() const { return first() != SIZE_MAX; }
    // Calls f(i) for every member i, in order.
    template <typename F>
    void forEach(F&& f) const {
        for (size_t w = 0; w < words.size(); ++w) {
            for (uint64_t m = words[w]; m; m &= m - 1)
                f(w * 64 + static_cast<size_t>(__builtin_ctzll(m)));
        }
    }
    bool operator<(const Bits& o) const { return words < o.words; }
};

// The elementary intervals of [0, max] cut at both ends of every range.
std::vector<Range> elementary(const std::vector<Range>& ranges, uint64_t max) {
    std::set<uint64_t> starts{0};
    for (const Range& r : ranges) {
        if (r.lo > max) continue;
        starts.insert(r.lo);
        if (r.hi < max) starts.insert(r.hi + 1);
    }
    std::vector<Range> out;
    for (auto it = starts.begin(); it != starts.end(); ++it) {
        auto next = std::next(it);
        out.push_back({*it, next == starts.end() ? max : *next - 1});
    }
    return out;
}

// A request field's values worth asking: absent, and both ends of every elementary interval.
using Values = std::vector<std::optional<uint64_t>>;
Values edgeValues(const std::vector<Range>& ranges, uint64_t max) {
    Values out{std::nullopt};
    for (const Range& r : elementary(ranges, max)) {
        out.push_back(r.lo);
        if (r.hi != r.lo) out.push_back(r.hi);
    }
    return out;
}

// The values of each request field the policies (and a fabric's partitions) tell apart; PKeys
// both with and without the membership bit.
struct RequestValues {
    Values qosClasses, serviceIds, pkeys;
};

RequestValues requestValues(const std::vector<const Policy*>& policies,
                            const std::vector<Partition>& partitions) {
    std::vector<Range> q, s, k;
    for (const Policy* p : policies) {
        for (const MatchRule& r : p->rules) {
            q.insert(q.end(), r.qosClasses.ranges().begin(), r.qosClasses.ranges().end());
            s.insert(s.end(), r.serviceIds.ranges().begin(), r.serviceIds.ranges().end());
            k.insert(k.end(), r.pkeys.ranges().begin(), r.pkeys.ranges().end());
        }
        for (const QosLevel& l : p->levels)
            k.insert(k.end(), l.pkeys.ranges().begin(), l.pkeys.ranges().end());
    }
    for (const Partition& p : partitions) k.push_back({p.pkey, p.pkey});
    RequestValues v;
    v.qosClasses = edgeValues(q, 4095);
    v.serviceIds = edgeValues(s, UINT64_MAX);
    for (std::optional<uint64_t> x : edgeValues(k, 0x7fff)) {
        v.pkeys.push_back(x);
        if (x) v.pkeys.push_back(*x | 0x8000);
    }
    return v;
}

bool fieldHolds(const RangeSet& set, std::optional<uint64_t> value, bool pkey) {
    if (set.empty()) return true;
    return value && set.contains(pkey ? *value & 0x7fff : *value);
}

// The rules of a policy whose condition on one field a value meets.
Bits fieldRules(const Policy& p, int field, std::optional<uint64_t> value) {
    Bits out(p.rules.size());
    for (size_t r = 0; r < p.rules.size(); ++r) {
        const MatchRule& rule = p.rules[r];
        const RangeSet& set = field == 0   ? rule.qosClasses
                              : field == 1 ? rule.serviceIds
                                           : rule.pkeys;
        if (fieldHolds(set, value, field == 2)) out.set(r);
    }
    return out;
}

// A test fabric: switches and hosts with GUIDs spread over the families' offsets, partitions
// part0..part3 (the Random family's) and Default, some members limited.
Fabric familyFabric(uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    std::set<uint64_t> used;
    auto guid = [&]() {
        for (;;) {
            const uint64_t g = GuidBase + pick(Span + 8) * Stride + pick(Stride);
            if (used.insert(g).second && used.insert(g - 1).second) return g;
        }
    };
    Fabric f;
    std::vector<uint32_t> free;
    for (int s = 0; s < 3; ++s) {
        const uint32_t node = f.addNode(NodeType::Switch, guid(), "sw" + std::to_string(s), 12);
        for (unsigned n = 1; n <= 12; ++n) free.push_back(f.nodes[node].firstPort + n);
    }
    for (int h = 0; h < 20 && !free.empty(); ++h) {
        const NodeType type = h % 7 == 6 ? NodeType::Router : NodeType::Ca;
        const uint32_t node = f.addNode(type, guid() - 1, "host" + std::to_string(h), 1);
        const size_t i = pick(free.size());
        f.link(f.nodes[node].firstPort, free[i]);
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
    }
    uint16_t lid = 1;
    for (FabricPort& p : f.ports) p.lid = lid++;
    f.index();
    f.smPort = f.endpoints()[pick(f.endpoints().size())];
    Partition all;
    all.name = "Default";
    all.pkey = 0x7fff;
    for (uint32_t e : f.endpoints()) all.members.push_back({e, pick(8) != 0});
    f.partitions.push_back(std::move(all));
    const uint16_t pkeys[] = {0x3, 0x5, 0x9, 0x11, 0x7};
    for (int i = 0; i < 5; ++i) {
        Partition p;
        p.name = i < 4 ? "part" + std::to_string(i) : "extra";
        p.pkey = pkeys[i];
        for (uint32_t e : f.endpoints()) {
            if (pick(3) == 0) p.members.push_back({e, pick(4) != 0});
        }
        f.partitions.push_back(std::move(p));
    }
    return f;
}

// What a port of the universal fabric is, as the groups select ports.
struct PortFacts {
    uint32_t endpoint = NoPort;
    uint64_t guid = 0;
    NodeType type = NodeType::Ca;
    bool sm = false;
    std::set<std::string> partitions;
    std::set<uint16_t> pkeys;  // of the partitions it is a member of
};

// Every fabric at once: one fabric holding, in every elementary interval of the GUIDs the
// groups name, a port of each node type with each set of partition memberships that the groups
// tell apart (partitions by name and by PKey, found by closing the memberships that change
// which groups hold a port under union, as a port's groups are the union of its memberships'),
// at both ends of the interval. `answering` is the same fabric with every port a full member of
// a partition of every PKey a request asks for: the fabric on which both ends share every
// partition, where ibqos diff without a topology gives its answers.
struct Universe {
    Fabric selecting, answering;
    std::vector<PortFacts> ports;

    Universe(const std::vector<const Policy*>& policies, const Values& requestPkeys) {
        std::vector<Range> guids, pkeyRanges;
        std::set<std::string> names;
        for (const Policy* p : policies) {
            for (const PortGroup& g : p->groups) {
                guids.insert(guids.end(), g.guids.ranges().begin(), g.guids.ranges().end());
                pkeyRanges.insert(pkeyRanges.end(), g.pkeys.ranges().begin(),
                                  g.pkeys.ranges().end());
                for (const NameRef& n : g.partitions) names.insert(n.name);
            }
        }
        // Memberships: a partition of each name (with a PKey no group names), a partition of
        // each PKey interval some group names.
        struct Atom {
            std::string name;
            uint16_t pkey;
            std::vector<Bits> groups;  // per policy
        };
        std::vector<Atom> atoms;
        const RangeSet groupPkeys = RangeSet::build(pkeyRanges);
        uint16_t spare = 0x7000;
        for (const std::string& n : names) {
            while (groupPkeys.contains(spare)) ++spare;
            atoms.push_back({n, spare++, {}});
        }
        for (const Range& r : elementary(pkeyRanges, 0x7fff)) {
            if (groupPkeys.contains(r.lo))
                atoms.push_back({"pkey-" + std::to_string(r.lo), static_cast<uint16_t>(r.lo), {}});
        }
        for (Atom& a : atoms) {
            for (const Policy* p : policies) {
                Bits in(p->groups.size());
                for (size_t g = 0; g < p->groups.size(); ++g) {
                    const PortGroup& group = p->groups[g];
                    bool holds = group.pkeys.contains(a.pkey);
                    for (const NameRef& n : group.partitions) holds = holds || n.name == a.name;
                    if (holds) in.set(g);
                }
                a.groups.push_back(std::move(in));
            }
        }
        // Sets of memberships: one for each union of the atoms' groups, and each atom alone.
        std::map<std::vector<Bits>, std::vector<size_t>> unions;
        std::vector<Bits> none;
        for (const Policy* p : policies) none.emplace_back(p->groups.size());
        unions.emplace(none, std::vector<size_t>{});
        for (size_t a = 0; a < atoms.size(); ++a) {
            auto copy = unions;
            for (const auto& [key, members] : copy) {
                std::vector<Bits> joined = key;
                for (size_t p = 0; p < joined.size(); ++p) {
                    for (size_t w = 0; w < joined[p].words.size(); ++w)
                        joined[p].words[w] |= atoms[a].groups[p].words[w];
                }
                std::vector<size_t> more = members;
                more.push_back(a);
                unions.emplace(std::move(joined), std::move(more));
            }
        }
        std::set<std::vector<size_t>> memberships;
        for (const auto& [key, members] : unions) memberships.insert(members);
        for (size_t a = 0; a < atoms.size(); ++a) memberships.insert({a});
        REQUIRE(3 * memberships.size() <= Stride);  // a port of each kind fits in an offset

        // The ports: in each GUID interval, one of each kind from its low end, and again from
        // its high end when there is room.
        struct Kind {
            NodeType type;
            std::vector<size_t> atoms;
        };
        std::vector<Kind> kinds;
        for (NodeType t : {NodeType::Ca, NodeType::Switch, NodeType::Router}) {
            for (const std::vector<size_t>& m : memberships) kinds.push_back({t, m});
        }
        std::vector<std::pair<uint64_t, size_t>> placed;  // (port GUID, kind)
        for (const Range& r : elementary(guids, UINT64_MAX)) {
            const uint64_t room = r.hi - r.lo + 1;
            REQUIRE(room >= kinds.size());
            for (size_t k = 0; k < kinds.size(); ++k) {
                placed.push_back({r.lo + k, k});
                if (room >= 2 * kinds.size()) placed.push_back({r.hi - k, k});
            }
        }
        // Hosts hang off hub switches whose GUIDs lie past every group's.
        Fabric& f = selecting;
        uint64_t hubGuid = 0xfe00000000000000ULL;
        uint32_t hub = 0;
        unsigned hubFree = 0;
        std::vector<size_t> kindOfPort;
        std::vector<uint32_t> portOfPlaced;
        for (const auto& [guid, k] : placed) {
            const Kind& kind = kinds[k];
            uint32_t node;
            if (kind.type == NodeType::Switch) {
                node = f.addNode(NodeType::Switch, guid, "s", 1);
                portOfPlaced.push_back(f.nodes[node].firstPort);
                continue;
            }
            if (hubFree == 0) {
                hub = f.addNode(NodeType::Switch, hubGuid, "hub", 250);
                hubGuid += 0x1000;
                hubFree = 250;
            }
            node = f.addNode(kind.type, guid - 1, "h", 1);
            f.link(f.nodes[node].firstPort, f.nodes[hub].firstPort + hubFree--);
            portOfPlaced.push_back(f.nodes[node].firstPort);
        }
        uint16_t lid = 1;
        for (FabricPort& p : f.ports) p.lid = lid++;
        f.index();
        f.smPort = portOfPlaced.front();
        for (const Atom& a : atoms) {
            Partition p;
            p.name = a.name;
            p.pkey = a.pkey;
            f.partitions.push_back(std::move(p));
        }
        for (size_t i = 0; i < placed.size(); ++i) {
            PortFacts facts;
            facts.endpoint = portOfPlaced[i];
            facts.guid = placed[i].first;
            facts.type = kinds[placed[i].second].type;
            facts.sm = facts.endpoint == f.smPort;
            for (size_t a : kinds[placed[i].second].atoms) {
                f.partitions[a].members.push_back({facts.endpoint, true});
                facts.pkeys.insert(atoms[a].pkey);
                if (names.count(atoms[a].name)) facts.partitions.insert(atoms[a].name);
            }
            ports.push_back(std::move(facts));
        }
        // The hubs are ports too (switches past every GUID range, in no partition).
        for (uint32_t e : f.endpoints()) {
            if (std::none_of(ports.begin(), ports.end(),
                             [e](const PortFacts& p) { return p.endpoint == e; })) {
                PortFacts facts;
                facts.endpoint = e;
                facts.guid = f.ports[e].guid;
                facts.type = NodeType::Switch;
                ports.push_back(std::move(facts));
            }
        }
        answering = selecting;
        answering.partitions.clear();
        std::set<uint16_t> asked{0x7fff};
        for (std::optional<uint64_t> k : requestPkeys) {
            if (k && (*k & 0x7fff) != 0) asked.insert(static_cast<uint16_t>(*k & 0x7fff));
        }
        for (uint16_t k : asked) {
            Partition p;
            p.name = "asked-" + std::to_string(k);
            p.pkey = k;
            for (uint32_t e : answering.endpoints()) p.members.push_back({e, true});
            answering.partitions.push_back(std::move(p));
        }
    }
};

// Whether a port of the universal fabric is of a kind ibqos diff describes.
bool ofKind(const PortKind& k, const PortFacts& p) {
    auto inRanges = [](const std::vector<Range>& ranges, uint64_t v) {
        return std::any_of(ranges.begin(), ranges.end(),
                           [v](const Range& r) { return r.lo <= v && v <= r.hi; });
    };
    if (k.guids && !inRanges(*k.guids, p.guid)) return false;
    if (k.nodeTypes &&
        std::find(k.nodeTypes->begin(), k.nodeTypes->end(), p.type) == k.nodeTypes->end())
        return false;
    if (k.sm && *k.sm != p.sm) return false;
    if (k.names) return false;  // no port of the families' fabrics answers to a written name
    for (const std::string& n : k.inPartitions) {
        if (!p.partitions.count(n)) return false;
    }
    for (const std::string& n : k.notInPartitions) {
        if (p.partitions.count(n)) return false;
    }
    auto member = [&](const Range& r) {
        return std::any_of(p.pkeys.begin(), p.pkeys.end(),
                           [&](uint16_t k) { return r.lo <= k && k <= r.hi; });
    };
    return std::all_of(k.inPkeys.begin(), k.inPkeys.end(), member) &&
           std::none_of(k.notInPkeys.begin(), k.notInPkeys.end(), member);
}

// The groups of each policy that hold an endpoint.
std::vector<Bits> groupsHolding(const std::vector<const BoundPolicy*>& bound, uint32_t endpoint) {
    std::vector<Bits> out;
    for (const BoundPolicy* b : bound) {
        Bits in(b->groups.size());
        for (size_t g = 0; g < b->groups.size(); ++g) {
            if (b->groups[g].contains(*b->fabric, endpoint)) in.set(g);
        }
        out.push_back(std::move(in));
    }
    return out;
}

// The rules of a policy whose sources (or destinations) hold an endpoint, from its groups.
Bits sideRules(const Policy& p, const Bits& groups, bool source) {
    Bits out(p.rules.size());
    for (size_t r = 0; r < p.rules.size(); ++r) {
        const auto& side = source ? p.rules[r].sources : p.rules[r].destinations;
        if (side.empty() ||
            std::any_of(side.begin(), side.end(), [&](uint32_t g) { return groups.test(g); }))
            out.set(r);
    }
    return out;
}

Bits both(Bits a, const Bits& b) {
    a &= b;
    return a;
}

// Things kept apart by a key: the first of each key stands for all.
template <typename Key, typename Item>
struct Classes {
    std::map<Key, size_t> index;
    std::vector<Item> items;
    std::vector<Key> keys;
    // Returns the class's index, and whether the item is its first.
    std::pair<size_t, bool> add(const Key& key, const Item& item) {
        auto [it, fresh] = index.emplace(key, items.size());
        if (fresh) {
            items.push_back(item);
            keys.push_back(key);
        }
        return {it->second, fresh};
    }
};

// A request's field values.
struct FieldValuesOf {
    std::optional<uint64_t> qosClass, serviceId, pkey;
    void into(PathQuery& q) const {
        q.qosClass = qosClass ? std::optional<uint16_t>(*qosClass) : std::nullopt;
        q.serviceId = serviceId;
        q.pkey = pkey ? std::optional<uint16_t>(*pkey) : std::nullopt;
    }
};

// Every combination of the field values, kept apart by what `key` says of it (the rules it
// meets, and what else matters to the caller), each value's share of the key computed once.
template <typename Key>
Classes<Key, FieldValuesOf> fieldClasses(
    const RequestValues& values, const std::function<Key(int, std::optional<uint64_t>)>& part,
    const std::function<Key(const Key&, const Key&, const Key&)>& join) {
    std::vector<Key> q, s, k;
    for (std::optional<uint64_t> v : values.qosClasses) q.push_back(part(0, v));
    for (std::optional<uint64_t> v : values.serviceIds) s.push_back(part(1, v));
    for (std::optional<uint64_t> v : values.pkeys) k.push_back(part(2, v));
    Classes<Key, FieldValuesOf> out;
    for (size_t a = 0; a < q.size(); ++a)
        for (size_t b = 0; b < s.size(); ++b)
            for (size_t c = 0; c < k.size(); ++c)
                out.add(join(q[a], s[b], k[c]),
                        {values.qosClasses[a], values.serviceIds[b], values.pkeys[c]});
    return out;
}

// What OpenSM's scan decides for the requests a policy can tell apart: the rules that decide
// some request, the levels some request gets. Ends are kept apart by the rules they meet, and
// so are field values; the scan is asked once for each pair of the two.
struct Decided {
    std::vector<char> rules, levels;
};

Decided decide(const BoundPolicy& bound, const std::vector<uint32_t>& endpoints,
               const RequestValues& values) {
    const Policy& p = *bound.policy;
    Classes<Bits, uint32_t> sources, destinations;
    for (uint32_t e : endpoints) {
        const Bits groups = groupsHolding({&bound}, e)[0];
        sources.add(sideRules(p, groups, true), e);
        destinations.add(sideRules(p, groups, false), e);
    }
    Classes<Bits, std::pair<uint32_t, uint32_t>> pairs;
    for (const auto& [s, a] : sources.index)
        for (const auto& [d, b] : destinations.index)
            pairs.add(both(s, d), {sources.items[a], destinations.items[b]});
    const auto fields =
        fieldClasses<Bits>(
            values, [&](int field, std::optional<uint64_t> v) { return fieldRules(p, field, v); },
            [](const Bits& a, const Bits& b, const Bits& c) { return both(both(a, b), c); })
            .items;
    Decided d{std::vector<char>(p.rules.size()), std::vector<char>(p.levels.size())};
    PathQuery q;
    for (const auto& [source, destination] : pairs.items) {
        q.source = source;
        q.destination = destination;
        for (const FieldValuesOf& f : fields) {
            f.into(q);
            const QosMatch m = referenceMatch(bound, q);
            if (m.rule != NoRule) d.rules[m.rule] = 1;
            d.levels[m.level] = 1;
        }
    }
    return d;
}

// The findings of a brute-force check: how many requests were asked, and what went wrong
// (counted, with the first of each kind described).
struct Findings {
    uint64_t requests = 0, changed = 0;
    std::map<std::string, std::pair<uint64_t, std::string>> wrong;
    void add(const std::string& what, const std::string& example) {
        auto& w = wrong[what];
        if (w.first++ == 0) w.second = example;
    }
    std::string str() const {
        std::string out;
        for (const auto& [what, w] : wrong)
            out += what + ": " + std::to_string(w.first) + " requests, e.g. " + w.second + "\n";
        return out;
    }
};

std::string describeQuery(const Fabric& f, const PathQuery& q) {
    std::ostringstream out;
    out << std::hex << "0x" << f.ports[q.source].guid << " -> 0x" << f.ports[q.destination].guid
        << std::dec << " qos-class "
        << (q.qosClass ? std::to_string(*q.qosClass) : std::string("-")) << " service-id "
        << (q.serviceId ? std::to_string(*q.serviceId) : std::string("-")) << " pkey "
        << (q.pkey ? std::to_string(*q.pkey) : std::string("-"));
    return out.str();
}

// The regions' membership of a request, dimension by dimension.
bool holdsValue(const FieldValues& v, std::optional<uint64_t> x) {
    if (v.any) return true;
    if (v.absent) return !x;
    return x && std::any_of(v.ranges.begin(), v.ranges.end(),
                            [&](const Range& r) { return r.lo <= *x && *x <= r.hi; });
}

Bits regionsHolding(const std::vector<DiffRegion>& regions,
                    const std::function<bool(const DiffRegion&)>& holds) {
    Bits out(regions.size());
    for (size_t r = 0; r < regions.size(); ++r) {
        if (holds(regions[r])) out.set(r);
    }
    return out;
}

// Checks ibqos diff's regions against every request both policies tell apart, both ways:
// every request whose answer changes lies in a region that shows its answers, and no region
// holds a request whose answer stays (requests rejected under both may lie in one).
// `ends` are the endpoints asked from and to; `portIn(region, i, source)` says whether a
// region holds ends[i] at that end; `answers` is the fabric the SA's answers are taken on.
//
// Requests are kept apart by everything their answers and regions depend on: the rules each
// end and each field value meets, the ends' PKey tables, the requested PKey's partition, bit
// and levels, the regions holding each part, and whether the path is a port to itself. For
// each pair of ends, every class of field values is walked at once: the first rule each class
// meets, a bitset pass per rule. OpenSM's scan (referenceMatch) is the judge of those first
// rules: it is asked for several classes of every pair and several pairs of every class, and
// must agree; it also gives the answers, one request per distinct (rules, PKey class) a pair
// meets.
Findings checkRegions(const BoundPolicy& before, const BoundPolicy& after, const Fabric& answers,
                      const std::vector<uint32_t>& ends,
                      const std::function<bool(const DiffRegion&, size_t, bool)>& portIn,
                      const PolicyDiff& diff, bool pkeyKnown) {
    const Policy& a = *before.policy;
    const Policy& b = *after.policy;
    const std::vector<const Policy*> policies{&a, &b};
    const std::vector<const BoundPolicy*> bound{&before, &after};
    const std::vector<DiffRegion>& regions = diff.regions;
    const PkeyTables tables(answers);
    const RequestValues values = requestValues(policies, answers.partitions);

    // The ends: per endpoint, the rules it meets at each end under each policy, the regions
    // holding it at each end, its PKey table.
    struct End {
        Bits fromA, fromB, toA, toB, from, to;
        std::vector<uint16_t> table;
        auto tie() const { return std::tie(fromA, fromB, toA, toB, from, to, table); }
        bool operator<(const End& o) const { return tie() < o.tie(); }
    };
    Classes<End, std::vector<uint32_t>> endClasses;
    for (size_t i = 0; i < ends.size(); ++i) {
        const std::vector<Bits> groups = groupsHolding(bound, ends[i]);
        End e{sideRules(a, groups[0], true),
              sideRules(b, groups[1], true),
              sideRules(a, groups[0], false),
              sideRules(b, groups[1], false),
              regionsHolding(regions, [&](const DiffRegion& r) { return portIn(r, i, true); }),
              regionsHolding(regions, [&](const DiffRegion& r) { return portIn(r, i, false); }),
              tables.table(ends[i])};
        auto [c, fresh] = endClasses.add(e, {ends[i]});
        if (!fresh && endClasses.items[c].size() < 2) endClasses.items[c].push_back(ends[i]);
    }
    // Pairs of ends, a port to itself apart.
    const Bits loopback = regionsHolding(
        regions, [](const DiffRegion& r) { return r.loopback != Loopback::Excluded; });
    const Bits between =
        regionsHolding(regions, [](const DiffRegion& r) { return r.loopback != Loopback::Only; });
    using PairKey =
        std::tuple<Bits, Bits, Bits, std::vector<uint16_t>, std::vector<uint16_t>, bool>;
    Classes<PairKey, std::pair<uint32_t, uint32_t>> pairs;
    for (size_t i = 0; i < endClasses.items.size(); ++i) {
        for (size_t j = 0; j < endClasses.items.size(); ++j) {
            const End& s = endClasses.keys[i];
            const End& d = endClasses.keys[j];
            const auto& si = endClasses.items[i];
            const auto& dj = endClasses.items[j];
            auto add = [&](uint32_t src, uint32_t dst) {
                const bool loop = src == dst;
                pairs.add(
                    {both(s.fromA, d.toA), both(s.fromB, d.toB),
                     both(both(s.from, d.to), loop ? loopback : between), s.table, d.table, loop},
                    {src, dst});
            };
            if (i != j) {
                add(si[0], dj[0]);
            } else {
                add(si[0], si[0]);
                if (si.size() > 1) add(si[0], si[1]);
            }
        }
    }
    // Field values: the rules they meet under each policy, the regions holding them, and for a
    // PKey its partition (by its members), membership bit and the levels that list it.
    std::vector<size_t> partitionClass;
    for (size_t i = 0; i < answers.partitions.size(); ++i) {
        size_t c = i;
        for (size_t j = 0; j < i; ++j) {
            const auto& x = answers.partitions[i].members;
            const auto& y = answers.partitions[j].members;
            if (x.size() == y.size() &&
                std::equal(x.begin(), x.end(), y.begin(), [](const auto& m, const auto& n) {
                    return m.port == n.port && m.full == n.full;
                })) {
                c = j;
                break;
            }
        }
        partitionClass.push_back(c);
    }
    auto pkeyClass = [&](std::optional<uint64_t> k) {
        Bits out(2 + answers.partitions.size() + a.levels.size() + b.levels.size());
        if (!k) {
            out.set(0);
            return out;
        }
        const uint64_t base = *k & 0x7fff;
        if (*k & 0x8000) out.set(1);
        for (size_t i = 0; i < answers.partitions.size(); ++i) {
            if (base != 0 && (answers.partitions[i].pkey & 0x7fff) == base)
                out.set(2 + partitionClass[i]);
        }
        size_t at = 2 + answers.partitions.size();
        for (const Policy* p : policies) {
            for (const QosLevel& l : p->levels) {
                if (l.pkeys.contains(base)) out.set(at);
                ++at;
            }
        }
        return out;
    };
    using FieldKey = std::vector<Bits>;  // rules under a, under b, regions, PKey class
    const auto fieldClassesFound = fieldClasses<FieldKey>(
        values,
        [&](int field, std::optional<uint64_t> v) {
            FieldKey key{fieldRules(a, field, v), fieldRules(b, field, v),
                         regionsHolding(regions, [&](const DiffRegion& r) {
                             return holdsValue(field == 0   ? r.qosClasses
                                               : field == 1 ? r.serviceIds
                                                            : r.pkeys,
                                               v);
                         })};
            if (field == 2) key.push_back(pkeyClass(v));
            return key;
        },
        [](const FieldKey& x, const FieldKey& y, const FieldKey& z) {
            return FieldKey{both(both(x[0], y[0]), z[0]), both(both(x[1], y[1]), z[1]),
                            both(both(x[2], y[2]), z[2]), z[3]};
        });
    const std::vector<FieldValuesOf>& fields = fieldClassesFound.items;
    const size_t nf = fields.size();
    // Per rule and per region: the field classes it holds. Per field class: its PKey class.
    auto byRule = [&](const Policy& p, size_t which) {
        std::vector<Bits> out(p.rules.size(), Bits(nf));
        for (size_t f = 0; f < nf; ++f)
            fieldClassesFound.keys[f][which].forEach([&](size_t r) { out[r].set(f); });
        return out;
    };
    const std::vector<Bits> fieldsOfA = byRule(a, 0), fieldsOfB = byRule(b, 1);
    std::vector<Bits> fieldsOfRegion(regions.size(), Bits(nf));
    std::map<Bits, uint32_t> pkeyClasses;
    std::vector<uint32_t> pkeyClassOf;
    for (size_t f = 0; f < nf; ++f) {
        fieldClassesFound.keys[f][2].forEach([&](size_t r) { fieldsOfRegion[r].set(f); });
        pkeyClassOf.push_back(
            pkeyClasses.emplace(fieldClassesFound.keys[f][3], pkeyClasses.size()).first->second);
    }
    // The first rule of each field class among those a pair meets (NoRule: none).
    auto firstRules = [&](const Bits& pairRules, const std::vector<Bits>& fieldsOf) {
        std::vector<uint32_t> out(nf, NoRule);
        Bits open(nf);
        for (size_t f = 0; f < nf; ++f) open.set(f);
        pairRules.forEach([&](size_t r) {
            for (size_t w = 0; w < open.words.size(); ++w) {
                uint64_t hit = open.words[w] & fieldsOf[r].words[w];
                open.words[w] &= ~hit;
                for (; hit; hit &= hit - 1)
                    out[w * 64 + static_cast<size_t>(__builtin_ctzll(hit))] =
                        static_cast<uint32_t>(r);
            }
        });
        return out;
    };
    auto matchOf = [](const Policy& p, uint32_t rule) {
        return QosMatch{rule == NoRule ? p.defaultLevel : p.rules[rule].level, rule};
    };

    Findings found;
    PathQuery q;
    for (size_t pi = 0; pi < pairs.items.size(); ++pi) {
        const auto& [rulesA, rulesB, endRegions, ta, tb, loop] = pairs.keys[pi];
        q.source = pairs.items[pi].first;
        q.destination = pairs.items[pi].second;
        const std::vector<uint32_t> firstA = firstRules(rulesA, fieldsOfA);
        const std::vector<uint32_t> firstB = firstRules(rulesB, fieldsOfB);
        std::vector<size_t> region(nf, SIZE_MAX);
        {
            std::vector<Bits> held;
            Bits open(nf);
            for (size_t f = 0; f < nf; ++f) open.set(f);
            endRegions.forEach([&](size_t r) {
                for (size_t w = 0; w < open.words.size(); ++w) {
                    uint64_t hit = open.words[w] & fieldsOfRegion[r].words[w];
                    open.words[w] &= ~hit;
                    for (; hit; hit &= hit - 1)
                        region[w * 64 + static_cast<size_t>(__builtin_ctzll(hit))] = r;
                }
            });
        }
        // OpenSM's scan judges the first rules: three classes of every pair, and every class
        // in some pair.
        for (size_t f : {pi % nf, (pi * 7919 + 1) % nf, (pi * 104729 + 2) % nf}) {
            fields[f].into(q);
            if (referenceMatch(before, q).rule != firstA[f] ||
                referenceMatch(after, q).rule != firstB[f])
                found.add("OpenSM's scan disagrees with the rules the brute force found first",
                          describeQuery(answers, q));
        }
        if (pi < nf) {
            for (size_t f = pi; f < nf; f += pairs.items.size()) {
                fields[f].into(q);
                if (referenceMatch(before, q).rule != firstA[f] ||
                    referenceMatch(after, q).rule != firstB[f])
                    found.add("OpenSM's scan disagrees with the rules the brute force found first",
                              describeQuery(answers, q));
            }
        }
        // The answers, one request per distinct (first rules, PKey class).
        std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<PathAnswer, PathAnswer>> memo;
        for (size_t f = 0; f < nf; ++f) {
            ++found.requests;
            auto [it, fresh] = memo.try_emplace({firstA[f], firstB[f], pkeyClassOf[f]});
            if (fresh) {
                fields[f].into(q);
                it->second = {answerPath(a, tables, q, matchOf(a, firstA[f])),
                              answerPath(b, tables, q, matchOf(b, firstB[f]))};
            }
            const PathAnswer& x = it->second.first;
            const PathAnswer& y = it->second.second;
            const bool changes = answersDiffer(a, x, b, y);  // the contract's definition
            found.changed += changes;
            const size_t r = region[f];
            if (!changes) {
                if (r != SIZE_MAX && (x.ok() || y.ok())) {
                    fields[f].into(q);
                    found.add("a region holds a request whose answer stays",
                              describeQuery(answers, q) + " (region " + std::to_string(r) + ")");
                }
                continue;
            }
            fields[f].into(q);
            if (r == SIZE_MAX) {
                found.add("a request whose answer changes lies in no region",
                          describeQuery(answers, q) + ": " + describeAnswer(a, x) + " -> " +
                              describeAnswer(b, y));
                continue;
            }
            // The region shows the answers (packet life as a path between two ports has it;
            // the PKey answered is the one of the class's request).
            const DiffRegion& shown = regions[r];
            auto same = [&, loop = loop, fresh = fresh](const PathAnswer& want,
                                                        const PathAnswer& got) {
                return want.ok() == got.ok() &&
                       (!want.ok() ||
                        (want.sl == got.sl && want.mtuLimit == got.mtuLimit &&
                         want.rateLimit == got.rateLimit &&
                         (loop || want.packetLife == got.packetLife) &&
                         (!pkeyKnown || !shown.pkeyKnown || !fresh || want.pkey == got.pkey)));
            };
            // A region that shows no PKey holds only requests whose PKey stays.
            if (!same(x, shown.before) || !same(y, shown.after) ||
                (pkeyKnown && !shown.pkeyKnown && (!x.ok() || !y.ok() || x.pkey != y.pkey)))
                found.add("a region shows other answers than its requests get",
                          describeQuery(answers, q) + ": " + describeAnswer(a, x) + " -> " +
                              describeAnswer(b, y) + "; region " + std::to_string(r) + ": " +
                              describeAnswer(a, shown.before, pkeyKnown) + " -> " +
                              describeAnswer(b, shown.after, pkeyKnown));
        }
    }
    return found;
}

// The families' cases: each family with and without qos-ulps, from fixed seeds.
struct FamilyCase {
    Family family;
    bool ulps;
};
std::vector<FamilyCase> familyCases() {
    std::vector<FamilyCase> out;
    for (Family f : test::Families) {
        for (bool ulps : {false, true}) out.push_back({f, ulps});
    }
    return out;
}

const Change Changes[] = {Change::LevelSl, Change::RuleDropped, Change::RangeMoved,
                          Change::LevelLimits, Change::Bandwidth};

// A family's policy, compiled with every rule decided (an unlimited analysis budget).
std::unique_ptr<test::Compiled> compiledFamily(const FamilyCase& c, uint64_t seed,
                                               Change change = Change::None,
                                               unsigned rules = Rules) {
    auto out = std::make_unique<test::Compiled>(
        test::familyPolicy(familyOptions(c.family, c.ulps, seed, change, rules)), 0);
    REQUIRE(out->codes().empty());
    return out;
}

// A family's shadowed-rule verdicts against OpenSM's scan on a port of every kind; counts the
// rules found dead and alive.
void checkShadowed(const FamilyCase& c, uint64_t seed, unsigned rules, int& dead, int& alive) {
    INFO(caseName(c.family, c.ulps, seed) << ", " << rules << " rules");
    const auto compiled = compiledFamily(c, seed, Change::None, rules);
    REQUIRE(compiled->codes(Severity::Note).empty());  // every rule decided
    const Policy& p = compiled->policy;
    REQUIRE(p.rules.size() >= 30);
    const RequestValues values = requestValues({&p}, {});
    const Universe every({&p}, values.pkeys);
    Diagnostics ignored;
    const BoundPolicy bound = bindPolicy(p, every.selecting, ignored);
    const Decided d = decide(bound, every.selecting.endpoints(), values);
    for (uint32_t r = 0; r < p.rules.size(); ++r) {
        INFO("rule at line " << p.rules[r].location.line << "\n" << compiled->source.text());
        CHECK(p.rules[r].shadowed == !d.rules[r]);
        (d.rules[r] ? alive : dead) += 1;
    }
}

// A family's unreachable rules and levels on a fabric against OpenSM's scan there; counts the
// rules found unreachable and reachable.
void checkUnreachable(const FamilyCase& c, uint64_t seed, unsigned rules, int& unreachable,
                      int& reachable) {
    INFO(caseName(c.family, c.ulps, seed) << ", " << rules << " rules");
    const auto compiled = compiledFamily(c, seed, Change::None, rules);
    const Policy& p = compiled->policy;
    const Fabric fabric = familyFabric(seed);
    Diagnostics d;
    const BoundPolicy bound = bindPolicy(p, fabric, d);
    checkReachability(bound, d, 0);
    std::set<uint32_t> rulesWarned, levelsWarned;
    for (const Diagnostic& x : d.all()) {
        REQUIRE(x.code != "reachability-undecided");
        if (x.code == "unreachable-rule") rulesWarned.insert(x.location.line);
        if (x.code == "unreachable-level") levelsWarned.insert(x.location.line);
    }
    const Decided decided =
        decide(bound, fabric.endpoints(), requestValues({&p}, fabric.partitions));
    for (uint32_t r = 0; r < p.rules.size(); ++r) {
        const uint32_t line = p.rules[r].location.line;
        INFO("rule at line " << line << "\n" << compiled->source.text());
        if (p.rules[r].shadowed) {
            CHECK_FALSE(decided.rules[r]);
            continue;
        }
        CHECK(rulesWarned.count(line) == (decided.rules[r] ? 0u : 1u));
        (decided.rules[r] ? reachable : unreachable) += 1;
    }
    for (uint32_t l = 0; l < p.levels.size(); ++l) {
        if (p.levels[l].generated) continue;
        INFO("level " << p.levels[l].name);
        CHECK(levelsWarned.count(p.levels[l].location.line) + p.levels[l].unused ==
              (decided.levels[l] ? 0u : 1u));
    }
}

}  // namespace

TEST_CASE("shadowed-rule verdicts on every family equal OpenSM's scan on a port of every kind",
          "[sa-matcher][oracle]") {
    int dead = 0, alive = 0;
    for (const FamilyCase& c : familyCases()) {
        for (uint64_t seed : {1, 2}) checkShadowed(c, seed, Rules, dead, alive);
    }
    CHECK(dead >= 20);
    CHECK(alive >= 200);
}

TEST_CASE("unreachable rules and levels on every family equal OpenSM's scan on a fabric",
          "[sa-matcher][oracle]") {
    int unreachable = 0, reachable = 0;
    for (const FamilyCase& c : familyCases()) {
        for (uint64_t seed : {3, 4}) checkUnreachable(c, seed, Rules, unreachable, reachable);
    }
    CHECK(unreachable >= 50);
    CHECK(reachable >= 100);
}

TEST_CASE(
    "dead and unreachable rules equal OpenSM's scan where the judgement looks among the "
    "largest rules first",
    "[sa-matcher][oracle]") {
    // Enough rules for several tiers of extent, and so for the index of the largest rules
    // (RequestSpace::TopIndexRules): the families whose rules the judgement covers in many rounds.
    // (Shifted on every fabric is left out: OpenSM's scan of every port kind takes seconds.)
    constexpr unsigned Many = 320;
    int dead = 0, alive = 0, unreachable = 0, reachable = 0;
    checkShadowed({Family::SameRanges, false}, 5, Many, dead, alive);
    for (Family f : {Family::Shifted, Family::SameRanges})
        checkUnreachable({f, false}, 6, Many, unreachable, reachable);
    CHECK(dead >= 20);
    CHECK(unreachable >= 20);
}

TEST_CASE("ibqos diff on a fabric: on every family, the regions hold exactly the changed requests",
          "[sa-matcher][oracle]") {
    uint64_t changed = 0, requests = 0;
    for (const FamilyCase& c : familyCases()) {
        for (uint64_t seed : {5}) {
            const Change change =
                Changes[(static_cast<uint64_t>(c.family) * 2 + c.ulps) % std::size(Changes)];
            INFO(caseName(c.family, c.ulps, seed, change));
            const auto before = compiledFamily(c, seed);
            const auto after = compiledFamily(c, seed, change);
            REQUIRE(after->policy.rules.size() >= 30);
            const Fabric fabric = familyFabric(seed);
            Diagnostics d;
            const BoundPolicy x = bindPolicy(before->policy, fabric, d);
            const BoundPolicy y = bindPolicy(after->policy, fabric, d);
            const std::optional<PolicyDiff> diff = diffPolicies(x, y);
            REQUIRE(diff);
            const std::vector<uint32_t>& ends = fabric.endpoints();
            const Findings found = checkRegions(
                x, y, fabric, ends,
                [&](const DiffRegion& r, size_t i, bool source) {
                    const auto& list = source ? r.sources : r.destinations;
                    return (source ? r.anySource : r.anyDestination) || list.contains(ends[i]);
                },
                *diff, true);
            INFO(found.str() << before->source.text());
            CHECK(found.wrong.empty());
            CHECK(diff->regions.empty() == (found.changed == 0));
            changed += found.changed;
            requests += found.requests;
        }
    }
    CHECK(changed >= 1000);
}

TEST_CASE(
    "ibqos diff on every fabric: on every family, the regions hold exactly the changed "
    "requests",
    "[sa-matcher][oracle]") {
    uint64_t changed = 0, requests = 0;
    for (const FamilyCase& c : familyCases()) {
        for (uint64_t seed : {7}) {
            const Change change =
                Changes[(static_cast<uint64_t>(c.family) * 2 + c.ulps + 1) % std::size(Changes)];
            INFO(caseName(c.family, c.ulps, seed, change));
            const auto before = compiledFamily(c, seed);
            const auto after = compiledFamily(c, seed, change);
            const std::optional<PolicyDiff> diff = diffPolicies(before->policy, after->policy);
            REQUIRE(diff);
            const std::vector<const Policy*> both{&before->policy, &after->policy};
            const Universe every(both, requestValues(both, {}).pkeys);
            Diagnostics d;
            const BoundPolicy x = bindPolicy(before->policy, every.selecting, d);
            const BoundPolicy y = bindPolicy(after->policy, every.selecting, d);
            std::vector<uint32_t> ends;
            for (const PortFacts& p : every.ports) ends.push_back(p.endpoint);
            auto holds = [&](const std::vector<PortKind>& kinds, bool any, size_t i) {
                return any || std::any_of(kinds.begin(), kinds.end(), [&](const PortKind& k) {
                           return ofKind(k, every.ports[i]);
                       });
            };
            const Findings found = checkRegions(
                x, y, every.answering, ends,
                [&](const DiffRegion& r, size_t i, bool source) {
                    return source ? holds(r.sourceKinds, r.anySource, i)
                                  : holds(r.destinationKinds, r.anyDestination, i);
                },
                *diff, false);
            INFO(found.str() << before->source.text());
            CHECK(found.wrong.empty());
            CHECK(diff->regions.empty() == (found.changed == 0));
            // Tables: only a bandwidth change changes a qos-setup scope.
            CHECK(diff->scopes.empty() == (change != Change::Bandwidth));
            changed += found.changed;
            requests += found.requests;
        }
    }
    CHECK(changed >= 1000);
}
