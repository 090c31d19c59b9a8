// SPDX-License-Identifier: MIT
// Benchmark: resolve latency, SA ib::PathRecord query plus host-plan lookup, against a live SA.
// Run it on a fabric: bench/run_bench_resolve.py starts OpenSM on ibsim and runs it there.
//   ibqos-bench-resolve --policy POLICY --dst LID [--count N] [--service-id N] [--qos-class N]
//                       [--hca NAME] [--port N] [--json]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_util.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/plan/host_plan.hpp"
#include "host-sched/sa-client/sa_client.hpp"
#include "host-sched/sa-client/umad_transport.hpp"

using namespace ibqos;

int main(int argc, char** argv) {
    std::string policyPath, hca;
    unsigned count = 1000;
    int port = 0;
    bool json = false;
    host::SaQuery query;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&] { return std::string(bench::optionValue(argc, argv, i)); };
        if (a == "--policy")
            policyPath = next();
        else if (a == "--dst")
            query.dlid = static_cast<uint16_t>(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--count")
            count = static_cast<unsigned>(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--service-id")
            query.serviceId = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--qos-class")
            query.qosClass = static_cast<uint16_t>(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--hca")
            hca = next();
        else if (a == "--port")
            port = std::atoi(next().c_str());
        else if (a == "--json")
            json = true;
        else {
            std::fprintf(
                stderr,
                "usage: ibqos-bench-resolve --policy POLICY --dst LID [--count N] [--service-id N] "
                "[--qos-class N] [--hca NAME] [--port N] [--json]\n");
            return a == "--help" ? 0 : 2;
        }
    }
    if (policyPath.empty() || query.dlid == 0 || count == 0) {
        std::fprintf(stderr, "ibqos-bench-resolve: --policy and --dst are required\n");
        return 2;
    }
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
    std::vector<double> times;
    unsigned retried = 0, leaves = 0;
    auto allStart = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < count; ++i) {
        auto start = std::chrono::steady_clock::now();
        host::PathResult r = client.query(query);
        if (r.status != host::PathStatus::Found) {
            std::fprintf(stderr, "ibqos-bench-resolve: query %u: %s\n", i, r.message.c_str());
            return 2;
        }
        leaves += plan->leafForSl(r.record.sl).has_value();
        times.push_back(bench::secondsSince(start) * 1e6);
        retried += r.attempts > 1;
    }
    double allSeconds = bench::secondsSince(allStart);
    bench::Report report(json);
    report.header("ibqos-agent resolve: SA ib::PathRecord query + host plan, one at a time");
    std::vector<std::pair<std::string, std::string>> params{{"count", std::to_string(count)},
                                                            {"retried", std::to_string(retried)},
                                                            {"with_leaf", std::to_string(leaves)}};
    report.add({"resolve_median", bench::percentile(times, 0.5), "us", params});
    report.add({"resolve_p99", bench::percentile(times, 0.99), "us", params});
    report.add({"resolve_max", bench::percentile(times, 1.0), "us", params});
    report.add({"sa_queries_per_s", count / allSeconds, "1/s", params});
    return 0;
}
