// SPDX-License-Identifier: MIT
// RequestSpace: the PathRecord requests one or more policies can tell apart, as decision
// diagrams: which requests a rule matches, the requests a rule gets first, concrete requests
// inside a diagram, and the products (regions) a diagram splits into. The analyses (dead rules,
// reachability on a fabric, ibqos diff) are questions on these.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/bind.hpp"
#include "compiler/policy.hpp"
#include "compiler/range_set.hpp"
#include "ib/qos.hpp"
#include "policy-space/decision_diagram.hpp"

namespace ibqos {

// The request fields a rule can name. Each is a dimension of the space whose values are the
// elementary intervals of the ranges the policies write, and one more: the field is absent.
enum class RequestField : uint8_t { QosClass, ServiceId, Pkey };
constexpr RequestField RequestFields[] = {RequestField::QosClass, RequestField::ServiceId,
                                          RequestField::Pkey};

// What a port is, on every fabric, as far as the policies' groups can tell ports apart: an
// elementary interval of the GUIDs the groups name, its node type, whether it is the SM's port,
// the port name it answers to (one a group writes, or none), and for each partition name and
// PKey interval the groups name, whether it is a member. Every combination of these is a port
// of some fabric. (On one fabric a port is its membership class instead.)
struct PortAttributes {
    std::vector<Range> guidIntervals;                     // elementary, over the whole 64 bits
    std::vector<std::pair<std::string, uint32_t>> names;  // index 0: a name no group writes
    std::vector<std::string> partitions;                  // partition names (case-sensitive)
    std::vector<Range> pkeyIntervals;  // PKey intervals (15 bits) inside some group's pkey
};

// The values of one dimension: inclusive ranges of value indices.
using IndexRanges = std::vector<Range>;

// A product of requests: per dimension, the value indices it holds.
struct RequestCube {
    std::vector<IndexRanges> dims;  // in RequestSpace::dimensions() order
};

// One request of the space: a value index per dimension.
struct RequestPoint {
    std::vector<uint64_t> values;  // in RequestSpace::dimensions() order
};

class RequestSpace {
  public:
    using Ref = DecisionDiagram::Ref;
    enum class Ends : uint8_t { Source, Destination };
    // The dimensions, in diagram order. A port end is one dimension on a fabric (its classes)
    // and several on every fabric (its attributes).
    enum class DimKind : uint8_t {
        Classes,     // endpoint membership class (one fabric)
        NodeType,    // 0 CA, 1 switch, 2 router
        Sm,          // 0 no, 1 the SM's own port
        Partition,   // 0 not a member, 1 a member of PortAttributes::partitions[item]
        PkeyMember,  // 0 not a member, 1 a member of a partition in pkeyIntervals[item]
        Name,        // index into PortAttributes::names
        Guid,        // index into PortAttributes::guidIntervals
        Field,       // a request field: 0 absent, i > 0 the field's interval i - 1
    };
    struct Dimension {
        DimKind kind;
        Ends end = Ends::Source;
        RequestField field = RequestField::QosClass;
        uint32_t item = 0;  // partition or PKey interval index
        uint32_t firstVar = 0, bits = 0;
        uint64_t size = 0;  // values 0..size-1; indices past it act as size-1
    };

    // Range ends added to the fields beyond the rules' own (the levels' PKeys, a fabric's
    // partitions): request values, PKeys by their base (both halves split alike).
    struct Cuts {
        std::vector<Range> qosClasses, serviceIds, pkeys;
    };

    // Every fabric the policies could meet.
    RequestSpace(DecisionDiagram& dd, const std::vector<const Policy*>& policies,
                 const Cuts& extra = {});
    // One fabric: the policies bound to it (the same fabric, or copies of it). Endpoints with
    // different portTags (per Fabric::ports index; empty: none) are never in one class.
    RequestSpace(DecisionDiagram& dd, const std::vector<const BoundPolicy*>& bound,
                 const Cuts& extra = {}, const std::vector<uint32_t>& portTags = {});

