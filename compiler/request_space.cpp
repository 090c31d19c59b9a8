// SPDX-License-Identifier: MIT
// RequestSpace: dimensions and their bit encodings, groups and rules as diagrams and as direct
// tests on one request, the overlap index, and the products a diagram splits into.
//
// Each dimension's value index is written in `bits` variables, most significant first, so a
// range of indices is a diagram of O(bits) nodes. Indices past a dimension's size stand for
// its last value (every set holding the last value holds them too), so no "valid index" mask is
// needed and a dimension a rule does not name is simply True.
#include "compiler/request_space.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "fabric/node_type.hpp"

namespace ibqos {

namespace {

using Ref = DecisionDiagram::Ref;

uint32_t bitsFor(uint64_t size) {
    uint32_t bits = 0;
    while (bits < 64 && (uint64_t{1} << bits) < size) ++bits;
    return bits;
}

constexpr uint64_t FieldMax[3] = {ib::MaxQosClass, UINT64_MAX, UINT16_MAX};
constexpr size_t WideRule = 64;  // intervals past which a rule is indexed as "wide"
constexpr NodeType Types[] = {NodeType::Ca, NodeType::Switch, NodeType::Router};
constexpr uint64_t SwitchType = 1;

size_t fieldNumber(RequestField f) { return static_cast<size_t>(f); }

void addRange(IndexRanges& out, uint64_t lo, uint64_t hi) {
    if (!out.empty() && out.back().hi + 1 >= lo) {
        out.back().hi = std::max(out.back().hi, hi);
    } else {
        out.push_back({lo, hi});
    }
}

bool inRanges(const IndexRanges& ranges, uint64_t v) {
    auto it = std::lower_bound(ranges.begin(), ranges.end(), v,
                               [](const Range& r, uint64_t x) { return r.hi < x; });
    return it != ranges.end() && it->lo <= v;
}

bool rangesMeet(const IndexRanges& a, const IndexRanges& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].hi < b[j].lo) {
            ++i;
        } else if (b[j].hi < a[i].lo) {
            ++j;
        } else {
            return true;
        }
    }
    return false;
}

}  // namespace

RequestSpace::RequestSpace(DecisionDiagram& dd, const std::vector<const Policy*>& policies,
                           const Cuts& extra)
    : dd_(dd), policies_(policies) {
    dd_.afford(setupEstimate());
    addFieldCuts(extra);
    // Port attributes from every group of every policy.
    ElementaryIntervals guids(UINT64_MAX), pkeys(ib::PkeyBaseMask);
    std::vector<Range> pkeyNamed;
    for (const Policy* p : policies_) {
        for (const PortGroup& g : p->groups) {
            guids.add(g.guids);
            pkeys.add(g.pkeys);
            for (const Range& r : g.pkeys.ranges()) pkeyNamed.push_back(r);
            for (const PortNameRef& n : g.portNames) {
                if (n.port != 0) attributes_.names.emplace_back(n.nodeDescription, n.port);
            }
            for (const NameRef& n : g.partitions) attributes_.partitions.push_back(n.name);
        }
    }
    guids.finish();
    pkeys.finish();
    for (size_t i = 0; i < guids.starts.size(); ++i)
        attributes_.guidIntervals.push_back({guids.starts[i], guids.last(i)});
    const RangeSet named = RangeSet::build(std::move(pkeyNamed));
    for (size_t i = 0; i < pkeys.starts.size(); ++i) {
        if (named.contains(pkeys.starts[i]))
            attributes_.pkeyIntervals.push_back({pkeys.starts[i], pkeys.last(i)});
    }
    auto& names = attributes_.names;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    names.insert(names.begin(), {std::string(), 0});
    auto& parts = attributes_.partitions;
    std::sort(parts.begin(), parts.end());
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());

    addFieldDimensions();
    addPortDimensions(Ends::Source);
    addPortDimensions(Ends::Destination);
    for (const Policy* p : policies_) {
        selectors_.emplace_back();
        for (const PortGroup& g : p->groups) selectors_.back().push_back(selectorsOf(g));
    }
    indexRules();
}

