// SPDX-License-Identifier: MIT
// Unit tests of the tables: OpenSM's option parsing and folding, qos-setup scopes, the
// arbitration simulator, the bandwidth planner, and the realizability checks.
#include <catch2/catch.hpp>

#include <memory>

#include "compiler/drift.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/tables.hpp"
#include "compiler/vlarb_sim.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "tests/policy_text.hpp"

using namespace ibqos;
using ibqos::test::slurp;

namespace {

// A policy compiled for the three-switch sample fabric (Spine has an enhanced port 0).
struct OnFabric {
    test::Compiled compiled;
    SourceFile topology{"three-switch.net",
                        slurp(IBQOS_SOURCE_ROOT "/samples/fabrics/three-switch.net")};
    Diagnostics diagnostics;
    Fabric fabric;  // as read, before the compilation takes its copy
    OpenSmConf conf;
    std::unique_ptr<FabricCompilation> onFabric;

    explicit OnFabric(const std::string& policy, const std::string& opensmConf = "")
        : compiled(policy), fabric(readTopology(topology, diagnostics)) {
        REQUIRE(compiled.codes().empty());
        readPartitions(nullptr, fabric, diagnostics);
        if (!opensmConf.empty()) {
            SourceFile c("opensm.conf", opensmConf);
            conf = readOpenSmConf(c, diagnostics);
        }
        negotiateOperVls(fabric, conf.maxOpVls);
        onFabric = FabricCompilation::compile(compiled.policy, fabric, conf, diagnostics);
    }
    const FabricTables& tables() const { return onFabric->tables(); }
    const PortTables& port(const std::string& name) {
        for (const PortTables& t : tables().ports) {
            if (onFabric->fabric().portName(t.port) == name) return t;
        }
        FAIL("no tables for " << name);
        throw 0;
    }
    Sl2VlTable sl2vl(const std::string& name, unsigned in = 0) {
        return tables().sl2vls[port(name).sl2vlFor(in)];
    }
    VlArbTable low(const std::string& name) { return tables().vlarbs[port(name).vlArbLow]; }
    VlArbTable high(const std::string& name) { return tables().vlarbs[port(name).vlArbHigh]; }
    std::vector<std::string> codes(Severity severity) {
        std::vector<std::string> out;
        for (const Diagnostic& d : diagnostics.all()) {
            if (d.severity == severity) out.push_back(d.code);
        }
        return out;
    }
};

const char* const groups = R"(
port-groups
    port-group
        name: leaves
        port-name: Leaf1/P1, Leaf2/P1
    end-port-group
    port-group
        name: spine
        node-type: SWITCH
    end-port-group
    port-group
        name: storage
        port-name: "storage1 HCA-1/P1", "storage1 HCA-1/P2"
    end-port-group
    port-group
        name: computes
        port-name: "compute1 HCA-1/P1", "compute2 HCA-1/P1", "compute3 HCA-1/P1"
    end-port-group
end-port-groups
qos-ulps
    default : 0
end-qos-ulps
)";

}  // namespace

TEST_CASE("OpenSM's option strings are read as OpenSM reads them", "[compiler][tables]") {
    VlArbTable t = parseVlArbOption("0:64, 15:4,2:300");
    CHECK(t[0] == VlArbEntry{0, 64});
    CHECK(t[1] == VlArbEntry{0, 4});   // vl % 15
    CHECK(t[2] == VlArbEntry{2, 44});  // weight cut to 8 bits
    CHECK(t[3] == VlArbEntry{0, 0});   // missing entries are 0:0
    Sl2VlTable s = parseSl2VlOption("1,2,3");
    CHECK(s[0] == 1);
    CHECK(s[2] == 3);
    CHECK(s[3] == 0);
}

