// SPDX-License-Identifier: MIT
// The diff engine's parts, shared by its files (policy-space/diff_*.cpp and policy_diff.cpp):
// the answers' keys, regions packed as numbers into their parts, and the Differ, which walks
// the request space of two policies. Not for other files: policy_diff.hpp is the interface.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy-space/policy_diff.hpp"
#include "policy-space/request_space.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos::diff_engine {

using Ref = DecisionDiagram::Ref;

// What a level makes of an answer, as far as the level decides it: levels with equal keys
// never answer a request differently.
inline auto levelKey(const QosLevel& l) {
    return std::make_tuple(answeredSl(l.sl), l.sl, l.mtuLimit, l.rateLimit,
                           l.packetLife ? std::optional<uint8_t>(*l.packetLife & 63) : std::nullopt,
                           l.pkeys.ranges());
}

// What a region keeps apart: the two answers, without the deciding rule.
using AnswerKey = std::tuple<bool, uint32_t, uint8_t, std::optional<uint8_t>,
                             std::optional<uint8_t>, std::optional<uint8_t>, uint16_t, Rejection>;
inline AnswerKey keyOf(const PathAnswer& a) {
    return {a.ok(),      a.match.level, a.sl,   a.mtuLimit,
            a.rateLimit, a.packetLife,  a.pkey, a.rejection};
}

// A loopback path's packet life put back to the level's, so that it shows as a path between
// two ports does.
PathAnswer asNonLoopback(const Policy& policy, PathAnswer a);

// The answer on a fabric where both ends share every partition (what every fabric allows):
// only the level can reject, by its SL or by a requested PKey it does not list.
PathAnswer answerEverywhere(const Policy& policy, QosMatch match, std::optional<uint16_t> pkey);

// Index ranges as value ranges of a field (index 0, absent, left out).
std::vector<Range> valuesOf(const RequestSpace& space, RequestField f, const IndexRanges& set);
bool holdsIndex(const IndexRanges& set, uint64_t i);
uint64_t countOf(const IndexRanges& set);

// A field's values in a product, split into what a region can say: every value and absent
// (any), only absent, and ranges of values.
std::vector<FieldValues> fieldParts(const RequestSpace& space, RequestField f, uint64_t size,
                                    const IndexRanges& set);

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

inline size_t hashOf(const std::vector<uint32_t>& list) {
    Mix m;
    for (uint32_t v : list) m.add(v);
    return m.h;
}

inline size_t hashOf(const std::vector<uint64_t>& list) {
    Mix m;
    for (uint64_t v : list) m.add(v);
    return m.h;
}

inline size_t hashOf(const FieldValues& v) {
    Mix m;
    m.add(uint64_t{v.any} | uint64_t{v.absent} << 1);
    for (const Range& r : v.ranges) {
        m.add(r.lo);
        m.add(r.hi);
    }
    return m.h;
}

