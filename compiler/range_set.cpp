// SPDX-License-Identifier: MIT
// RangeSet: insertion with merging, membership by binary search, subset tests.
#include "compiler/range_set.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "common/text.hpp"

namespace ibqos {

RangeSet::RangeSet(std::initializer_list<Range> ranges) : RangeSet(build(ranges)) {}

RangeSet RangeSet::build(std::vector<Range> ranges) {
    for (Range& r : ranges) {
        if (r.lo > r.hi) std::swap(r.lo, r.hi);
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.lo < b.lo; });
    RangeSet set;
    for (const Range& r : ranges) {
        if (!set.ranges_.empty()) {
            Range& back = set.ranges_.back();
            if (back.hi == UINT64_MAX || r.lo <= back.hi + 1) {
                back.hi = std::max(back.hi, r.hi);
                continue;
            }
        }
        set.ranges_.push_back(r);
    }
    return set;
}

void RangeSet::add(uint64_t lo, uint64_t hi) {
    if (lo > hi) std::swap(lo, hi);
    // First range that could touch [lo, hi]: its hi + 1 >= lo (adjacent ranges merge).
    auto first = std::lower_bound(
        ranges_.begin(), ranges_.end(), lo,
        [](const Range& r, uint64_t v) { return r.hi != UINT64_MAX && r.hi + 1 < v; });
    auto last = first;
    while (last != ranges_.end() && (hi == UINT64_MAX || last->lo <= hi + 1)) {
        lo = std::min(lo, last->lo);
        hi = std::max(hi, last->hi);
        ++last;
    }
    if (first == last) {
        ranges_.insert(first, Range{lo, hi});
    } else {
        *first = Range{lo, hi};
        ranges_.erase(first + 1, last);
    }
}

void RangeSet::add(const RangeSet& other) {
    if (other.empty()) return;
    std::vector<Range> all;
    all.reserve(ranges_.size() + other.ranges_.size());
    std::merge(ranges_.begin(), ranges_.end(), other.ranges_.begin(), other.ranges_.end(),
               std::back_inserter(all), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    *this = build(std::move(all));
}

bool RangeSet::contains(uint64_t value) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), value,
                               [](uint64_t v, const Range& r) { return v < r.lo; });
    return it != ranges_.begin() && std::prev(it)->hi >= value;
}

bool RangeSet::covers(const RangeSet& other) const {
    auto it = ranges_.begin();
    for (const Range& r : other.ranges_) {
        while (it != ranges_.end() && it->hi < r.lo) ++it;
        if (it == ranges_.end() || it->lo > r.lo || it->hi < r.hi) return false;
    }
    return true;
}

bool RangeSet::intersects(const RangeSet& other) const {
    auto a = ranges_.begin();
    auto b = other.ranges_.begin();
    while (a != ranges_.end() && b != other.ranges_.end()) {
        if (a->hi < b->lo) {
            ++a;
        } else if (b->hi < a->lo) {
            ++b;
        } else {
            return true;
        }
    }
    return false;
}

uint64_t RangeSet::size() const {
    uint64_t total = 0;
    for (const Range& r : ranges_) {
        uint64_t n = r.hi - r.lo;
        if (n == UINT64_MAX || total > UINT64_MAX - n - 1) return UINT64_MAX;
        total += n + 1;
    }
    return total;
}

std::string RangeSet::str(bool hex) const {
    std::string out;
    appendTo(out, hex);
    return out;
}

void RangeSet::appendTo(std::string& out, bool hex) const {
    auto number = [&](uint64_t v) {
        if (hex) {
            appendHex(out, v);
        } else {
            char digits[24];
            out.append(digits, std::to_chars(std::begin(digits), std::end(digits), v).ptr);
        }
    };
    for (size_t i = 0; i < ranges_.size(); ++i) {
        if (i) out += ", ";
        number(ranges_[i].lo);
        if (ranges_[i].hi == ranges_[i].lo) continue;
        out += '-';
        number(ranges_[i].hi);
    }
}

void ElementaryIntervals::finish() {
    const bool inDomain =
        std::all_of(starts.begin(), starts.end(), [&](uint64_t v) { return v <= max; });
    if (max <= DenseMax && inDomain) {
        seen_.assign(max / 64 + 1, 0);
        for (uint64_t v : starts) seen_[v / 64] |= uint64_t{1} << (v % 64);
        before_.resize(seen_.size());
        starts.clear();
        for (size_t w = 0; w < seen_.size(); ++w) {
            before_[w] = static_cast<uint32_t>(starts.size());
            for (uint64_t m = seen_[w]; m != 0; m &= m - 1)
                starts.push_back(w * 64 + static_cast<uint64_t>(std::countr_zero(m)));
        }
        return;
    }
    if (starts.empty()) return;
    // Least significant byte first, skipping the bytes every cut shares.
    uint64_t differ = 0;
    for (uint64_t v : starts) differ |= v ^ starts.front();
    std::vector<uint64_t> other(starts.size());
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if ((differ >> shift & 0xff) == 0) continue;
        size_t count[257] = {};
        for (uint64_t v : starts) ++count[(v >> shift & 0xff) + 1];
        for (size_t b = 1; b < 257; ++b) count[b] += count[b - 1];
        for (uint64_t v : starts) other[count[v >> shift & 0xff]++] = v;
        starts.swap(other);
    }
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
}

}  // namespace ibqos