TEST_CASE("without options every port gets OpenSM's defaults, folded to its VLs",
          "[compiler][tables]") {
    OnFabric f(groups);
    CHECK(f.sl2vl("compute1 HCA-1/P1") ==
          Sl2VlTable{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(f.high("Leaf1/P1")[0] == VlArbEntry{0, 4});
    CHECK(f.low("Leaf1/P1")[1] == VlArbEntry{1, 4});
    CHECK(f.low("Leaf1/P1")[9] == VlArbEntry{1, 4});  // VL 9 folded onto VL 1 on an 8-VL port
    // Ports OpenSM programs: linked ports, and port 0 only where it is enhanced.
    CHECK(f.port("Spine/P0").portClass == PortClass::SwitchPort0);
    for (const PortTables& t : f.tables().ports) CHECK(f.fabric.portName(t.port) != "Leaf1/P0");
    CHECK(f.codes(Severity::Warning).empty());  // the built-in default's folding is OpenSM's own
}

TEST_CASE("an administrator's table that relies on folding is warned about", "[compiler][tables]") {
    OnFabric f(groups, "qos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n");
    CHECK(f.codes(Severity::Warning) == std::vector<std::string>{"vl-folded"});
    CHECK(f.diagnostics.all().back().file == "opensm.conf");
}

TEST_CASE("vlarb-scopes select by group and across, later scopes win",
          "[compiler][tables][qos-setup]") {
    std::string policy = std::string(groups) + R"(
qos-setup
    vlarb-tables
        vlarb-scope
            group: spine
            vlarb-high: 0:64
            vlarb-low: 1:128
            vl-high-limit: 3
        end-vlarb-scope
        vlarb-scope
            group: spine
            across: storage
            vlarb-low: 2:192
        end-vlarb-scope
        vlarb-scope
            across: leaves
            vlarb-low: 3:64
        end-vlarb-scope
    end-vlarb-tables
end-qos-setup
)";
    OnFabric f(policy);
    // Every switch port: the first scope; ports facing storage1: the second's low table.
    CHECK(f.high("Spine/P1")[0] == VlArbEntry{0, 64});
    CHECK(f.port("Spine/P1").highLimit == 3);
    CHECK(f.low("Leaf1/P7")[0] == VlArbEntry{1, 128});
    CHECK(f.low("Leaf1/P3")[0] == VlArbEntry{2, 192});
    CHECK(f.low("Leaf2/P2")[0] == VlArbEntry{2, 192});
    // Ports whose peer is a switch of 'leaves' (Leaf1 and Leaf2 by their port 1 names): the
    // hosts below them and the spine ports facing them.
    CHECK(f.low("compute1 HCA-1/P1")[0] == VlArbEntry{3, 64});
    CHECK(f.low("Spine/P2")[0] == VlArbEntry{3, 64});
    CHECK(f.low("Spine/P1")[0] == VlArbEntry{3, 64});
    CHECK(f.low("Spine/P0")[0] == VlArbEntry{1, 128});  // port 0 has no peer
    CHECK(f.codes(Severity::Error).empty());
}

TEST_CASE("sl2vl-scopes select (in, out) pairs by node, port number and peer",
          "[compiler][tables][qos-setup]") {
    std::string policy = std::string(groups) + R"(
qos-setup
    sl2vl-tables
        sl2vl-scope
            group: spine
            from: 7
            to: 1-3
            sl2vl-table: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,15
        end-sl2vl-scope
        sl2vl-scope
            across-to: storage
            sl2vl-table: 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,15
        end-sl2vl-scope
        sl2vl-scope
            group: computes
            sl2vl-table: 3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,15
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
)";
    OnFabric f(policy);
    CHECK(f.sl2vl("Leaf1/P1", 7)[0] == 1);  // a spine-group switch, in 7, out 1
    CHECK(f.sl2vl("Leaf1/P1", 8)[0] == 0);  // in 8 is not selected
    CHECK(f.sl2vl("Leaf1/P7", 7)[0] == 0);  // out 7 is not selected
    CHECK(f.sl2vl("Leaf1/P3", 5)[0] == 2);  // out-port facing storage1
    CHECK(f.sl2vl("Leaf2/P2", 0)[0] == 2);
    CHECK(f.sl2vl("compute2 HCA-1/P1")[0] == 3);  // a CA port: the pair (0, 0)
    CHECK(f.sl2vl("storage1 HCA-1/P1")[0] == 0);
}

TEST_CASE("the arbitration simulator honours weights, packets and the high limit",
          "[compiler][vlarb]") {
    std::vector<VlArbEntry> high{{1, 192}, {2, 128}, {3, 64}};
    auto s = simulateArbitration(high.data(), high.size(), nullptr, 0, 0);
    CHECK(s[1] == Approx(0.50).margin(0.001));
    CHECK(s[2] == Approx(0.333).margin(0.001));
    CHECK(s[3] == Approx(0.167).margin(0.001));

    // A started packet completes: weight 4 sends one 4 KiB packet, as does weight 64.
    std::vector<VlArbEntry> low{{1, 4}, {2, 64}};
    auto even = simulateArbitration(nullptr, 0, low.data(), low.size(), 0);
    CHECK(even[1] == Approx(0.5).margin(0.001));

    // High limit 0: one high packet, then one low; 255: low priority starves.
    std::vector<VlArbEntry> one{{0, 64}};
    auto alternate = simulateArbitration(one.data(), 1, low.data(), low.size(), 0);
    CHECK(alternate[0] == Approx(0.5).margin(0.001));
    auto starve = simulateArbitration(one.data(), 1, low.data(), low.size(), 255);
    CHECK(starve[0] == Approx(1.0));
    CHECK(starve[1] == 0);
    auto four = simulateArbitration(one.data(), 1, low.data(), low.size(), 4);
    CHECK(four[0] == Approx(0.8).margin(0.001));
}