RequestSpace::RequestSpace(DecisionDiagram& dd, const std::vector<const BoundPolicy*>& bound,
                           const Cuts& extra, const std::vector<uint32_t>& portTags)
    : dd_(dd), bound_(bound) {
    if (bound.empty()) throw std::logic_error("RequestSpace: no policy");
    for (const BoundPolicy* b : bound) {
        if (b->fabric->ports.size() != bound[0]->fabric->ports.size())
            throw std::logic_error("RequestSpace: the policies are bound to different fabrics");
        policies_.push_back(b->policy);
    }
    addFieldCuts(extra);
    // Endpoints in the same groups of every policy (and with the same tag) are one class. The
    // classes are refined group by group: a class some of whose ports are in the group splits,
    // its members in the group moving to a new class, so the work is the groups' sizes and the
    // classes number at most the ports.
    const Fabric& fabric = *bound[0]->fabric;
    std::vector<uint32_t> refined(fabric.ports.size(), 0);
    std::vector<uint32_t> size(1, static_cast<uint32_t>(fabric.ports.size()));
    // Per class, for the group being applied: the round it was last met in, how many of its
    // ports the group holds, and the class those move to (itself when it holds them all).
    std::vector<uint32_t> met(1, UINT32_MAX), held(1, 0), moveTo(1, 0);
    uint32_t round = 0;
    auto refine = [&](auto&& eachPort) {
        eachPort([&](uint32_t port) {
            const uint32_t c = refined[port];
            if (met[c] != round) {
                met[c] = round;
                held[c] = 0;
            }
            ++held[c];
        });
        eachPort([&](uint32_t port) {
            const uint32_t c = refined[port];
            if (met[c] != round + 1) {  // its first member: the class stays whole, or splits
                met[c] = round + 1;
                moveTo[c] = c;
                if (held[c] != size[c]) {
                    moveTo[c] = static_cast<uint32_t>(size.size());
                    size.push_back(0);
                    met.push_back(UINT32_MAX);
                    held.push_back(0);
                    moveTo.push_back(0);
                }
            }
            ++setupWords_;
            if (moveTo[c] == c) return;
            refined[port] = moveTo[c];
            --size[c];
            ++size[moveTo[c]];
        });
        round += 2;
    };
    // A group's members, without building their list (node types never repeat a listed port).
    auto members = [&fabric](const GroupMembers& g) {
        return [&g, &fabric](auto&& f) {
            if (g.nodeTypes) {
                for (uint32_t p : fabric.endpoints()) {
                    if (g.nodeTypes & nodeTypeBit(fabric.typeOf(p))) f(p);
                }
            }
            for (uint32_t p : g.ports) f(p);
        };
    };
    for (const BoundPolicy* b : bound) {
        for (const GroupMembers& g : b->groups) refine(members(g));
    }
    if (!portTags.empty()) {
        std::map<uint32_t, std::vector<uint32_t>> byTag;
        for (uint32_t port : fabric.endpoints()) byTag[portTags[port]].push_back(port);
        for (const auto& tagged : byTag) {
            refine([&ports = tagged.second](auto&& f) {
                for (uint32_t p : ports) f(p);
            });
        }
    }
    // Classes numbered in port order.
    std::vector<uint32_t> number(size.size(), UINT32_MAX);
    classOf_.assign(fabric.ports.size(), UINT32_MAX);
    for (uint32_t port : fabric.endpoints()) {
        uint32_t& n = number[refined[port]];
        if (n == UINT32_MAX) {
            n = static_cast<uint32_t>(classes_.size());
            classes_.emplace_back();
        }
        classes_[n].push_back(port);
        classOf_[port] = n;
    }
    // Each group's classes, as a bitset (to tell quickly whether two groups meet) and read
    // from it in order.
    const size_t classWords = (classes_.size() + 63) / 64;
    for (const BoundPolicy* b : bound) {
        groupClasses_.emplace_back();
        groupClassBits_.emplace_back();
        for (const GroupMembers& g : b->groups) {
            Bits bits(classWords);
            members(g)([&](uint32_t port) { setBit(bits, classOf_[port]); });
            std::vector<uint32_t> cs;
            for (size_t w = 0; w < classWords; ++w) {
                for (uint64_t m = bits[w]; m; m &= m - 1)
                    cs.push_back(static_cast<uint32_t>(w * 64 + std::countr_zero(m)));
            }
            setupWords_ += classWords;
            groupClasses_.back().push_back(std::move(cs));
            groupClassBits_.back().push_back(std::move(bits));
        }
    }
    addFieldDimensions();
    for (Ends end : {Ends::Source, Ends::Destination}) {
        Dimension d{DimKind::Classes, end};
        d.size = std::max<uint64_t>(classes_.size(), 1);
        addDimension(d);
        classDims_[static_cast<size_t>(end)] = dims_.size() - 1;
    }
    indexRules();
}

void RequestSpace::addFieldCuts(const Cuts& extra) {
    auto add = [this](RequestField f, const Range& r) {
        ElementaryIntervals& cuts = fields_[fieldNumber(f)];
        const uint64_t max = FieldMax[fieldNumber(f)];
        if (r.lo > max) return;
        cuts.add(r.lo, std::min(r.hi, max));
    };
    // A request's PKey matches by its base: both halves split alike.
    auto addPkey = [&](const Range& r) {
        if (r.lo > ib::PkeyBaseMask) return;
        const uint64_t hi = std::min<uint64_t>(r.hi, ib::PkeyBaseMask);
        add(RequestField::Pkey, {r.lo, hi});
        add(RequestField::Pkey, {r.lo | ib::PkeyFullMember, hi | ib::PkeyFullMember});
    };
    for (const Policy* p : policies_) {
        for (const MatchRule& rule : p->rules) {
            for (const Range& r : rule.qosClasses.ranges()) add(RequestField::QosClass, r);
            for (const Range& r : rule.serviceIds.ranges()) add(RequestField::ServiceId, r);
            for (const Range& r : rule.pkeys.ranges()) addPkey(r);
        }
    }
    for (const Range& r : extra.qosClasses) add(RequestField::QosClass, r);
    for (const Range& r : extra.serviceIds) add(RequestField::ServiceId, r);
    for (const Range& r : extra.pkeys) addPkey({r.lo & ib::PkeyBaseMask, r.hi & ib::PkeyBaseMask});
    for (auto& cuts : fields_) cuts.finish();
}

void RequestSpace::addDimension(Dimension d) {
    d.size = std::max<uint64_t>(d.size, 1);
    d.bits = bitsFor(d.size);
    d.firstVar = vars_;
    vars_ += d.bits;
    dims_.push_back(d);
}

// The fields come first in the diagrams: most rules tell requests apart by their fields more
// finely than by their ports, and what is left of a rule below them is a few port sets.
void RequestSpace::addFieldDimensions() {
    for (RequestField f : RequestFields) {
        Dimension d{DimKind::Field};
        d.field = f;
        d.size = fields_[fieldNumber(f)].starts.size() + 1;
        addDimension(d);
        fieldDims_[fieldNumber(f)] = dims_.size() - 1;
    }
}

void RequestSpace::addPortDimensions(Ends end) {
    PortDims& at = portDims_[static_cast<size_t>(end)];
    auto add = [&](DimKind kind, uint64_t size, uint32_t item = 0) {
        Dimension d{kind, end};
        d.item = item;
        d.size = size;
        addDimension(d);
        return dims_.size() - 1;
    };
    at.nodeType = add(DimKind::NodeType, 3);
    at.sm = add(DimKind::Sm, 2);
    for (uint32_t i = 0; i < attributes_.partitions.size(); ++i)
        at.partitions.push_back(add(DimKind::Partition, 2, i));
    for (uint32_t i = 0; i < attributes_.pkeyIntervals.size(); ++i)
        at.pkeys.push_back(add(DimKind::PkeyMember, 2, i));
    at.name = add(DimKind::Name, attributes_.names.size());
    at.guid = add(DimKind::Guid, attributes_.guidIntervals.size());
}