    // (Not copied: memos_ points into the memos.)
    RequestSpace(const RequestSpace&) = delete;
    RequestSpace& operator=(const RequestSpace&) = delete;

    DecisionDiagram& diagram() const { return dd_; }
    // Starts the diagram afresh (DecisionDiagram::clear) once it holds more than `nodes`:
    // every Ref made so far is invalid then. Returns whether it did.
    bool trimDiagram(size_t nodes);
    const std::vector<Dimension>& dimensions() const { return dims_; }
    bool onFabric() const { return !bound_.empty(); }
    const PortAttributes& attributes() const { return attributes_; }
    // On a fabric: the endpoints of each membership class, in port order.
    const std::vector<std::vector<uint32_t>>& classes() const { return classes_; }
    // The values of a field's interval index (1-based: 0 is "absent").
    Range fieldInterval(RequestField f, uint64_t index) const;
    size_t policies() const { return policies_.size(); }
    const Policy& policy(size_t p) const { return *policies_[p]; }

    // The requests a rule of policy p matches: every field it names present and inside, its
    // sources and destinations holding the ends.
    Ref rule(size_t p, uint32_t r);
    // The ports a group holds, at one end.
    Ref group(size_t p, uint32_t g, Ends end);
    // Requests carrying a value of f inside set, and requests without f.
    Ref fieldIn(RequestField f, const RangeSet& set);
    Ref fieldAbsent(RequestField f);

    // A request f holds (f must not be False): the least one in the diagram's order, or, with
    // a seed, one a walk that takes either branch picks (the same seed, the same request).
    RequestPoint pointIn(Ref f, uint64_t seed = 0) const;
    // A request rule r of policy p matches, made from the rule's own ranges and groups without
    // a diagram (variants pick other ends of its ranges, other groups, other node types), or
    // nullopt when the rule names a value no request can carry or a group that holds no port.
    std::optional<RequestPoint> witness(size_t p, uint32_t r, unsigned variant) const;
    // Whether rule r of policy p matches a request, tested directly (no diagram is made).
    bool matches(size_t p, uint32_t r, const RequestPoint& point) const;
    // Whether every request rule `inner` matches, rule `outer` of the same policy matches too,
    // judged from their ranges and groups without a diagram: true only when it holds (it may
    // say false of a rule the others' union hides).
    bool within(size_t p, uint32_t inner, uint32_t outer) const;
    // Room for the bitsets of the lookups below, kept by the caller (one per thread) and used
    // again from one lookup to the next: a lookup then allocates nothing.
    using LookupRoom = std::vector<uint64_t>;
    // The first rule of policy p, below `before`, that matches a request (nullopt: none), from
    // an index of which rules each value of each dimension satisfies: a few bitset ANDs.
    std::optional<uint32_t> firstMatch(size_t p, const RequestPoint& point, uint32_t before,
                                       LookupRoom& room) const;
    // Every rule of policy p below `before` that matches a request, in order (the first
    // `limit` of them).
    std::vector<uint32_t> allMatches(size_t p, const RequestPoint& point, uint32_t before,
                                     LookupRoom& room, size_t limit = SIZE_MAX) const;
    // Of the rules of policy p below `before` that match a request, the one of largest extent
    // (the first of equals), or nullopt when none does.
    std::optional<uint32_t> largestMatch(size_t p, const RequestPoint& point, uint32_t before,
                                         LookupRoom& room) const;
    // The work, in diagram steps, that a lookup of rules below `before`, pointIn and
    // witness cost (for the analyses' budgets: a query spends nothing itself, so that a built
    // space may be queried from several threads).
    uint64_t lookupSteps(size_t p, uint32_t before) const;
    uint64_t pointSteps() const { return 1 + vars_ / 32; }
    // The share of the space a rule's ranges cover, dimension by dimension, multiplied (its
    // groups count by the GUIDs they name, or whole): a rough size, to prefer large rules.
    double extent(size_t p, uint32_t r) const { return extents_[p][r]; }

