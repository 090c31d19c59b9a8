// SPDX-License-Identifier: MIT
// What the parts of RequestSpace (policy-space/request_space*.cpp) share inside: the fields'
// widths, the node types as a dimension's values, and sorted index ranges. Not for other
// files.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fabric/node_type.hpp"
#include "ib/qos.hpp"
#include "policy-space/request_space.hpp"

namespace ibqos::space_detail {

using Ref = DecisionDiagram::Ref;

inline uint32_t bitsFor(uint64_t size) {
    uint32_t bits = 0;
    while (bits < 64 && (uint64_t{1} << bits) < size) ++bits;
    return bits;
}

constexpr uint64_t FieldMax[3] = {ib::MaxQosClass, UINT64_MAX, UINT16_MAX};
constexpr size_t WideRule = 64;  // intervals past which a rule is indexed as "wide"
constexpr NodeType Types[] = {NodeType::Ca, NodeType::Switch, NodeType::Router};
constexpr uint64_t SwitchType = 1;

inline size_t fieldNumber(RequestField f) { return static_cast<size_t>(f); }

inline void addRange(IndexRanges& out, uint64_t lo, uint64_t hi) {
    if (!out.empty() && out.back().hi + 1 >= lo) {
        out.back().hi = std::max(out.back().hi, hi);
    } else {
        out.push_back({lo, hi});
    }
}

inline bool inRanges(const IndexRanges& ranges, uint64_t v) {
    auto it = std::lower_bound(ranges.begin(), ranges.end(), v,
                               [](const Range& r, uint64_t x) { return r.hi < x; });
    return it != ranges.end() && it->lo <= v;
}

inline bool rangesMeet(const IndexRanges& a, const IndexRanges& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].hi < b[j].lo) {
            ++i;
        } else if (b[j].hi < a[i].lo) {
            ++j;
        } else {
            return true;
        }
    }
    return false;
}

}  // namespace ibqos::space_detail
