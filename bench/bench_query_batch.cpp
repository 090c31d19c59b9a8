// SPDX-License-Identifier: MIT
// Benchmark: `ibqos query --batch` on the 50,667-endpoint fat tree of bench/synthetic.hpp, at 10
// to 10,000 rules (the random policy family, its groups spread over the hosts), at 100,000 and
// 1,000,000 requests (N and 10N). A request costs, in nanoseconds:
//   read   a line to a request (fields split, both ports found, numbers read);
//   match  the request to its answer (the classifier, then the SA's PKey and SL checks);
//   write  the answer to its JSON line;
//   batch  the three together as the command runs them, from a buffer in memory to /dev/null;
//   command  the whole `ibqos query --batch FILE` run as a process (its output to /dev/null),
//            less the same command with a one-line batch (reading the policy and the fabric
//            cancels out), a request.
// Times are CPU time (this thread's; the command's user and system time), so that other work
// on the machine does not count. Each phase's figure is the median of --runs runs. The command's
// peak resident memory is given at both sizes: a batch is streamed, so it does not grow with the
// requests.
//   ibqos-bench-query-batch [--rules 10,100,1000,10000] [--requests 100000,1000000] [--runs 3]
//                           [--json] [--benchmark_...]
#include <sys/stat.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/harness.hpp"
#include "bench/policy_load.hpp"
#include "bench/synthetic.hpp"
#include "cli/query_batch.hpp"
#include "compiler/fabric_compilation.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "policy-space/load_policy.hpp"
#include "tests/policy_families.hpp"

using namespace ibqos;

namespace {

// The CPU time of this thread, in seconds: on a shared machine, the work's own time.
double cpuNow() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double secondsSince(double start) { return cpuNow() - start; }

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        std::exit(2);
    }
}

// The fat tree, its topology file, and the files of each rule count's policy.
struct Workload {
    bench::FatTree tree;
    Fabric fabric = tree.fabric();
    std::string dir, topology;

    explicit Workload(std::string scratch) : dir(std::move(scratch)) {
        Diagnostics d;
        readPartitions(nullptr, fabric, d);
        topology = dir + "/fat-tree.ibnetdiscover";
        writeFile(topology, writeTopology(fabric));
    }

    // The random family's policy with its group ranges over the hosts' port GUIDs.
    std::string policyText(unsigned rules) const {
        test::FamilyPolicy o;
        o.family = test::Family::Random;
        o.rules = rules;
        o.seed = 49;
        const uint64_t span = 4 * test::familyGroups(o.family, rules) + 0xfa0;
        o.guidBase = tree.hostPortGuid(0);
        o.guidStride = static_cast<unsigned>(std::max<uint64_t>(1, 2 * tree.hosts / span));
        return test::familyPolicy(o);
    }

    // Requests between random hosts, each port named by GUID or LID; a ServiceID 90 % of the
    // time, a QoS class 70 %, a PKey 70 %, an SL 10 %.
    std::string requests(size_t count, uint64_t seed) const {
        std::mt19937_64 rng(seed);
        auto pick = [&rng](uint64_t n) { return rng() % n; };
        auto port = [&](unsigned h) {
            return pick(2) ? hex(tree.hostPortGuid(h)) : std::to_string(tree.hostLid(h));
        };
        std::string out;
        out.reserve(count * 64);
        for (size_t i = 0; i < count; ++i) {
            out += port(static_cast<unsigned>(pick(tree.hosts)));
            out += ' ';
            out += port(static_cast<unsigned>(pick(tree.hosts)));
            out += pick(10) < 9 ? " " + hex(pick(2) ? pick(1 << 24) : 0xe0000 + pick(0x40000))
                                : std::string(" -");
            out += pick(10) < 7 ? " " + std::to_string(pick(4096)) : std::string(" -");
            out += pick(10) < 7 ? std::string(" 0xffff") : std::string(" -");
            out += pick(10) < 1 ? " " + std::to_string(pick(16)) : std::string(" -");
            out += '\n';
        }
        return out;
    }
};

// One rule count: the policy bound to the fabric, and what answers its requests.
struct Case {
    Policy policy;
    std::unique_ptr<FabricCompilation> compiled;
    std::unique_ptr<cli::RequestAnswerer> answerer;
    std::string policyPath;
};

struct Figures {
    double read = 0, match = 0, write = 0, batch = 0;
};

