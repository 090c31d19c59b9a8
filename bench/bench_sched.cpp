// SPDX-License-Identifier: MIT
// Benchmark: the simulated scheduler's time to compute the rates of every leaf of a tree.
//   ibqos-bench-sched [--leaves N] [--nodes N] [--repeat N] [--json]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "bench/bench_util.hpp"
#include "compiler/compile_policy.hpp"
#include "host-sched/sched/sched_simulated.hpp"

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
    unsigned leaves = 1000, nodes = 10, repeat = 1000;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&] {
            return static_cast<unsigned>(
                std::strtoul(bench::optionValue(argc, argv, i), nullptr, 10));
        };
        if (a == "--leaves")
            leaves = next();
        else if (a == "--nodes")
            nodes = next();
        else if (a == "--repeat")
            repeat = std::max(1u, next());
        else if (a == "--json")
            json = true;
        else {
            std::fprintf(
                stderr,
                "usage: ibqos-bench-sched [--leaves N] [--nodes N] [--repeat N] [--json]\n");
            return a == "--help" ? 0 : 2;
        }
    }
    SourceFile source("bench.conf", generate(leaves, nodes));
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    if (diagnostics.hasErrors()) {
        std::fprintf(stderr, "generated policy has errors: %s\n",
                     diagnostics.all()[0].message.c_str());
        return 1;
    }
    host::HostPlan plan = host::HostPlan::fromPolicy(policy.hostSched);

    // Half the leaves ask for a random rate, the others always have traffic.
    std::mt19937 rng(7);
    std::vector<std::optional<double>> demand(plan.elements().size());
    for (size_t i = 0; i < demand.size(); ++i) {
        if (plan.elements()[i].leaf && rng() % 2) demand[i] = static_cast<double>(rng() % 2000);
    }
    std::vector<double> times;
    double checksum = 0;
    for (unsigned r = 0; r < repeat; ++r) {
        auto start = std::chrono::steady_clock::now();
        std::vector<double> rates = host::simulateRates(plan, 400000, demand);
        times.push_back(bench::secondsSince(start) * 1e6);
        checksum += rates.back();
    }
    if (checksum < 0) std::printf("impossible\n");
    bench::Report report(json);
    report.header("simulated scheduler: long-run rates of every leaf (one core)");
    std::vector<std::pair<std::string, std::string>> params{{"leaves", std::to_string(leaves)},
                                                            {"nodes", std::to_string(nodes)},
                                                            {"repeat", std::to_string(repeat)}};
    report.add({"sched_rates_median", bench::percentile(times, 0.5), "us", params});
    report.add({"sched_rates_p99", bench::percentile(times, 0.99), "us", params});
    return 0;
}
