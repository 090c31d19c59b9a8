// SPDX-License-Identifier: MIT
// RequestSpace's point index: which rules of a policy a single request satisfies, as the AND of
// one bitset per dimension (the rules its field values, its source and its destination
// satisfy). The analyses ask it once per request they try, so a request costs a few passes
// over one bit per rule, whatever the rules' ranges look like.
#include "compiler/request_space.hpp"

#include <algorithm>
#include <bit>
#include <deque>
#include <numeric>

namespace ibqos {

uint64_t RequestSpace::StabIndex::build(uint64_t domain,
                                        const std::vector<const IndexRanges*>& perRule,
                                        size_t wordCount) {
    // A checkpoint wherever the changes since the last one would cost more to replay than
    // copying it (a change costs a few word operations): a lookup replays at most `most`
    // changes, and the checkpoints hold about four words per change.
    words = wordCount;
    const uint64_t most = std::max<uint64_t>(8, words / 4);
    // The changes by index, counted first and then placed (rules ascending in each list).
    changeStart.assign(domain + 2, 0);
    auto eachChange = [&](auto&& f) {
        for (uint32_t r = 0; r < perRule.size(); ++r) {
            if (!perRule[r]) continue;
            for (const Range& x : *perRule[r]) {
                if (x.lo >= domain) continue;
                f(x.lo, r | Enters);
                f(std::min(x.hi, domain - 1) + 1, r);
            }
        }
    };
    eachChange([&](uint64_t i, uint32_t) { ++changeStart[i + 1]; });
    for (uint64_t i = 1; i < changeStart.size(); ++i) changeStart[i] += changeStart[i - 1];
    change.resize(changeStart.back());
    {
        std::vector<uint32_t> next(changeStart.begin(), changeStart.end() - 1);
        eachChange([&](uint64_t i, uint32_t c) { change[next[i]++] = c; });
    }
    Bits current(words, 0);
    positions.clear();
    checkpoints.clear();
    uint64_t pending = 0;
    for (uint64_t i = 0; i < domain; ++i) {
        for (uint32_t k = changeStart[i]; k < changeStart[i + 1]; ++k) {
            const uint32_t r = change[k] & ~Enters;
            if (change[k] & Enters) {
                current[r / 64] |= uint64_t{1} << (r % 64);
            } else {
                current[r / 64] &= ~(uint64_t{1} << (r % 64));
            }
        }
        pending += changeStart[i + 1] - changeStart[i];
        if (positions.empty() || pending > most) {
            positions.push_back(i);
            checkpoints.insert(checkpoints.end(), current.begin(), current.end());
            pending = 0;
        }
    }
    if (positions.empty()) {
        positions.push_back(0);
        checkpoints.insert(checkpoints.end(), current.begin(), current.end());
    }
    replay = most;
    return domain + changeStart[domain] + checkpoints.size();
}

void RequestSpace::StabIndex::stab(uint64_t i, uint64_t* out, size_t n) const {
    const size_t at = static_cast<size_t>(std::upper_bound(positions.begin(), positions.end(), i) -
                                          positions.begin()) -
                      1;
    const uint64_t rules = uint64_t{n} * 64;
    std::copy_n(checkpoints.begin() + static_cast<ptrdiff_t>(at * words), n, out);
    // The changes after the checkpoint's index up to i, in one run of the array.
    const uint64_t end = std::min<uint64_t>(i + 1, changeStart.size() - 1);
    const uint32_t last = changeStart[end];
    for (uint32_t c = changeStart[positions[at] + 1]; c < last; ++c) {
        const uint32_t r = change[c] & ~Enters;
        if (r >= rules) continue;
        const uint64_t bit = uint64_t{1} << (r % 64);
        out[r / 64] = change[c] & Enters ? out[r / 64] | bit : out[r / 64] & ~bit;
    }
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
        std::vector<const IndexRanges*> named(n);
        for (uint32_t r = 0; r < n; ++r) {
            if (ruleField(policy.rules[r], f).empty()) {
                setBit(x.fieldUnnamed[k], r);
            } else {
                named[r] = &ruleFields_[k][p][r];
            }
        }
        setupWords_ += x.fields[k].build(dims_[fieldDim(f)].size, named, x.words);
        x.replayBound += x.fields[k].replay;
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
        // Each rule's GUID intervals and names on this side: its one group's own (sorted and
        // disjoint), or the union of its groups'.
        std::deque<IndexRanges> merged;  // (a deque: what is pointed at never moves)
        std::vector<const IndexRanges*> guids(n), own(n), switches(n);
        for (uint32_t r = 0; r < n; ++r) {
            const auto& groups =
                end == Ends::Source ? policy.rules[r].sources : policy.rules[r].destinations;
            for (uint32_t gi : groups) {
                const Selectors& sel = selectors_[p][gi];
                for (uint8_t t = 0; t < 3; ++t) {
                    if (sel.types >> t & 1) setBit(x.byType[e][t], r);
                }
                if (sel.self) setBit(x.bySelf[e], r);
                for (uint32_t item : sel.partitions) setBit(x.byPartition[e][item], r);
                for (uint32_t item : sel.pkeys) setBit(x.byPkey[e][item], r);
            }
            if (groups.size() == 1) {
                const Selectors& sel = selectors_[p][groups[0]];
                guids[r] = &sel.guids;
                if (!sel.ownNames.empty()) own[r] = &merged.emplace_back(sel.ownNameRanges());
                switches[r] = &sel.switchNames;
                continue;
            }
            Selectors u = unionOf(p, groups);
            guids[r] = &merged.emplace_back(std::move(u.guids));
            own[r] = &merged.emplace_back(u.ownNameRanges());
            switches[r] = &merged.emplace_back(std::move(u.switchNames));
        }
        const PortDims& at = portDims_[e];
        setupWords_ += x.byGuid[e].build(dims_[at.guid].size, guids, x.words);
        setupWords_ += x.byOwnName[e].build(dims_[at.name].size, own, x.words);
        setupWords_ += x.bySwitchName[e].build(dims_[at.name].size, switches, x.words);
        x.replayBound += x.byGuid[e].replay + x.byOwnName[e].replay;
        setupWords_ += uint64_t{n} * x.words / 8 +
                       (attributes_.partitions.size() + attributes_.pkeyIntervals.size()) * x.words;
    }
    // The tiers of extent: the rules by extent, largest first, cut every n / 16 rules at a
    // change of extent.
    const std::vector<double>& extent = extents_[p];
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return extent[a] > extent[b]; });
    const size_t tierSize = std::max<size_t>(64, n / 16);
    size_t inTier = 0;
    for (uint32_t r : order) {
        if (x.byExtent.empty() || (inTier >= tierSize && extent[r] != x.byExtent.back().low)) {
            x.byExtent.push_back({extent[r], extent[r], none});
            inTier = 0;
        }
        x.byExtent.back().low = extent[r];
        setBit(x.byExtent.back().rules, r);
        ++inTier;
    }
    setupWords_ += x.byExtent.size() * x.words;
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

