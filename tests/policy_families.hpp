// SPDX-License-Identifier: MIT
// Policy families that try to break the policy-space analyses: shifted overlapping GUID ranges,
// nested ranges, the same ranges on every rule, many rules per group pair and random intervals,
// each optionally with qos-ulps lines on top; generated from a seed at any number of rules.
// Used by the brute-force oracles (tests/) and the analysis benchmark (bench/). One more, not in
// Families: nested ServiceID ranges from 0 (the classifier's tests and benchmark).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace ibqos::test {

enum class Family : uint8_t { Shifted, Nested, SameRanges, PairRules, Random, NestedServiceIds };
constexpr Family Families[] = {Family::Shifted, Family::Nested, Family::SameRanges,
                               Family::PairRules, Family::Random};

inline const char* familyName(Family f) {
    switch (f) {
        case Family::Shifted:
            return "shifted";
        case Family::Nested:
            return "nested";
        case Family::SameRanges:
            return "same-ranges";
        case Family::PairRules:
            return "pair-rules";
        case Family::Random:
            return "random";
        case Family::NestedServiceIds:
            return "nested-service-ids";
    }
    return "";
}

// How many port groups a family's policy has.
inline unsigned familyGroups(Family f, unsigned rules) {
    return f == Family::PairRules || f == Family::NestedServiceIds ? 8 : std::max(8u, rules / 4);
}

// What differs between a policy and the one it is compared with (ibqos diff).
enum class Change : uint8_t {
    None,
    LevelSl,      // one level's SL moves
    RuleDropped,  // one rule is left out
    RangeMoved,   // one rule's QoS-class range moves
    LevelLimits,  // one level gets an MTU limit and another packet life
    Bandwidth,    // only the qos-setup bandwidth shares change (tables, not answers)
};

struct FamilyPolicy {
    Family family = Family::Shifted;
    unsigned rules = 100;
    uint64_t seed = 1;
    bool ulps = false;      // qos-ulps lines after the rules
    bool qosSetup = false;  // a qos-setup scope with bandwidth shares (Random always has one)
    Change change = Change::None;
    uint64_t changeSeed = 0;  // which level or rule the change picks
    // Port GUIDs and PKeys stay within a small fabric's (for oracles that bind to one).
    uint64_t guidBase = 0x100000;
    unsigned guidSpan = 0;  // 0: the family's own spread
    // GUID offset k is written as guidBase + k * guidStride, a range's end as the last GUID of
    // its offset's stride: the same shape, with room for ports of several kinds at one offset.
    unsigned guidStride = 1;
};

