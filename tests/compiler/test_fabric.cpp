// SPDX-License-Identifier: MIT
// Unit tests of the fabric readers (ibnetdiscover, ibsim net, partitions.conf) and of binding.
#include <catch2/catch.hpp>

#include <map>

#include "compiler/bind.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "ib/link.hpp"
#include "tests/policy_text.hpp"

using namespace ibqos;
using ibqos::test::slurp;

namespace {

const std::string samples = IBQOS_SOURCE_ROOT "/samples/fabrics/";

struct Read {
    SourceFile source;
    Diagnostics diagnostics;
    Fabric fabric;
    explicit Read(std::string text, std::string name = "fabric")
        : source(std::move(name), std::move(text)), fabric(readTopology(source, diagnostics)) {}
};

uint32_t endpoint(const Fabric& f, const std::string& spec) {
    std::string error;
    uint32_t p = f.findEndpoint(spec, error);
    INFO(error);
    REQUIRE(p != NoPort);
    return p;
}

}  // namespace

TEST_CASE("an ibnetdiscover file gives nodes, GUIDs, LIDs, descriptions and links",
          "[compiler][topology]") {
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    REQUIRE_FALSE(r.diagnostics.hasErrors());
    const Fabric& f = r.fabric;
    CHECK(f.nodes.size() == 6);
    CHECK(f.endpoints().size() == 6);  // 4 linked CA ports and 2 switch ports 0
    uint32_t hca3 = endpoint(f, "0x100007");
    CHECK(f.nodeOf(hca3).description == "Hca3");
    CHECK(f.ports[hca3].lid == 5);
    CHECK(f.ports[hca3].rate == 3);  // 4xSDR = 10 Gb/s
    uint32_t peer = f.ports[hca3].peer;
    REQUIRE(peer != NoPort);
    CHECK(f.nodeOf(peer).description == "Switch1");
    CHECK(f.ports[peer].number == 2);
    CHECK(f.ports[peer].peer == hca3);
    uint32_t sw2 = endpoint(f, "Switch2/P0");
    CHECK(f.ports[sw2].guid == 0x200001);
    CHECK(f.ports[sw2].lid == 3);
    CHECK(endpoint(f, "3") == sw2);
    CHECK(endpoint(f, "Switch2/P5") == sw2);  // a switch's ports stand for its port 0
    CHECK(f.assumedVlCaps);
}

TEST_CASE("an ibsim net file gets the GUIDs ibsim gives its nodes", "[compiler][topology]") {
    Read net(slurp(samples + "two-switch.net"));
    Read disc(slurp(samples + "two-switch.ibnetdiscover"));
    REQUIRE_FALSE(net.diagnostics.hasErrors());
    for (const char* name : {"Hca1", "Hca2", "Hca3", "Hca4", "Switch1", "Switch2"}) {
        auto a = net.fabric.nodesByDescription(name);
        auto b = disc.fabric.nodesByDescription(name);
        REQUIRE(a.size() == 1);
        REQUIRE(b.size() == 1);
        CHECK(net.fabric.nodes[a[0]].guid == disc.fabric.nodes[b[0]].guid);
    }
    // Same links in both readings.
    for (uint32_t p = 0; p < disc.fabric.ports.size(); ++p) {
        uint32_t q = disc.fabric.ports[p].peer;
        if (q == NoPort) continue;
        std::string error;
        uint32_t np =
            net.fabric.portOf(net.fabric.nodesByDescription(disc.fabric.nodeOf(p).description)[0],
                              disc.fabric.ports[p].number);
        REQUIRE(net.fabric.ports[np].peer != NoPort);
        CHECK(net.fabric.portName(net.fabric.ports[np].peer) == disc.fabric.portName(q));
    }
}