TEST_CASE("bandwidth shares become whole-packet weights that achieve them", "[compiler][vlarb]") {
    BandwidthPlan plan = planBandwidth({{1, 20}, {2, 40}, {3, 40}}, 8);
    CHECK(plan.achieved[1] == Approx(0.2).margin(0.001));
    CHECK(plan.achieved[3] == Approx(0.4).margin(0.001));
    for (const VlArbEntry& e : plan.entries) CHECK(e.weight % 64 == 0);

    BandwidthPlan uneven = planBandwidth({{0, 10}, {1, 60}, {2, 30}}, 8);
    CHECK(uneven.entries.size() <= 8);
    CHECK(uneven.achieved[1] == Approx(0.6).margin(0.001));  // 6 packets: two entries of 192

    BandwidthPlan cramped = planBandwidth({{0, 1}, {1, 98}, {2, 1}}, 4);
    CHECK(cramped.entries.size() <= 4);
    CHECK(cramped.achieved[1] == Approx(0.75).margin(0.001));  // the best 4 entries allow
}

TEST_CASE("a level's SL that a port drops or starves is an error at the level, or at the scope",
          "[compiler][realizability]") {
    // SL 4 for QoS class 1, and the spine's tables.
    const std::string gold = std::string(groups) + R"(
qos-levels
    qos-level
        name: gold
        sl: 4
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 1
        qos-level-name: gold
    end-qos-match-rule
end-qos-match-rules
)";
    std::string policy = gold + R"(qos-setup
    sl2vl-tables
        sl2vl-scope
            group: spine
            from: 7
            sl2vl-table: 0,1,2,3,15,5,6,7,0,1,2,3,4,5,6,7
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
)";
    const std::string weighted =
        "qos_vlarb_low 0:64,1:64,2:64,3:64,4:64,5:64,6:64,7:64\nqos_vlarb_high 0:0\n";
    OnFabric dropped(policy, weighted);
    CHECK(dropped.codes(Severity::Error) == std::vector<std::string>{"sl-dropped"});
    // The scope did it: the error stands there, and the scope is not applied, so that the
    // spine's pairs from port 7 keep opensm.conf's table, as a stock OpenSM programs them.
    const Diagnostic& atScope = dropped.diagnostics.all().front();
    const std::string before = policy.substr(0, policy.find("        sl2vl-scope"));
    CHECK(atScope.location.line == std::count(before.begin(), before.end(), '\n') + 1);
    CHECK_THAT(atScope.message, Catch::Contains("SL 4 of qos-level 'gold'") &&
                                    Catch::Contains("The scope is not applied"));
    OnFabric stock(policy.substr(0, policy.find("qos-setup")), weighted);
    CHECK(dropped.sl2vl("Spine/P1", 7) == stock.sl2vl("Spine/P1", 7));
    CHECK(dropped.tables().withheld.has(false, 0));

    // Leaving a scope out keeps the others: the vlarb-scope that takes VL 4's weight from the
    // spine goes, the sl2vl-scope before it that is harmless alone stays.
    OnFabric chained(gold + R"(qos-setup
    vlarb-tables
        vlarb-scope
            group: spine
            vlarb-low: 0:64, 1:64
        end-vlarb-scope
    end-vlarb-tables
    sl2vl-tables
        sl2vl-scope
            group: spine
            sl2vl-table: 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
)",
                     weighted);
    CHECK(chained.codes(Severity::Error) == std::vector<std::string>{"sl-starved"});
    CHECK(chained.tables().withheld.has(true, 0));
    CHECK_FALSE(chained.tables().withheld.has(false, 0));
    CHECK(chained.sl2vl("Spine/P1", 2)[8] == 0);  // the sl2vl-scope's SL 8 -> VL 0

    OnFabric starved(
        std::string(groups) +
            "qos-levels\n qos-level\n  name: gold\n  sl: 5\n end-qos-level\nend-qos-levels\n"
            "qos-match-rules\n qos-match-rule\n  qos-class: 1\n  qos-level-name: gold\n"
            " end-qos-match-rule\nend-qos-match-rules\n",
        "qos_vlarb_low 0:64,1:64\nqos_vlarb_high 0:0\n");
    CHECK(starved.codes(Severity::Error) == std::vector<std::string>{"sl-starved"});
}