    // The earlier rules of policy p (index below `before`) that may match some request rule
    // q of policy qp matches: a superset of those that do, from an index of the fields and
    // groups, in rule order.
    std::vector<uint32_t> overlapping(size_t p, uint32_t before, size_t qp, uint32_t q) const;

    // The products the requests of f split into, dimension by dimension, coarsest first: for
    // each path to True, the values of every dimension that lead to the same rest.
    void cubes(Ref f, const std::function<void(const RequestCube&)>& out) const;

  private:
    using Bits = std::vector<uint64_t>;  // one bit per rule
    static void setBit(Bits& b, uint32_t i) { b[i / 64] |= uint64_t{1} << (i % 64); }
    // The values of a field a rule names (empty: it names none).
    static const RangeSet& ruleField(const MatchRule& r, RequestField f);
    // The rule bitsets of the point index are cut in blocks of words, each twice the one
    // before it (64, 128, 256, ... words): a lookup reads block after block and stops once it
    // has its answer (the first match, a few matches), and one that reads them all pays for
    // a few blocks more than for one.
    static constexpr size_t FirstBlockWords = 64;
    // Policies with fewer rules than this have no index of their largest rules (topIndex_).
    static constexpr uint32_t TopIndexRules = 256;
    static size_t blockStart(size_t block) { return FirstBlockWords * ((size_t{1} << block) - 1); }
    // Which rules hold each index of a domain, from the ranges each rule holds, block by block:
    // a block's bitsets at some indices (checkpoints) and the rules of the block that enter or
    // leave at each index in between, so that a lookup in one block reads that block only.
    struct StabIndex {
        static constexpr uint32_t Enters = 1u << 31;
        struct Block {
            size_t words = 0;
            std::vector<uint64_t> positions;  // the checkpoints' indices, ascending (first 0)
            std::vector<uint32_t> resume;     // per checkpoint: its first change after it
            Bits checkpoints;                 // `words` words at each position
            // The changes by index: at[c] the index, change[c] the rule (its number in the
            // block) and whether it enters (Enters bit) or leaves.
            std::vector<uint64_t> at;
            std::vector<uint32_t> change;
        };
        std::vector<Block> blocks;
        uint64_t replay = 0;  // the most changes a lookup of every block replays
        // perRule[r]: the index ranges rule r holds (disjoint and sorted; null: none). Returns
        // the work done, in words.
        uint64_t build(uint64_t domain, const std::vector<const IndexRanges*>& perRule,
                       size_t words);
        // out[0 .. n) = the rules holding index i, of the first n words of a block.
        void stab(uint64_t i, size_t block, uint64_t* out, size_t n) const;
        // A change made to a block's bits: its rule's bit set (it enters) or cleared.
        static void apply(uint64_t* bits, uint32_t change);
    };
    // Which rules of one policy (or of some of them) each value of each dimension satisfies.
    struct PointIndex {
        // The rules it holds, ascending: bit i is rule rules[i] (empty: every rule, bit i is
        // rule i).
        std::vector<uint32_t> rules;
        size_t words = 0;
        Bits fieldUnnamed[3];
        StabIndex fields[3];
        Bits sideUnnamed[2];
        // Every fabric: rules with a group on that side selecting by each attribute.
        Bits byType[2][3], bySelf[2];
        StabIndex byGuid[2], byOwnName[2], bySwitchName[2];
        std::vector<Bits> byPartition[2], byPkey[2];
        // One fabric: per class, filled when first asked.
        mutable std::vector<Bits> byClass[2];
        // The rules in about 16 tiers of extent, largest first; rules of one extent share a
        // tier, so the largest rule among some is in the first tier that holds one of them.
        struct Tier {
            double low = 0, high = 0;
            Bits rules;
        };
        std::vector<Tier> byExtent;
        // The first tier's index only: its rules by extent, largest first (equals by rule),
        // and each bit's place in that order.
        std::vector<uint32_t> byRank, rankOf;
        uint64_t replayBound = 0;  // the changes a lookup may replay, in all
        // The bits that stand for rules below `before`.
        uint32_t below(uint32_t before) const {
            if (rules.empty()) return before;
            return static_cast<uint32_t>(std::lower_bound(rules.begin(), rules.end(), before) -
                                         rules.begin());
        }
        uint32_t rule(size_t bit) const {
            return rules.empty() ? static_cast<uint32_t>(bit) : rules[bit];
        }
        // The rules it holds, of a policy of `all` rules.
        size_t count(size_t all) const { return rules.empty() ? all : rules.size(); }
        // The words of the bitsets a lookup of the first `bits` bits reads.
        size_t wordsBelow(uint32_t bits) const { return std::min(words, size_t{bits} / 64 + 1); }
    };
    // Builds x over the rules x.rules of policy p (empty: all of them); returns the work.
    uint64_t buildPointIndex(size_t p, PointIndex& x);
    // The tiers of extent of pointIndex_[p], and the index of its first tier (topIndex_).
    void tierRules(size_t p);
    double measureExtent(size_t p, uint32_t r) const;
    // The rules of policy p below `before` that match a request, in one block of words:
    // room[blockStart(block) ...] gets the block's bits, and the count of them up to the last
    // one not zero is returned (0: none matches in the block).
    size_t matchBlock(size_t p, const PointIndex& x, const RequestPoint& point, uint32_t before,
                      size_t block, LookupRoom& room) const;
    const Bits& classRules(size_t p, const PointIndex& x, Ends end, uint64_t c) const;