IndexRanges RequestSpace::Selectors::ownNameRanges() const {
    IndexRanges out;
    for (uint64_t n : ownNames) addRange(out, n, n);
    return out;
}

RequestSpace::Selectors RequestSpace::unionOf(size_t p, const std::vector<uint32_t>& groups) const {
    Selectors u;
    std::vector<Range> guids, switches;
    for (uint32_t g : groups) {
        const Selectors& s = selectors_[p][g];
        u.types |= s.types;
        u.self = u.self || s.self;
        guids.insert(guids.end(), s.guids.begin(), s.guids.end());
        u.ownNames.insert(u.ownNames.end(), s.ownNames.begin(), s.ownNames.end());
        switches.insert(switches.end(), s.switchNames.begin(), s.switchNames.end());
        u.partitions.insert(u.partitions.end(), s.partitions.begin(), s.partitions.end());
        u.pkeys.insert(u.pkeys.end(), s.pkeys.begin(), s.pkeys.end());
    }
    u.guids = RangeSet::build(std::move(guids)).ranges();
    u.switchNames = RangeSet::build(std::move(switches)).ranges();
    std::sort(u.ownNames.begin(), u.ownNames.end());
    u.ownNames.erase(std::unique(u.ownNames.begin(), u.ownNames.end()), u.ownNames.end());
    return u;
}

uint64_t RequestSpace::setupEstimate() const {
    // Words written and read: each group's GUID ranges and port names looked up among every
    // group's, then held again for each rule that names the group (the point index holds each
    // rule's), and a bitset over the rules for each rule and side.
    uint64_t words = 0;
    std::vector<uint64_t> entries;
    for (const Policy* p : policies_) {
        entries.clear();
        for (const PortGroup& g : p->groups) {
            entries.push_back(g.guids.ranges().size() + g.portNames.size());
            words += 16 * entries.back();
        }
        for (const MatchRule& r : p->rules) {
            for (const auto* side : {&r.sources, &r.destinations}) {
                for (uint32_t g : *side) words += 8 * entries[g];
            }
        }
        words += p->rules.size() * (p->rules.size() / 64 + 1) / 4;
    }
    // In steps: sixteen words a step while they fit the caches, as the count spent once the
    // space is built; past that, two. Measured: 0.8 million words of setup took 7 ms (a
    // 10,000-rule policy, a GUID range a group), 52 million 3.9 s (a 58 MB policy of 4,000
    // groups of 400 GUID ranges and port names, each group named by two rules).
    constexpr uint64_t Cached = uint64_t{2} << 20;
    return 1 + std::min(words, Cached) / 16 + (words > Cached ? (words - Cached) / 2 : 0);
}

RequestSpace::Selectors RequestSpace::selectorsOf(const PortGroup& g) const {
    Selectors s;
    for (uint8_t t = 0; t < 3; ++t) {
        if (g.nodeTypes & nodeTypeBit(Types[t])) s.types |= static_cast<uint8_t>(1u << t);
    }
    s.self = g.self;
    const auto& intervals = attributes_.guidIntervals;
    auto intervalOf = [&](uint64_t v) {
        return static_cast<uint64_t>(
            std::lower_bound(intervals.begin(), intervals.end(), v,
                             [](const Range& i, uint64_t x) { return i.hi < x; }) -
            intervals.begin());
    };
    for (const Range& r : g.guids.ranges()) addRange(s.guids, intervalOf(r.lo), intervalOf(r.hi));
    const auto& names = attributes_.names;
    for (const PortNameRef& n : g.portNames) {
        if (n.port == 0) continue;
        // A CA or router port answers to its own name; a switch (its port 0) to any port
        // number of its description.
        auto exact =
            std::lower_bound(names.begin(), names.end(), std::make_pair(n.nodeDescription, n.port));
        s.ownNames.push_back(static_cast<uint64_t>(exact - names.begin()));
        auto from = std::lower_bound(names.begin(), names.end(),
                                     std::make_pair(n.nodeDescription, uint32_t{0}));
        auto to = std::upper_bound(names.begin(), names.end(),
                                   std::make_pair(n.nodeDescription, UINT32_MAX));
        s.switchNames.push_back({static_cast<uint64_t>(from - names.begin()),
                                 static_cast<uint64_t>(to - names.begin()) - 1});
    }
    std::sort(s.ownNames.begin(), s.ownNames.end());
    std::sort(s.switchNames.begin(), s.switchNames.end(),
              [](const Range& a, const Range& b) { return a.lo < b.lo; });
    IndexRanges merged;
    for (const Range& r : s.switchNames) addRange(merged, r.lo, r.hi);
    s.switchNames = std::move(merged);
    for (const NameRef& p : g.partitions) {
        auto it =
            std::lower_bound(attributes_.partitions.begin(), attributes_.partitions.end(), p.name);
        s.partitions.push_back(static_cast<uint32_t>(it - attributes_.partitions.begin()));
    }
    for (uint32_t i = 0; i < attributes_.pkeyIntervals.size(); ++i) {
        if (g.pkeys.contains(attributes_.pkeyIntervals[i].lo)) s.pkeys.push_back(i);
    }
    return s;
}

void RequestSpace::indexRules() {
    for (RequestField f : RequestFields) {
        auto& fieldRules = ruleFields_[fieldNumber(f)];
        for (const Policy* p : policies_) {
            fieldRules.emplace_back();
            for (const MatchRule& rule : p->rules)
                fieldRules.back().push_back(fieldIndices(f, ruleField(rule, f)));
        }
    }
    for (auto& memo : groupMemo_) {
        for (const Policy* p : policies_)
            memo.emplace_back(p->groups.size(), DecisionDiagram::False);
    }
    for (const Policy* p : policies_) {
        ruleMemo_.emplace_back(p->rules.size(), DecisionDiagram::False);
        savedRules_.emplace_back(p->rules.size());
        ruleBuilds_.emplace_back(p->rules.size(), 0);
    }
    pointIndex_.resize(policies_.size());
    topIndex_.resize(policies_.size());
    for (size_t p = 0; p < policies_.size(); ++p) {
        extents_.emplace_back();
        for (uint32_t r = 0; r < policies_[p]->rules.size(); ++r)
            extents_.back().push_back(measureExtent(p, r));
        setupWords_ += buildPointIndex(p, pointIndex_[p]);
        tierRules(p);
        setupWords_ += 16 * policies_[p]->rules.size() + 4 * policies_[p]->groups.size();
    }
    for (const Dimension& d : dims_) setupWords_ += d.size / 8;
    // Building the space is work of the analysis too: a large policy may spend its budget here.
    dd_.spend(1 + setupWords_ / 16);
}

