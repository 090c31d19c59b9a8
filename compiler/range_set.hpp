// SPDX-License-Identifier: MIT
// RangeSet: a set of 64-bit values held as sorted, merged closed ranges.
#pragma once

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
    bool operator==(const RangeSet&) const = default;

  private:
    std::vector<Range> ranges_;
};

}  // namespace ibqos
