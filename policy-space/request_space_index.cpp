// SPDX-License-Identifier: MIT
// RequestSpace's point index: which rules of a policy a single request satisfies, as the AND of
// one bitset per dimension (the rules its field values, its source and its destination
// satisfy). The analyses ask it once per request they try, so a request costs a few passes
// over one bit per rule, whatever the rules' ranges look like.
#include "policy-space/request_space.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <numeric>

namespace ibqos {

namespace {

// all[w] &= mask(word) for w < n, where word(a) reads a's word w: two words at a time (SSE2 on
// x86-64, NEON on arm64), which a lookup's passes over its words are made of and which GCC
// does not vectorise at -O2 (a loop of unknown length).
template <class Mask>
void andWith(uint64_t* all, size_t n, Mask mask) {
    using Pair = uint64_t __attribute__((vector_size(16)));
    size_t w = 0;
    for (; w + 2 <= n; w += 2) {
        Pair v;
        std::memcpy(&v, all + w, sizeof v);
        v &= mask([w](const uint64_t* a) {
            Pair x;
            std::memcpy(&x, a + w, sizeof x);
            return x;
        });
        std::memcpy(all + w, &v, sizeof v);
    }
    for (; w < n; ++w) all[w] &= mask([w](const uint64_t* a) { return a[w]; });
}

}  // namespace

uint64_t RequestSpace::StabIndex::build(uint64_t domain,
                                        const std::vector<const IndexRanges*>& perRule,
                                        size_t wordCount) {
    blocks.clear();
    replay = 0;
    for (size_t k = 0; blockStart(k) < wordCount; ++k)
        blocks.emplace_back().words = std::min(blockStart(k + 1), wordCount) - blockStart(k);
    auto blockOf = [](uint32_t r) {
        return static_cast<size_t>(std::bit_width(r / 64 / FirstBlockWords + 1) - 1);
    };
    // Every change by index (rules ascending at one index), counted first and then placed, and
    // handed to the rule's block in that order.
    auto eachChange = [&](auto&& f) {
        for (uint32_t r = 0; r < perRule.size(); ++r) {
            if (!perRule[r]) continue;
            for (const Range& x : *perRule[r]) {
                if (x.lo >= domain) continue;
                f(x.lo, r | Enters);
                if (x.hi < domain - 1) f(x.hi + 1, r);
            }
        }
    };
    std::vector<uint32_t> start(domain + 1, 0);
    eachChange([&](uint64_t i, uint32_t) { ++start[i + 1]; });
    for (uint64_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<std::pair<uint64_t, uint32_t>> changes(start.back());
    eachChange([&](uint64_t i, uint32_t c) { changes[start[i]++] = {i, c}; });
    for (const auto& [i, c] : changes) {
        const uint32_t r = c & ~Enters;
        const size_t k = blockOf(r);
        blocks[k].at.push_back(i);
        blocks[k].change.push_back(static_cast<uint32_t>(r - blockStart(k) * 64) | (c & Enters));
    }
    uint64_t work = domain + changes.size();
    for (Block& b : blocks) {
        // A checkpoint at index 0, and wherever the changes since the last one would cost more
        // to replay than copying it (a change costs a few word operations): a lookup replays
        // at most `most` changes (and those of one index), and the checkpoints hold about four
        // words per change.
        const uint64_t most = std::max<uint64_t>(8, b.words / 4);
        Bits current(b.words, 0);
        uint64_t pending = 0;
        for (size_t c = 0; c < b.at.size() || b.positions.empty();) {
            const uint64_t i = b.positions.empty() ? 0 : b.at[c];
            const size_t first = c;
            for (; c < b.at.size() && b.at[c] == i; ++c) apply(current.data(), b.change[c]);
            pending += c - first;
            if (b.positions.empty() || pending > most) {
                b.positions.push_back(i);
                b.resume.push_back(static_cast<uint32_t>(c));
                b.checkpoints.insert(b.checkpoints.end(), current.begin(), current.end());
                pending = 0;
            }
        }
        replay += most;
        work += b.checkpoints.size();
    }
    return work;
}

void RequestSpace::StabIndex::stab(uint64_t i, size_t block, uint64_t* out, size_t n) const {
    const Block& b = blocks[block];
    if (b.at.empty()) {  // no rule of the block holds an index (a side that names no port name)
        std::fill_n(out, n, 0);
        return;
    }
    const auto k = static_cast<size_t>(std::upper_bound(b.positions.begin(), b.positions.end(), i) -
                                       b.positions.begin() - 1);
    std::copy_n(b.checkpoints.begin() + static_cast<ptrdiff_t>(k * b.words), n, out);
    // The changes after the checkpoint up to index i, in one run of the array.
    const uint64_t rules = uint64_t{n} * 64;
    for (size_t c = b.resume[k]; c < b.at.size() && b.at[c] <= i; ++c) {
        if ((b.change[c] & ~Enters) < rules) apply(out, b.change[c]);
    }
}

void RequestSpace::StabIndex::apply(uint64_t* bits, uint32_t change) {
    const uint32_t r = change & ~Enters;
    const uint64_t bit = uint64_t{1} << (r % 64);
    bits[r / 64] = change & Enters ? bits[r / 64] | bit : bits[r / 64] & ~bit;
}

uint64_t RequestSpace::buildPointIndex(size_t p, PointIndex& x) {
    const Policy& policy = *policies_[p];
    const auto n = static_cast<uint32_t>(x.count(policy.rules.size()));
    uint64_t work = 0;
    x.words = (n + 63) / 64 + 1;
    const Bits none(x.words, 0);
    for (RequestField f : RequestFields) {
        const auto k = static_cast<size_t>(f);
        x.fieldUnnamed[k] = none;
        std::vector<const IndexRanges*> named(n);
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t r = x.rule(i);
            if (ruleField(policy.rules[r], f).empty()) {
                setBit(x.fieldUnnamed[k], i);
            } else {
                named[i] = &ruleFields_[k][p][r];
            }
        }
        work += x.fields[k].build(dims_[fieldDim(f)].size, named, x.words);
        x.replayBound += x.fields[k].replay;
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto e = static_cast<size_t>(end);
        x.sideUnnamed[e] = none;
        for (uint32_t i = 0; i < n; ++i) {
            const MatchRule& rule = policy.rules[x.rule(i)];
            if ((end == Ends::Source ? rule.sources : rule.destinations).empty())
                setBit(x.sideUnnamed[e], i);
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
        for (uint32_t i = 0; i < n; ++i) {
            const MatchRule& rule = policy.rules[x.rule(i)];
            const auto& groups = end == Ends::Source ? rule.sources : rule.destinations;
            for (uint32_t gi : groups) {
                const Selectors& sel = selectors_[p][gi];
                for (uint8_t t = 0; t < 3; ++t) {
                    if (sel.types >> t & 1) setBit(x.byType[e][t], i);
                }
                if (sel.self) setBit(x.bySelf[e], i);
                for (uint32_t item : sel.partitions) setBit(x.byPartition[e][item], i);
                for (uint32_t item : sel.pkeys) setBit(x.byPkey[e][item], i);
            }
            if (groups.size() == 1) {
                const Selectors& sel = selectors_[p][groups[0]];
                guids[i] = &sel.guids;
                if (!sel.ownNames.empty()) own[i] = &merged.emplace_back(sel.ownNameRanges());
                switches[i] = &sel.switchNames;
                continue;
            }
            Selectors u = unionOf(p, groups);
            guids[i] = &merged.emplace_back(std::move(u.guids));
            own[i] = &merged.emplace_back(u.ownNameRanges());
            switches[i] = &merged.emplace_back(std::move(u.switchNames));
        }
        const PortDims& at = portDims_[e];
        work += x.byGuid[e].build(dims_[at.guid].size, guids, x.words);
        work += x.byOwnName[e].build(dims_[at.name].size, own, x.words);
        work += x.bySwitchName[e].build(dims_[at.name].size, switches, x.words);
        x.replayBound += x.byGuid[e].replay + x.byOwnName[e].replay;
        work += uint64_t{n} * x.words / 8 +
                (attributes_.partitions.size() + attributes_.pkeyIntervals.size()) * x.words;
    }
    return work;
}

void RequestSpace::tierRules(size_t p) {
    PointIndex& x = pointIndex_[p];
    const auto n = static_cast<uint32_t>(policies_[p]->rules.size());
    const Bits none(x.words, 0);
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
    // The first tier, the largest rules, in an index of their own: the largest rule that
    // matches a request is usually among them, and a lookup there reads a sixteenth of the
    // words or so (at most a quarter: a larger first tier gets no index). Its building is not
    // counted against the budget: the lookups it serves are counted at the price of reading
    // every rule.
    PointIndex& top = topIndex_[p];
    if (n < TopIndexRules || x.byExtent.size() < 2) return;
    const Bits& largest = x.byExtent.front().rules;
    for (size_t w = 0; w < x.words; ++w) {
        for (uint64_t m = largest[w]; m; m &= m - 1)
            top.rules.push_back(static_cast<uint32_t>(w * 64 + std::countr_zero(m)));
    }
    if (top.rules.size() > n / 4) {
        top.rules.clear();
        return;
    }
    // The first tier is the head of `order`: its rules by rank.
    top.byRank.assign(order.begin(), order.begin() + static_cast<ptrdiff_t>(top.rules.size()));
    top.rankOf.resize(top.rules.size());
    for (uint32_t k = 0; k < top.byRank.size(); ++k) top.rankOf[top.below(top.byRank[k])] = k;
    buildPointIndex(p, top);
}

const RequestSpace::Bits& RequestSpace::classRules(size_t p, const PointIndex& x, Ends end,
                                                   uint64_t c) const {
    const auto e = static_cast<size_t>(end);
    Bits& rules = x.byClass[e][c];
    if (!rules.empty()) return rules;
    rules.assign(x.words, 0);
    const Policy& policy = *policies_[p];
    const size_t n = x.count(policy.rules.size());
    for (uint32_t i = 0; i < n; ++i) {
        const MatchRule& rule = policy.rules[x.rule(i)];
        for (uint32_t g : end == Ends::Source ? rule.sources : rule.destinations) {
            const auto& cs = groupClasses_[p][g];
            if (std::binary_search(cs.begin(), cs.end(), c)) {
                setBit(rules, i);
                break;
            }
        }
    }
    return rules;
}

size_t RequestSpace::matchBlock(size_t p, const PointIndex& x, const RequestPoint& point,
                                uint32_t before, size_t block, LookupRoom& room) const {
    const size_t words = x.wordsBelow(before);  // (before: a bit count of x)
    // The room: the answer (every block's), then two dimensions' sets of rules of one block.
    if (room.size() < 3 * words) room.resize(3 * words);
    const size_t first = blockStart(block);
    uint64_t* all = room.data() + first;
    uint64_t* one = room.data() + words;
    uint64_t* two = one + words;
    size_t n = std::min(blockStart(block + 1), words) - first;
    std::fill_n(all, n, ~uint64_t{0});
    if (first + n == words) all[n - 1] = (uint64_t{1} << (before % 64)) - 1;
    // The rules still in the running lie in all's first n words: each dimension reads and
    // replays only those, and a request no rule of the block matches stops early.
    auto trim = [&] {
        while (n > 0 && all[n - 1] == 0) --n;
        return n > 0;
    };
    if (!trim()) return 0;
    for (RequestField f : RequestFields) {
        const auto k = static_cast<size_t>(f);
        const uint64_t* unnamed = x.fieldUnnamed[k].data() + first;
        const uint64_t v = point.values[fieldDim(f)];
        if (v == 0) {
            andWith(all, n, [&](auto word) { return word(unnamed); });
        } else {
            x.fields[k].stab(v, block, one, n);
            andWith(all, n, [&](auto word) { return word(unnamed) | word(one); });
        }
        if (!trim()) return 0;
    }
    for (Ends end : {Ends::Source, Ends::Destination}) {
        const auto e = static_cast<size_t>(end);
        const uint64_t* unnamed = x.sideUnnamed[e].data() + first;
        if (onFabric()) {
            const uint64_t* holding =
                classRules(p, x, end, point.values[classDim(end)]).data() + first;
            andWith(all, n, [&](auto word) { return word(unnamed) | word(holding); });
        } else {
            // A side holds the port when one of its groups does: by type, as the SM's port, by
            // GUID, by name, by partition or by PKey.
            const PortDims& at = portDims_[e];
            const uint64_t type = point.values[at.nodeType];
            x.byGuid[e].stab(point.values[at.guid], block, one, n);
            (type == 1 ? x.bySwitchName[e] : x.byOwnName[e])
                .stab(point.values[at.name], block, two, n);
            auto orInto = [&](const Bits& in) {
                for (size_t w = 0; w < n; ++w) one[w] |= in[first + w];
            };
            if (point.values[at.sm]) orInto(x.bySelf[e]);
            for (size_t i = 0; i < at.partitions.size(); ++i) {
                if (point.values[at.partitions[i]]) orInto(x.byPartition[e][i]);
            }
            for (size_t i = 0; i < at.pkeys.size(); ++i) {
                if (point.values[at.pkeys[i]]) orInto(x.byPkey[e][i]);
            }
            const uint64_t* byType = x.byType[e][type].data() + first;
            andWith(all, n, [&](auto word) {
                return word(unnamed) | word(byType) | word(one) | word(two);
            });
        }
        if (!trim()) return 0;
    }
    return n;
}

uint64_t RequestSpace::lookupSteps(size_t p, uint32_t before) const {
    // A step (a diagram operation's recursion, about 0.1 us) is worth about a hundred words
    // read or written: a lookup passes over its words a few times in each of five dimensions
    // and replays some changes of each (measured: a lookup of 157 words, 10,000 rules, costs
    // about 2.5 us). A lookup that stops at an early block costs less than this.
    return 2 + (pointIndex_[p].wordsBelow(before) * 15 + pointIndex_[p].replayBound / 4) / 100;
}

std::optional<uint32_t> RequestSpace::firstMatch(size_t p, const RequestPoint& point,
                                                 uint32_t before, LookupRoom& room) const {
    const size_t words = pointIndex_[p].wordsBelow(before);
    for (size_t block = 0; blockStart(block) < words; ++block) {
        const size_t first = blockStart(block),
                     n = matchBlock(p, pointIndex_[p], point, before, block, room);
        for (size_t w = first; w < first + n; ++w) {
            if (room[w])
                return static_cast<uint32_t>(w * 64 +
                                             static_cast<size_t>(std::countr_zero(room[w])));
        }
    }
    return std::nullopt;
}

std::vector<uint32_t> RequestSpace::allMatches(size_t p, const RequestPoint& point, uint32_t before,
                                               LookupRoom& room, size_t limit) const {
    const size_t words = pointIndex_[p].wordsBelow(before);
    std::vector<uint32_t> out;
    for (size_t block = 0; blockStart(block) < words && out.size() < limit; ++block) {
        const size_t first = blockStart(block),
                     n = matchBlock(p, pointIndex_[p], point, before, block, room);
        for (size_t w = first; w < first + n && out.size() < limit; ++w) {
            for (uint64_t m = room[w]; m && out.size() < limit; m &= m - 1)
                out.push_back(
                    static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(m))));
        }
    }
    return out;
}