const RangeSet& RequestSpace::ruleField(const MatchRule& r, RequestField f) {
    return f == RequestField::QosClass    ? r.qosClasses
           : f == RequestField::ServiceId ? r.serviceIds
                                          : r.pkeys;
}

Range RequestSpace::fieldInterval(RequestField f, uint64_t index) const {
    const ElementaryIntervals& cuts = fields_[fieldNumber(f)];
    return {cuts.starts[index - 1], cuts.last(index - 1)};
}

IndexRanges RequestSpace::fieldIndices(RequestField f, const RangeSet& set) const {
    const ElementaryIntervals& cuts = fields_[fieldNumber(f)];
    const uint64_t max = FieldMax[fieldNumber(f)];
    IndexRanges indices;
    auto add = [&](uint64_t lo, uint64_t hi) {
        addRange(indices, cuts.find(lo) + 1, cuts.find(hi) + 1);
    };
    if (f != RequestField::Pkey) {
        for (const Range& r : set.ranges()) {  // in order
            if (r.lo > max) break;
            add(r.lo, std::min(r.hi, max));
        }
        return indices;
    }
    // A PKey stands for its limited and its full member.
    std::vector<Range> values;
    for (const Range& r : set.ranges()) {
        if (r.lo > max) continue;
        values.push_back({r.lo, std::min(r.hi, max)});
        values.push_back({r.lo | ib::PkeyFullMember, std::min(r.hi, max) | ib::PkeyFullMember});
    }
    std::sort(values.begin(), values.end(),
              [](const Range& a, const Range& b) { return a.lo < b.lo; });
    for (const Range& v : values) add(v.lo, v.hi);
    return indices;
}

Ref RequestSpace::indexIn(size_t dim, const IndexRanges& ranges, Ref then) {
    const Dimension& d = dims_[dim];
    dd_.spend(1 + ranges.size() * d.bits / 4);
    if (ranges.empty()) return DecisionDiagram::False;
    if (d.bits == 0) return then;
    // Indices past the size stand for the last value: a range holding it holds them too.
    const uint64_t full = d.bits == 64 ? UINT64_MAX : (uint64_t{1} << d.bits) - 1;
    auto hiOf = [&](size_t k) {
        return k + 1 == ranges.size() && ranges[k].hi >= d.size - 1 ? full : ranges[k].hi;
    };
    // Over the prefix [lo, lo + 2^bit), with the ranges [from, to) that meet it.
    auto build = [&](auto& self, uint32_t bit, uint64_t lo, size_t from, size_t to) -> Ref {
        if (from == to) return DecisionDiagram::False;
        const uint64_t hi = bit == 64 ? UINT64_MAX : lo + ((uint64_t{1} << bit) - 1);
        if (ranges[from].lo <= lo && hiOf(from) >= hi) return then;
        const uint64_t mid = lo + (uint64_t{1} << (bit - 1));
        // Ranges below mid go low, those from mid up go high, one across mid goes both ways.
        size_t split = from;
        while (split < to && hiOf(split) < mid) ++split;
        const bool across = split < to && ranges[split].lo < mid;
        Ref low = self(self, bit - 1, lo, from, across ? split + 1 : split);
        Ref high = self(self, bit - 1, mid, split, to);
        return dd_.node(d.firstVar + (d.bits - bit), low, high);
    };
    return build(build, d.bits, 0, 0, ranges.size());
}

bool RequestSpace::trimDiagram(size_t nodes) {
    if (dd_.size() <= nodes) return false;
    dd_.clear();
    for (Ref* memo : memos_) *memo = DecisionDiagram::False;
    memos_.clear();
    return true;
}

Ref RequestSpace::fieldIn(RequestField f, const RangeSet& set) {
    return indexIn(fieldDim(f), fieldIndices(f, set));
}

Ref RequestSpace::fieldAbsent(RequestField f) { return indexIn(fieldDim(f), {{0, 0}}); }

Ref RequestSpace::group(size_t p, uint32_t g, Ends end) {
    Ref& memo = groupMemo_[static_cast<size_t>(end)][p][g];
    if (memo != DecisionDiagram::False) return memo;
    if (onFabric()) {
        IndexRanges ranges;
        for (uint32_t c : groupClasses_[p][g]) addRange(ranges, c, c);
        memo = indexIn(classDim(end), ranges);
        if (memo != DecisionDiagram::False) memos_.push_back(&memo);
        return memo;
    }
    // A port the group takes by any of its selectors; a name only for the node types it
    // names (a CA or router port by its own name, a switch by its description).
    const Selectors& s = selectors_[p][g];
    const PortDims& at = portDims_[static_cast<size_t>(end)];
    Ref any = DecisionDiagram::False;
    auto add = [&](Ref f) { any = dd_.disj(any, f); };
    if (s.types) {
        IndexRanges types;
        for (uint64_t t = 0; t < 3; ++t) {
            if (s.types >> t & 1) addRange(types, t, t);
        }
        add(indexIn(at.nodeType, types));
    }
    if (s.self) add(indexIn(at.sm, {{1, 1}}));
    if (!s.guids.empty()) add(indexIn(at.guid, s.guids));
    if (!s.ownNames.empty())
        add(indexIn(at.nodeType, {{0, 0}, {2, 2}}, indexIn(at.name, s.ownNameRanges())));
    if (!s.switchNames.empty())
        add(indexIn(at.nodeType, {{SwitchType, SwitchType}}, indexIn(at.name, s.switchNames)));
    for (uint32_t item : s.partitions) add(indexIn(at.partitions[item], {{1, 1}}));
    for (uint32_t item : s.pkeys) add(indexIn(at.pkeys[item], {{1, 1}}));
    memo = any;
    if (memo != DecisionDiagram::False) memos_.push_back(&memo);
    return any;
}

