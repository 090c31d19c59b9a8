// SPDX-License-Identifier: MIT
// Benchmark: the OpenSM plugin's work per heavy sweep on a synthetic 50,667-endpoint subnet model
// (bind, tables, the plain policy for OpenSM's SA, class options, per-port overrides), and the
// QoS MADs OpenSM sends for it with and without the plugin's per-port hooks.
//   ibqos-bench-sweep [--json]
#include <cstring>
#include <string>

#include "bench/bench_util.hpp"
#include "bench/synthetic.hpp"
#include "compiler/compile_policy.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "osm-plugin/qos_mads.hpp"
#include "osm-plugin/sweep.hpp"

using namespace ibqos;

int main(int argc, char** argv) {
    bool json = argc > 1 && !std::strcmp(argv[1], "--json");
    if (argc > 1 && !json) {
        std::fprintf(stderr, "usage: ibqos-bench-sweep [--json]\n");
        return std::strcmp(argv[1], "--help") ? 2 : 0;
    }
    bench::FatTree tree;
    SourceFile topology("fat-tree.topo", tree.ibnetdiscover());
    Diagnostics d;
    Fabric fabric = readTopology(topology, d);
    readPartitions(nullptr, fabric, d);
    // The policy: 200 host groups with rules, and scopes that give some hosts' ports their own
    // tables (what needs the hooks).
    std::string text = "port-groups\n";
    char buf[256];
    unsigned slice = tree.hosts / 200;
    for (unsigned g = 0; g < 200; ++g) {
        std::snprintf(
            buf, sizeof buf,
            "  port-group\n    name: g%u\n    port-guid: 0x%llx-0x%llx\n  end-port-group\n", g,
            (unsigned long long)tree.hostPortGuid(g * slice),
            (unsigned long long)tree.hostPortGuid(g * slice + slice - 1));
        text += buf;
    }
    text +=
        "end-port-groups\nqos-levels\n  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n"
        "  qos-level\n    name: fast\n    sl: 1\n  "
        "end-qos-level\nend-qos-levels\nqos-match-rules\n";
    for (unsigned r = 0; r < 1000; ++r) {
        std::snprintf(
            buf, sizeof buf,
            "  qos-match-rule\n    source: g%u\n    destination: g%u\n    service-id: 0x%x-0x%x\n"
            "    qos-level-name: fast\n  end-qos-match-rule\n",
            r % 200, (r * 7) % 200, 0x10000 + r * 16, 0x10000 + r * 16 + 15);
        text += buf;
    }
    text +=
        "end-qos-match-rules\nqos-setup\n  vlarb-tables\n    vlarb-scope\n      group: g0, g1, g2\n"
        "      vlarb-high: 0:64\n      bandwidth: 1:70%, 2:30%\n    end-vlarb-scope\n  "
        "end-vlarb-tables\nend-qos-setup\n";
    SourceFile policyText("policy.conf", text);
    Policy policy = loadPolicy(policyText, d);
    if (d.hasErrors()) {
        std::fprintf(stderr, "the generated inputs have errors\n");
        return 1;
    }

    OpenSmConf conf;
    bench::resetPeakRss();
    uint64_t baseline = bench::peakRss();
    // A few rounds; the median is what a sweep costs.
    std::vector<double> times;
    std::unique_ptr<osm::CompiledSweep> sweep;
    for (int round = 0; round < 5; ++round) {
        Diagnostics sweepDiagnostics;
        auto start = std::chrono::steady_clock::now();
        sweep = osm::CompiledSweep::compile(policy, fabric, conf, sweepDiagnostics);
        times.push_back(bench::secondsSince(start));
    }
    std::sort(times.begin(), times.end());
    uint64_t peak = bench::peakRss();
    osm::QosMadCount stockOptimized =
        osm::countFullProgramming(sweep->fabric(), sweep->tables(), false, true);
    osm::QosMadCount hooked =
        osm::countFullProgramming(sweep->fabric(), sweep->tables(), sweep->needsSl2VlHook(), true);
    osm::QosMadCount plain =
        osm::countFullProgramming(sweep->fabric(), sweep->tables(), false, false);

    bench::Report report(json);
    report.header("plugin work per heavy sweep, synthetic subnet model (one core)");
    std::vector<std::pair<std::string, std::string>> params{
        {"endpoints", std::to_string(sweep->fabric().endpoints().size())},
        {"ports_with_tables", std::to_string(sweep->tables().ports.size())},
        {"rules", std::to_string(policy.rules.size())}};
    report.add({"sweep_compile_median", times[times.size() / 2] * 1000, "ms", params});
    report.add({"generated_policy_size", sweep->policyText().size() / 1e3, "kB", params});
    report.add(
        {"ports_through_hooks", static_cast<double>(sweep->overriddenPorts()), "ports", params});
    report.add({"peak_rss_added", (peak - std::min(peak, baseline)) / 1e6, "MB", params});
    report.add({"qos_mads_stock_optimized_sl2vl", static_cast<double>(stockOptimized.total()),
                "MADs", params});
    report.add({"qos_mads_with_plugin_hooks", static_cast<double>(hooked.total()), "MADs", params});
    report.add({"qos_mads_switches_without_optimized_sl2vl", static_cast<double>(plain.total()),
                "MADs", params});
    return 0;
}