std::optional<uint32_t> RequestSpace::largestMatch(size_t p, const RequestPoint& point,
                                                   uint32_t before, LookupRoom& room) const {
    // The index of the first tier first: a rule that matches there is larger than any other.
    const PointIndex& top = topIndex_[p];
    if (const uint32_t bits = top.rules.empty() ? 0 : top.below(before); bits > 0) {
        // The largest of the matches, the first rule of equals: the least rank.
        const size_t words = top.wordsBelow(bits);
        uint32_t best = UINT32_MAX;
        for (size_t block = 0; blockStart(block) < words; ++block) {
            const size_t first = blockStart(block),
                         n = matchBlock(p, top, point, bits, block, room);
            for (size_t w = first; w < first + n; ++w) {
                for (uint64_t m = room[w]; m; m &= m - 1)
                    best = std::min(best,
                                    top.rankOf[w * 64 + static_cast<size_t>(std::countr_zero(m))]);
            }
        }
        if (best != UINT32_MAX) return top.byRank[best];
    }
    // Every block's matches, then the tiers of extent, largest first.
    const size_t words = pointIndex_[p].wordsBelow(before);
    size_t used = 0;  // words up to the last one not zero
    for (size_t block = 0; blockStart(block) < words; ++block) {
        const size_t first = blockStart(block),
                     n = matchBlock(p, pointIndex_[p], point, before, block, room);
        std::fill(room.begin() + static_cast<ptrdiff_t>(first + n),
                  room.begin() + static_cast<ptrdiff_t>(std::min(blockStart(block + 1), words)), 0);
        if (n) used = first + n;
    }
    const std::vector<double>& extent = extents_[p];
    for (const PointIndex::Tier& tier : pointIndex_[p].byExtent) {
        std::optional<uint32_t> best;
        for (size_t w = 0; w < used; ++w) {
            for (uint64_t m = room[w] & tier.rules[w]; m; m &= m - 1) {
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