Ref RequestSpace::rule(size_t p, uint32_t r) {
    Ref& memo = ruleMemo_[p][r];
    if (memo != DecisionDiagram::False) return memo;
    if (!savedRules_[p][r].empty()) {
        memo = restoreRule(p, r);
        memos_.push_back(&memo);
        return memo;
    }
    const MatchRule& rule = policies_[p]->rules[r];
    // Built from the last dimension up, each part above what is built so far: a part's
    // diagram leads to the rest where it holds, so no part is walked twice.
    Ref f = DecisionDiagram::True;
    for (Ends end : {Ends::Destination, Ends::Source}) {
        const auto& groups = end == Ends::Source ? rule.sources : rule.destinations;
        if (groups.empty()) continue;
        Ref side = DecisionDiagram::False;
        for (uint32_t g : groups) side = dd_.disj(side, group(p, g, end));
        f = dd_.conj(side, f);
    }
    for (auto field = std::rbegin(RequestFields); field != std::rend(RequestFields); ++field) {
        if (!ruleField(rule, *field).empty())
            f = indexIn(fieldDim(*field), ruleFields_[fieldNumber(*field)][p][r], f);
    }
    // A rule that matches nothing stays False (recomputed when asked again, which is cheap).
    memo = f;
    if (memo != DecisionDiagram::False) {
        memos_.push_back(&memo);
        if (++ruleBuilds_[p][r] == 2) saveRule(p, r, f);
    }
    return f;
}

void RequestSpace::saveRule(size_t p, uint32_t r, Ref f) {
    std::vector<SavedNode>& out = savedRules_[p][r];
    if (savedAt_.size() < dd_.size()) savedAt_.resize(dd_.size(), 0);
    auto code = [&](Ref g) { return dd_.isTerminal(g) ? g : savedAt_[g] + 1; };
    auto pending = [&](Ref g) { return !dd_.isTerminal(g) && savedAt_[g] == 0; };
    // Depth first, a node after both its children.
    std::vector<Ref> stack{f}, saved;
    while (!stack.empty()) {
        const Ref g = stack.back();
        if (!pending(g)) {
            stack.pop_back();
            continue;
        }
        const Ref lo = dd_.low(g), hi = dd_.high(g);
        if (pending(lo) || pending(hi)) {
            if (pending(hi)) stack.push_back(hi);
            if (pending(lo)) stack.push_back(lo);
            continue;
        }
        stack.pop_back();
        out.push_back({dd_.var(g), code(lo), code(hi)});
        savedAt_[g] = static_cast<uint32_t>(out.size());
        saved.push_back(g);
    }
    for (Ref g : saved) savedAt_[g] = 0;
}

Ref RequestSpace::restoreRule(size_t p, uint32_t r) {
    const std::vector<SavedNode>& saved = savedRules_[p][r];
    // A step for every four nodes: making a node again costs less than an operation's step.
    dd_.spend(1 + saved.size() / 4);
    made_.clear();
    auto ref = [&](uint32_t c) { return c < 2 ? Ref{c} : made_[c - 2]; };
    for (const SavedNode& n : saved) made_.push_back(dd_.node(n.var, ref(n.lo), ref(n.hi)));
    return made_.back();
}

RequestPoint RequestSpace::pointIn(Ref f, uint64_t seed) const {
    std::vector<char> bits(vars_, -1);  // -1: not on the path, free
    uint64_t state = seed;
    auto coin = [&]() {  // splitmix64
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return ((z ^ (z >> 31)) & 1) != 0;
    };
    while (!dd_.isTerminal(f)) {
        const bool high = dd_.low(f) == DecisionDiagram::False ||
                          (seed != 0 && dd_.high(f) != DecisionDiagram::False && coin());
        bits[dd_.var(f)] = high ? 1 : 0;
        f = high ? dd_.high(f) : dd_.low(f);
    }
    // Bits the walk skipped are free: 0, or with a seed drawn too.
    for (char& b : bits) {
        if (b < 0) b = seed != 0 && coin() ? 1 : 0;
    }
    RequestPoint point;
    for (const Dimension& d : dims_) {
        uint64_t v = 0;
        for (uint32_t b = 0; b < d.bits; ++b)
            v = v << 1 | static_cast<uint64_t>(bits[d.firstVar + b]);
        point.values.push_back(std::min(v, d.size - 1));
    }
    return point;
}

