// SPDX-License-Identifier: MIT
// Benchmark: the OpenSM plugin's work per heavy sweep on a synthetic 50,667-endpoint subnet model
// (bind, tables, the plain policy for OpenSM's SA, class options, per-port overrides), and the
// QoS MADs OpenSM sends for it with and without the plugin's per-port hooks.
//   ibqos-bench-sweep [--json] [--benchmark_... flags]
#include <cstring>
#include <memory>
#include <string>

#include "bench/harness.hpp"
#include "bench/synthetic.hpp"
#include "fabric/partitions.hpp"
#include "osm-plugin/qos_mads.hpp"
#include "osm-plugin/sweep.hpp"
#include "policy-space/load_policy.hpp"

using namespace ibqos;

int main(int argc, char** argv) {
    bench::Program program("ibqos-bench-sweep",
                           "The plugin's work per heavy sweep, synthetic subnet model (one core).");
    if (auto status = program.parse(argc, argv)) return *status;
    bench::FatTree tree;
    Diagnostics d;
    Fabric fabric = tree.fabric();
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
    auto shared = std::make_shared<const Policy>(loadPolicy(policyText, d));
    const Policy& policy = *shared;
    if (d.hasErrors()) {
        std::fprintf(stderr, "the generated inputs have errors\n");
        return 1;
    }

    OpenSmConf conf;
    bench::counterUnit("generated_policy_size", "kB", 1e-3);
    bench::counterUnit("ports_through_hooks", "ports");
    bench::counterUnit("peak_rss_added", "MB", 1e-6);
    for (const char* name : {"qos_mads_stock_optimized_sl2vl", "qos_mads_with_plugin_hooks",
                             "qos_mads_switches_without_optimized_sl2vl"})
        bench::counterUnit(name, "MADs");
    // The benchmark's time is one sweep's compilation. Memory is that of the process's first
    // one: later ones reuse the heap it left.
    double added = -1;
    benchmark::RegisterBenchmark(
        "sweep_compile",
        [&](benchmark::State& state) {
            std::unique_ptr<osm::CompiledSweep> sweep;
            for (auto _ : state) {
                bench::resetPeakRss();
                const double baseline = static_cast<double>(bench::peakRss());
                Diagnostics sweepDiagnostics;
                sweep = osm::CompiledSweep::compile(shared, fabric, conf, sweepDiagnostics);
                if (added < 0) added = static_cast<double>(bench::peakRss()) - baseline;
            }
            auto mads = [&](bool hooks, bool optimized) {
                return static_cast<double>(
                    osm::countFullProgramming(sweep->fabric(), sweep->tables(), hooks, optimized)
                        .total());
            };
            state.counters["generated_policy_size"] =
                static_cast<double>(sweep->policyText().size());
            state.counters["ports_through_hooks"] = static_cast<double>(sweep->overriddenPorts());
            state.counters["peak_rss_added"] = added;
            state.counters["qos_mads_stock_optimized_sl2vl"] = mads(false, true);
            state.counters["qos_mads_with_plugin_hooks"] = mads(sweep->needsSl2VlHook(), true);
            state.counters["qos_mads_switches_without_optimized_sl2vl"] = mads(false, false);
            bench::setParams(state, {{"endpoints", sweep->fabric().endpoints().size()},
                                     {"ports_with_tables", sweep->tables().ports.size()},
                                     {"rules", policy.rules.size()}});
        })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    return program.run();
}
