// SPDX-License-Identifier: MIT
// RequestSpace's point index: which rules of a policy a single request satisfies, as the AND of
// one bitset per dimension (the rules its field values, its source and its destination
// satisfy). The analyses ask it once per request they try, so a request costs a few passes
// over one bit per rule, whatever the rules' ranges look like.
#include "compiler/request_space.hpp"

#include <algorithm>
#include <cmath>

namespace ibqos {

namespace {

using Bits = std::vector<uint64_t>;

void setBit(Bits& b, uint32_t r) { b[r / 64] |= uint64_t{1} << (r % 64); }

const RangeSet& ruleField(const MatchRule& r, RequestField f) {
    return f == RequestField::QosClass    ? r.qosClasses
           : f == RequestField::ServiceId ? r.serviceIds
                                          : r.pkeys;
}

// out |= in, over out's words (in may be longer).
void orInto(Bits& out, const Bits& in) {
    for (size_t w = 0; w < out.size(); ++w) out[w] |= in[w];
}

}  // namespace

void RequestSpace::StabIndex::build(uint64_t domain, const std::vector<IndexRanges>& perRule,
                                    size_t words) {
    // A checkpoint about every sqrt(domain) indices: memory and the changes replayed per
    // lookup both grow as the square root.
    block = std::max<uint64_t>(16, static_cast<uint64_t>(std::sqrt(static_cast<double>(domain))));
    changes.assign(domain + 1, {});
    for (uint32_t r = 0; r < perRule.size(); ++r) {
        for (const Range& x : perRule[r]) {
            if (x.lo >= domain) continue;
            changes[x.lo].emplace_back(r, true);
            changes[std::min(x.hi, domain - 1) + 1].emplace_back(r, false);
        }
    }
    Bits current(words, 0);
    checkpoints.clear();
    for (uint64_t i = 0; i < domain; ++i) {
        for (auto [r, enters] : changes[i]) {
            if (enters) {
                current[r / 64] |= uint64_t{1} << (r % 64);
            } else {
                current[r / 64] &= ~(uint64_t{1} << (r % 64));
            }
        }
        if (i % block == 0) checkpoints.push_back(current);
    }
    if (checkpoints.empty()) checkpoints.push_back(current);
}

void RequestSpace::StabIndex::addTo(uint64_t i, Bits& out) const {
    const uint64_t at = std::min<uint64_t>(i / block, checkpoints.size() - 1);
    Bits current = checkpoints[at];
    for (uint64_t k = at * block + 1; k <= i && k < changes.size(); ++k) {
        for (auto [r, enters] : changes[k]) {
            if (enters) {
                current[r / 64] |= uint64_t{1} << (r % 64);
            } else {
                current[r / 64] &= ~(uint64_t{1} << (r % 64));
            }
        }
    }
    orInto(out, current);
}

void RequestSpace::buildPointIndex(size_t p) {
    const Policy& policy = *policies_[p];
    const auto n = static_cast<uint32_t>(policy.rules.size());
    PointIndex& x = pointIndex_[p];
    x.words = (n + 63) / 64 + 1;
    const Bits none(x.words, 0);
    for (RequestField f : RequestFields) {
        const auto k = static_cast<size_t>(f);
        x.fieldUnnamed[k] = none;
        std::vector<IndexRanges> named(n);
        for (uint32_t r = 0; r < n; ++r) {
            if (ruleField(policy.rules[r], f).empty()) {
                setBit(x.fieldUnnamed[k], r);
            } else {
                named[r] = ruleFields_[k][p][r];
            }
        }
        x.fields[k].build(dims_[fieldDim(f)].size, named, x.words);
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto e = static_cast<size_t>(end);
        x.sideUnnamed[e] = none;
        for (uint32_t r = 0; r < n; ++r) {
            const auto& groups =
                end == Ends::Source ? policy.rules[r].sources : policy.rules[r].destinations;
            if (groups.empty()) setBit(x.sideUnnamed[e], r);
        }
        if (onFabric()) {
            x.byClass[e].assign(classes_.size(), {});
            continue;
        }
        for (auto& t : x.byType[e]) t = none;
        x.bySelf[e] = none;
        x.byPartition[e].assign(attributes_.partitions.size(), none);
        x.byPkey[e].assign(attributes_.pkeyIntervals.size(), none);
        std::vector<IndexRanges> guids(n), own(n), switches(n);
        for (uint32_t r = 0; r < n; ++r) {
            const auto& groups =
                end == Ends::Source ? policy.rules[r].sources : policy.rules[r].destinations;
            std::vector<Range> g, o, s;
            for (uint32_t gi : groups) {
                const Selectors& sel = selectors_[p][gi];
                for (uint8_t t = 0; t < 3; ++t) {
                    if (sel.types >> t & 1) setBit(x.byType[e][t], r);
                }
                if (sel.self) setBit(x.bySelf[e], r);
                g.insert(g.end(), sel.guids.begin(), sel.guids.end());
                for (uint64_t name : sel.ownNames) o.push_back({name, name});
                s.insert(s.end(), sel.switchNames.begin(), sel.switchNames.end());
                for (uint32_t item : sel.partitions) setBit(x.byPartition[e][item], r);
                for (uint32_t item : sel.pkeys) setBit(x.byPkey[e][item], r);
            }
            guids[r] = RangeSet::build(std::move(g)).ranges();
            own[r] = RangeSet::build(std::move(o)).ranges();
            switches[r] = RangeSet::build(std::move(s)).ranges();
        }
        const PortDims& at = portDims_[e];
        x.byGuid[e].build(dims_[at.guid].size, guids, x.words);
        x.byOwnName[e].build(dims_[at.name].size, own, x.words);
        x.bySwitchName[e].build(dims_[at.name].size, switches, x.words);
    }
}

const RequestSpace::Bits& RequestSpace::classRules(size_t p, Ends end, uint64_t c) const {
    const PointIndex& x = pointIndex_[p];
    const auto e = static_cast<size_t>(end);
    Bits& rules = x.byClass[e][c];
    if (!rules.empty()) return rules;
    rules.assign(x.words, 0);
    const Policy& policy = *policies_[p];
    for (uint32_t r = 0; r < policy.rules.size(); ++r) {
        const auto& groups =
            end == Ends::Source ? policy.rules[r].sources : policy.rules[r].destinations;
        for (uint32_t g : groups) {
            const auto& cs = groupClasses_[p][g];
            if (std::binary_search(cs.begin(), cs.end(), c)) {
                setBit(rules, r);
                break;
            }
        }
    }
    return rules;
}

RequestSpace::Bits RequestSpace::matchBits(size_t p, const RequestPoint& point,
                                           uint32_t before) const {
    const PointIndex& x = pointIndex_[p];
    const size_t words = std::min(x.words, size_t{before} / 64 + 1);
    Bits all(words, ~uint64_t{0});
    if (before % 64) all[words - 1] = (uint64_t{1} << (before % 64)) - 1;
    if (before % 64 == 0) all[words - 1] = 0;
    Bits one;
    auto narrow = [&]() {
        for (size_t w = 0; w < words; ++w) all[w] &= one[w];
    };
    for (RequestField f : RequestFields) {
        const auto k = static_cast<size_t>(f);
        one = x.fieldUnnamed[k];
        const uint64_t v = point.values[fieldDim(f)];
        if (v != 0) x.fields[k].addTo(v, one);
        narrow();
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto e = static_cast<size_t>(end);
        one = x.sideUnnamed[e];
        if (onFabric()) {
            orInto(one, classRules(p, end, point.values[classDim(end)]));
        } else {
            const PortDims& at = portDims_[e];
            const uint64_t type = point.values[at.nodeType];
            orInto(one, x.byType[e][type]);
            if (point.values[at.sm]) orInto(one, x.bySelf[e]);
            x.byGuid[e].addTo(point.values[at.guid], one);
            (type == 1 ? x.bySwitchName[e] : x.byOwnName[e]).addTo(point.values[at.name], one);
            for (size_t i = 0; i < at.partitions.size(); ++i) {
                if (point.values[at.partitions[i]]) orInto(one, x.byPartition[e][i]);
            }
            for (size_t i = 0; i < at.pkeys.size(); ++i) {
                if (point.values[at.pkeys[i]]) orInto(one, x.byPkey[e][i]);
            }
        }
        narrow();
    }
    return all;
}

std::optional<uint32_t> RequestSpace::firstMatch(size_t p, const RequestPoint& point,
                                                 uint32_t before) const {
    const Bits all = matchBits(p, point, before);
    for (size_t w = 0; w < all.size(); ++w) {
        if (all[w])
            return static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(all[w])));
    }
    return std::nullopt;
}

std::vector<uint32_t> RequestSpace::allMatches(size_t p, const RequestPoint& point,
                                               uint32_t before) const {
    const Bits all = matchBits(p, point, before);
    std::vector<uint32_t> out;
    for (size_t w = 0; w < all.size(); ++w) {
        for (uint64_t m = all[w]; m; m &= m - 1)
            out.push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(m))));
    }
    return out;
}

}  // namespace ibqos
