// SPDX-License-Identifier: MIT
// The requests whose SA answer changes between two policies, on the request space of both
// (compiler/request_space.hpp), and the qos-setup scopes that change.
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
#include "sa-matcher/policy_diff.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <initializer_list>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos {

namespace {

using Ref = DecisionDiagram::Ref;

// What a level makes of an answer, as far as the level decides it: levels with equal keys
// never answer a request differently.
auto levelKey(const QosLevel& l) {
    return std::make_tuple(answeredSl(l.sl), l.sl, l.mtuLimit, l.rateLimit,
                           l.packetLife ? std::optional<uint8_t>(*l.packetLife & 63) : std::nullopt,
                           l.pkeys.ranges());
}

// What a region keeps apart: the two answers, without the deciding rule.
using AnswerKey = std::tuple<bool, uint32_t, uint8_t, std::optional<uint8_t>,
                             std::optional<uint8_t>, std::optional<uint8_t>, uint16_t, Rejection>;
AnswerKey keyOf(const PathAnswer& a) {
    return {a.ok(),      a.match.level, a.sl,   a.mtuLimit,
            a.rateLimit, a.packetLife,  a.pkey, a.rejection};
}

// A loopback path's packet life put back to the level's, so that it shows as a path between
// two ports does.
PathAnswer asNonLoopback(const Policy& policy, PathAnswer a) {
    const QosLevel& level = policy.levels[a.match.level];
    a.packetLife = level.packetLife ? std::optional<uint8_t>(*level.packetLife & 63) : std::nullopt;
    return a;
}

// The answer on a fabric where both ends share every partition (what every fabric allows):
// only the level can reject, by its SL or by a requested PKey it does not list.
PathAnswer answerEverywhere(const Policy& policy, QosMatch match, std::optional<uint16_t> pkey) {
    const QosLevel& level = policy.levels[match.level];
    PathAnswer a = levelAnswer(policy, match);
    if (!answeredSl(level.sl)) {
        a.rejection = Rejection::InvalidSl;
    } else if (pkey && !level.pkeys.empty() && !level.pkeys.contains(ib::pkeyBase(*pkey))) {
        a.rejection = Rejection::PkeyNotInLevel;
    }
    return a;
}

// Index ranges as value ranges of a field (index 0, absent, left out).
std::vector<Range> valuesOf(const RequestSpace& space, RequestField f, const IndexRanges& set) {
    std::vector<Range> out;
    for (const Range& r : set) {
        for (uint64_t i = std::max<uint64_t>(r.lo, 1); i <= r.hi; ++i) {
            const Range v = space.fieldInterval(f, i);
            if (!out.empty() && out.back().hi + 1 == v.lo) {
                out.back().hi = v.hi;
            } else {
                out.push_back(v);
            }
        }
    }
    return out;
}

bool holdsIndex(const IndexRanges& set, uint64_t i) {
    return std::any_of(set.begin(), set.end(),
                       [i](const Range& r) { return r.lo <= i && i <= r.hi; });
}

uint64_t countOf(const IndexRanges& set) {
    uint64_t n = 0;
    for (const Range& r : set) n += r.hi - r.lo + 1;
    return n;
}

// A field's values in a product, split into what a region can say: every value and absent
// (any), only absent, and ranges of values.
std::vector<FieldValues> fieldParts(const RequestSpace& space, RequestField f, uint64_t size,
                                    const IndexRanges& set) {
    if (countOf(set) == size) return {FieldValues{true, false, {}}};
    std::vector<FieldValues> out;
    if (holdsIndex(set, 0)) out.push_back(FieldValues{false, true, {}});
    std::vector<Range> values = valuesOf(space, f, set);
    if (!values.empty()) out.push_back(FieldValues{false, false, std::move(values)});
    return out;
}

// What joined regions share besides their dimensions: the two answers (without the deciding
// rule), which paths, and whether the PKey answered is known.
struct RegionKey {
    AnswerKey before, after;
    Loopback loopback;
    bool pkeyKnown;
    bool operator==(const RegionKey&) const = default;
};

// Hashes of the parts regions are made of (a collision costs time, never a wrong answer).
struct Mix {
    uint64_t h = 0xcbf29ce484222325;
    void add(uint64_t v) {
        h = (h ^ v) * 0x100000001b3;
        h ^= h >> 32;
    }
    template <typename T>
    void add(const std::optional<T>& v) {
        add(v ? uint64_t{*v} + 1 : 0);
    }
};

size_t hashOf(const std::vector<uint32_t>& list) {
    Mix m;
    for (uint32_t v : list) m.add(v);
    return m.h;
}

size_t hashOf(const std::vector<uint64_t>& list) {
    Mix m;
    for (uint64_t v : list) m.add(v);
    return m.h;
}

size_t hashOf(const FieldValues& v) {
    Mix m;
    m.add(uint64_t{v.any} | uint64_t{v.absent} << 1);
    for (const Range& r : v.ranges) {
        m.add(r.lo);
        m.add(r.hi);
    }
    return m.h;
}

size_t hashOf(const RegionKey& k) {
    Mix m;
    for (const AnswerKey* a : {&k.before, &k.after}) {
        const auto& [ok, level, sl, mtu, rate, life, pkey, rejection] = *a;
        m.add(uint64_t{ok} | uint64_t{sl} << 1 | uint64_t{pkey} << 8 |
              static_cast<uint64_t>(rejection) << 24);
        m.add(level);
        m.add(mtu);
        m.add(rate);
        m.add(life);
    }
    m.add(static_cast<uint64_t>(k.loopback) << 1 | uint64_t{k.pkeyKnown});
    return m.h;
}

// Values kept once each and named by their number, in the order they first came.
template <typename T>
class Interned {
  public:
    // The value's number, and whether it is new.
    std::pair<uint32_t, bool> add(T value) {
        auto [it, fresh] =
            ids_.try_emplace(std::move(value), static_cast<uint32_t>(values_.size()));
        if (fresh) values_.push_back(&it->first);
        return {it->second, fresh};
    }
    uint32_t id(T value) { return add(std::move(value)).first; }
    const T& operator[](uint32_t id) const { return *values_[id]; }