namespace {

// Every field the topology format carries, node by node and port by port, whatever order the
// nodes come in (ibnetdiscover -g lists a chassis's switches first): nodes are matched by GUID,
// ports by their node's GUID and number, links by the peer's.
void checkSameTopology(const Fabric& a, const Fabric& b) {
    REQUIRE(a.nodes.size() == b.nodes.size());
    REQUIRE(a.ports.size() == b.ports.size());
    std::map<uint64_t, uint32_t> nodeOf;
    for (uint32_t n = 0; n < b.nodes.size(); ++n) nodeOf[b.nodes[n].guid] = n;
    REQUIRE(nodeOf.size() == b.nodes.size());
    auto portInB = [&](uint32_t p) {
        if (p == NoPort) return NoPort;
        return b.portOf(nodeOf.at(a.nodes[a.ports[p].node].guid), a.ports[p].number);
    };
    for (size_t n = 0; n < a.nodes.size(); ++n) {
        INFO("node " << a.nodes[n].description);
        REQUIRE(nodeOf.count(a.nodes[n].guid));
        const FabricNode& other = b.nodes[nodeOf.at(a.nodes[n].guid)];
        CHECK(a.nodes[n].type == other.type);
        CHECK(a.nodes[n].description == other.description);
        CHECK(a.nodes[n].portCount == other.portCount);
        CHECK(a.nodes[n].enhancedPort0 == other.enhancedPort0);
    }
    for (uint32_t p = 0; p < a.ports.size(); ++p) {
        INFO("port " << a.portName(p) << " (" << unsigned{a.ports[p].number} << ")");
        const uint32_t q = portInB(p);
        REQUIRE(q != NoPort);
        CHECK(b.ports[q].peer == portInB(a.ports[p].peer));
        CHECK(a.ports[p].rate == b.ports[q].rate);
        // A port without a link is not in the file: only linked ports keep their addresses.
        if (a.ports[p].peer == NoPort && !a.isEndpoint(p)) continue;
        CHECK(a.ports[p].guid == b.ports[q].guid);
        CHECK(a.ports[p].lid == b.ports[q].lid);
        CHECK(a.ports[p].lmc == b.ports[q].lmc);
    }
}

}  // namespace

TEST_CASE("a fabric written as ibnetdiscover output reads back the same", "[compiler][topology]") {
    for (const char* sample :
         {"rack-row.ibnetdiscover", "qos-lab.ibnetdiscover", "three-switch.ibnetdiscover"}) {
        INFO(sample);
        Read original(slurp(samples + sample), sample);
        REQUIRE_FALSE(original.diagnostics.hasErrors());
        Read again(writeTopology(original.fabric));
        REQUIRE_FALSE(again.diagnostics.hasErrors());
        checkSameTopology(original.fabric, again.fabric);
    }

    // A fabric built as a model: a router, an LMC, an enhanced port 0, a port without a link.
    Fabric built;
    built.source = "built";
    uint32_t sw = built.addNode(NodeType::Switch, 0x200000, "spine-a", 4);
    uint32_t ca = built.addNode(NodeType::Ca, 0x100000, "node-01 HCA-1", 2);
    uint32_t rt = built.addNode(NodeType::Router, 0x300000, "gw", 1);
    built.nodes[sw].enhancedPort0 = true;
    for (unsigned n = 0; n <= 4; ++n) built.ports[built.portOf(sw, n)].lid = 1;
    built.ports[built.portOf(ca, 1)].lid = 4;
    built.ports[built.portOf(ca, 1)].lmc = 2;
    built.ports[built.portOf(rt, 1)].lid = 8;
    built.link(built.portOf(sw, 1), built.portOf(ca, 1), rateForLink(4, "EDR"));
    built.link(built.portOf(sw, 3), built.portOf(rt, 1), rateForLink(1, "QDR"));
    built.index();
    Read again(writeTopology(built));
    REQUIRE_FALSE(again.diagnostics.hasErrors());
    checkSameTopology(built, again.fabric);
    CHECK(endpoint(again.fabric, "7") == endpoint(again.fabric, "node-01 HCA-1/P1"));
}

TEST_CASE("ibnetdiscover -g output reads as the plain output of the same fabric",
          "[compiler][topology]") {
    Read plain(slurp(samples + "three-switch.ibnetdiscover"));
    Read grouped(slurp(samples + "three-switch-grouped.ibnetdiscover"));
    REQUIRE_FALSE(plain.diagnostics.hasErrors());
    CHECK(grouped.diagnostics.all().empty());
    checkSameTopology(plain.fabric, grouped.fabric);
}

