// SPDX-License-Identifier: MIT
// RequestSpace's diagrams: a field's values, a group and a rule as diagrams over the space's
// bit variables (a rule's diagram saved once it is built twice, and made again from the saved
// nodes), and the products a diagram splits into.
#include "policy-space/request_space.hpp"

#include <algorithm>
#include <unordered_map>

#include "policy-space/request_space_detail.hpp"

namespace ibqos {

using namespace space_detail;

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