std::optional<RequestPoint> RequestSpace::witness(size_t p, uint32_t r, unsigned variant) const {
    const MatchRule& rule = policies_[p]->rules[r];
    // Variants 0 and 1 take the first and the last index of each set; later ones an index drawn
    // from the variant and the rule (the same variant, the same request).
    uint64_t state = (uint64_t{r} << 32 | variant) * 0x9e3779b97f4a7c15ULL;
    auto pick = [&](const IndexRanges& set) {
        if (variant < 2) return variant == 0 ? set.front().lo : set.back().hi;
        uint64_t count = 0;
        for (const Range& x : set) count += x.hi - x.lo + 1;
        state = (state ^ (state >> 29)) * 0xbf58476d1ce4e5b9ULL;
        uint64_t k = (state >> 11) % count;
        for (const Range& x : set) {
            if (k <= x.hi - x.lo) return x.lo + k;
            k -= x.hi - x.lo + 1;
        }
        return set.back().hi;
    };
    RequestPoint point;
    point.values.assign(dims_.size(), 0);
    // Fields: a value the rule holds; absent where it names none, which no earlier rule naming
    // the field matches.
    for (RequestField f : RequestFields) {
        if (ruleField(rule, f).empty()) continue;
        const IndexRanges& set = ruleFields_[fieldNumber(f)][p][r];
        if (set.empty()) return std::nullopt;
        point.values[fieldDim(f)] = std::min(pick(set), dims_[fieldDim(f)].size - 1);
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto& groups = end == Ends::Source ? rule.sources : rule.destinations;
        if (groups.empty()) continue;
        const uint32_t g = groups[(variant >> 1) % groups.size()];
        if (onFabric()) {
            const auto& cs = groupClasses_[p][g];
            if (cs.empty()) return std::nullopt;
            point.values[classDim(end)] = cs[variant == 0   ? 0
                                             : variant == 1 ? cs.size() - 1
                                                            : (state >> 7) % cs.size()];
            continue;
        }
        // A port the group selects by one of its selectors; its other attributes are the least
        // ones (no partition, no name), its node type varies where the group does not fix it.
        const Selectors& s = selectors_[p][g];
        const PortDims& at = portDims_[static_cast<size_t>(end)];
        point.values[at.nodeType] = variant % 3;
        if (!s.guids.empty()) {
            point.values[at.guid] = pick(s.guids);
        } else if (s.types) {
            uint64_t t = 0;
            while (!(s.types >> t & 1)) ++t;
            point.values[at.nodeType] = t;
        } else if (s.self) {
            point.values[at.sm] = 1;
        } else if (!s.ownNames.empty()) {
            point.values[at.nodeType] = 0;
            point.values[at.name] = s.ownNames.front();
        } else if (!s.switchNames.empty()) {
            point.values[at.nodeType] = SwitchType;
            point.values[at.name] = s.switchNames.front().lo;
        } else if (!s.partitions.empty()) {
            point.values[at.partitions[s.partitions.front()]] = 1;
        } else if (!s.pkeys.empty()) {
            point.values[at.pkeys[s.pkeys.front()]] = 1;
        } else {
            return std::nullopt;
        }
    }
    return point;
}

bool RequestSpace::holds(size_t p, uint32_t g, Ends end, const RequestPoint& point) const {
    if (onFabric()) {
        const auto& cs = groupClasses_[p][g];
        return std::binary_search(cs.begin(), cs.end(), point.values[classDim(end)]);
    }
    const Selectors& s = selectors_[p][g];
    const PortDims& at = portDims_[static_cast<size_t>(end)];
    const uint64_t type = point.values[at.nodeType];
    if (s.types >> type & 1) return true;
    if (s.self && point.values[at.sm]) return true;
    if (inRanges(s.guids, point.values[at.guid])) return true;
    const uint64_t name = point.values[at.name];
    if (type == SwitchType ? inRanges(s.switchNames, name)
                           : std::binary_search(s.ownNames.begin(), s.ownNames.end(), name))
        return true;
    for (uint32_t item : s.partitions) {
        if (point.values[at.partitions[item]]) return true;
    }
    for (uint32_t item : s.pkeys) {
        if (point.values[at.pkeys[item]]) return true;
    }
    return false;
}

bool RequestSpace::sideHolds(size_t p, const std::vector<uint32_t>& groups, Ends end,
                             const RequestPoint& point) const {
    if (groups.empty()) return true;
    return std::any_of(groups.begin(), groups.end(),
                       [&](uint32_t g) { return holds(p, g, end, point); });
}

bool RequestSpace::matches(size_t p, uint32_t r, const RequestPoint& point) const {
    for (RequestField f : RequestFields) {
        const IndexRanges& set = ruleFields_[fieldNumber(f)][p][r];
        if (ruleField(policies_[p]->rules[r], f).empty()) continue;
        const uint64_t v = point.values[fieldDim(f)];
        if (v == 0 || !inRanges(set, v)) return false;
    }
    const MatchRule& rule = policies_[p]->rules[r];
    return sideHolds(p, rule.sources, Ends::Source, point) &&
           sideHolds(p, rule.destinations, Ends::Destination, point);
}

bool RequestSpace::within(size_t p, uint32_t inner, uint32_t outer) const {
    const MatchRule& a = policies_[p]->rules[inner];
    const MatchRule& b = policies_[p]->rules[outer];
    auto covered = [](const IndexRanges& small, const IndexRanges& large) {
        return std::all_of(small.begin(), small.end(), [&](const Range& r) {
            auto it = std::lower_bound(large.begin(), large.end(), r.lo,
                                       [](const Range& x, uint64_t v) { return x.hi < v; });
            return it != large.end() && it->lo <= r.lo && r.hi <= it->hi;
        });
    };
    for (RequestField f : RequestFields) {
        if (ruleField(b, f).empty()) continue;  // outer takes every value, and none
        if (ruleField(a, f).empty()) return false;
        if (!covered(ruleFields_[fieldNumber(f)][p][inner], ruleFields_[fieldNumber(f)][p][outer]))
            return false;
    }
    // Each group of inner inside the union of outer's: on a fabric by their classes; on every
    // fabric selector by selector (a port a selector of inner takes, one of outer's of the same
    // kind takes).
    auto sideWithin = [&](const std::vector<uint32_t>& small, const std::vector<uint32_t>& large) {
        if (large.empty()) return true;
        if (small.empty()) return false;
        auto inLarge = [&](uint32_t g) {
            return std::find(large.begin(), large.end(), g) != large.end();
        };
        if (std::all_of(small.begin(), small.end(), inLarge)) return true;  // the same groups
        if (onFabric()) {
            Bits all((classes_.size() + 63) / 64);
            for (uint32_t g : large) {
                for (size_t w = 0; w < all.size(); ++w) all[w] |= groupClassBits_[p][g][w];
            }
            for (uint32_t g : small) {
                for (size_t w = 0; w < all.size(); ++w) {
                    if (groupClassBits_[p][g][w] & ~all[w]) return false;
                }
            }
            return true;
        }
        // Outer's side as one group's selectors: its only group's, or its groups' union.
        Selectors merged;
        if (large.size() > 1) merged = unionOf(p, large);
        const Selectors* any = large.size() > 1 ? &merged : &selectors_[p][large[0]];
        auto in = [](const auto& list, auto v) {
            return std::find(list.begin(), list.end(), v) != list.end();
        };
        for (uint32_t g : small) {
            const Selectors& s = selectors_[p][g];
            if ((s.types & ~any->types) != 0 || (s.self && !any->self) ||
                !covered(s.guids, any->guids) || !covered(s.switchNames, any->switchNames))
                return false;
            for (uint64_t n : s.ownNames) {
                if (!in(any->ownNames, n)) return false;
            }
            for (uint32_t x : s.partitions) {
                if (!in(any->partitions, x)) return false;
            }
            for (uint32_t x : s.pkeys) {
                if (!in(any->pkeys, x)) return false;
            }
        }
        return true;
    };
    return sideWithin(a.sources, b.sources) && sideWithin(a.destinations, b.destinations);
}