std::span<const uint64_t> RequestSpace::matchBits(size_t p, const RequestPoint& point,
                                                  uint32_t before, LookupRoom& work) const {
    const PointIndex& x = pointIndex_[p];
    const size_t words = std::min(x.words, size_t{before} / 64 + 1);
    // The room: the answer, then two dimensions' sets of rules.
    if (work.size() < 3 * words) work.resize(3 * words);
    uint64_t* all = work.data();
    uint64_t* one = all + words;
    uint64_t* two = one + words;
    std::fill_n(all, words, ~uint64_t{0});
    if (before % 64) all[words - 1] = (uint64_t{1} << (before % 64)) - 1;
    if (before % 64 == 0) all[words - 1] = 0;
    // The rules still in the running lie in all's first n words: each dimension reads and
    // replays only those, and a request no rule below `before` matches stops early.
    size_t n = words;
    auto trim = [&] {
        while (n > 0 && all[n - 1] == 0) --n;
        return n > 0;
    };
    for (RequestField f : RequestFields) {
        const auto k = static_cast<size_t>(f);
        const Bits& unnamed = x.fieldUnnamed[k];
        const uint64_t v = point.values[fieldDim(f)];
        if (v == 0) {
            for (size_t w = 0; w < n; ++w) all[w] &= unnamed[w];
        } else {
            x.fields[k].stab(v, one, n);
            for (size_t w = 0; w < n; ++w) all[w] &= unnamed[w] | one[w];
        }
        if (!trim()) return {all, 0};
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto e = static_cast<size_t>(end);
        const Bits& unnamed = x.sideUnnamed[e];
        if (onFabric()) {
            const Bits& holding = classRules(p, end, point.values[classDim(end)]);
            for (size_t w = 0; w < n; ++w) all[w] &= unnamed[w] | holding[w];
        } else {
            // A side holds the port when one of its groups does: by type, as the SM's port, by
            // GUID, by name, by partition or by PKey.
            const PortDims& at = portDims_[e];
            const uint64_t type = point.values[at.nodeType];
            x.byGuid[e].stab(point.values[at.guid], one, n);
            (type == 1 ? x.bySwitchName[e] : x.byOwnName[e]).stab(point.values[at.name], two, n);
            auto orInto = [&](const Bits& in) {
                for (size_t w = 0; w < n; ++w) one[w] |= in[w];
            };
            if (point.values[at.sm]) orInto(x.bySelf[e]);
            for (size_t i = 0; i < at.partitions.size(); ++i) {
                if (point.values[at.partitions[i]]) orInto(x.byPartition[e][i]);
            }
            for (size_t i = 0; i < at.pkeys.size(); ++i) {
                if (point.values[at.pkeys[i]]) orInto(x.byPkey[e][i]);
            }
            const Bits& byType = x.byType[e][type];
            for (size_t w = 0; w < n; ++w) all[w] &= unnamed[w] | byType[w] | one[w] | two[w];
        }
        if (!trim()) return {all, 0};
    }
    return {all, n};
}