TEST_CASE("output ibqos does not read as a topology is named in one error, with no fabric",
          "[compiler][topology]") {
    const std::pair<const char*, const char*> others[] = {
        {"CA     7  1 0x0000000000100005 1x SDR - SW     5  1 0x0000000000200002 ( 'c3' - 'L2' )\n"
         "SW     5  8 0x0000000000200002 4x SDR                                    'L2'\n",
         "'ibnetdiscover -p' output"},
        {"Ca\t : 0x0000000000100009 ports 1 devid 0x0 vendid 0x0 \"sm HCA-1\"\n"
         "Switch\t: 0x0000000000200002 ports 8 \"Leaf2\" base port 0 lid 5 lmc 0\n",
         "'ibnetdiscover -l'"},
        {"# generated\n0x0002c903000a5fd3 \"node-01 HCA-1\"\n0x0002c903000a5fd4 \"node-02\"\n",
         "a node name map"},
    };
    for (const auto& [text, name] : others) {
        INFO(name);
        Read r(text);
        REQUIRE(r.diagnostics.errorCount() == 1);
        CHECK_THAT(r.diagnostics.all().front().message,
                   Catch::StartsWith(std::string("this is ") + name) &&
                       Catch::Contains("plain 'ibnetdiscover'"));
        CHECK(r.fabric.nodes.empty());
    }
}

TEST_CASE("a topology that lies is reported where it lies", "[compiler][topology]") {
    Read r(
        "Switch 4 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n\n"
        "Hca 1 \"H1\"\n[1] \"S1\"[2]\n\n"  // H1 says S1[2], S1[2] is H2
        "Hca 1 \"H2\"\n[1] \"S1\"[2]\n\n"
        "Hca 1 \"H3\"\n[1] \"S9\"[1]\n[2] \"S1\"[3]\n\n"
        "Switch 300 \"big\"\n"
        "Hca 1 \"H1\"\n"
        "frobnicate\n");
    r.diagnostics.sort();
    std::vector<uint32_t> lines;
    for (const Diagnostic& d : r.diagnostics.all()) {
        if (d.severity == Severity::Error) lines.push_back(d.location.line);
    }
    CHECK(lines == std::vector<uint32_t>{6, 12, 13, 15, 16, 17});
}

TEST_CASE("partitions.conf: members, membership, flags, Default", "[compiler][partitions]") {
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    Fabric& f = r.fabric;
    f.smPort = endpoint(f, "0x100001");
    SourceFile conf("partitions.conf",
                    "Default=0x7fff, ipoib, sl=0, mtu=5, rate=7 : ALL=full ;\n"
                    "storage = 0x8010 , ipoib, sl=2, defmember=full :\n"
                    "    0x100001, 0x100004=limited,   # two hosts\n"
                    "    SELF ;\n"
                    "switches=0x20 : ALL_SWITCHES ;\n"
                    "empty=0x30 : NONE ;\n"
                    "mc=0x40, ipoib : ALL_CAS=full, mgid=ff12:401b::1, rate=3 ;\n");
    Diagnostics d;
    readPartitions(&conf, f, d);
    CHECK_FALSE(d.hasErrors());
    CHECK(f.partitionByName("empty") == nullptr);  // no member: OpenSM drops it
    const Partition* def = f.partitionByPkey(0x7fff);
    REQUIRE(def);
    CHECK(def->ipoib);
    CHECK(def->fullMembers() == f.endpoints().size());
    const Partition* storage = f.partitionByName("storage");
    REQUIRE(storage);
    CHECK(storage->pkey == 0x10);
    CHECK(storage->sl == 2);
    CHECK(storage->members.size() == 2);
    CHECK(storage->fullMembers() == 1);  // 0x100001 full (SELF too), 0x100004 limited
    const Partition* switches = f.partitionByPkey(0x20);
    REQUIRE(switches);
    CHECK(switches->members.size() == 2);
    CHECK(switches->fullMembers() == 0);
    const Partition* mc = f.partitionByName("mc");
    REQUIRE(mc);
    CHECK(mc->members.size() == 4);
}