TEST_CASE("an unbounded high limit, uneven weights and unused scopes are warned about",
          "[compiler][realizability]") {
    std::string policy = std::string(groups) + R"(
qos-setup
    vlarb-tables
        vlarb-scope
            group: storage
            vlarb-high: 0:64
            vlarb-low: 1:100, 2:64, 3:64, 4:64, 5:64, 6:64, 7:64
            vl-high-limit: 255
        end-vlarb-scope
        vlarb-scope
            group: computes
            across: storage
            vl-high-limit: 1
        end-vlarb-scope
    end-vlarb-tables
end-qos-setup
)";
    OnFabric f(policy);
    auto warnings = f.codes(Severity::Warning);
    std::sort(warnings.begin(), warnings.end());
    CHECK(warnings == std::vector<std::string>{"high-limit-unbounded", "scope-unused",
                                               "weight-not-mtu-multiple"});
    // Each at the line that wrote what it is about.
    auto lineOf = [&](const std::string& text) {
        const std::string before = policy.substr(0, policy.find(text));
        return static_cast<uint32_t>(std::count(before.begin(), before.end(), '\n') + 1);
    };
    for (const Diagnostic& d : f.diagnostics.all()) {
        INFO(d.code);
        if (d.code == "weight-not-mtu-multiple")
            CHECK(d.location.line == lineOf("vlarb-low: 1:100"));
        if (d.code == "high-limit-unbounded")
            CHECK(d.location.line == lineOf("vl-high-limit: 255"));
    }
}

TEST_CASE("an IPoIB partition whose broadcast SL differs from its PathRecord SL is warned about",
          "[compiler][realizability]") {
    OnFabric f("qos-ulps\n default : 0\n ipoib : 3\nend-qos-ulps\n");
    // Without a partitions file the Default partition has no ipoib flag: nothing to compare.
    CHECK(f.codes(Severity::Warning).empty());
    Fabric fabric = f.fabric;
    SourceFile partitions("partitions.conf", "Default=0x7fff, ipoib, sl=0 : ALL=full ;\n");
    Diagnostics d;
    readPartitions(&partitions, fabric, d);
    FabricCompilation::compile(f.compiled.policy, fabric, f.conf, d);
    REQUIRE(d.all().size() == 1);
    CHECK(d.all()[0].code == "ipoib-sl");
    CHECK(d.all()[0].location.line == 3);
}

namespace {

// The fabric's tables as compiled, except what `low` replaces (a port's low VLArb table).
class ReadBack : public TableReader {
  public:
    ReadBack(const Fabric& fabric, const FabricTables& tables) : fabric_(fabric), tables_(tables) {}
    std::optional<std::vector<VlArbEntry>> low;

    const Fabric& fabric() const override { return fabric_; }
    std::optional<Sl2VlTable> readSl2Vl(uint32_t port, unsigned in, std::string&) override {
        return tables_.sl2vls[of(port).sl2vlFor(in)];
    }
    std::optional<std::vector<VlArbEntry>> readVlArb(uint32_t port, bool high, unsigned cap,
                                                     std::string&) override {
        if (!high && low) return low;
        const VlArbTable& t = tables_.vlarbs[high ? of(port).vlArbHigh : of(port).vlArbLow];
        return std::vector<VlArbEntry>(t.begin(), t.begin() + cap);
    }

  private:
    const PortTables& of(uint32_t port) const {
        for (const PortTables& t : tables_.ports) {
            if (t.port == port) return t;
        }
        throw std::logic_error("no such port");
    }
    const Fabric& fabric_;
    const FabricTables& tables_;
};

}  // namespace

TEST_CASE("verify compares VLArb tables by what they arbitrate", "[compiler][drift]") {
    OnFabric f("qos-ulps\n default : 0\nend-qos-ulps\n", "qos_vlarb_low 1:64,2:32\n");
    ReadBack same(f.onFabric->fabric(), f.tables());
    CHECK(findDrift(same, f.tables()).empty());
    // Entries of weight 0 are skipped by the arbiter: where they stand changes nothing.
    ReadBack zeros = same;
    zeros.low = std::vector<VlArbEntry>(8, VlArbEntry{0, 0});
    (*zeros.low)[3] = {1, 64};
    (*zeros.low)[6] = {2, 32};
    CHECK(findDrift(zeros, f.tables()).empty());
    // Another order or weight arbitrates differently: a difference on every port read so.
    ReadBack swapped = same;
    swapped.low = std::vector<VlArbEntry>{{2, 32}, {1, 64}};
    swapped.low->resize(8);
    const auto drift = findDrift(swapped, f.tables());
    const auto arbitrating = std::count_if(f.tables().ports.begin(), f.tables().ports.end(),
                                           [](const PortTables& t) { return t.hasVlArb; });
    CHECK(arbitrating > 0);
    CHECK(drift.size() == static_cast<size_t>(arbitrating));
    CHECK(drift.front().table == "vlarb low");
}
