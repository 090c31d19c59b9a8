// SPDX-License-Identifier: MIT
// Test helper: a policy written in a test, bound to the sample fabric qos-lab (the one the
// end-to-end tests run under ibsim) with its partitions, and requests named by port.
#pragma once

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <utility>

#include "compiler/bind.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/path_request.hpp"
#include "tests/policy_text.hpp"

namespace ibqos::test {

// A qos-levels section of levels that set only their SL.
inline std::string levels(std::initializer_list<std::pair<const char*, int>> list) {
    std::string out = "qos-levels\n";
    for (auto [name, sl] : list) {
        out += "    qos-level\n        name: " + std::string(name) +
               "\n        sl: " + std::to_string(sl) + "\n    end-qos-level\n";
    }
    return out + "end-qos-levels\n";
}

struct LabFixture {
    Compiled compiled;
    SourceFile topology;
    SourceFile partitions;
    Diagnostics diagnostics;
    Fabric fabric;
    BoundPolicy bound;

    explicit LabFixture(std::string policy, std::string partitionsText = defaultPartitions())
        : compiled(std::move(policy)),
          topology("qos-lab.ibnetdiscover",
                   slurp(IBQOS_SOURCE_ROOT "/samples/fabrics/qos-lab.ibnetdiscover")),
          partitions("partitions.conf", std::move(partitionsText)) {
        REQUIRE(compiled.codes().empty());
        fabric = readTopology(topology, diagnostics);
        std::string error;
        fabric.smPort = fabric.findEndpoint("sm-01 HCA-1/P1", error);
        readPartitions(&partitions, fabric, diagnostics);
        bound = bindPolicy(compiled.policy, fabric, diagnostics);
        REQUIRE_FALSE(diagnostics.hasErrors());
    }

    static std::string defaultPartitions() {
        return slurp(IBQOS_SOURCE_ROOT "/samples/fabrics/qos-lab.partitions.conf");
    }

    const Policy& policy() const { return compiled.policy; }

    uint32_t port(const std::string& name) const {
        std::string error;
        uint32_t p = fabric.findEndpoint(name, error);
        INFO(name << ": " << error);
        REQUIRE(p != NoPort);
        return p;
    }

    // The SL of the level a classifier gives a request without fields.
    unsigned sl(const Classifier& classifier, const std::string& from,
                const std::string& to) const {
        return policy().levels[classifier.match(query(from, to)).level].sl;
    }

    PathQuery query(const std::string& from, const std::string& to) const {
        PathQuery q;
        q.source = port(from);
        q.destination = port(to);
        return q;
    }
};

}  // namespace ibqos::test