TEST_CASE("partitions.conf with an error, or with no partition, gives Default alone, all full",
          "[compiler][partitions]") {
    // osm_prtn_make_partitions(): a parse error (or no statement at all) makes OpenSM retry
    // with its default configuration.
    for (const char* text : {"a=0x10 : ALL_CAS=full ;\nbad=0x30 : 0xzz ;\n", "# nothing\n\n"}) {
        Read r(slurp(samples + "two-switch.ibnetdiscover"));
        r.fabric.smPort = endpoint(r.fabric, "0x100001");
        SourceFile conf("partitions.conf", text);
        Diagnostics d;
        readPartitions(&conf, r.fabric, d);
        REQUIRE(r.fabric.partitions.size() == 1);
        CHECK(r.fabric.partitions[0].pkey == 0x7fff);
        CHECK(r.fabric.partitions[0].fullMembers() == r.fabric.endpoints().size());
        CHECK(d.all().back().severity == Severity::Note);
    }
}

TEST_CASE("partitions.conf keywords and flags may be abbreviated, as OpenSM reads them",
          "[compiler][partitions]") {
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    SourceFile conf("partitions.conf",
                    "a=0x10 : AL=f ;\n"          // ALL, full
                    "b=0x20 : ALL_S, N ;\n"      // ALL_SWITCHES, NONE
                    "c=0x30 : 0x100004=b ;\n");  // both: a full member
    Diagnostics d;
    readPartitions(&conf, r.fabric, d);
    REQUIRE_FALSE(d.hasErrors());
    const Partition* a = r.fabric.partitionByName("a");
    REQUIRE(a);
    CHECK(a->fullMembers() == r.fabric.endpoints().size());
    const Partition* b = r.fabric.partitionByName("b");
    REQUIRE(b);
    CHECK(b->members.size() == 2);  // the two switches
    CHECK(b->fullMembers() == 0);
    const Partition* c = r.fabric.partitionByName("c");
    REQUIRE(c);
    CHECK(c->fullMembers() == 1);
}

TEST_CASE("a port listed twice in a partition keeps the membership written last",
          "[compiler][partitions]") {
    // osm_prtn_add_port() removes the port from the partition's full and limited tables before
    // adding it to one: the PKey the SA answers depends on it.
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    SourceFile conf("partitions.conf",
                    "a=0x10 : ALL_CAS=full, 0x100004=limited ;\n"
                    "b=0x20 : 0x100004=limited, ALL_CAS=full ;\n"
                    "a=0x10 : 0x100007=limited ;\n");
    Diagnostics d;
    readPartitions(&conf, r.fabric, d);
    REQUIRE_FALSE(d.hasErrors());
    auto full = [&](const char* partition, const char* port) {
        const Partition* p = r.fabric.partitionByName(partition);
        REQUIRE(p);
        uint32_t e = endpoint(r.fabric, port);
        for (const PartitionMember& m : p->members) {
            if (m.port == e) return m.full;
        }
        FAIL("not a member");
        return false;
    };
    CHECK_FALSE(full("a", "0x100004"));
    CHECK_FALSE(full("a", "0x100007"));  // a later statement for the same PKey
    CHECK(full("a", "0x100001"));
    CHECK(full("b", "0x100004"));
}

