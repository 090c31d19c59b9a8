// SPDX-License-Identifier: MIT
// Explanations: the decisive rule and, for each earlier rule, the first condition it failed.
#include <catch2/catch.hpp>

#include "sa-matcher/reference_match.hpp"
#include "tests/sa-matcher/matcher_fixture.hpp"

using namespace ibqos;
using test::LabFixture;

TEST_CASE("an explanation names why every earlier rule lost, in OpenSM's order of tests",
          "[sa-matcher][explain]") {
    LabFixture lab(R"(
port-groups
    port-group
        name: computes
        port-name: "node-04 HCA-1/P1", "node-02 HCA-1/P1"
    end-port-group
    port-group
        name: storage
        partition: storage
    end-port-group
end-port-groups
)" + test::levels({{"default", 0}, {"gold", 4}}) +
                   R"(
qos-match-rules
    qos-match-rule
        source: storage
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        source: computes
        destination: computes
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        qos-class: 1-3
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        qos-class: 7
        service-id: 0x10
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        pkey: 0x0100
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        source: computes, storage
        pkey: 0x0001
        qos-level-name: gold
    end-qos-match-rule
end-qos-match-rules
)");
    // node-02 would be held by the first rule: it is a (limited) member of partition storage.
    PathQuery q = lab.query("node-04 HCA-1/P1", "node-05 HCA-1/P1");
    q.qosClass = 7;
    q.pkey = 0x8001;
    MatchExplanation e = explainMatch(lab.bound, q);
    CHECK(e.match.rule == 5);
    using M = RuleMismatch;
    std::vector<std::pair<uint32_t, RuleMismatch>> expected{{0, M::Source},
                                                            {1, M::Destination},
                                                            {2, M::QosClass},
                                                            {3, M::ServiceIdAbsent},
                                                            {4, M::Pkey}};
    CHECK(e.earlier == expected);
    CHECK(lab.policy().groups[e.sourceGroup].name == "computes");
    CHECK(e.destinationGroup == NoGroup);

    q.pkey.reset();
    e = explainMatch(lab.bound, q);
    CHECK(e.match.rule == NoRule);
    REQUIRE(e.earlier.size() == 6);
    CHECK(e.earlier.back().second == M::PkeyAbsent);
    CHECK(e.earlier[4].second == M::PkeyAbsent);
}
