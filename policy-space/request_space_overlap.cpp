// SPDX-License-Identifier: MIT
// RequestSpace's overlap index: whether two groups can share a port, and the earlier rules that
// can match some request a rule does (by field intervals and by the groups of each side).
#include "policy-space/request_space.hpp"

#include <algorithm>
#include <bit>
#include <mutex>
#include <span>

#include "policy-space/request_space_detail.hpp"

namespace ibqos {

using namespace space_detail;

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

}  // namespace ibqos
