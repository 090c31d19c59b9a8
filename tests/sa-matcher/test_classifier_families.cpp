// SPDX-License-Identifier: MIT
// The compiled classifier on the policy families of tests/policy_families.hpp: equal to OpenSM's
// rule-by-rule scan at every boundary of the values the policies write, on a fabric their groups
// fill and on one they name no GUID of; and its memory, which grows with the rules, not with the
// overlaps of their ranges.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "compiler/bind.hpp"
#include "fabric/partitions.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/reference_match.hpp"
#include "tests/policy_families.hpp"
#include "tests/policy_text.hpp"
#include "tests/sa-matcher/matcher_fixture.hpp"

using namespace ibqos;
using test::Family;
using test::FamilyPolicy;

namespace {

// Every family of tests/policy_families.hpp, the nested ServiceIDs from 0 included.
constexpr Family AllFamilies[] = {Family::Shifted,   Family::Nested, Family::SameRanges,
                                  Family::PairRules, Family::Random, Family::NestedServiceIds};

// The families' GUIDs: offset k is the 256 GUIDs from GuidBase + 256 k.
constexpr uint64_t GuidBase = 0x100000;
constexpr unsigned Stride = 256;
constexpr unsigned Span = 48;

FamilyPolicy familyOptions(Family family, unsigned rules, bool ulps, uint64_t seed) {
    FamilyPolicy o;
    o.family = family;
    o.rules = rules;
    o.seed = seed;
    o.ulps = ulps;
    o.guidBase = GuidBase;
    o.guidSpan = Span;
    o.guidStride = Stride;
    return o;
}

// A fabric with a node at every GUID offset of the families and a few beyond them: switches
// (port 0 an endpoint), routers and two-port CAs, so that the nested, shifted and random GUID
// ranges and the node types all split its ports differently.
Fabric familyFabric() {
    Fabric f;
    for (unsigned k = 0; k < Span + 4; ++k) {
        const uint64_t guid = GuidBase + uint64_t{k} * Stride + 16;
        const std::string name = "node" + std::to_string(k);
        if (k % 7 == 0) {
            f.addNode(NodeType::Switch, guid, name, 4);
        } else if (k % 11 == 3) {
            f.addNode(NodeType::Router, guid, name, 1);
        } else {
            f.addNode(NodeType::Ca, guid, name, 2);
        }
    }
    uint16_t lid = 1;
    for (FabricPort& p : f.ports) {
        if (f.nodes[p.node].type != NodeType::Switch || p.number == 0) p.lid = lid++;
    }
    f.index();
    Diagnostics d;
    readPartitions(nullptr, f, d);
    return f;
}

// Every value a request can carry that falls on a side of some rule's range boundary: each
// range's ends and the values just outside them.
struct Boundaries {
    std::vector<uint64_t> qosClasses{0, 4095}, serviceIds{0, UINT64_MAX}, pkeys{0, 0x7fff};

    explicit Boundaries(const Policy& policy) {
        auto add = [](std::vector<uint64_t>& out, const RangeSet& set, uint64_t max) {
            for (const Range& r : set.ranges()) {
                for (uint64_t v : {r.lo - 1, r.lo, r.hi, r.hi + 1}) {
                    if (v <= max) out.push_back(v);
                }
            }
        };
        for (const MatchRule& rule : policy.rules) {
            add(qosClasses, rule.qosClasses, 4095);
            add(serviceIds, rule.serviceIds, UINT64_MAX);
            add(pkeys, rule.pkeys, 0x7fff);
        }
    }
};

PathQuery boundaryQuery(std::mt19937_64& rng, const Fabric& fabric, const Boundaries& b) {
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    auto any = [&pick](const std::vector<uint64_t>& values) { return values[pick(values.size())]; };
    PathQuery q;
    q.source = static_cast<uint32_t>(pick(fabric.ports.size()));
    q.destination = static_cast<uint32_t>(pick(fabric.ports.size()));
    if (pick(5)) q.qosClass = static_cast<uint16_t>(any(b.qosClasses));
    if (pick(5)) q.serviceId = any(b.serviceIds);
    if (pick(5)) q.pkey = static_cast<uint16_t>(any(b.pkeys) | (pick(2) ? 0x8000 : 0));
    return q;
}

struct Tally {
    size_t compared = 0, byRule = 0;
};

// Compares the classifier with the scan on `requests` boundary requests; returns how many the
// scan decided by a rule.
void compare(const BoundPolicy& bound, const Fabric& fabric, std::mt19937_64& rng, size_t requests,
             const std::string& name, Tally& tally) {
    Classifier classifier(bound);
    Boundaries values(*bound.policy);
    for (size_t i = 0; i < requests; ++i) {
        PathQuery q = boundaryQuery(rng, fabric, values);
        QosMatch expected = referenceMatch(bound, q);
        QosMatch got = classifier.match(q);
        if (got != expected) {
            FAIL_CHECK(name << " request " << i << ": rule " << got.rule << " instead of "
                            << expected.rule);
            return;
        }
        ++tally.compared;
        tally.byRule += expected.rule != NoRule;
    }
}

}  // namespace