uint64_t RequestSpace::lookupSteps(size_t p, uint32_t before) const {
    // A step (a diagram operation's recursion, about 0.1 us) is worth about a hundred words
    // read or written: a lookup passes over its words a few times in each of five dimensions
    // and replays some changes of each (measured: a lookup of 157 words, 10,000 rules, costs
    // about 2.5 us).
    const uint64_t words = std::min<uint64_t>(pointIndex_[p].words, before / 64 + 1);
    return 2 + (words * 15 + pointIndex_[p].replayBound / 4) / 100;
}

std::optional<uint32_t> RequestSpace::firstMatch(size_t p, const RequestPoint& point,
                                                 uint32_t before, LookupRoom& room) const {
    const std::span<const uint64_t> all = matchBits(p, point, before, room);
    for (size_t w = 0; w < all.size(); ++w) {
        if (all[w])
            return static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(all[w])));
    }
    return std::nullopt;
}

std::vector<uint32_t> RequestSpace::allMatches(size_t p, const RequestPoint& point, uint32_t before,
                                               LookupRoom& room, size_t limit) const {
    const std::span<const uint64_t> all = matchBits(p, point, before, room);
    std::vector<uint32_t> out;
    for (size_t w = 0; w < all.size() && out.size() < limit; ++w) {
        for (uint64_t m = all[w]; m && out.size() < limit; m &= m - 1)
            out.push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(m))));
    }
    return out;
}

std::optional<uint32_t> RequestSpace::largestMatch(size_t p, const RequestPoint& point,
                                                   uint32_t before, LookupRoom& room) const {
    const std::span<const uint64_t> all = matchBits(p, point, before, room);
    const std::vector<double>& extent = extents_[p];
    for (const PointIndex::Tier& tier : pointIndex_[p].byExtent) {
        std::optional<uint32_t> best;
        for (size_t w = 0; w < all.size(); ++w) {
            for (uint64_t m = all[w] & tier.rules[w]; m; m &= m - 1) {
                const auto r =
                    static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(m)));
                if (tier.low == tier.high) return r;  // one extent: the first is the largest
                if (!best || extent[r] > extent[*best]) best = r;
            }
        }
        if (best) return best;
    }
    return std::nullopt;
}

}  // namespace ibqos