    // What a group selects, in the attributes' indices (every fabric).
    struct Selectors {
        uint8_t types = 0;  // bit t: node type t
        bool self = false;
        IndexRanges guids;               // GUID interval indices
        std::vector<uint64_t> ownNames;  // name indices a CA or router port answers to
        IndexRanges switchNames;         // name indices a switch answers to (its descriptions)
        std::vector<uint32_t> partitions, pkeys;  // atom items
        // ownNames as index ranges.
        IndexRanges ownNameRanges() const;
    };
    // Where each attribute of one end lives among the dimensions.
    struct PortDims {
        size_t nodeType = 0, sm = 0, name = 0, guid = 0;
        std::vector<size_t> partitions, pkeys;
    };
    // A field index for overlap lookups: the rules of one policy by the intervals they name.
    struct FieldIndex {
        // The rules whose set holds interval i, in order: rules[start[i] .. start[i + 1]).
        std::vector<uint32_t> start, rules;
        std::vector<uint32_t> unnamed, wide;  // rules not naming it, or naming many
        std::span<const uint32_t> holding(uint64_t i) const {
            return {rules.data() + start[i], rules.data() + start[i + 1]};
        }
    };

    DecisionDiagram& dd_;
    std::vector<const Policy*> policies_;
    std::vector<const BoundPolicy*> bound_;
    std::vector<Dimension> dims_;
    PortAttributes attributes_;
    PortDims portDims_[2];
    ElementaryIntervals fields_[3]{ElementaryIntervals(ib::MaxQosClass),
                                   ElementaryIntervals(UINT64_MAX),
                                   ElementaryIntervals(UINT16_MAX)};
    std::vector<std::vector<Selectors>> selectors_;  // [policy][group], every fabric
    std::vector<std::vector<uint32_t>> classes_;     // endpoints of each class
    std::vector<uint32_t> classOf_;                  // [Fabric::ports index], one fabric
    std::vector<std::vector<std::vector<uint32_t>>> groupClasses_;  // [policy][group], sorted
    std::vector<std::vector<IndexRanges>> ruleFields_[3];           // [field][policy][rule]
    std::vector<std::vector<Ref>> groupMemo_[2];                    // [end][policy][group]
    std::vector<std::vector<Ref>> ruleMemo_;                        // [policy][rule]
    // A rule's diagram once it has been built a second time (a trim dropped it in between):
    // its nodes bottom up, each child 0 (False), 1 (True) or 2 + the position of an earlier
    // node, so that making it again after a trim costs a node each, not its groups' and
    // ranges' diagrams and the operations that join them.
    struct SavedNode {
        uint32_t var, lo, hi;
    };
    std::vector<std::vector<std::vector<SavedNode>>> savedRules_;  // [policy][rule]
    std::vector<std::vector<uint8_t>> ruleBuilds_;  // [policy][rule]: times built, up to 2
    std::vector<uint32_t> savedAt_;                 // saveRule's: [Ref] its position + 1
    std::vector<Ref> made_;                         // restoreRule's: the nodes made so far
    // [field][policy], built by the first overlapping() (the dead-rule analysis asks none).
    mutable std::vector<FieldIndex> fieldIndex_[3];
    mutable std::once_flag fieldsIndexed_;
    // [policy][side (sources, destinations)]: the rules naming each group there, and those
    // naming none, in rule order; built with the field index.
    struct SideIndex {
        std::vector<std::vector<uint32_t>> byGroup;
        std::vector<uint32_t> any;
    };
    mutable std::vector<std::array<SideIndex, 2>> sideIndex_;
    // The groups of policy p that may meet group g of policy q, by (p, q, g), as asked.
    mutable std::map<std::tuple<size_t, size_t, uint32_t>, std::vector<uint32_t>> meetingGroups_;
    mutable std::mutex meetingMutex_;
    const std::vector<uint32_t>& meetingGroups(size_t p, size_t q, uint32_t g) const;
    std::vector<PointIndex> pointIndex_;  // [policy]
    // [policy]: the rules of its first tier of extent (none with fewer than TopIndexRules
    // rules or a single tier), where largestMatch looks first.
    std::vector<PointIndex> topIndex_;
    std::vector<std::vector<double>> extents_;       // [policy][rule]
    std::vector<std::vector<Bits>> groupClassBits_;  // [policy][group], one fabric: its classes
    // The group and rule memo entries made since the diagram last started afresh, which
    // trimDiagram empties (a trim after every rule must not write to every rule's and group's).
    std::vector<Ref*> memos_;
    size_t fieldDims_[3] = {}, classDims_[2] = {};
    uint32_t vars_ = 0;
    uint64_t setupWords_ = 0;  // the work of building the space, spent at the end