TEST_CASE(
    "the classifier answers as OpenSM's scan on every policy family, on a fabric its groups "
    "fill",
    "[sa-matcher][property]") {
    const Fabric fabric = familyFabric();
    std::mt19937_64 rng(4711);
    for (Family family : AllFamilies) {
        Tally tally;
        for (bool ulps : {false, true}) {
            for (unsigned rules : {40u, 300u, 2600u}) {
                const std::string name = std::string(test::familyName(family)) +
                                         (ulps ? "+ulps " : " ") + std::to_string(rules);
                test::Compiled compiled(test::familyPolicy(familyOptions(family, rules, ulps, 3)),
                                        1);
                REQUIRE(compiled.codes().empty());
                Diagnostics diagnostics;
                BoundPolicy bound = bindPolicy(compiled.policy, fabric, diagnostics);
                REQUIRE_FALSE(diagnostics.hasErrors());
                compare(bound, fabric, rng, rules >= 2600 ? 600 : 2000, name, tally);
            }
        }
        INFO(test::familyName(family));
        // Both outcomes, or the comparison proves little.
        CHECK(tally.compared == 2 * (2000 + 2000 + 600));
        CHECK(tally.byRule > tally.compared / 20);
        CHECK(tally.byRule < tally.compared);
    }
}

TEST_CASE(
    "the classifier answers as OpenSM's scan on every policy family, on a fabric whose "
    "GUIDs the groups never name",
    "[sa-matcher][property]") {
    std::mt19937_64 rng(815);
    Tally all;
    for (Family family : AllFamilies) {
        Tally tally;
        for (bool ulps : {false, true}) {
            for (unsigned rules : {40u, 300u, 2600u}) {
                const std::string name = std::string(test::familyName(family)) +
                                         (ulps ? "+ulps " : " ") + std::to_string(rules);
                // qos-lab's GUIDs lie far from the families' ranges: only node types and
                // partitions put its ports in groups.
                FamilyPolicy o = familyOptions(family, rules, ulps, 5);
                test::LabFixture lab(test::familyPolicy(o));
                compare(lab.bound, lab.fabric, rng, rules >= 2600 ? 600 : 2000, name, tally);
            }
        }
        INFO(test::familyName(family));
        CHECK(tally.compared == 2 * (2000 + 2000 + 600));
        CHECK(tally.byRule > 0);
        all.compared += tally.compared;
        all.byRule += tally.byRule;
    }
    // Some families match every request by a rule here (a rule without groups or fields);
    // the others must leave some to the default level.
    CHECK(all.byRule < all.compared);
}

namespace {

// Rules without groups whose ranges nest on every field: rule i accepts ServiceIDs 0 to
// 16 (i + 1), as the policy that took 620 MB at 64,000 rules, and QoS classes and PKeys in
// intervals around a middle that narrow rule by rule.
Policy nestedRanges(unsigned rules) {
    Policy p;
    QosLevel level;
    level.name = "default";
    p.levels.push_back(level);
    p.defaultLevel = 0;
    p.hasDefaultLevel = true;
    for (unsigned i = 0; i < rules; ++i) {
        MatchRule rule;
        rule.serviceIds = RangeSet{{0, 16 * uint64_t{i + 1}}};
        const uint64_t q = 1 + uint64_t{rules - i} * 2000 / rules;
        rule.qosClasses = RangeSet{{2048 - q, 2048 + q}};
        const uint64_t k = 1 + uint64_t{rules - i} * 0x3000 / rules;
        rule.pkeys = RangeSet{{0x4000 - k, 0x4000 + k}};
        rule.level = 0;
        p.rules.push_back(rule);
    }
    p.firstUlpRule = p.rules.size();
    return p;
}

size_t nestedBytes(unsigned rules, const Fabric& fabric) {
    Policy policy = nestedRanges(rules);
    Diagnostics diagnostics;
    BoundPolicy bound = bindPolicy(policy, fabric, diagnostics);
    return Classifier(bound).memoryBytes();
}

size_t familyBytes(Family family, unsigned rules, const Fabric& fabric) {
    test::Compiled compiled(test::familyPolicy(familyOptions(family, rules, true, 9)), 1);
    Diagnostics diagnostics;
    BoundPolicy bound = bindPolicy(compiled.policy, fabric, diagnostics);
    return Classifier(bound).memoryBytes();
}

}  // namespace

TEST_CASE("the classifier's memory grows with the rules, not with the overlaps of their ranges",
          "[sa-matcher][memory]") {
    const Fabric fabric = familyFabric();
    SECTION(
        "nested ranges on every field: four times the rules, at most about four times the "
        "bytes") {
        const size_t n = nestedBytes(4000, fabric), n4 = nestedBytes(16000, fabric);
        INFO("4,000 rules: " << n << " bytes; 16,000: " << n4);
        CHECK(n4 <= n * 9 / 2);
        // And a few hundred bytes a rule: each range is a boundary in one word's index and in
        // one summary word's, with a rule's record beside.
        CHECK(n4 <= 16000 * 400);
    }
    SECTION("every family, its groups filling the fabric") {
        for (Family family : AllFamilies) {
            const size_t n = familyBytes(family, 1000, fabric),
                         n4 = familyBytes(family, 4000, fabric);
            INFO(test::familyName(family) << ": 1,000 rules " << n << " bytes; 4,000: " << n4);
            CHECK(n4 <= n * 9 / 2);
        }
    }
}
