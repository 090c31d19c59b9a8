// SPDX-License-Identifier: MIT
// Benchmark: topology read + bind + every port's tables for a 50,667-endpoint fat tree and a
// policy with 1,000 port groups and qos-setup scopes; and all of `ibqos check --topology` on the
// same fabric with a 10,000-rule policy.
//   ibqos-bench-compile [--groups N] [--check-rules N] [--json] [--benchmark_... flags]
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "bench/harness.hpp"
#include "bench/synthetic.hpp"
#include "compiler/bind.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/realizability.hpp"
#include "compiler/tables.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/reachability.hpp"

using namespace ibqos;

namespace {

// 1,000 groups of hosts (each a GUID range over its slice plus a few names), rules using
// them, and qos-setup scopes by group and across.
std::string policyFor(const bench::FatTree& tree, unsigned groups) {
    std::string p = "port-groups\n";
    char buf[256];
    unsigned slice = tree.hosts / groups;
    for (unsigned g = 0; g < groups; ++g) {
        unsigned first = g * slice;
        std::snprintf(buf, sizeof buf,
                      "  port-group\n    name: hosts-%u\n    port-guid: 0x%llx-0x%llx\n    "
                      "port-name: \"host%u HCA-1/P1\"\n  end-port-group\n",
                      g, (unsigned long long)tree.hostPortGuid(first),
                      (unsigned long long)tree.hostPortGuid(first + slice / 2), first + slice - 1);
        p += buf;
    }
    p += "  port-group\n    name: switches\n    node-type: SWITCH\n  end-port-group\n";
    p += "  port-group\n    name: spines\n";
    std::snprintf(buf, sizeof buf, "    port-guid: 0x%llx-0x%llx\n  end-port-group\n",
                  (unsigned long long)bench::FatTree::SpineGuid,
                  (unsigned long long)(bench::FatTree::SpineGuid + tree.spines - 1));
    p += buf;
    p += "end-port-groups\nqos-levels\n";
    for (unsigned l = 0; l < 8; ++l) {
        std::snprintf(buf, sizeof buf, "  qos-level\n    name: %s\n    sl: %u\n  end-qos-level\n",
                      l == 0 ? "default" : ("level" + std::to_string(l)).c_str(), l);
        p += buf;
    }
    p += "end-qos-levels\nqos-match-rules\n";
    for (unsigned r = 0; r < groups; ++r) {
        std::snprintf(buf, sizeof buf,
                      "  qos-match-rule\n    source: hosts-%u\n    destination: hosts-%u\n    "
                      "qos-class: %u\n    qos-level-name: level%u\n  end-qos-match-rule\n",
                      r, (r * 7 + 3) % groups, r % 64, 1 + r % 7);
        p += buf;
    }
    p += "end-qos-match-rules\nqos-setup\n  vlarb-tables\n";
    p += "    vlarb-scope\n      group: switches\n      vlarb-high: 0:64\n      bandwidth: 1:10%, "
         "2:20%, 3:30%, 4:20%, 5:10%, 6:5%, 7:5%\n      vl-high-limit: 4\n    end-vlarb-scope\n";
    for (unsigned g = 0; g < groups; g += 50) {
        std::snprintf(
            buf, sizeof buf,
            "    vlarb-scope\n      group: hosts-%u\n      vlarb-high: 0:64\n      vlarb-low: "
            "1:64, 2:128, 3:192, 4:64, 5:64, 6:64, 7:64\n    end-vlarb-scope\n",
            g);
        p += buf;
    }
    p += "    vlarb-scope\n      group: switches\n      across: spines\n      vlarb-high: 0:128\n  "
         "  end-vlarb-scope\n";
    p += "  end-vlarb-tables\n  sl2vl-tables\n";
    p += "    sl2vl-scope\n      group: switches\n      sl2vl-table: "
         "0,1,2,3,4,5,6,7,1,1,1,1,1,1,1,15\n    end-sl2vl-scope\n";
    p += "    sl2vl-scope\n      group: switches\n      across-from: spines\n      to: 1-24\n      "
         "sl2vl-table: 0,1,2,3,4,5,6,7,2,2,2,2,2,2,2,15\n    end-sl2vl-scope\n";
    for (unsigned g = 0; g < groups; g += 100) {
        std::snprintf(buf, sizeof buf,
                      "    sl2vl-scope\n      group: hosts-%u\n      sl2vl-table: "
                      "0,1,2,3,4,5,6,7,3,3,3,3,3,3,3,15\n    end-sl2vl-scope\n",
                      g);
        p += buf;
    }
    p += "  end-sl2vl-tables\nend-qos-setup\n";
    return p;
}

// What `ibqos check --topology` meets in a large site: 1,000 groups (a GUID range over a slice
// of the hosts plus one random host), 10,000 rules (a quarter source only, a quarter
// destination only, half both; half with a QoS-class range, half with a ServiceID range).
std::string checkPolicyFor(const bench::FatTree& tree, unsigned rules) {
    const unsigned groups = 1000, slice = tree.hosts / groups;
    std::mt19937_64 rng(1);
    std::string p = "port-groups\n";
    char buf[512];
    for (unsigned g = 0; g < groups; ++g) {
        std::snprintf(buf, sizeof buf,
                      "  port-group\n    name: g%u\n    port-guid: 0x%llx-0x%llx\n    port-guid: "
                      "0x%llx\n  end-port-group\n",
                      g, static_cast<unsigned long long>(tree.hostPortGuid(g * slice)),
                      static_cast<unsigned long long>(tree.hostPortGuid(g * slice + slice - 1)),
                      static_cast<unsigned long long>(
                          tree.hostPortGuid(static_cast<unsigned>(rng() % tree.hosts))));
        p += buf;
    }
    p +=
        "end-port-groups\nqos-levels\n  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n";
    for (int l = 1; l < 16; ++l) {
        std::snprintf(buf, sizeof buf, "  qos-level\n    name: l%d\n    sl: %d\n  end-qos-level\n",
                      l, l);
        p += buf;
    }
    p += "end-qos-levels\nqos-match-rules\n";
    for (unsigned r = 0; r < rules; ++r) {
        p += "  qos-match-rule\n";
        if (r % 4 != 1) p += "    source: g" + std::to_string(rng() % groups) + "\n";
        if (r % 4 != 0) p += "    destination: g" + std::to_string(rng() % groups) + "\n";
        if (r % 2) {
            unsigned q = static_cast<unsigned>(rng() % 4000);
            p += "    qos-class: " + std::to_string(q) + "-" + std::to_string(q + 5) + "\n";
        } else {
            unsigned long long sid = 0x10000 + (rng() % 100000) * 16;
            std::snprintf(buf, sizeof buf, "    service-id: 0x%llx-0x%llx\n", sid, sid + 15);
            p += buf;
        }
        p += "    qos-level-name: l" + std::to_string(1 + r % 15) + "\n  end-qos-match-rule\n";
    }
    return p + "end-qos-match-rules\n";
}

}  // namespace