inline size_t hashOf(const RegionKey& k) {
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
uint32_t listUnion(RegionParts& parts, const std::vector<uint32_t>& ids);

// Joins regions with the same answers that differ in one dimension only, one dimension after
// the other: the union along that dimension is a product too. A region joins the first one
// before it that matches it in every other part.
std::vector<PackedRegion> joinRegions(std::vector<PackedRegion> regions, RegionParts& parts);

// A region as the diff gives it (on a fabric its ends as membership classes).
// classes: the fabric's membership classes, or null without a fabric.
DiffRegion unpack(const PackedRegion& p, const RegionParts& parts,
                  const std::shared_ptr<const EndpointSet::Classes>& classes);

// The rules of the two policies with the same conditions (ranges, and groups that hold the same
// ports), paired in order: the longest common prefix and suffix. partner[p][r] is the other
// policy's rule, or NoRule.
struct Pairing {
    std::vector<uint32_t> partner[2];
    size_t unpaired = 0;
};

// A product's ends' classes by their PKey tables (before, after).
using ClassesByTable = std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>;

// The walk over the request space of two policies (policy 0 before, 1 after) that collects
// the regions whose answers change, packed into `parts`. Its parts: the walk itself
// (diff_walk.cpp), the answers on a fabric (diff_on_fabric.cpp), and on every fabric the
// PKeys that change and the kinds of port below a diagram node (diff_every_fabric.cpp).
class Differ {
  public:
    // pkeys: on a fabric, the PKey tables before and after (partitions.conf may change too).
    Differ(RequestSpace& space, std::array<const PkeyTables*, 2> pkeys, Pairing pairing,
           RegionParts& parts);

    std::vector<PackedRegion> run();

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

    // The walk (diff_walk.cpp).
    std::vector<PackedRegion> runPaired(uint32_t oldRules, uint32_t newRules);
    // Splits `rest`, requests old rule i gets first, by the new rule that gets each part first
    // (newReach gives a new rule's reach), into pieces.
    template <typename NewReach>
    void splitByNewRules(uint32_t i, Ref rest, NewReach&& newReach);
    // The requests rule r of policy p gets first, inside X.
    Ref reachInX(size_t p, uint32_t r);
    uint32_t levelOf(size_t p, uint32_t rule) const;
    // Whether the levels of two rules (the default past the last rule) can answer differently.
    // Whether requests one rule gets before and another after may change answer: their levels
    // answer differently, or the ports' PKey tables change (partitions.conf is edited too).
    bool differ(uint32_t oldRule, uint32_t newRule) const;
    // f without the requests any of `rules` of policy p matches.
    Ref outside(size_t p, Ref f, const std::vector<uint32_t>& rules);
    // f, requests rule r of policy p matches, without those an earlier rule gets: the earlier
    // rules that may meet it taken out widest first, which leaves less to work on for the rest
    // (and often nothing soon).
    Ref outsideEarlier(size_t p, Ref f, uint32_t r);
    // The requests rule r of policy p gets first.
    Ref reach(size_t p, uint32_t r);
    // A piece of requests decided by one old and one new rule.
    void piece(Ref part, uint32_t oldRule, uint32_t newRule);
    size_t dimOf(RequestSpace::DimKind kind, RequestField field = RequestField::QosClass,
                 RequestSpace::Ends end = RequestSpace::Ends::Source) const;

    // The products of diagram g over dimensions [first, end): each one's index ranges there
    // (in `cube`) and the node it leads to, for those that do not lead to False.
    template <typename Out>
    void products(Ref g, size_t first, size_t end, RequestCube& cube, Out&& out);

    // Every fabric (diff_every_fabric.cpp).
    // The requests of diagram node g (below the fields) as pairs of lists of kinds of port,
    // sources and destinations: one pair per node below the sources.
    const std::vector<std::pair<uint32_t, uint32_t>>& endsBelow(Ref g);
    // The destinations of diagram node h (below the sources), as a list of kinds.
    uint32_t destinationsBelow(Ref h);
    // The kind of port of a product at one end (AnyPort: every port), made once for each
    // distinct ranges (distinct ranges make distinct kinds); and kinds as a list.
    static constexpr uint32_t AnyPort = UINT32_MAX;
    uint32_t kindIn(const RequestCube& cube, RequestSpace::Ends end);
    uint32_t kindList(std::vector<uint32_t> kinds);
    // Where the answers of a piece depend on the PKey alone: the answers for each PKey index
    // (pkeyAnswers_), and the piece cut to the PKeys whose answers change (no product is
    // listed for the others).
    Ref cutToChangingPkeys(Ref part, QosMatch before, QosMatch after);
    // The kind of port a product holds at one end.
    PortKind kindOf(const RequestCube& cube, RequestSpace::Ends end) const;

    // On a fabric (diff_on_fabric.cpp).
    // How the paths of a pair of PKey tables change at one PKey value: the key of the paths
    // between two ports (Loopback::Both when loopback paths change the same way, or there are
    // none), of the loopback paths apart, and `uniform`, the key when every path of the pair
    // changes one way.
    struct PairChange {
        std::optional<uint32_t> between, loop, uniform;
    };
    // A pair of PKey tables of a product's ends: its classes, and how its paths change at each
    // PKey value.
    struct TablePair {
        uint32_t sources, destinations, common;          // parts_.lists
        std::vector<std::optional<PairChange>> changes;  // by the product's PKey indices
    };
    // A path between two different ports of these classes, if there is one.
    std::optional<std::pair<uint32_t, uint32_t>> pathBetween(const std::vector<uint32_t>& ss,
                                                             const std::vector<uint32_t>& ds);
    std::optional<PairChange> pairChange(std::optional<std::pair<uint32_t, uint32_t>> path,
                                         std::optional<uint32_t> loopPort,
                                         std::optional<uint16_t> pkey, QosMatch before,
                                         QosMatch after);
    // A port's PKey tables before and after, as numbers.
    std::pair<uint32_t, uint32_t> tablesOf(uint32_t port) const;
    // The key of a change on a fabric. A PKey answered alike before and after is not part of
    // the change: requests that differ only in it (each partition's PKey) make one region,
    // which shows the PKey as the request's or the fabric's.
    uint32_t answersKey(PathAnswer before, PathAnswer after, Loopback loopback);
    // The PKey a PKey index stands for (index 0: absent).
    std::optional<uint16_t> pkeyValue(uint64_t index) const;

    // A product's requests, PKey value by PKey value (an interval answers alike throughout,
    // index 0 is absent), grouped by their answers' key and their ends.
    struct AnswerGroup {
        uint32_t key, sources, destinations;
        IndexRanges pkeys;
    };
    struct AnswerGroups {
        std::vector<AnswerGroup> list;
        void add(uint32_t key, uint32_t sources, uint32_t destinations, uint64_t index);
    };
    // The regions of one product of requests decided by `before` and `after`: on a fabric a
    // product of every dimension; on every fabric of the fields, with the pairs of ends below
    // it.
    void regionsOf(const RequestCube& cube, QosMatch before, QosMatch after,
                   const std::vector<std::pair<uint32_t, uint32_t>>* ends);
    // On a fabric: the product's answers, grouped, and the pairs of PKey tables they come from.
    void groupOnFabric(const RequestCube& cube, const std::vector<uint64_t>& pkeyIndices,
                       QosMatch before, QosMatch after, AnswerGroups& groups);
    std::vector<TablePair> tablePairs(const ClassesByTable& sources,
                                      const ClassesByTable& destinations,
                                      const std::vector<uint64_t>& pkeyIndices, QosMatch before,
                                      QosMatch after);
    // One region per group and per part of the other fields (and pair of ends, on every fabric).
    void writeRegions(const RequestCube& cube, AnswerGroups& groups,
                      const std::vector<std::pair<uint32_t, uint32_t>>* ends, uint32_t beforeRules,
                      uint32_t afterRules);

    // What some index ranges of a product come to (`tag` tells the questions apart), worked
    // out once for each distinct ranges.
    template <typename Compute>
    const std::vector<uint32_t>& onceFor(uint64_t tag, std::span<const IndexRanges> sets,
                                         Compute&& compute);
    // A field's values in a product (index ranges) as the parts a region can say.
    const std::vector<uint32_t>& fieldPartsOf(RequestField f, const IndexRanges& set);
};

template <typename Out>
void Differ::products(Ref g, size_t first, size_t end, RequestCube& cube, Out&& out) {
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
            } else if (IndexRanges& runs = byTarget[it->second].second; runs.back().hi + 1 == lo) {
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

template <typename Compute>
const std::vector<uint32_t>& Differ::onceFor(uint64_t tag, std::span<const IndexRanges> sets,
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

}  // namespace ibqos::diff_engine