// GUID ranges of the family's groups span guidBase .. guidBase + span (in strides).
inline std::string familyPolicy(const FamilyPolicy& o) {
    std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(o.family));
    auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
    const unsigned rules = std::max(o.rules, 1u);
    const unsigned groups = familyGroups(o.family, rules);
    const uint64_t span = o.guidSpan ? o.guidSpan : 4 * groups + 0xfa0;
    std::string p;
    p.reserve(rules * 200 + groups * 120);
    char buf[256];
    auto hex = [&](uint64_t v) {
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
        return std::string(buf);
    };
    auto range = [&](uint64_t lo, uint64_t hi) { return hex(lo) + "-" + hex(hi); };
    const uint64_t stride = std::max(o.guidStride, 1u);
    auto guids = [&](uint64_t lo, uint64_t hi) {
        return range(o.guidBase + lo * stride, o.guidBase + hi * stride + stride - 1);
    };

    // Groups.
    p += "port-groups\n";
    for (unsigned g = 0; g < groups; ++g) {
        p += "    port-group\n        name: g" + std::to_string(g) + "\n";
        switch (o.family) {
            case Family::Shifted:
            case Family::SameRanges: {
                const uint64_t lo = (4 * g) % span;
                p += "        port-guid: " + guids(lo, lo + std::min<uint64_t>(0xfa0, span / 2)) +
                     "\n";
                if (g % 3 == 0) p += "        node-type: CA\n";
                break;
            }
            case Family::Nested: {
                const uint64_t mid = span / 2, half = (g + 1) * (span / 2) / groups;
                p += "        port-guid: " + guids(mid - half, mid + half) + "\n";
                if (g % 5 == 0) p += "        node-type: SWITCH\n";
                break;
            }
            case Family::PairRules:
            case Family::NestedServiceIds: {
                const uint64_t lo = g * (span / groups);
                p += "        port-guid: " + guids(lo, lo + span / groups - 1) + "\n";
                break;
            }
            case Family::Random: {
                for (unsigned s = 1 + static_cast<unsigned>(pick(2)); s > 0; --s) {
                    switch (pick(6)) {
                        case 0:
                            p += std::string("        node-type: ") +
                                 (pick(3) == 0 ? "CA"
                                  : pick(2)    ? "SWITCH"
                                               : "ROUTER") +
                                 "\n";
                            break;
                        case 1:
                            p += "        pkey: " + range(1 + pick(8), 9 + pick(8)) + "\n";
                            break;
                        case 2:
                            p += "        partition: part" + std::to_string(pick(4)) + "\n";
                            break;
                        default: {
                            const uint64_t lo = pick(span);
                            p += "        port-guid: " + guids(lo, lo + pick(span / 8 + 1)) + "\n";
                        }
                    }
                }
                break;
            }
        }
        p += "    end-port-group\n";
    }
    p += "end-port-groups\n";

    // Levels: default on SL 0, l1..l15 on their SL. A change moves one.
    const unsigned changedLevel = 1 + static_cast<unsigned>(o.changeSeed % 15);
    p += "qos-levels\n    qos-level\n        name: default\n        sl: 0\n    end-qos-level\n";
    for (unsigned l = 1; l < 16; ++l) {
        unsigned sl = l;
        if (o.change == Change::LevelSl && l == changedLevel) sl = (l + 1) % 16;
        p += "    qos-level\n        name: l" + std::to_string(l) +
             "\n        sl: " + std::to_string(sl) + "\n";
        if (o.change == Change::LevelLimits && l == changedLevel) p += "        mtu-limit: 4\n";
        if (o.change == Change::LevelLimits && l == 1 + (changedLevel % 15))
            p += "        packet-life: 14\n";
        if (o.family == Family::Random && l % 4 == 0)
            p += "        pkey: " + range(1 + l % 3, 5 + l % 5) + "\n";
        p += "    end-qos-level\n";
    }
    p += "end-qos-levels\n";

    // Rules.
    const unsigned changedRule = static_cast<unsigned>(o.changeSeed % rules);
    p += "qos-match-rules\n";
    for (unsigned r = 0; r < rules; ++r) {
        std::string rule = "    qos-match-rule\n";
        uint64_t qlo = 0, qhi = 0, slo = 0, shi = 0;
        bool sid = false, qos = true, pkey = false;
        unsigned src = static_cast<unsigned>(pick(groups)),
                 dst = static_cast<unsigned>(pick(groups));
        bool hasSrc = true, hasDst = true;
        switch (o.family) {
            case Family::Shifted:
                qlo = pick(4000);
                qhi = qlo + pick(200);
                sid = r % 2 == 1;
                slo = 0x10000 + pick(1 << 20);
                shi = slo + pick(4096);
                break;
            case Family::Nested: {
                const uint64_t w = 1 + (rules - r) * 2000 / rules;
                qlo = 2048 - std::min<uint64_t>(w, 2048);
                qhi = 2048 + w;
                sid = r % 3 == 0;
                slo = 0x100000 - w * 64;
                shi = 0x100000 + w * 64;
                hasSrc = r % 4 != 3;
                hasDst = r % 4 != 2;
                break;
            }
            case Family::SameRanges:
                qlo = 100;
                qhi = 200;
                sid = r % 2 == 0;
                slo = 0x10000;
                shi = 0x1ffff;
                break;
            case Family::PairRules:
                qlo = pick(64) * 64;
                qhi = qlo + pick(128);
                sid = pick(2) == 0;
                slo = 0x10000 + pick(64) * 256;
                shi = slo + pick(512);
                pkey = pick(4) == 0;
                break;
            case Family::NestedServiceIds:
                // Rule r accepts ServiceIDs 0x0 to 0x10 (r + 1) and names nothing else: every
                // range holds all those before it.
                qos = false;
                sid = true;
                slo = 0;
                shi = 16 * (uint64_t{r} + 1);
                hasSrc = hasDst = false;
                break;
            case Family::Random:
                qos = pick(3) != 0;
                qlo = pick(4096);
                qhi = std::min<uint64_t>(4095, qlo + pick(1024));
                sid = pick(3) == 0;
                slo = pick(1 << 24);
                shi = slo + pick(1 << 16);
                pkey = pick(5) == 0;
                hasSrc = pick(4) != 0;
                hasDst = pick(4) != 0;
                break;
        }
        if (o.change == Change::RangeMoved && r == changedRule) {
            qlo += 7;
            qhi += 7;
        }
        if (hasSrc) rule += "        source: g" + std::to_string(src) + "\n";
        if (hasDst) rule += "        destination: g" + std::to_string(dst) + "\n";
        if (qos)
            rule += "        qos-class: " + std::to_string(qlo) + "-" + std::to_string(qhi) + "\n";
        if (sid) rule += "        service-id: " + range(slo, shi) + "\n";
        if (pkey) rule += "        pkey: " + range(1 + pick(8), 9 + pick(8)) + "\n";
        rule += "        qos-level-name: l" + std::to_string(1 + pick(15)) + "\n";
        rule += "    end-qos-match-rule\n";
        if (o.change == Change::RuleDropped && r == changedRule) continue;
        p += rule;
    }
    p += "end-qos-match-rules\n";

    if (o.ulps) {
        p += "qos-ulps\n    default : 0\n";
        for (unsigned u = 0; u < std::max(1u, rules / 10); ++u) {
            const unsigned sl = 1 + static_cast<unsigned>(pick(15));
            switch (pick(7)) {
                case 0:
                    p += "    sdp : " + std::to_string(sl) + "\n";
                    break;
                case 1: {
                    const uint64_t lo = pick(60000);
                    p += "    sdp, port-num " + std::to_string(lo) + "-" +
                         std::to_string(lo + pick(500)) + " : " + std::to_string(sl) + "\n";
                    break;
                }
                case 2:
                    p += std::string(pick(2) ? "    rds" : "    iser") + " : " +
                         std::to_string(sl) + "\n";
                    break;
                case 3: {
                    const uint64_t lo = pick(span);
                    p += "    srp, target-port-guid " + guids(lo, lo + pick(64)) + " : " +
                         std::to_string(sl) + "\n";
                    break;
                }
                case 4: {
                    const uint64_t lo = 0x10000 + pick(1 << 20);
                    p += "    any, service-id " + range(lo, lo + pick(4096)) + " : " +
                         std::to_string(sl) + "\n";
                    break;
                }
                case 5: {
                    const uint64_t lo = pick(span);
                    p += "    any, source-port-guid " + guids(lo, lo + pick(256)) + " : " +
                         std::to_string(sl) + "\n";
                    break;
                }
                default:
                    p += "    any, pkey " + range(1 + pick(8), 9 + pick(8)) + " : " +
                         std::to_string(sl) + "\n";
            }
        }
        p += "end-qos-ulps\n";
    }

    if (o.qosSetup || o.change == Change::Bandwidth || o.family == Family::Random) {
        const bool moved = o.change == Change::Bandwidth;
        p += "qos-setup\n    vlarb-tables\n        vlarb-scope\n            group: g0\n";
        p += moved ? "            bandwidth: 1:30%, 2:30%, 3:40%\n"
                   : "            bandwidth: 1:20%, 2:40%, 3:40%\n";
        p += "        end-vlarb-scope\n    end-vlarb-tables\nend-qos-setup\n";
    }
    return p;
}

}  // namespace ibqos::test