// The phases over one batch text, each timed on its own (seconds).
Figures phases(const Workload& w, const Case& c, const std::string& text) {
    Figures f;
    std::vector<PathQuery> queries;
    std::vector<PathAnswer> answers;
    {
        std::stringbuf in(text);
        cli::LineReader reader(in);
        std::string_view line;
        std::string error;
        bool tooLong = false;
        double start = cpuNow();
        while (reader.next(line, tooLong)) {
            if (auto q = cli::parseBatchLine(w.fabric, line, error)) queries.push_back(*q);
        }
        f.read = secondsSince(start);
    }
    answers.reserve(queries.size());
    double start = cpuNow();
    for (const PathQuery& q : queries) answers.push_back(c.answerer->answer(q));
    f.match = secondsSince(start);
    std::string out;
    out.reserve(1 << 16);
    std::ofstream sink("/dev/null");
    start = cpuNow();
    for (const PathAnswer& a : answers) {
        c.answerer->write(out, a);
        out += '\n';
        if (out.size() >= (1 << 16)) {
            sink.write(out.data(), static_cast<std::streamsize>(out.size()));
            out.clear();
        }
    }
    sink.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.write = secondsSince(start);
    if (queries.size() * 100 < text.size() / 64 * 99) {
        std::fprintf(stderr, "only %zu requests of the batch were read\n", queries.size());
        std::exit(1);
    }
    std::stringbuf in(text);
    bool failed = false;
    start = cpuNow();
    cli::answerBatch(*c.answerer, w.fabric, in, sink, failed);
    f.batch = secondsSince(start);
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string_view(argv[1]) == "--measure-cli")
        return bench::measureCommand(IBQOS_CLI, argv + 2);
    std::vector<unsigned> ruleCounts{10, 100, 1000, 10000};
    std::vector<size_t> requestCounts{100000, 1000000};
    unsigned runs = 3;
    bench::Program program("ibqos-bench-query-batch",
                           "ibqos query --batch on a 50,667-port fabric: a request's time split "
                           "into reading, matching and writing, and the whole command.");
    CLI::App& o = program.options();
    o.add_option("--rules", ruleCounts, "rule counts (default 10,100,1000,10000)")->delimiter(',');
    o.add_option("--requests", requestCounts, "batch sizes (default 100000,1000000)")
        ->delimiter(',');
    o.add_option("--runs", runs, "runs of each measurement; the median counts (default 3)")
        ->check(CLI::Range(1u, 99u));
    if (auto status = program.parse(argc, argv)) return *status;

    char dir[] = "/tmp/ibqos-bench-batch-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    auto workload = std::make_unique<Workload>(dir);
    writeFile(workload->dir + "/one-request", workload->requests(1, 1));
    std::map<unsigned, std::unique_ptr<Case>> cases;
    auto get = [&](unsigned rules) -> Case& {
        auto& slot = cases[rules];
        if (slot) return *slot;
        slot = std::make_unique<Case>();
        slot->policyPath = workload->dir + "/random-" + std::to_string(rules) + ".conf";
        const std::string text = workload->policyText(rules);
        writeFile(slot->policyPath, text);
        Diagnostics d;
        slot->policy = loadPolicy(SourceFile(slot->policyPath, text), d, 1);
        slot->compiled =
            FabricCompilation::compile(slot->policy, workload->fabric, {}, d, CompileStage::Bind);
        if (d.hasErrors() || !slot->compiled) {
            std::fprintf(stderr, "the %u-rule policy has errors\n", rules);
            std::exit(1);
        }
        slot->answerer = std::make_unique<cli::RequestAnswerer>(slot->policy, workload->fabric,
                                                                slot->compiled->bound());
        return *slot;
    };
    for (const char* name : {"read_time", "match_time", "write_time", "batch_time", "command_time"})
        bench::counterUnit(name, "ns", 1e9);
    bench::counterUnit("command_peak_memory", "MB", 1e-6);

    for (unsigned rules : ruleCounts) {
        for (size_t requests : requestCounts) {
            benchmark::RegisterBenchmark(
                "query_batch",
                [&, rules, requests, self = argv[0]](benchmark::State& state) {
                    Case& c = get(rules);
                    const std::string text = workload->requests(requests, rules + requests);
                    const std::string batchPath =
                        workload->dir + "/batch-" + std::to_string(requests);
                    writeFile(batchPath, text);
                    std::vector<double> read, match, write, batch;
                    for (auto _ : state) {
                        for (unsigned r = 0; r < runs; ++r) {
                            Figures f = phases(*workload, c, text);
                            read.push_back(f.read);
                            match.push_back(f.match);
                            write.push_back(f.write);
                            batch.push_back(f.batch);
                        }
                    }
                    auto command = [&](const std::string& batchFile) {
                        return bench::runCommand(self,
                                                 {"query", c.policyPath, "--topology",
                                                  workload->topology, "--batch", batchFile},
                                                 runs);
                    };
                    bench::CommandRun whole = command(batchPath);
                    bench::CommandRun one = command(workload->dir + "/one-request");
                    if (whole.status > 1 || one.status > 1) {
                        state.SkipWithError("ibqos query --batch failed");
                        return;
                    }
                    const auto n = static_cast<double>(requests);
                    state.counters["read_time"] = bench::median(read) / n;
                    state.counters["match_time"] = bench::median(match) / n;
                    state.counters["write_time"] = bench::median(write) / n;
                    state.counters["batch_time"] = bench::median(batch) / n;
                    state.counters["command_time"] = (whole.cpu - one.cpu) / (n - 1);
                    state.counters["command_peak_memory"] = whole.peakBytes;
                    bench::setParams(state, {{"ports", workload->fabric.endpoints().size()},
                                             {"requests", requests}});
                })
                ->Args({rules})
                ->ArgName("rules")
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->Iterations(1);
        }
    }
    const int status = program.run();
    std::system(("rm -rf '" + workload->dir + "'").c_str());
    return status;
}