int main(int argc, char** argv) {
    unsigned groups = 1000;
    bench::Program program("ibqos-bench-compile",
                           "topology read + bind + tables, synthetic fat tree (one core).");
    unsigned checkRules = 10000;
    program.options().add_option("--groups", groups, "port groups (default 1000)");
    program.options().add_option("--check-rules", checkRules,
                                 "rules of check_with_topology's policy (default 10000)");
    if (auto status = program.parse(argc, argv)) return *status;

    bench::FatTree tree;
    SourceFile topology("fat-tree.topo", writeTopology(tree.fabric()));
    SourceFile policyText("policy.conf", policyFor(tree, groups));
    Diagnostics compileDiagnostics;
    Policy policy = loadPolicy(policyText, compileDiagnostics);
    if (compileDiagnostics.hasErrors()) {
        std::fprintf(stderr, "the generated policy has errors: %s\n",
                     compileDiagnostics.all()[0].message.c_str());
        return 1;
    }
    for (const char* name : {"read_topology", "bind", "tables", "realizability_checks"})
        bench::counterUnit(name, "s");
    for (const char* name : {"distinct_sl2vl_tables", "distinct_vlarb_tables"})
        bench::counterUnit(name, "tables");
    bench::counterUnit("peak_rss", "MB", 1e-6);
    bench::counterUnit("peak_rss_added", "MB", 1e-6);

    // The benchmark's time is topology read + bind + tables; each stage is a counter. Memory
    // is that of the process's first compilation: later ones reuse the heap it left.
    double peak = -1, added = -1;
    benchmark::RegisterBenchmark(
        "read_bind_tables",
        [&](benchmark::State& state) {
            double read = 0, bind = 0, tables = 0, checks = 0;
            Json params;
            for (auto _ : state) {
                bench::resetPeakRss();
                const double baseline = static_cast<double>(bench::peakRss());
                Diagnostics d;
                auto t0 = std::chrono::steady_clock::now();
                Fabric fabric = readTopology(topology, d);
                readPartitions(nullptr, fabric, d);
                OpenSmConf conf;
                negotiateOperVls(fabric, conf.maxOpVls);
                const double readSeconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                auto compiled = FabricCompilation::compile(policy, std::move(fabric), conf, d);
                const FabricCompilation::Timings& t = compiled->timings();
                state.SetIterationTime(readSeconds + t.bind + t.tables);
                if (d.hasErrors()) {
                    state.SkipWithError(("error: " + d.all()[0].message).c_str());
                    return;
                }
                read += readSeconds;
                bind += t.bind;
                tables += t.tables;
                checks += t.realizability;
                if (peak < 0) {
                    peak = static_cast<double>(bench::peakRss());
                    added = peak - baseline;
                }
                size_t pairs = 0;
                for (const PortTables& pt : compiled->tables().ports) {
                    const FabricNode& n = compiled->fabric().nodeOf(pt.port);
                    pairs += n.type == NodeType::Switch ? n.portCount + 1u : 1u;
                }
                state.counters["distinct_sl2vl_tables"] =
                    static_cast<double>(compiled->tables().sl2vls.size());
                state.counters["distinct_vlarb_tables"] =
                    static_cast<double>(compiled->tables().vlarbs.size());
                params = {{"endpoints", compiled->fabric().endpoints().size()},
                          {"ports_with_tables", compiled->tables().ports.size()},
                          {"sl2vl_pairs", pairs},
                          {"groups", policy.groups.size()},
                          {"topology_mb", static_cast<double>(topology.text().size()) / 1e6}};
            }
            const double n = static_cast<double>(state.iterations());
            state.counters["read_topology"] = read / n;
            state.counters["bind"] = bind / n;
            state.counters["tables"] = tables / n;
            state.counters["realizability_checks"] = checks / n;
            state.counters["peak_rss"] = peak;
            state.counters["peak_rss_added"] = added;
            bench::setParams(state, params);
        })
        ->UseManualTime()
        ->Unit(benchmark::kSecond);

    // ibqos check POLICY --topology FILE: parse, read, bind, tables, realizability, and what no
    // request of the fabric reaches.
    SourceFile checkPolicy("check.conf", checkPolicyFor(tree, checkRules));
    benchmark::RegisterBenchmark(
        "check_with_topology",
        [&](benchmark::State& state) {
            size_t ports = 0;
            for (auto _ : state) {
                Diagnostics d;
                Policy p = loadPolicy(checkPolicy, d);
                Fabric fabric = readTopology(topology, d);
                readPartitions(nullptr, fabric, d);
                auto compiled = FabricCompilation::compile(p, std::move(fabric), OpenSmConf{}, d);
                if (!d.hasErrors()) checkReachability(compiled->bound(), d, analysisBudgetFor(p));
                if (d.hasErrors()) {
                    state.SkipWithError(("error: " + d.all()[0].message).c_str());
                    return;
                }
                ports = compiled->fabric().endpoints().size();
            }
            bench::setParams(state, {{"ports", ports}, {"rules", checkRules}, {"groups", 1000}});
        })
        ->UseRealTime()
        ->Unit(benchmark::kSecond);
    return program.run();
}