  private:
    struct Hash {
        size_t operator()(const T& v) const { return hashOf(v); }
    };
    std::unordered_map<T, uint32_t, Hash> ids_;
    std::vector<const T*> values_;  // into ids_'s keys (a node-based map never moves them)
};

// The parts regions are made of, each kept once: regions are collected and joined as a few
// numbers (PackedRegion), and written out as DiffRegions only at the end.
struct RegionParts {
    Interned<RegionKey> keys;
    std::vector<std::pair<PathAnswer, PathAnswer>> answers;  // per key: the first answers
    Interned<FieldValues> fields;
    // Sorted lists: of classes (a fabric's ends), of kinds (an end on every fabric; empty: any
    // port), of rules.
    Interned<std::vector<uint32_t>> lists;
    std::vector<PortKind> kinds;  // each made once, from a product's ranges at one end

    uint32_t answersOf(const PathAnswer& before, const PathAnswer& after, Loopback loopback,
                       bool pkeyKnown) {
        auto [id, fresh] = keys.add({keyOf(before), keyOf(after), loopback, pkeyKnown});
        if (fresh) answers.emplace_back(before, after);
        return id;
    }
    uint32_t kindOf(PortKind kind) {
        kinds.push_back(std::move(kind));
        return static_cast<uint32_t>(kinds.size() - 1);
    }
};

// A region as numbers into RegionParts.
struct PackedRegion {
    uint32_t key = 0;  // RegionParts::keys
    // Its dimensions, in the order they are joined: QoS classes, service IDs, PKeys
    // (RegionParts::fields), sources, destinations (RegionParts::lists).
    std::array<uint32_t, 5> dims{};
    uint32_t beforeRules = 0, afterRules = 0;  // RegionParts::lists
};

constexpr size_t SourceDim = 3, DestinationDim = 4;

// The sorted union of lists.
uint32_t listUnion(RegionParts& parts, const std::vector<uint32_t>& ids) {
    std::vector<uint32_t> all;
    for (uint32_t id : ids) all.insert(all.end(), parts.lists[id].begin(), parts.lists[id].end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return parts.lists.id(std::move(all));
}

// Joins regions with the same answers that differ in one dimension only, one dimension after
// the other: the union along that dimension is a product too. A region joins the first one
// before it that matches it in every other part.
std::vector<PackedRegion> joinRegions(std::vector<PackedRegion> regions, RegionParts& parts) {
    using Key = std::array<uint32_t, 6>;
    struct KeyHash {
        size_t operator()(const Key& k) const {
            Mix m;
            for (uint32_t v : k) m.add(v);
            return m.h;
        }
    };
    for (size_t dim = 0; dim < 5; ++dim) {
        std::unordered_map<Key, uint32_t, KeyHash> index;
        index.reserve(regions.size());
        std::vector<PackedRegion> joined;
        joined.reserve(regions.size());
        // Per joined region: the regions joined into it (their indices), itself first.
        std::vector<std::vector<uint32_t>> members;
        members.reserve(regions.size());
        for (uint32_t i = 0; i < regions.size(); ++i) {
            const PackedRegion& r = regions[i];
            // A field joins by its ranges ("any" and "absent" stand as they are); an end by its
            // list ("any port" stands as it is). A loopback-only region is one set of ports at
            // both ends: it joins by neither.
            const bool joins = dim < SourceDim ? !parts.fields[r.dims[dim]].any &&
                                                     !parts.fields[r.dims[dim]].absent
                                               : parts.keys[r.key].loopback != Loopback::Only &&
                                                     !parts.lists[r.dims[dim]].empty();
            Key key{r.key, r.dims[0], r.dims[1], r.dims[2], r.dims[3], r.dims[4]};
            key[1 + dim] = UINT32_MAX;
            const auto [it, fresh] =
                joins ? index.try_emplace(key, static_cast<uint32_t>(joined.size()))
                      : std::make_pair(index.end(), true);
            if (fresh) {
                joined.push_back(r);
                members.push_back({i});
            } else {
                members[it->second].push_back(i);
            }
        }
        for (size_t j = 0; j < joined.size(); ++j) {
            if (members[j].size() == 1) continue;
            PackedRegion& into = joined[j];
            std::vector<uint32_t> dims, before, after;
            std::vector<Range> ranges;
            for (uint32_t i : members[j]) {
                const PackedRegion& r = regions[i];
                if (dim < SourceDim) {
                    const std::vector<Range>& more = parts.fields[r.dims[dim]].ranges;
                    ranges.insert(ranges.end(), more.begin(), more.end());
                } else {
                    dims.push_back(r.dims[dim]);
                }
                before.push_back(r.beforeRules);
                after.push_back(r.afterRules);
            }
            into.dims[dim] = dim < SourceDim
                                 ? parts.fields.id(FieldValues{
                                       false, false, RangeSet::build(std::move(ranges)).ranges()})
                                 : listUnion(parts, dims);
            into.beforeRules = listUnion(parts, before);
            into.afterRules = listUnion(parts, after);
        }
        regions = std::move(joined);
    }
    return regions;
}

// A region as the diff gives it (on a fabric its ends as membership classes).
// classes: the fabric's membership classes, or null without a fabric.
DiffRegion unpack(const PackedRegion& p, const RegionParts& parts,
                  const std::shared_ptr<const EndpointSet::Classes>& classes) {
    DiffRegion r;
    const RegionKey& key = parts.keys[p.key];
    r.before = parts.answers[p.key].first;
    r.after = parts.answers[p.key].second;
    r.loopback = key.loopback;
    r.pkeyKnown = key.pkeyKnown;
    r.qosClasses = parts.fields[p.dims[0]];
    r.serviceIds = parts.fields[p.dims[1]];
    r.pkeys = parts.fields[p.dims[2]];
    r.beforeRules = parts.lists[p.beforeRules];
    r.afterRules = parts.lists[p.afterRules];
    const std::vector<uint32_t>& sources = parts.lists[p.dims[SourceDim]];
    const std::vector<uint32_t>& destinations = parts.lists[p.dims[DestinationDim]];
    if (classes) {
        r.sources = EndpointSet(classes, sources);
        r.destinations = EndpointSet(classes, destinations);
    } else {
        r.sourceKinds.reserve(sources.size());
        for (uint32_t k : sources) r.sourceKinds.push_back(parts.kinds[k]);
        r.destinationKinds.reserve(destinations.size());
        for (uint32_t k : destinations) r.destinationKinds.push_back(parts.kinds[k]);
        r.anySource = sources.empty();
        r.anyDestination = destinations.empty();
    }
    return r;
}

// The rules of the two policies with the same conditions (ranges, and groups that hold the same
// ports), paired in order: the longest common prefix and suffix. partner[p][r] is the other
// policy's rule, or NoRule.
struct Pairing {
    std::vector<uint32_t> partner[2];
    size_t unpaired = 0;
};

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

class Differ {
  public:
    // pkeys: on a fabric, the PKey tables before and after (partitions.conf may change too).
    Differ(RequestSpace& space, std::array<const PkeyTables*, 2> pkeys, Pairing pairing,
           RegionParts& parts)
        : space_(space),
          dd_(space.diagram()),
          pkeys_(pkeys),
          pairing_(std::move(pairing)),
          parts_(parts) {
        using DK = RequestSpace::DimKind;
        for (size_t p = 0; p < 2; ++p)
            reach_[p].assign(space_.policy(p).rules.size(), std::nullopt);
        for (const RequestSpace::Dimension& d : space_.dimensions()) sizes_.push_back(d.size);
        qosDim_ = dimOf(DK::Field, RequestField::QosClass);
        sidDim_ = dimOf(DK::Field, RequestField::ServiceId);
        pkeyDim_ = dimOf(DK::Field, RequestField::Pkey);
        if (pkeys_[0]) {
            for (const std::vector<uint32_t>& c : space_.classes()) {
                if (!c.empty() && pkeys_[0]->table(c.front()) != pkeys_[1]->table(c.front()))
                    pkeysChange_ = true;
            }
            classDims_[0] = dimOf(DK::Classes, {}, RequestSpace::Ends::Source);
            classDims_[1] = dimOf(DK::Classes, {}, RequestSpace::Ends::Destination);
        }
        pkeyAnswers_.assign(sizes_[pkeyDim_], NoChange);
        const auto& dims = space_.dimensions();
        while (sourceFrom_ < dims.size() && dims[sourceFrom_].kind == DK::Field) ++sourceFrom_;
        destinationFrom_ = sourceFrom_;
        while (destinationFrom_ < dims.size() && dims[destinationFrom_].kind != DK::Field &&
               dims[destinationFrom_].end == RequestSpace::Ends::Source)
            ++destinationFrom_;
        for (size_t d = sourceFrom_; d < dims.size(); ++d) {
            if (dims[d].kind == DK::Field ||
                (d >= destinationFrom_) != (dims[d].end == RequestSpace::Ends::Destination))
                throw std::logic_error("Differ: the fields, sources and destinations interleave");
        }
    }

    std::vector<PackedRegion> run() {
        const auto oldRules = static_cast<uint32_t>(space_.policy(0).rules.size());
        const auto newRules = static_cast<uint32_t>(space_.policy(1).rules.size());
        // With few unpaired rules, only what they match is walked in full.
        if (pairing_.unpaired <= std::max<size_t>(8, (oldRules + newRules) / 8))
            return runPaired(oldRules, newRules);
        // Old rule by old rule: which new rule gets each part of its reach.
        for (uint32_t i = 0; i < oldRules; ++i)
            splitByNewRules(i, reach(0, i), [this](uint32_t k) { return reach(1, k); });
        // What no old rule matches, new rule by new rule.
        for (uint32_t k = 0; k < newRules; ++k) {
            if (!differ(oldRules, k)) continue;
            piece(outside(0, reach(1, k), space_.overlapping(0, oldRules, 1, k)), oldRules, k);
        }
        // What neither matches.
        if (differ(oldRules, newRules)) {
            Ref rest = DecisionDiagram::True;
            for (size_t p = 0; p < 2; ++p) {
                const auto n = static_cast<uint32_t>(space_.policy(p).rules.size());
                std::vector<uint32_t> all(n);
                std::iota(all.begin(), all.end(), 0u);
                rest = outside(p, rest, all);
            }
            piece(rest, oldRules, newRules);
        }
        return std::move(regions_);
    }

  private:
    RequestSpace& space_;
    DecisionDiagram& dd_;
    RequestSpace::LookupRoom room_;
    std::array<const PkeyTables*, 2> pkeys_;  // on a fabric: before, after
    bool pkeysChange_ = false;                // some port's PKey table differs between them
    Pairing pairing_;
    std::vector<std::optional<Ref>> reach_[2];
    std::vector<std::optional<Ref>> reachInX_[2];
    Ref unpairedX_ = DecisionDiagram::False;

    std::vector<PackedRegion> runPaired(uint32_t oldRules, uint32_t newRules) {
        // X: the requests some unpaired rule matches; the rules that may meet it.
        std::set<uint32_t> meeting[2];
        for (size_t p = 0; p < 2; ++p) {
            const auto n = static_cast<uint32_t>(space_.policy(p).rules.size());
            for (uint32_t r = 0; r < n; ++r) {
                if (pairing_.partner[p][r] != NoRule) continue;
                unpairedX_ = dd_.disj(unpairedX_, space_.rule(p, r));
                for (size_t q = 0; q < 2; ++q) {
                    const auto all = static_cast<uint32_t>(space_.policy(q).rules.size());
                    for (uint32_t i : space_.overlapping(q, all, p, r)) meeting[q].insert(i);
                    dd_.spend(1 + meeting[q].size() / 8);
                }
            }
        }
        for (size_t p = 0; p < 2; ++p) reachInX_[p].assign(space_.policy(p).rules.size(), {});
        const Ref outsideX = dd_.negate(unpairedX_);
        // Outside X: a pair whose levels answer differently changes its whole reach there.
        for (uint32_t i = 0; i < oldRules; ++i) {
            const uint32_t k = pairing_.partner[0][i];
            if (k == NoRule || !differ(i, k)) continue;
            piece(dd_.conj(reach(0, i), outsideX), i, k);
        }
        if (differ(oldRules, newRules)) {
            // Matched by no rule in either policy (outside X the rules are the pairs').
            std::vector<uint32_t> all(oldRules);
            std::iota(all.begin(), all.end(), 0u);
            piece(outside(0, outsideX, all), oldRules, newRules);
        }
        if (unpairedX_ == DecisionDiagram::False) return std::move(regions_);
        // Inside X, the full walk, every reach cut to X.
        for (uint32_t i : meeting[0])
            splitByNewRules(i, reachInX(0, i), [this](uint32_t k) { return reachInX(1, k); });
        for (uint32_t k : meeting[1]) {
            if (!differ(oldRules, k)) continue;
            piece(outside(0, reachInX(1, k), space_.overlapping(0, oldRules, 1, k)), oldRules, k);
        }
        return std::move(regions_);
    }

    // Splits `rest`, requests old rule i gets first, by the new rule that gets each part first
    // (newReach gives a new rule's reach), into pieces.
    template <typename NewReach>
    void splitByNewRules(uint32_t i, Ref rest, NewReach&& newReach) {
        const auto newRules = static_cast<uint32_t>(space_.policy(1).rules.size());
        while (rest != DecisionDiagram::False) {
            dd_.spend(space_.pointSteps() + space_.lookupSteps(1, newRules));
            const std::optional<uint32_t> k =
                space_.firstMatch(1, space_.pointIn(rest), newRules, room_);
            const Ref part = k ? dd_.conj(rest, newReach(*k))
                               : outside(1, rest, space_.overlapping(1, newRules, 0, i));
            if (part == DecisionDiagram::False)
                throw std::logic_error("Differ: a request lies in no rule's reach");
            piece(part, i, k.value_or(newRules));
            rest = dd_.minus(rest, part);
        }
    }

    // The requests rule r of policy p gets first, inside X.
    Ref reachInX(size_t p, uint32_t r) {
        std::optional<Ref>& memo = reachInX_[p][r];
        if (!memo) {
            memo = outsideEarlier(p, dd_.conj(space_.rule(p, r), unpairedX_), r);
        }
        return *memo;
    }
    std::vector<uint64_t> sizes_;
    size_t qosDim_ = 0, sidDim_ = 0, pkeyDim_ = 0, classDims_[2] = {};
    RegionParts& parts_;
    std::vector<PackedRegion> regions_;
    // Every fabric, per PKey index: the answers' key in the current piece (NoChange: they do
    // not change).
    static constexpr uint32_t NoChange = UINT32_MAX;
    std::vector<uint32_t> pkeyAnswers_;
    // What a product's index ranges come to (onceFor), and a key of it being written.
    struct RangesHash {
        size_t operator()(const std::vector<uint64_t>& v) const { return hashOf(v); }
    };
    std::unordered_map<std::vector<uint64_t>, std::vector<uint32_t>, RangesHash> cubeParts_;
    std::vector<uint64_t> rangesKey_;
    // Every fabric: the dimensions of the fields, of the source and of the destination are
    // [0, sourceFrom_), [sourceFrom_, destinationFrom_) and the rest; the ends below a node
    // (endsBelow, destinationsBelow).
    size_t sourceFrom_ = 0, destinationFrom_ = 0;
    std::unordered_map<Ref, std::vector<std::pair<uint32_t, uint32_t>>> endsBelow_;
    std::unordered_map<Ref, uint32_t> destinationsBelow_;

    const Policy& policy(size_t p) const { return space_.policy(p); }

    uint32_t levelOf(size_t p, uint32_t rule) const {
        return rule < policy(p).rules.size() ? policy(p).rules[rule].level : policy(p).defaultLevel;
    }

    // Whether the levels of two rules (the default past the last rule) can answer differently.
    // Whether requests one rule gets before and another after may change answer: their levels
    // answer differently, or the ports' PKey tables change (partitions.conf is edited too).
    bool differ(uint32_t oldRule, uint32_t newRule) const {
        return pkeysChange_ || levelKey(policy(0).levels[levelOf(0, oldRule)]) !=
                                   levelKey(policy(1).levels[levelOf(1, newRule)]);
    }

    // f without the requests any of `rules` of policy p matches.
    Ref outside(size_t p, Ref f, const std::vector<uint32_t>& rules) {
        for (uint32_t r : rules) {
            if (f == DecisionDiagram::False) break;
            f = dd_.minus(f, space_.rule(p, r));
        }
        return f;
    }

    // f, requests rule r of policy p matches, without those an earlier rule gets: the earlier
    // rules that may meet it taken out widest first, which leaves less to work on for the rest
    // (and often nothing soon).
    Ref outsideEarlier(size_t p, Ref f, uint32_t r) {
        std::vector<uint32_t> earlier = space_.overlapping(p, r, p, r);
        std::stable_sort(earlier.begin(), earlier.end(), [&](uint32_t a, uint32_t b) {
            return space_.extent(p, a) > space_.extent(p, b);
        });
        return outside(p, f, earlier);
    }

    // The requests rule r of policy p gets first.
    Ref reach(size_t p, uint32_t r) {
        std::optional<Ref>& memo = reach_[p][r];
        if (!memo) memo = outsideEarlier(p, space_.rule(p, r), r);
        return *memo;
    }

    // A piece of requests decided by one old and one new rule.
    void piece(Ref part, uint32_t oldRule, uint32_t newRule) {
        if (part == DecisionDiagram::False || !differ(oldRule, newRule)) return;
        const QosMatch before{levelOf(0, oldRule),
                              oldRule < policy(0).rules.size() ? oldRule : NoRule};
        const QosMatch after{levelOf(1, newRule),
                             newRule < policy(1).rules.size() ? newRule : NoRule};
        if (pkeys_[0]) {
            space_.cubes(part,
                         [&](const RequestCube& cube) { regionsOf(cube, before, after, nullptr); });
            return;
        }
        // Every fabric: the products of the fields, each with the ends of the requests below
        // it, listed once per diagram node (a union of kinds of port at each end).
        part = cutToChangingPkeys(part, before, after);
        RequestCube cube;
        cube.dims.resize(space_.dimensions().size());
        products(part, 0, sourceFrom_, cube, [&](const RequestCube& fields, Ref below) {
            regionsOf(fields, before, after, &endsBelow(below));
        });
    }

    // The products of diagram g over dimensions [first, end): each one's index ranges there
    // (in `cube`) and the node it leads to, for those that do not lead to False.
    template <typename Out>
    void products(Ref g, size_t first, size_t end, RequestCube& cube, Out&& out) {
        if (g == DecisionDiagram::False) return;
        if (first == end) {
            out(cube, g);
            return;
        }
        const RequestSpace::Dimension& d = space_.dimensions()[first];
        // The runs of the dimension's values, grouped by the node they lead to, in the order met.
        std::vector<std::pair<Ref, IndexRanges>> byTarget;
        std::unordered_map<Ref, size_t> at;
        auto walk = [&](auto& self, Ref h, uint32_t bit, uint64_t lo) -> void {
            if (lo >= d.size || h == DecisionDiagram::False) return;
            if (bit == 0 || dd_.isTerminal(h) || dd_.var(h) >= d.firstVar + d.bits) {
                const uint64_t span = bit >= 64 ? UINT64_MAX : (uint64_t{1} << bit) - 1;
                const uint64_t hi = std::min(lo + span, d.size - 1);
                auto [it, fresh] = at.try_emplace(h, byTarget.size());
                if (fresh) {
                    byTarget.push_back({h, {{lo, hi}}});
                } else if (IndexRanges& runs = byTarget[it->second].second;
                           runs.back().hi + 1 == lo) {
                    runs.back().hi = hi;
                } else {
                    runs.push_back({lo, hi});
                }
                return;
            }
            const uint64_t mid = lo + (uint64_t{1} << (bit - 1));
            const bool tested = dd_.var(h) == d.firstVar + (d.bits - bit);
            self(self, tested ? dd_.low(h) : h, bit - 1, lo);
            self(self, tested ? dd_.high(h) : h, bit - 1, mid);
        };
        walk(walk, g, d.bits, 0);
        for (auto& [target, ranges] : byTarget) {
            cube.dims[first] = std::move(ranges);
            products(target, first + 1, end, cube, out);
        }
    }

    // Every fabric: the requests of diagram node g (below the fields) as pairs of lists of
    // kinds of port, sources and destinations: one pair per node below the sources.
    const std::vector<std::pair<uint32_t, uint32_t>>& endsBelow(Ref g) {
        auto [memo, fresh] = endsBelow_.try_emplace(g);
        if (!fresh) return memo->second;
        std::vector<std::pair<Ref, std::vector<uint32_t>>> sources;
        std::unordered_map<Ref, size_t> at;
        RequestCube cube;
        cube.dims.resize(space_.dimensions().size());
        products(g, sourceFrom_, destinationFrom_, cube, [&](const RequestCube& c, Ref h) {
            auto [it, added] = at.try_emplace(h, sources.size());
            if (added) sources.push_back({h, {}});
            sources[it->second].second.push_back(kindIn(c, RequestSpace::Ends::Source));
        });
        for (const auto& [h, kinds] : sources)
            memo->second.emplace_back(kindList(kinds), destinationsBelow(h));
        return memo->second;
    }

    // Every fabric: the destinations of diagram node h (below the sources), as a list of kinds.
    uint32_t destinationsBelow(Ref h) {
        auto [memo, fresh] = destinationsBelow_.try_emplace(h);
        if (!fresh) return memo->second;
        std::vector<uint32_t> kinds;
        RequestCube cube;
        cube.dims.resize(space_.dimensions().size());
        products(h, destinationFrom_, space_.dimensions().size(), cube,
                 [&](const RequestCube& c, Ref) {
                     kinds.push_back(kindIn(c, RequestSpace::Ends::Destination));
                 });
        memo->second = kindList(kinds);
        return memo->second;
    }

    // The kind of port of a product at one end (AnyPort: every port), made once for each
    // distinct ranges (distinct ranges make distinct kinds); and kinds as a list.
    static constexpr uint32_t AnyPort = UINT32_MAX;
    uint32_t kindIn(const RequestCube& cube, RequestSpace::Ends end) {
        const bool source = end == RequestSpace::Ends::Source;
        const size_t first = source ? sourceFrom_ : destinationFrom_;
        const size_t last = source ? destinationFrom_ : cube.dims.size();
        const std::span<const IndexRanges> sets(cube.dims.data() + first, last - first);
        return onceFor(source ? 3 : 4, sets, [&] {
            PortKind kind = kindOf(cube, end);
            return std::vector<uint32_t>{kind == PortKind{} ? AnyPort
                                                            : parts_.kindOf(std::move(kind))};
        })[0];
    }
    uint32_t kindList(std::vector<uint32_t> kinds) {
        std::sort(kinds.begin(), kinds.end());
        kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
        if (!kinds.empty() && kinds.back() == AnyPort) kinds.clear();  // empty: any port
        return parts_.lists.id(std::move(kinds));
    }

    // Every fabric, where the answers of a piece depend on the PKey alone: the answers for each
    // PKey index (pkeyAnswers_), and the piece cut to the PKeys whose answers change (no
    // product is listed for the others).
    Ref cutToChangingPkeys(Ref part, QosMatch before, QosMatch after) {
        std::vector<Range> changing;
        bool absentChanges = false;
        for (uint64_t i = 0; i < sizes_[pkeyDim_]; ++i) {
            std::optional<uint16_t> pkey;
            if (i > 0) pkey = space_.fieldInterval(RequestField::Pkey, i).lo;
            const PathAnswer a = answerEverywhere(policy(0), before, pkey);
            const PathAnswer b = answerEverywhere(policy(1), after, pkey);
            pkeyAnswers_[i] = NoChange;
            if (!answersDiffer(policy(0), a, policy(1), b)) continue;
            // A loopback path answers packet life 0 under both: where only the packet life
            // changes, loopback paths keep their answer.
            PathAnswer same = b;
            same.packetLife = a.packetLife;
            const bool lifeOnly = a.ok() && b.ok() && !answersDiffer(policy(0), a, policy(1), same);
            pkeyAnswers_[i] =
                parts_.answersOf(a, b, lifeOnly ? Loopback::Excluded : Loopback::Both, false);
            if (i == 0) {
                absentChanges = true;
            } else {
                changing.push_back(space_.fieldInterval(RequestField::Pkey, i));
            }
        }
        if (absentChanges && changing.size() + 1 == sizes_[pkeyDim_]) return part;
        Ref cut = space_.fieldIn(RequestField::Pkey, RangeSet::build(std::move(changing)));
        if (absentChanges) cut = dd_.disj(cut, space_.fieldAbsent(RequestField::Pkey));
        return dd_.conj(part, cut);
    }

    size_t dimOf(RequestSpace::DimKind kind, RequestField field = RequestField::QosClass,
                 RequestSpace::Ends end = RequestSpace::Ends::Source) const {
        const auto& dims = space_.dimensions();
        for (size_t d = 0; d < dims.size(); ++d) {
            if (dims[d].kind == kind &&
                (kind != RequestSpace::DimKind::Field || dims[d].field == field) &&
                (kind == RequestSpace::DimKind::Field || dims[d].end == end))
                return d;
        }
        throw std::logic_error("Differ: no such dimension");
    }

    // How the paths of a pair of PKey tables change at one PKey value: the key of the paths
    // between two ports (Loopback::Both when loopback paths change the same way, or there are
    // none), of the loopback paths apart, and `uniform`, the key when every path of the pair
    // changes one way.
    struct PairChange {
        std::optional<uint32_t> between, loop, uniform;
    };

    // A path between two different ports of these classes, if there is one.
    std::optional<std::pair<uint32_t, uint32_t>> pathBetween(const std::vector<uint32_t>& ss,
                                                             const std::vector<uint32_t>& ds) {
        const auto& classes = space_.classes();
        const uint32_t s = classes[ss.front()].front();
        for (uint32_t c : ds) {
            for (uint32_t d : classes[c]) {
                if (d != s) return std::make_pair(s, d);
            }
        }
        // Else every destination is s itself: another source to s.
        for (uint32_t c : ss) {
            for (uint32_t p : classes[c]) {
                if (p != s) return std::make_pair(p, s);
            }
        }
        return std::nullopt;
    }

    std::optional<PairChange> pairChange(std::optional<std::pair<uint32_t, uint32_t>> path,
                                         std::optional<uint32_t> loopPort,
                                         std::optional<uint16_t> pkey, QosMatch before,
                                         QosMatch after) {
        PathQuery query;
        query.pkey = pkey;
        auto answer = [&](uint32_t s, uint32_t d) {
            query.source = s;
            query.destination = d;
            return std::make_pair(answerPath(policy(0), *pkeys_[0], query, before),
                                  answerPath(policy(1), *pkeys_[1], query, after));
        };
        auto keyFor = [&](const std::pair<PathAnswer, PathAnswer>& a, Loopback lb) {
            return answersKey(asNonLoopback(policy(0), a.first), asNonLoopback(policy(1), a.second),
                              lb);
        };
        auto changes = [&](const std::pair<PathAnswer, PathAnswer>& a) {
            return answersDiffer(policy(0), a.first, policy(1), a.second);
        };
        std::optional<std::pair<PathAnswer, PathAnswer>> between, loop;
        if (path) between = answer(path->first, path->second);
        if (loopPort) loop = answer(*loopPort, *loopPort);
        const bool betweenChanges = between && changes(*between);
        const bool loopChanges = loop && changes(*loop);
        if (!betweenChanges && !loopChanges) return std::nullopt;
        PairChange c;
        // Loopback paths that change as the others do join their region.
        const std::optional<uint32_t> betweenKey =
            betweenChanges ? std::optional(keyFor(*between, Loopback::Both)) : std::nullopt;
        const std::optional<uint32_t> loopKey =
            loopChanges ? std::optional(keyFor(*loop, Loopback::Both)) : std::nullopt;
        const bool sameWay = betweenKey && loopKey && *betweenKey == *loopKey;
        if (betweenChanges) {
            c.between = sameWay || !loop ? *betweenKey : keyFor(*between, Loopback::Excluded);
        }
        if (loopChanges && !sameWay) c.loop = keyFor(*loop, Loopback::Only);
        // Uniform: whatever paths there are change, and the same way.
        if ((sameWay || (betweenKey && !loop) || (loopKey && !between))) {
            c.uniform = betweenKey ? betweenKey : loopKey;
        }
        return c;
    }

    // A port's PKey tables before and after, as numbers.
    std::pair<uint32_t, uint32_t> tablesOf(uint32_t port) const {
        return {pkeys_[0]->tableId(port), pkeys_[1]->tableId(port)};
    }

    static std::vector<uint32_t> flatten(
        const std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>& byTable) {
        std::vector<uint32_t> all;
        for (const auto& [table, list] : byTable) all.insert(all.end(), list.begin(), list.end());
        std::sort(all.begin(), all.end());
        return all;
    }

    // The key of a change on a fabric. A PKey answered alike before and after is not part of
    // the change: requests that differ only in it (each partition's PKey) make one region,
    // which shows the PKey as the request's or the fabric's.
    uint32_t answersKey(PathAnswer before, PathAnswer after, Loopback loopback) {
        const bool pkeyKept = before.ok() && after.ok() && before.pkey == after.pkey;
        if (pkeyKept) before.pkey = after.pkey = 0;
        return parts_.answersOf(before, after, loopback, !pkeyKept);
    }

    // The regions of one product of requests decided by `before` and `after`: on a fabric a
    // product of every dimension; on every fabric of the fields, with the pairs of ends below
    // it.
    void regionsOf(const RequestCube& cube, QosMatch before, QosMatch after,
                   const std::vector<std::pair<uint32_t, uint32_t>>* ends) {
        const uint32_t beforeRules = parts_.lists.id({before.rule});
        const uint32_t afterRules = parts_.lists.id({after.rule});
        std::vector<uint64_t> pkeyIndices;
        for (const Range& r : cube.dims[pkeyDim_]) {
            for (uint64_t i = r.lo; i <= r.hi; ++i) pkeyIndices.push_back(i);
        }
        auto pkeyValue = [&](uint64_t index) -> std::optional<uint16_t> {
            if (index == 0) return std::nullopt;
            return static_cast<uint16_t>(space_.fieldInterval(RequestField::Pkey, index).lo);
        };
        // The PKey's values one by one (an interval answers alike throughout, index 0 is
        // absent), grouped by their answers and ends.
        struct Group {
            uint32_t key, sources, destinations;
            IndexRanges pkeys;
        };
        std::vector<Group> groups;
        auto add = [&](uint32_t key, uint32_t sources, uint32_t destinations, uint64_t index) {
            for (Group& g : groups) {
                if (g.key == key && g.sources == sources && g.destinations == destinations) {
                    if (g.pkeys.back().hi + 1 == index) {
                        g.pkeys.back().hi = index;
                    } else {
                        g.pkeys.push_back({index, index});
                    }
                    return;
                }
            }
            groups.push_back({key, sources, destinations, {{index, index}}});
        };

        if (pkeys_[0]) {
            // On a fabric: the ends' classes (each holds ports of one PKey table) by their PKey
            // table, then paths between two ports and loopback paths, each answered as the SA
            // does. Regions name classes here; diffPolicies lists their endpoints at the end.
            const auto& classes = space_.classes();
            auto byTable = [&](const IndexRanges& set) {
                std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> out;
                for (const Range& r : set) {
                    for (uint64_t c = r.lo; c <= r.hi; ++c)
                        out[tablesOf(classes[c].front())].push_back(static_cast<uint32_t>(c));
                }
                return out;
            };
            const auto sources = byTable(cube.dims[classDims_[0]]);
            const auto destinations = byTable(cube.dims[classDims_[1]]);
            // Each pair of tables: its classes, and how its paths change at each PKey value.
            struct TablePair {
                uint32_t sources, destinations, common;          // parts_.lists
                std::vector<std::optional<PairChange>> changes;  // by pkeyIndices position
            };
            std::vector<TablePair> pairs;
            for (const auto& [st, ss] : sources) {
                for (const auto& [dt, ds] : destinations) {
                    std::vector<uint32_t> common;
                    std::set_intersection(ss.begin(), ss.end(), ds.begin(), ds.end(),
                                          std::back_inserter(common));
                    TablePair& pair = pairs.emplace_back();
                    pair.sources = parts_.lists.id(ss);
                    pair.destinations = parts_.lists.id(ds);
                    pair.common = parts_.lists.id(common);
                    const std::optional<std::pair<uint32_t, uint32_t>> path = pathBetween(ss, ds);
                    const std::optional<uint32_t> loopPort =
                        common.empty() ? std::nullopt : std::optional(classes[common[0]].front());
                    for (uint64_t index : pkeyIndices)
                        pair.changes.push_back(
                            pairChange(path, loopPort, pkeyValue(index), before, after));
                }
            }
            // Every path of the product changing one way makes one region; else each pair of
            // tables its own.
            const uint32_t allSources = parts_.lists.id(flatten(sources));
            const uint32_t allDestinations = parts_.lists.id(flatten(destinations));
            for (size_t i = 0; i < pkeyIndices.size(); ++i) {
                std::optional<uint32_t> uniform = pairs.empty() ? std::nullopt
                                                  : pairs[0].changes[i]
                                                      ? pairs[0].changes[i]->uniform
                                                      : std::nullopt;
                for (const TablePair& pair : pairs) {
                    if (!uniform || !pair.changes[i] || pair.changes[i]->uniform != uniform) {
                        uniform.reset();
                        break;
                    }
                }
                if (uniform) {
                    add(*uniform, allSources, allDestinations, pkeyIndices[i]);
                    continue;
                }
                for (const TablePair& pair : pairs) {
                    const std::optional<PairChange>& c = pair.changes[i];
                    if (!c) continue;
                    if (c->between)
                        add(*c->between, pair.sources, pair.destinations, pkeyIndices[i]);
                    if (c->loop) add(*c->loop, pair.common, pair.common, pkeyIndices[i]);
                }
            }
        } else {
            // Every fabric: the answers where both ends share every partition, which depend on
            // the PKey alone (cutToChangingPkeys); the ends come with each group.
            for (uint64_t index : pkeyIndices) {
                if (pkeyAnswers_[index] != NoChange) add(pkeyAnswers_[index], 0, 0, index);
            }
        }
        // One region per group and per part of the other fields.
        const std::vector<uint32_t>& qos = fieldPartsOf(RequestField::QosClass, cube.dims[qosDim_]);
        const std::vector<uint32_t>& sid =
            fieldPartsOf(RequestField::ServiceId, cube.dims[sidDim_]);
        for (Group& g : groups) {
            const IndexRanges merged = RangeSet::build(std::move(g.pkeys)).ranges();
            const std::pair<uint32_t, uint32_t> own{g.sources, g.destinations};
            for (const auto& [sources, destinations] :
                 ends ? *ends : std::vector<std::pair<uint32_t, uint32_t>>{own}) {
                for (uint32_t pk : fieldPartsOf(RequestField::Pkey, merged)) {
                    for (uint32_t q : qos) {
                        for (uint32_t s : sid) {
                            regions_.push_back({g.key,
                                                {q, s, pk, sources, destinations},
                                                beforeRules,
                                                afterRules});
                        }
                    }
                }
            }
        }
    }

    // What some index ranges of a product come to (`tag` tells the questions apart), worked
    // out once for each distinct ranges.
    template <typename Compute>
    const std::vector<uint32_t>& onceFor(uint64_t tag, std::span<const IndexRanges> sets,
                                         Compute&& compute) {
        rangesKey_.assign(1, tag);
        for (const IndexRanges& set : sets) {
            rangesKey_.push_back(set.size());
            for (const Range& r : set) {
                rangesKey_.push_back(r.lo);
                rangesKey_.push_back(r.hi);
            }
        }
        auto it = cubeParts_.find(rangesKey_);
        if (it == cubeParts_.end()) it = cubeParts_.emplace(rangesKey_, compute()).first;
        return it->second;
    }

    // A field's values in a product (index ranges) as the parts a region can say.
    const std::vector<uint32_t>& fieldPartsOf(RequestField f, const IndexRanges& set) {
        return onceFor(static_cast<uint64_t>(f), {&set, 1}, [&] {
            const size_t dim = f == RequestField::QosClass    ? qosDim_
                               : f == RequestField::ServiceId ? sidDim_
                                                              : pkeyDim_;
            std::vector<uint32_t> out;
            for (FieldValues& v : fieldParts(space_, f, sizes_[dim], set))
                out.push_back(parts_.fields.id(std::move(v)));
            return out;
        });
    }

    // The kind of port a product holds at one end (every fabric).
    PortKind kindOf(const RequestCube& cube, RequestSpace::Ends end) const {
        using DK = RequestSpace::DimKind;
        const auto& dims = space_.dimensions();
        const PortAttributes& at = space_.attributes();
        PortKind kind;
        for (size_t d = 0; d < dims.size(); ++d) {
            if (dims[d].end != end || dims[d].kind == DK::Field || dims[d].kind == DK::Classes)
                continue;
            const IndexRanges& set = cube.dims[d];
            const bool all = countOf(set) == dims[d].size;
            switch (dims[d].kind) {
                case DK::NodeType:
                    if (!all) {
                        kind.nodeTypes.emplace();
                        for (uint64_t t = 0; t < 3; ++t) {
                            if (holdsIndex(set, t))
                                kind.nodeTypes->push_back(t == 0   ? NodeType::Ca
                                                          : t == 1 ? NodeType::Switch
                                                                   : NodeType::Router);
                        }
                    }
                    break;
                case DK::Sm:
                    if (!all) kind.sm = holdsIndex(set, 1);
                    break;
                case DK::Partition:
                    if (!all)
                        (holdsIndex(set, 1) ? kind.inPartitions : kind.notInPartitions)
                            .push_back(at.partitions[dims[d].item]);
                    break;
                case DK::PkeyMember:
                    if (!all)
                        (holdsIndex(set, 1) ? kind.inPkeys : kind.notInPkeys)
                            .push_back(at.pkeyIntervals[dims[d].item]);
                    break;
                case DK::Name:
                    if (!all) {
                        std::vector<std::string> in, out;
                        for (uint64_t i = 1; i < at.names.size(); ++i) {
                            (holdsIndex(set, i) ? in : out)
                                .push_back(at.names[i].first + "/P" +
                                           std::to_string(at.names[i].second));
                        }
                        if (holdsIndex(set, 0)) {
                            kind.notNames = std::move(out);
                        } else {
                            kind.names = std::move(in);
                        }
                    }
                    break;
                case DK::Guid:
                    if (!all) {
                        kind.guids.emplace();
                        for (const Range& r : set) {
                            const Range v{at.guidIntervals[r.lo].lo, at.guidIntervals[r.hi].hi};
                            if (!kind.guids->empty() && kind.guids->back().hi + 1 == v.lo) {
                                kind.guids->back().hi = v.hi;
                            } else {
                                kind.guids->push_back(v);
                            }
                        }
                    }
                    break;
                default:
                    break;
            }
        }
        return kind;
    }
};

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