    void saveRule(size_t p, uint32_t r, Ref f);
    Ref restoreRule(size_t p, uint32_t r);
    void addFieldCuts(const Cuts& extra);
    // On a fabric: the ports' classes (classes_, classOf_), refined by every policy's groups
    // and the tags; then each group's classes (groupClasses_, groupClassBits_).
    void classifyPorts(const std::vector<uint32_t>& portTags);
    void indexGroupClasses();
    void addDimension(Dimension d);
    void addPortDimensions(Ends end);
    void indexRules();
    void indexFields() const;
    size_t fieldDim(RequestField f) const { return fieldDims_[static_cast<size_t>(f)]; }
    size_t classDim(Ends end) const { return classDims_[static_cast<size_t>(end)]; }
    void addFieldDimensions();
    IndexRanges fieldIndices(RequestField f, const RangeSet& set) const;
    Selectors selectorsOf(const PortGroup& g) const;
    // What building the space costs, in budget steps, estimated before any of it is built.
    uint64_t setupEstimate() const;
    // The selectors of several groups of policy p as one group's: a port one of them takes,
    // the union takes (ranges and names sorted and merged).
    Selectors unionOf(size_t p, const std::vector<uint32_t>& groups) const;
    // The diagram of "the dimension's value index is in these ranges (sorted, disjoint), and
    // then `then`" (a diagram over the dimensions after it).
    Ref indexIn(size_t dim, const IndexRanges& ranges, Ref then = DecisionDiagram::True);
    bool holds(size_t p, uint32_t g, Ends end, const RequestPoint& point) const;
    bool sideHolds(size_t p, const std::vector<uint32_t>& groups, Ends end,
                   const RequestPoint& point) const;
    // Whether two groups (of policies p and q) can hold one port.
    bool groupsMeet(size_t p, uint32_t g, size_t q, uint32_t h) const;
    bool sidesMeet(size_t p, const std::vector<uint32_t>& a, size_t q,
                   const std::vector<uint32_t>& b) const;
};

}  // namespace ibqos
