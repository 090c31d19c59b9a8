// SPDX-License-Identifier: MIT
// RequestSpace's direct tests on one request: a request inside a diagram, a request a rule
// matches (its witnesses), whether a group holds a request and a rule matches it, whether one
// rule holds another, and a rule's share of the space.
#include "policy-space/request_space.hpp"

#include <algorithm>

#include "policy-space/request_space_detail.hpp"

namespace ibqos {

using namespace space_detail;

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

}  // namespace ibqos