double RequestSpace::measureExtent(size_t p, uint32_t r) const {
    const MatchRule& rule = policies_[p]->rules[r];
    double share = 1;
    for (RequestField f : RequestFields) {
        if (ruleField(rule, f).empty()) continue;
        uint64_t covered = 0;
        for (const Range& x : ruleFields_[fieldNumber(f)][p][r]) covered += x.hi - x.lo + 1;
        share *= static_cast<double>(covered) / static_cast<double>(dims_[fieldDim(f)].size);
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto& groups = end == Ends::Source ? rule.sources : rule.destinations;
        if (groups.empty()) continue;
        double side = 0;
        for (uint32_t g : groups) {
            if (onFabric()) {
                side += static_cast<double>(groupClasses_[p][g].size()) /
                        static_cast<double>(classes_.size());
                continue;
            }
            const Selectors& s = selectors_[p][g];
            if (s.types || s.self || !s.ownNames.empty() || !s.partitions.empty() ||
                !s.pkeys.empty()) {
                side = 1;
                break;
            }
            uint64_t covered = 0;
            for (const Range& x : s.guids) covered += x.hi - x.lo + 1;
            side += static_cast<double>(covered) /
                    static_cast<double>(attributes_.guidIntervals.size());
        }
        share *= std::min(side, 1.0);
    }
    return share;
}

bool RequestSpace::groupsMeet(size_t p, uint32_t g, size_t q, uint32_t h) const {
    if (onFabric()) {
        const Bits& a = groupClassBits_[p][g];
        const Bits& b = groupClassBits_[q][h];
        for (size_t w = 0; w < a.size(); ++w) {
            if (a[w] & b[w]) return true;
        }
        return false;
    }
    // Selectors exclude each other only pairwise by the same attribute: two node types, two
    // GUID ranges, two port names of different nodes. A port may be the SM's and in any
    // partitions whatever else it is.
    const Selectors& a = selectors_[p][g];
    const Selectors& b = selectors_[q][h];
    auto any = [](const Selectors& s) {
        return s.types || s.self || !s.guids.empty() || !s.ownNames.empty() ||
               !s.partitions.empty() || !s.pkeys.empty();
    };
    if (!any(a) || !any(b)) return false;
    if (a.self || b.self || !a.partitions.empty() || !b.partitions.empty() || !a.pkeys.empty() ||
        !b.pkeys.empty())
        return true;
    const bool aNames = !a.ownNames.empty(), bNames = !b.ownNames.empty();
    const bool aGuids = !a.guids.empty(), bGuids = !b.guids.empty();
    if ((a.types && (bNames || bGuids)) || (b.types && (aNames || aGuids))) return true;
    if ((aNames && bGuids) || (bNames && aGuids)) return true;
    return (a.types & b.types) || rangesMeet(a.guids, b.guids) ||
           rangesMeet(a.switchNames, b.switchNames);
}

bool RequestSpace::sidesMeet(size_t p, const std::vector<uint32_t>& a, size_t q,
                             const std::vector<uint32_t>& b) const {
    if (a.empty() || b.empty()) return true;
    for (uint32_t g : a) {
        for (uint32_t h : b) {
            if (groupsMeet(p, g, q, h)) return true;
        }
    }
    return false;
}

const std::vector<uint32_t>& RequestSpace::meetingGroups(size_t p, size_t q, uint32_t g) const {
    std::lock_guard lock(meetingMutex_);
    auto [it, added] = meetingGroups_.try_emplace({p, q, g});
    if (added) {
        const auto groups = static_cast<uint32_t>(policies_[p]->groups.size());
        for (uint32_t h = 0; h < groups; ++h) {
            if (groupsMeet(p, h, q, g)) it->second.push_back(h);
        }
    }
    return it->second;  // (a map's elements stay where they are)
}

void RequestSpace::indexFields() const {
    for (const Policy* policy : policies_) {
        auto& sides = sideIndex_.emplace_back();
        for (SideIndex& side : sides) side.byGroup.resize(policy->groups.size());
        for (uint32_t r = 0; r < policy->rules.size(); ++r) {
            const MatchRule& rule = policy->rules[r];
            for (int s = 0; s < 2; ++s) {
                const std::vector<uint32_t>& groups = s == 0 ? rule.sources : rule.destinations;
                if (groups.empty()) sides[s].any.push_back(r);
                for (uint32_t g : groups) {
                    std::vector<uint32_t>& list = sides[s].byGroup[g];
                    if (list.empty() || list.back() != r) list.push_back(r);
                }
            }
        }
    }
    for (RequestField f : RequestFields) {
        const auto& fieldRules = ruleFields_[fieldNumber(f)];
        auto& index = fieldIndex_[fieldNumber(f)];
        for (size_t p = 0; p < policies_.size(); ++p) {
            FieldIndex& fi = index.emplace_back();
            std::vector<uint32_t> narrow;  // the rules listed by interval
            for (uint32_t r = 0; r < policies_[p]->rules.size(); ++r) {
                if (ruleField(policies_[p]->rules[r], f).empty()) {
                    fi.unnamed.push_back(r);
                } else {
                    uint64_t count = 0;
                    for (const Range& x : fieldRules[p][r]) count += x.hi - x.lo + 1;
                    (count > WideRule ? fi.wide : narrow).push_back(r);
                }
            }
            // Counted, then placed: each interval's rules in order.
            fi.start.assign(dims_[fieldDim(f)].size + 1, 0);
            for (uint32_t r : narrow) {
                for (const Range& x : fieldRules[p][r]) {
                    for (uint64_t i = x.lo; i <= x.hi; ++i) ++fi.start[i + 1];
                }
            }
            for (size_t i = 1; i < fi.start.size(); ++i) fi.start[i] += fi.start[i - 1];
            fi.rules.resize(fi.start.back());
            std::vector<uint32_t> next(fi.start.begin(), fi.start.end() - 1);
            for (uint32_t r : narrow) {
                for (const Range& x : fieldRules[p][r]) {
                    for (uint64_t i = x.lo; i <= x.hi; ++i) fi.rules[next[i]++] = r;
                }
            }
        }
    }
}

