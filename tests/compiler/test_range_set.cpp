// SPDX-License-Identifier: MIT
// Unit tests of RangeSet: OpenSM's sorted, merged range arrays.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

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

// The elementary intervals against the plainest reading: every cut sorted, duplicates dropped,
// and a value's interval the last cut at or below it, over domains that take the bitmap path
// (12 and 16 bits), the radix path (64 bits), and cuts that fall outside a small domain.
TEST_CASE("elementary intervals find every value's interval, on dense and wide domains",
          "[compiler][ranges]") {
    std::mt19937_64 random(1907);
    for (const uint64_t max : {uint64_t{0xfff}, uint64_t{0x7fff}, uint64_t{0xffff}, UINT64_MAX}) {
        for (int round = 0; round < 40; ++round) {
            ibqos::ElementaryIntervals cuts(max);
            std::vector<uint64_t> expected{0};
            const int ranges = 1 + static_cast<int>(random() % 300);
            // Values spread over the domain, or packed into a few words of it, or (round 7 of
            // a small domain) a PKey's full-member bit past its end.
            const uint64_t span = round % 3 == 0 ? 200 : max;
            for (int k = 0; k < ranges; ++k) {
                uint64_t lo = random() % (span == UINT64_MAX ? span : span + 1);
                uint64_t hi = lo + random() % 1000;
                if (round == 7 && max != UINT64_MAX) lo |= 0x8000, hi |= 0x8000;
                if (hi < lo) hi = UINT64_MAX;
                cuts.add(lo, hi);
                expected.push_back(lo);
                if (hi < max) expected.push_back(hi + 1);
            }
            cuts.finish();
            std::sort(expected.begin(), expected.end());
            expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
            REQUIRE(cuts.starts == expected);
            for (int probe = 0; probe < 200; ++probe) {
                const uint64_t v = probe % 2 ? expected[random() % expected.size()] + probe % 3
                                             : random() % (max == UINT64_MAX ? max : max + 1);
                const auto at = static_cast<size_t>(
                    std::upper_bound(expected.begin(), expected.end(), v) - expected.begin() - 1);
                CHECK(cuts.find(v) == at);
            }
        }
    }
}
