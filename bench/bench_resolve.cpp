// SPDX-License-Identifier: MIT
// Benchmark: resolve latency, SA ib::PathRecord query plus host-plan lookup, against a live SA.
// Run it on a fabric: bench/run_bench_resolve.py starts OpenSM on ibsim and runs it there.
//   ibqos-bench-resolve --policy POLICY --dst LID [--count N] [--service-id N] [--qos-class N]
//                       [--hca NAME] [--port N] [--json] [--benchmark_repetitions=N ...]
// Figures: resolve (time a query, us) and sa_queries_per_s.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/harness.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/plan/host_plan.hpp"
#include "host-sched/sa-client/sa_client.hpp"
#include "host-sched/sa-client/umad_transport.hpp"

using namespace ibqos;

int main(int argc, char** argv) {
    std::string policyPath, hca;
    unsigned count = 1000;
    int port = 0;
    host::SaQuery query;
    bench::Program program("ibqos-bench-resolve",
                           "ibqos-agent resolve: SA PathRecord query + host plan, one at a time.");
    CLI::App& o = program.options();
    o.add_option("--policy", policyPath, "the policy with the host-sched section")->required();
    o.add_option("--dst", query.dlid, "the destination LID")->required();
    o.add_option("--count", count, "queries (default 1000)")->check(CLI::PositiveNumber);
    o.add_option("--service-id", query.serviceId, "the request's ServiceID");
    o.add_option("--qos-class", query.qosClass, "its QoS class");
    o.add_option("--hca", hca, "local HCA (default: the first)");
    o.add_option("--port", port, "local port (default: the first active)");
    if (auto status = program.parse(argc, argv)) return *status;

    std::string error;
    auto plan = host::loadHostPlan(policyPath, error);
    if (!plan) {
        std::fprintf(stderr, "ibqos-bench-resolve: %s\n", error.c_str());
        return 1;
    }
    auto transport = host::UmadTransport::open(hca, port, error);
    if (!transport) {
        std::fprintf(stderr, "ibqos-bench-resolve: %s\n", error.c_str());
        return 2;
    }
    host::SaClient client(*transport, host::RetryPolicy{}, host::randomTransactionIdSeed());
    bench::counterUnit("sa_queries_per_s", "1/s");
    benchmark::RegisterBenchmark(
        "resolve",
        [&](benchmark::State& state) {
            unsigned retried = 0, leaves = 0;
            for (auto _ : state) {
                host::PathResult r = client.query(query);
                if (r.status != host::PathStatus::Found) {
                    state.SkipWithError(("query failed: " + r.message).c_str());
                    break;
                }
                leaves += plan->leafForSl(r.record.sl).has_value();
                retried += r.attempts > 1;
            }
            state.counters["sa_queries_per_s"] = benchmark::Counter(
                static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
            bench::setParams(state, {{"retried", retried}, {"with_leaf", leaves}});
        })
        ->Iterations(count)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    return program.run();
}