std::vector<uint32_t> RequestSpace::overlapping(size_t p, uint32_t before, size_t qp,
                                                uint32_t q) const {
    std::call_once(fieldsIndexed_, [this] { indexFields(); });
    const MatchRule& query = policies_[qp]->rules[q];
    auto below = [before](std::span<const uint32_t> sorted) {
        return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), before) -
                                   sorted.begin());
    };
    // The field or side whose index lists the fewest candidates.
    const std::vector<std::span<const uint32_t>>* best = nullptr;
    std::vector<std::span<const uint32_t>> lists[3], sideLists[2];
    size_t bestCount = SIZE_MAX;
    for (int side = 0; side < 2; ++side) {
        const std::vector<uint32_t>& groups = side == 0 ? query.sources : query.destinations;
        if (groups.empty()) continue;
        const SideIndex& index = sideIndex_[p][side];
        auto& l = sideLists[side];
        l = {index.any};
        for (uint32_t g : groups) {
            for (uint32_t h : meetingGroups(p, qp, g)) l.push_back(index.byGroup[h]);
        }
        size_t count = 0;
        for (const auto& v : l) count += below(v);
        if (count < bestCount) {
            bestCount = count;
            best = &l;
        }
    }
    for (RequestField f : RequestFields) {
        const IndexRanges& set = ruleFields_[fieldNumber(f)][qp][q];
        if (ruleField(query, f).empty()) continue;
        const FieldIndex& index = fieldIndex_[fieldNumber(f)][p];
        auto& l = lists[fieldNumber(f)];
        l = {index.unnamed, index.wide};
        for (const Range& x : set) {
            for (uint64_t i = x.lo; i <= x.hi && l.size() < 4 * WideRule; ++i)
                l.push_back(index.holding(i));
        }
        if (l.size() >= 4 * WideRule) continue;  // too wide to be worth it
        size_t count = 0;
        for (const auto& v : l) count += below(v);
        if (count < bestCount) {
            bestCount = count;
            best = &l;
        }
    }
    std::vector<uint32_t> out;
    if (!best) {
        for (uint32_t i = 0; i < before; ++i) out.push_back(i);
    } else {
        // The lists' union in rule order, through a bitmap (each list is in rule order).
        std::vector<uint64_t> marked((before + 63) / 64);
        for (const auto& v : *best) {
            for (uint32_t r : v.first(below(v))) setBit(marked, r);
        }
        for (size_t w = 0; w < marked.size(); ++w) {
            for (uint64_t m = marked[w]; m; m &= m - 1)
                out.push_back(
                    static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(m))));
        }
    }
    // Keep those that meet the query in every field and on both sides.
    std::vector<uint32_t> kept;
    for (uint32_t i : out) {
        const MatchRule& rule = policies_[p]->rules[i];
        bool meet = true;
        for (RequestField f : RequestFields) {
            if (ruleField(rule, f).empty() || ruleField(query, f).empty()) continue;
            meet = meet && rangesMeet(ruleFields_[fieldNumber(f)][p][i],
                                      ruleFields_[fieldNumber(f)][qp][q]);
        }
        if (meet && sidesMeet(p, rule.sources, qp, query.sources) &&
            sidesMeet(p, rule.destinations, qp, query.destinations))
            kept.push_back(i);
    }
    return kept;
}

void RequestSpace::cubes(Ref f, const std::function<void(const RequestCube&)>& out) const {
    RequestCube cube;
    cube.dims.resize(dims_.size());
    // The runs of dimension d's values from node g: which node each leads to.
    auto runs = [&](const Dimension& d, Ref g) {
        std::vector<std::pair<Range, Ref>> list;
        auto walk = [&](auto& self, Ref h, uint32_t bit, uint64_t lo) -> void {
            if (lo >= d.size) return;
            const uint64_t span = bit == 64 ? UINT64_MAX : (uint64_t{1} << bit) - 1;
            const uint64_t hi = std::min(lo + span, d.size - 1);
            if (bit == 0 || dd_.isTerminal(h) || dd_.var(h) >= d.firstVar + d.bits) {
                if (h == DecisionDiagram::False) return;  // (every other node reaches True)
                if (!list.empty() && list.back().second == h && list.back().first.hi + 1 == lo) {
                    list.back().first.hi = hi;
                } else {
                    list.push_back({{lo, hi}, h});
                }
                return;
            }
            const uint64_t mid = lo + (uint64_t{1} << (bit - 1));
            if (dd_.var(h) == d.firstVar + (d.bits - bit)) {
                self(self, dd_.low(h), bit - 1, lo);
                self(self, dd_.high(h), bit - 1, mid);
            } else {
                self(self, h, bit - 1, lo);
                self(self, h, bit - 1, mid);
            }
        };
        walk(walk, g, d.bits, 0);
        return list;
    };
    auto visit = [&](auto& self, size_t dim, Ref g) -> void {
        if (dim == dims_.size()) {
            out(cube);
            return;
        }
        // The runs grouped by where they lead, in order of first appearance.
        std::vector<std::pair<Ref, IndexRanges>> byTarget;
        std::unordered_map<Ref, size_t> at;
        for (auto& [range, target] : runs(dims_[dim], g)) {
            auto [it, fresh] = at.emplace(target, byTarget.size());
            if (fresh) {
                byTarget.push_back({target, {range}});
            } else {
                byTarget[it->second].second.push_back(range);
            }
        }
        for (auto& [target, ranges] : byTarget) {
            cube.dims[dim] = std::move(ranges);
            self(self, dim + 1, target);
        }
    };
    visit(visit, 0, f);
}

}  // namespace ibqos
