// SPDX-License-Identifier: MIT
// Benchmark: the simulated scheduler's time to compute the rates of every leaf of a tree.
//   ibqos-bench-sched [--leaves N] [--nodes N] [--json] [--benchmark_repetitions=N ...]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "bench/harness.hpp"
#include "host-sched/sched/sched_simulated.hpp"
#include "policy-space/load_policy.hpp"

using namespace ibqos;

namespace {

// A host-sched section of `nodes` nodes (a third of them capped) and `leaves` leaves spread
// over them (every seventh capped), weights 1..100.
std::string generate(unsigned leaves, unsigned nodes) {
    std::string text =
        "qos-levels\n qos-level\n  name: default\n  sl: 0\n "
        "end-qos-level\nend-qos-levels\nhost-sched\n";
    for (unsigned n = 0; n < nodes; ++n) {
        text += " sched-node\n  name: n" + std::to_string(n) +
                "\n  bw-share: " + std::to_string(1 + n % 100) + "\n";
        if (n % 3 == 0) text += "  max-avg-bw: " + std::to_string(20000 + n * 1000) + "\n";
        text += " end-sched-node\n";
    }
    for (unsigned l = 0; l < leaves; ++l) {
        text += " sched-leaf\n  name: l" + std::to_string(l) +
                "\n  bw-share: " + std::to_string(1 + l % 100) + "\n";
        if (nodes) text += "  parent: n" + std::to_string(l % nodes) + "\n";
        if (l % 7 == 0) text += "  max-avg-bw: " + std::to_string(100 + l) + "\n";
        if (l < 16) text += "  sl: " + std::to_string(l) + "\n";
        text += " end-sched-leaf\n";
    }
    return text + "end-host-sched\n";
}

}  // namespace

int main(int argc, char** argv) {
    unsigned leaves = 1000, nodes = 10;
    bench::Program program("ibqos-bench-sched",
                           "The simulated scheduler: long-run rates of every leaf (one core).");
    program.options().add_option("--leaves", leaves, "leaves of the tree (default 1000)");
    program.options().add_option("--nodes", nodes, "inner nodes (default 10)");
    if (auto status = program.parse(argc, argv)) return *status;

    SourceFile source("bench.conf", generate(leaves, nodes));
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    if (diagnostics.hasErrors()) {
        std::fprintf(stderr, "generated policy has errors: %s\n",
                     diagnostics.all()[0].message.c_str());
        return 1;
    }
    const host::HostPlan plan = host::HostPlan::fromPolicy(policy.hostSched);

    // Half the leaves ask for a random rate, the others always have traffic.
    std::mt19937 rng(7);
    std::vector<std::optional<double>> demand(plan.elements().size());
    for (size_t i = 0; i < demand.size(); ++i) {
        if (plan.elements()[i].leaf && rng() % 2) demand[i] = static_cast<double>(rng() % 2000);
    }
    benchmark::RegisterBenchmark("sched_rates",
                                 [&](benchmark::State& state) {
                                     for (auto _ : state) {
                                         auto rates = host::simulateRates(plan, 400000, demand);
                                         benchmark::DoNotOptimize(rates.data());
                                     }
                                 })
        ->Args({leaves, nodes})
        ->ArgNames({"leaves", "nodes"})
        ->Unit(benchmark::kMicrosecond);
    return program.run();
}
