// SPDX-License-Identifier: MIT
// RequestSpace: the space built (its dimensions and their bit encodings, the ports' classes
// on a fabric or their attributes on every fabric, each group's selectors, the rules indexed).
// Its diagrams, its tests on one request and its overlap index are in request_space_*.cpp.
//
// Each dimension's value index is written in `bits` variables, most significant first, so a
// range of indices is a diagram of O(bits) nodes. Indices past a dimension's size stand for
// its last value (every set holding the last value holds them too), so no "valid index" mask is
// needed and a dimension a rule does not name is simply True.
#include "policy-space/request_space.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "fabric/node_type.hpp"
#include "policy-space/request_space_detail.hpp"

namespace ibqos {

using namespace space_detail;

namespace {

// A group's members, without building their list (node types never repeat a listed port).
template <class Each>
void forEachMember(const Fabric& fabric, const GroupMembers& g, Each&& f) {
    if (g.nodeTypes) {
        for (uint32_t p : fabric.endpoints()) {
            if (g.nodeTypes & nodeTypeBit(fabric.typeOf(p))) f(p);
        }
    }
    for (uint32_t p : g.ports) f(p);
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
    classifyPorts(portTags);
    indexGroupClasses();
    addFieldDimensions();
    for (Ends end : {Ends::Source, Ends::Destination}) {
        Dimension d{DimKind::Classes, end};
        d.size = std::max<uint64_t>(classes_.size(), 1);
        addDimension(d);
        classDims_[static_cast<size_t>(end)] = dims_.size() - 1;
    }
    indexRules();
}

void RequestSpace::classifyPorts(const std::vector<uint32_t>& portTags) {
    // Endpoints in the same groups of every policy (and with the same tag) are one class. The
    // classes are refined group by group: a class some of whose ports are in the group splits,
    // its members in the group moving to a new class, so the work is the groups' sizes and the
    // classes number at most the ports.
    const Fabric& fabric = *bound_[0]->fabric;
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
    for (const BoundPolicy* b : bound_) {
        for (const GroupMembers& g : b->groups)
            refine([&](auto&& f) { forEachMember(fabric, g, f); });
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
}

void RequestSpace::indexGroupClasses() {
    const Fabric& fabric = *bound_[0]->fabric;
    // Each group's classes, as a bitset (to tell quickly whether two groups meet) and read
    // from it in order.
    const size_t classWords = (classes_.size() + 63) / 64;
    for (const BoundPolicy* b : bound_) {
        groupClasses_.emplace_back();
        groupClassBits_.emplace_back();
        for (const GroupMembers& g : b->groups) {
            Bits bits(classWords);
            forEachMember(fabric, g, [&](uint32_t port) { setBit(bits, classOf_[port]); });
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

}  // namespace ibqos
