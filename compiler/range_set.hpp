// SPDX-License-Identifier: MIT
// RangeSet: a set of 64-bit values held as sorted, merged closed ranges.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace ibqos {

struct Range {
    uint64_t lo = 0;
    uint64_t hi = 0;
    bool operator==(const Range&) const = default;
};

// A set of values as OpenSM keeps them: sorted closed ranges, overlapping or adjacent ranges
// merged. Its cost depends on the number of ranges, never on their width.
class RangeSet {
  public:
    RangeSet() = default;
    RangeSet(std::initializer_list<Range> ranges);
    // Builds a set from ranges in any order (reversed ones swapped) in O(n log n).
    static RangeSet build(std::vector<Range> ranges);

    // Adds [lo, hi] (swapped when reversed, as OpenSM does) and keeps the set normalised.
    void add(uint64_t lo, uint64_t hi);
    // Adds every value of other (a linear merge).
    void add(const RangeSet& other);

    bool empty() const { return ranges_.empty(); }
    bool contains(uint64_t value) const;
    // True when every value of other is in this set.
    bool covers(const RangeSet& other) const;
    bool intersects(const RangeSet& other) const;
    uint64_t lowest() const { return ranges_.front().lo; }
    const std::vector<Range>& ranges() const { return ranges_; }
    // Number of values, saturating at UINT64_MAX.
    uint64_t size() const;

    // "0x10-0x1f, 0x30" with hex for hex-looking sets (hex = true) or decimal otherwise.
    std::string str(bool hex = false) const;
    void appendTo(std::string& out, bool hex = false) const;
    bool operator==(const RangeSet&) const = default;

  private:
    std::vector<Range> ranges_;
};

// The elementary intervals of a value domain [0, max] cut at every range end added: interval i
// runs from starts[i] to starts[i+1]-1 (the last one up to max). Inside one interval, nothing
// the added ranges say can tell two values apart. Used by the analyses that walk a policy's
// request space (dead rules, ibqos diff).
struct ElementaryIntervals {
    std::vector<uint64_t> starts{0};
    uint64_t max = 0;

    explicit ElementaryIntervals(uint64_t domainMax = 0) : max(domainMax) {}
    void add(uint64_t lo, uint64_t hi) {
        starts.push_back(lo);
        if (hi < max) starts.push_back(hi + 1);
    }
    void add(const RangeSet& set) {
        for (const Range& r : set.ranges()) add(r.lo, r.hi);
    }
    // Sorts the cuts: call once every range is added, before any lookup. A domain of at most
    // 2^16 values (QoS classes, PKeys) whose cuts lie inside it is sorted through a bitmap of it,
    // kept with a count per word for find(); a wider one by radix, on the bytes where the cuts
    // differ.
    void finish();
    size_t find(uint64_t v) const {
        if (!seen_.empty()) {  // the cuts at or below v, less one
            if (v > max) return starts.size() - 1;
            const uint64_t word = seen_[v / 64] & (~uint64_t{0} >> (63 - v % 64));
            return before_[v / 64] + static_cast<size_t>(std::popcount(word)) - 1;
        }
        return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), v) -
                                   starts.begin()) -
               1;
    }
    uint64_t last(size_t i) const { return i + 1 < starts.size() ? starts[i + 1] - 1 : max; }
    // Calls f with the index of each interval inside set (set's ends must have been added).
    template <typename F>
    void eachInside(const RangeSet& set, F&& f) const {
        for (const Range& r : set.ranges()) {
            for (size_t i = find(r.lo); i < starts.size() && starts[i] <= r.hi; ++i) f(i);
        }
    }
    size_t countInside(const RangeSet& set) const {
        size_t n = 0;
        for (const Range& r : set.ranges()) n += find(r.hi) - find(r.lo) + 1;
        return n;
    }
    // The first value of each interval inside set.
    std::vector<uint64_t> inside(const RangeSet& set) const {
        std::vector<uint64_t> out;
        eachInside(set, [&](size_t i) { out.push_back(starts[i]); });
        return out;
    }

  private:
    static constexpr uint64_t DenseMax = UINT16_MAX;
    std::vector<uint64_t> seen_;    // dense domains: bit v set when a cut starts at v
    std::vector<uint32_t> before_;  // dense domains: the cuts in the words before each
};

}  // namespace ibqos
