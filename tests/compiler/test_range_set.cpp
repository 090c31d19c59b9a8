// SPDX-License-Identifier: MIT
// Unit tests of RangeSet: OpenSM's sorted, merged range arrays.
#include <catch2/catch.hpp>

#include "compiler/range_set.hpp"

using ibqos::Range;
using ibqos::RangeSet;

TEST_CASE("ranges are sorted, reversed ones swapped, overlapping and adjacent ones merged",
          "[compiler][ranges]") {
    RangeSet s = RangeSet::build({{10, 20}, {5, 1}, {21, 25}, {15, 18}, {40, 40}});
    REQUIRE(s.ranges() == std::vector<Range>{{1, 5}, {10, 25}, {40, 40}});
    CHECK(s.contains(1));
    CHECK(s.contains(25));
    CHECK_FALSE(s.contains(26));
    CHECK_FALSE(s.contains(0));
    CHECK(s.size() == 5 + 16 + 1);
}

TEST_CASE("a range's width costs nothing, up to the whole 64-bit space", "[compiler][ranges]") {
    RangeSet all = RangeSet::build({{0, UINT64_MAX}});
    CHECK(all.ranges().size() == 1);
    CHECK(all.contains(UINT64_MAX));
    CHECK(all.size() == UINT64_MAX);
    RangeSet s;
    s.add(UINT64_MAX - 1, UINT64_MAX);
    s.add(0, UINT64_MAX - 2);
    CHECK(s.ranges() == std::vector<Range>{{0, UINT64_MAX}});
}

TEST_CASE("covers and intersects compare sets range by range", "[compiler][ranges]") {
    RangeSet big = RangeSet::build({{0, 100}, {200, 300}});
    CHECK(big.covers(RangeSet::build({{10, 20}, {250, 300}})));
    CHECK_FALSE(big.covers(RangeSet::build({{90, 210}})));
    CHECK(big.covers(RangeSet{}));
    CHECK(big.intersects(RangeSet::build({{150, 200}})));
    CHECK_FALSE(big.intersects(RangeSet::build({{101, 199}})));
}

TEST_CASE("adding one set to another merges them", "[compiler][ranges]") {
    RangeSet a = RangeSet::build({{1, 3}, {10, 12}});
    a.add(RangeSet::build({{4, 9}, {20, 20}}));
    CHECK(a.ranges() == std::vector<Range>{{1, 12}, {20, 20}});
    CHECK(a.str() == "1-12, 20");
    CHECK(a.str(true) == "0x1-0xc, 0x14");
}