TEST_CASE("groups bind by GUID range, name, partition, PKey, node type and SELF",
          "[compiler][bind]") {
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    Fabric& f = r.fabric;
    f.smPort = endpoint(f, "Hca1/P1");
    SourceFile conf("p.conf", "fast=0x10 : 0x100004=full, 0x10000a=full ;\n");
    Diagnostics pd;
    readPartitions(&conf, f, pd);
    test::Compiled c(R"(
port-groups
    port-group
        name: by-guid
        port-guid: 0x100000-0x100005, 0x999
    end-port-group
    port-group
        name: by-name
        port-name: Hca3/P1, Switch2/P3, nobody/P1
    end-port-group
    port-group
        name: by-partition
        partition: fast, slow
    end-port-group
    port-group
        name: by-pkey
        pkey: 0x8010
    end-port-group
    port-group
        name: by-type
        node-type: switch, self
    end-port-group
end-port-groups
qos-ulps
    default : 0
end-qos-ulps
)");
    REQUIRE(c.codes().empty());
    Diagnostics d;
    BoundPolicy b = bindPolicy(c.policy, f, d);
    auto names = [&](size_t g) {
        std::vector<std::string> out;
        for (uint32_t p : b.groups[g].all(f)) out.push_back(f.portName(p));
        std::sort(out.begin(), out.end());
        return out;
    };
    CHECK(names(0) == std::vector<std::string>{"Hca1/P1", "Hca2/P1"});
    CHECK(names(1) == std::vector<std::string>{"Hca3/P1", "Switch2/P0"});
    CHECK(names(2) == std::vector<std::string>{"Hca2/P1", "Hca4/P1"});
    CHECK(names(3) == names(2));
    CHECK(names(4) == std::vector<std::string>{"Hca1/P1", "Switch1/P0", "Switch2/P0"});
    CHECK(b.groups[4].contains(f, endpoint(f, "Switch1/P0")));
    CHECK_FALSE(b.groups[4].contains(f, endpoint(f, "Hca2/P1")));
    std::vector<std::string> codes;
    for (const Diagnostic& x : d.all()) codes.push_back(x.code);
    CHECK(codes == std::vector<std::string>{"unknown-guid", "unknown-node", "unknown-partition"});
}

TEST_CASE("an IPoIB line needs a partition with two full members", "[compiler][bind]") {
    Read r(slurp(samples + "two-switch.ibnetdiscover"));
    SourceFile conf("p.conf", "lonely=0x22, ipoib : 0x100001=full ;\n");
    Diagnostics pd;
    readPartitions(&conf, r.fabric, pd);
    test::Compiled c(
        "qos-ulps\n default : 0\n ipoib : 1\n ipoib, pkey 0x22 : 2\n ipoib, pkey 0x23 : "
        "3\nend-qos-ulps\n");
    REQUIRE(c.codes().empty());
    Diagnostics d;
    bindPolicy(c.policy, r.fabric, d);
    std::vector<uint32_t> lines;
    for (const Diagnostic& x : d.all()) {
        CHECK(x.code == "ipoib-partition");
        lines.push_back(x.location.line);
    }
    // Default (0x7fff) has every port limited but the SM's when a partitions file exists: no SM
    // here.
    CHECK(lines == std::vector<uint32_t>{3, 4, 5});
}

TEST_CASE("a port-name's port number is judged as OpenSM reads the name", "[compiler][bind]") {
    Fabric f;
    f.source = "test fabric";
    f.addNode(NodeType::Switch, 0x200000, "Leaf R2", 8);
    f.addNode(NodeType::Switch, 0x200010, "LeafR3", 8);
    f.index();
    test::Compiled c(R"(
port-groups
    port-group
        name: kept
        port-name: Leaf R2/P40, "Leaf R2/P3"
    end-port-group
    port-group
        name: dropped
        port-name: Leaf R3/P40
    end-port-group
end-port-groups
qos-ulps
    default : 0
end-qos-ulps
)");
    // Both unquoted names lose their blank, as in OpenSM: a warning gives the quoted form.
    CHECK(c.codes().empty());
    CHECK(c.codes(Severity::Warning) ==
          std::vector<std::string>{"unused-group", "name-blanks", "unused-group", "name-blanks"});
    Diagnostics d;
    BoundPolicy b = bindPolicy(c.policy, f, d);
    d.sort();
    REQUIRE(d.all().size() == 2);
    // "LeafR2/P40": no such node, so OpenSM lets the file through and the name selects nothing;
    // the node the quoted form would select is named.
    CHECK(d.all()[0].code == "unknown-node");
    CHECK(d.all()[0].severity == Severity::Warning);
    CHECK_THAT(d.all()[0].message, Catch::Contains("quoted, \"Leaf R2/P40\" selects the node"));
    // OpenSM reads "LeafR3/P40", a switch without port 40: it drops the policy.
    CHECK(d.all()[1].code == "port-name");
    CHECK(d.all()[1].severity == Severity::Error);
    CHECK(d.all()[1].openSmRejects);
    CHECK_THAT(d.all()[1].message, Catch::Contains("'LeafR3' has no port 40"));
    REQUIRE(b.groups[0].all(f).size() == 1);
    CHECK(f.portName(b.groups[0].all(f)[0]) == "Leaf R2/P0");
}
