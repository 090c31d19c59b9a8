// SPDX-License-Identifier: MIT
// Benchmark: PathRecord matching on a 50,667-port fabric, the compiled Classifier against a
// straightforward implementation of OpenSM's own algorithm (rules scanned in order, group
// membership by hash-set lookup), at 10 to 10,000 rules; and the classifier's build time and
// memory on the policy families of tests/policy_families.hpp at N and 10N rules.
//   ibqos-bench-matcher [--rules 10,100,1000,10000] [--requests N] [--seed S]
//                       [--family-rules 6400,64000] [--family F] [--family-hosts N] [--json]
//                       [--benchmark_... flags]
//
// The workload (issue 4): the synthetic fat tree of bench/synthetic.hpp, 48,000 hosts under
// 2,000 36-port leaves (24 hosts and 12 uplinks each) and 667 spines, so 50,667 endpoints,
// read into a Fabric as ibnetdiscover would give it; 200 port groups, each the first half of its
// own 1/200 slice of the hosts as one GUID range plus 8 random host GUIDs; rules 25 % source only,
// 25 % destination only, 50 % both (1-2 groups a side), half with a QoS-class range, half with
// 1-3 ServiceID ranges, a quarter with a PKey range; requests between random hosts with a
// ServiceID 90 %, a QoS class 70 % and a PKey 70 % of the time.
//
// The families (`classifier_build/FAMILY`): each family's policy (nested, nested-service-ids,
// shifted, same-ranges, random; pair-rules on request) with its groups spread over the hosts of a
// smaller fat tree (--family-hosts, 2,400 by default), bound to it; the figure is the time one
// Classifier takes to build (its CPU time: build_cpu_time), with the bytes it holds
// (classifier_memory), the rise of the process's peak resident memory while it is built
// (build_peak_memory) and the CPU time of one match on random requests (family_match_time).
#include <malloc.h>
#include <time.h>

#include <map>
#include <memory>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench/harness.hpp"
#include "bench/synthetic.hpp"
#include "compiler/fabric_compilation.hpp"
#include "fabric/partitions.hpp"
#include "policy-space/load_policy.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/reference_match.hpp"
#include "tests/policy_families.hpp"

using namespace ibqos;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned Groups = 200, RandomMembers = 8;

// The synthetic fat tree of the other benchmarks.
struct Workload {
    bench::FatTree tree;
    Fabric fabric = tree.fabric();
    std::vector<uint32_t> hostPorts;  // the endpoint of every host

    Workload() {
        Diagnostics d;
        readPartitions(nullptr, fabric, d);
        if (d.hasErrors()) {
            std::fprintf(stderr, "the synthetic fabric has errors: %s\n",
                         d.all()[0].message.c_str());
            std::exit(1);
        }
        for (unsigned h = 0; h < tree.hosts; ++h)
            hostPorts.push_back(fabric.endpointByGuid(tree.hostPortGuid(h)));
    }
};

Policy buildPolicy(const bench::FatTree& tree, unsigned rules, std::mt19937_64& rng) {
    Policy p;
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    const unsigned slice = tree.hosts / Groups;
    for (unsigned g = 0; g < Groups; ++g) {
        PortGroup group;
        group.name = "group-" + std::to_string(g);
        const Range hosts{tree.hostPortGuid(g * slice),
                          tree.hostPortGuid(g * slice + slice / 2 - 1)};
        group.guidRanges.push_back({hosts, {}, hosts});
        for (unsigned i = 0; i < RandomMembers; ++i) {
            uint64_t guid = tree.hostPortGuid(static_cast<unsigned>(pick(tree.hosts)));
            group.guidRanges.push_back({{guid, guid}, {}, {guid, guid}});
        }
        p.groups.push_back(std::move(group));
    }
    QosLevel defaults;
    defaults.name = "default";
    p.levels.push_back(defaults);
    for (uint8_t sl = 1; sl < 16; ++sl) {
        QosLevel level;
        level.name = "sl-" + std::to_string(sl);
        level.sl = sl;
        p.levels.push_back(level);
    }
    p.defaultLevel = 0;
    p.hasDefaultLevel = true;
    auto groups = [&]() {
        std::vector<uint32_t> out;
        for (uint64_t i = 1 + pick(2); i > 0; --i)
            out.push_back(static_cast<uint32_t>(pick(Groups)));
        return out;
    };
    for (unsigned r = 0; r < rules; ++r) {
        MatchRule rule;
        uint64_t kind = pick(4);  // 0 source only, 1 destination only, 2-3 both
        if (kind != 1) rule.sources = groups();
        if (kind != 0) rule.destinations = groups();
        if (pick(2)) {
            uint64_t lo = pick(256);
            rule.qosClasses = RangeSet{{lo, lo + pick(64)}};
        }
        if (pick(2)) {
            std::vector<Range> sids;
            for (uint64_t i = 1 + pick(3); i > 0; --i) {
                uint64_t lo = 0x10000 + pick(4096);
                sids.push_back({lo, lo + pick(512)});
            }
            rule.serviceIds = RangeSet::build(std::move(sids));
        }
        if (pick(4) == 0) {
            uint64_t lo = 1 + pick(32);
            rule.pkeys = RangeSet{{lo, lo + pick(8)}};
        }
        rule.level = 1 + static_cast<uint32_t>(pick(15));
        p.rules.push_back(std::move(rule));
    }
    p.firstUlpRule = p.rules.size();
    return p;
}

std::vector<PathQuery> buildRequests(const Workload& w, size_t count, std::mt19937_64& rng) {
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    std::vector<PathQuery> out(count);
    for (PathQuery& q : out) {
        q.source = w.hostPorts[pick(w.hostPorts.size())];
        q.destination = w.hostPorts[pick(w.hostPorts.size())];
        if (pick(10) < 9) q.serviceId = 0x10000 + pick(4096);
        if (pick(10) < 7) q.qosClass = static_cast<uint16_t>(pick(256));
        if (pick(10) < 7) q.pkey = static_cast<uint16_t>((1 + pick(40)) | (pick(2) ? 0x8000 : 0));
    }
    return out;
}

// OpenSM's algorithm as written in osm_qos_policy.c, with each group's ports in a hash set.
class Baseline {
  public:
    Baseline(const Policy& policy, const BoundPolicy& bound) : defaultLevel_(policy.defaultLevel) {
        const Fabric& f = *bound.fabric;
        for (const GroupMembers& m : bound.groups) {
            Group g;
            g.nodeTypes = m.nodeTypes;
            for (uint32_t port : m.ports) g.guids.insert(f.ports[port].guid);
            groups_.push_back(std::move(g));
        }
        for (const MatchRule& r : policy.rules) {
            Rule rule;
            for (uint32_t g : r.sources) rule.sources.push_back(&groups_[g]);
            for (uint32_t g : r.destinations) rule.destinations.push_back(&groups_[g]);
            rule.qosClasses = r.qosClasses.ranges();
            rule.serviceIds = r.serviceIds.ranges();
            rule.pkeys = r.pkeys.ranges();
            rule.level = r.level;
            rules_.push_back(std::move(rule));
        }
    }

    QosMatch match(const Fabric& f, const PathQuery& q) const {
        uint64_t srcGuid = f.ports[q.source].guid, dstGuid = f.ports[q.destination].guid;
        uint8_t srcType = nodeTypeBit(f.typeOf(q.source)),
                dstType = nodeTypeBit(f.typeOf(q.destination));
        for (uint32_t i = 0; i < rules_.size(); ++i) {
            const Rule& r = rules_[i];
            if (!r.sources.empty() && !inList(r.sources, srcGuid, srcType)) continue;
            if (!r.destinations.empty() && !inList(r.destinations, dstGuid, dstType)) continue;
            if (!r.qosClasses.empty() && (!q.qosClass || !inRanges(r.qosClasses, *q.qosClass)))
                continue;
            if (!r.serviceIds.empty() && (!q.serviceId || !inRanges(r.serviceIds, *q.serviceId)))
                continue;
            if (!r.pkeys.empty() && (!q.pkey || !inRanges(r.pkeys, *q.pkey & 0x7fff))) continue;
            return {r.level, i};
        }
        return {defaultLevel_, NoRule};
    }

  private:
    struct Group {
        uint8_t nodeTypes = 0;
        std::unordered_set<uint64_t> guids;
    };
    struct Rule {
        std::vector<const Group*> sources, destinations;
        std::vector<Range> qosClasses, serviceIds, pkeys;
        uint32_t level = 0;
    };
    std::vector<Group> groups_;
    std::vector<Rule> rules_;
    uint32_t defaultLevel_;

    static bool inList(const std::vector<const Group*>& list, uint64_t guid, uint8_t type) {
        for (const Group* g : list) {
            if ((g->nodeTypes & type) || g->guids.count(guid)) return true;
        }
        return false;
    }
    // Binary search over sorted ranges, as __is_num_in_range_arr.
    static bool inRanges(const std::vector<Range>& ranges, uint64_t v) {
        auto it = std::upper_bound(ranges.begin(), ranges.end(), v,
                                   [](uint64_t x, const Range& r) { return x < r.lo; });
        return it != ranges.begin() && std::prev(it)->hi >= v;
    }
};

size_t heapInUse() { return mallinfo2().uordblks; }

// One policy size: the policy bound to the fabric, its requests, and both matchers, checked to
// agree on every answer before either is timed. Built once, when its first benchmark runs.
struct Case {
    Policy policy;
    std::unique_ptr<FabricCompilation> compiled;
    std::vector<PathQuery> requests;
    std::unique_ptr<Classifier> classifier;
    std::unique_ptr<Baseline> baseline;
    double classifierBuildMs = 0, baselineBuildMs = 0;
    double classifierHeap = 0, baselineHeap = 0;
    double classifierRate = 0;  // matches per second, once measured
};

class Cases {
  public:
    Cases(size_t requests, uint64_t seed) : requests_(requests), seed_(seed) {}

    Case& get(unsigned rules) {
        auto& slot = cases_[rules];
        if (slot) return *slot;
        if (!workload_) workload_ = std::make_unique<Workload>();
        const Workload& w = *workload_;
        slot = std::make_unique<Case>();
        Case& c = *slot;
        std::mt19937_64 rng(seed_ + rules);
        c.policy = buildPolicy(w.tree, rules, rng);
        Diagnostics diagnostics;
        c.compiled =
            FabricCompilation::compile(c.policy, w.fabric, {}, diagnostics, CompileStage::Bind);
        c.requests = buildRequests(w, requests_, rng);
        auto ms = [](Clock::time_point since) {
            return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
        };
        size_t heap = heapInUse();
        auto start = Clock::now();
        c.classifier = std::make_unique<Classifier>(c.compiled->bound());
        c.classifierBuildMs = ms(start);
        c.classifierHeap = static_cast<double>(heapInUse() - heap);
        heap = heapInUse();
        start = Clock::now();
        c.baseline = std::make_unique<Baseline>(c.policy, c.compiled->bound());
        c.baselineBuildMs = ms(start);
        c.baselineHeap = static_cast<double>(heapInUse() - heap);
        size_t checked = std::min<size_t>(c.requests.size(), rules >= 10000 ? 2000 : 20000);
        for (size_t i = 0; i < checked; ++i) {
            if (c.classifier->match(c.requests[i]) != c.baseline->match(w.fabric, c.requests[i])) {
                std::fprintf(stderr, "request %zu: the classifier and the baseline disagree\n", i);
                std::exit(1);
            }
        }
        return c;
    }
    const Workload& workload() const { return *workload_; }

  private:
    size_t requests_;
    uint64_t seed_;
    std::unique_ptr<Workload> workload_;
    std::map<unsigned, std::unique_ptr<Case>> cases_;
};

// A family's policy on a fat tree of `hosts` hosts: the fabric, the policy bound to it, and
// requests between random hosts over the values the families write.
struct FamilyCase {
    bench::FatTree tree;
    Fabric fabric;
    Policy policy;
    std::unique_ptr<FabricCompilation> compiled;
    std::vector<PathQuery> requests;

    FamilyCase(test::Family family, unsigned rules, unsigned hosts, uint64_t seed) {
        tree.hosts = hosts;
        tree.leaves = (hosts + tree.down - 1) / tree.down;
        tree.spines = (tree.leaves * tree.up + tree.radix - 1) / tree.radix;  // ports 1..radix
        fabric = tree.fabric();
        Diagnostics diagnostics;
        readPartitions(nullptr, fabric, diagnostics);
        test::FamilyPolicy o;
        o.family = family;
        o.rules = rules;
        o.seed = seed;
        // The groups' GUID ranges spread over the hosts.
        const uint64_t span = 4 * test::familyGroups(family, rules) + 0xfa0;
        o.guidBase = tree.hostPortGuid(0);
        o.guidStride = static_cast<unsigned>(std::max<uint64_t>(1, 2 * tree.hosts / span));
        SourceFile source("family.conf", test::familyPolicy(o));
        policy = loadPolicy(source, diagnostics, 1);  // the dead-rule analysis is not measured
        compiled = FabricCompilation::compile(policy, fabric, {}, diagnostics, CompileStage::Bind);
        if (diagnostics.hasErrors() || !compiled) {
            std::fprintf(stderr, "the %s policy has errors\\n", test::familyName(family));
            std::exit(1);
        }
        std::mt19937_64 rng(seed);
        auto pick = [&rng](uint64_t n) { return rng() % n; };
        requests.resize(1 << 14);
        for (PathQuery& q : requests) {
            q.source = fabric.endpointByGuid(tree.hostPortGuid(static_cast<unsigned>(pick(hosts))));
            q.destination =
                fabric.endpointByGuid(tree.hostPortGuid(static_cast<unsigned>(pick(hosts))));
            if (pick(10) < 9)
                q.serviceId = pick(2) ? pick(uint64_t{1} << 24) : 0xe0000 + pick(0x40000);
            if (pick(10) < 7) q.qosClass = static_cast<uint16_t>(pick(4096));
            if (pick(10) < 7) q.pkey = static_cast<uint16_t>(1 + pick(20));
        }
    }
};

// The CPU time of this thread, in seconds: on a loaded machine, the work's own time.
double threadCpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint64_t residentBytes() {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
        if (key == "VmRSS:") {
            uint64_t kb = 0;
            status >> kb;
            return kb * 1024;
        }
        std::getline(status, key);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<unsigned> sizes{10, 100, 1000, 10000};
    size_t requestCount = 1 << 16;
    uint64_t seed = 4;
    bench::Program program("ibqos-bench-matcher",
                           "PathRecord matching on a 50,667-port fabric: the compiled classifier "
                           "against OpenSM's rule scan (one core).");
    CLI::App& o = program.options();
    o.add_option("--rules", sizes, "rule counts (default 10,100,1000,10000)")->delimiter(',');
    o.add_option("--requests", requestCount, "distinct requests cycled through (default 65536)")
        ->check(CLI::PositiveNumber);
    o.add_option("--seed", seed, "the workload's seed (default 4)");
    std::vector<unsigned> familySizes{6400, 64000};
    std::string familyChoice = "all";
    unsigned familyHosts = 2400;
    o.add_option("--family-rules", familySizes,
                 "the families' rule counts, N and 10N (default 6400,64000; 0: none)")
        ->delimiter(',');
    o.add_option("--family", familyChoice,
                 "one family: nested, nested-service-ids, shifted, same-ranges, random, "
                 "pair-rules (default: all but pair-rules)");
    o.add_option("--family-hosts", familyHosts, "hosts of the families' fat tree (default 2400)")
        ->check(CLI::Range(24u, 48000u));
    if (auto status = program.parse(argc, argv)) return *status;

    Cases cases(requestCount, seed);
    for (const char* name : {"classifier_matches_per_s", "baseline_matches_per_s"})
        bench::counterUnit(name, "1/s");
    for (const char* name : {"classifier_build_time", "baseline_build_time"})
        bench::counterUnit(name, "ms");
    for (const char* name : {"classifier_memory", "classifier_heap", "baseline_heap"})
        bench::counterUnit(name, "MB", 1e-6);
    bench::counterUnit("classifier_port_classes", "classes");
    bench::counterUnit("default_level_share", "%", 100);
    bench::counterUnit("speedup", "x");
    for (const char* name : {"build_peak_memory"}) bench::counterUnit(name, "MB", 1e-6);
    bench::counterUnit("family_match_time", "ns", 1e9);
    bench::counterUnit("build_cpu_time", "ms", 1e3);

    std::vector<test::Family> families;
    for (test::Family f :
         {test::Family::Nested, test::Family::NestedServiceIds, test::Family::Shifted,
          test::Family::SameRanges, test::Family::Random, test::Family::PairRules}) {
        if (familyChoice == "all" ? f != test::Family::PairRules
                                  : familyChoice == test::familyName(f))
            families.push_back(f);
    }
    if (families.empty()) {
        std::fprintf(stderr, "ibqos-bench-matcher: no family is named '%s'\n",
                     familyChoice.c_str());
        return 2;
    }
    for (test::Family family : families) {
        for (unsigned rules : familySizes) {
            if (rules == 0) continue;
            benchmark::RegisterBenchmark(
                (std::string("classifier_build/") + test::familyName(family)).c_str(),
                [family, rules, familyHosts, seed](benchmark::State& state) {
                    FamilyCase c(family, rules, familyHosts, seed);
                    const BoundPolicy& bound = c.compiled->bound();
                    std::unique_ptr<Classifier> classifier;
                    double peak = 0;
                    double cpu = 0;
                    for (auto _ : state) {
                        state.PauseTiming();
                        classifier.reset();
                        malloc_trim(0);
                        bench::resetPeakRss();
                        const uint64_t before = residentBytes();
                        const double cpuBefore = threadCpuSeconds();
                        state.ResumeTiming();
                        classifier = std::make_unique<Classifier>(bound);
                        state.PauseTiming();
                        cpu = threadCpuSeconds() - cpuBefore;
                        peak = std::max(peak, static_cast<double>(bench::peakRss() - before));
                        state.ResumeTiming();
                    }
                    // Checked against OpenSM's scan, then timed.
                    for (size_t i = 0; i < 200; ++i) {
                        if (classifier->match(c.requests[i]) !=
                            referenceMatch(bound, c.requests[i])) {
                            state.SkipWithError("the classifier and OpenSM's scan disagree");
                            return;
                        }
                    }
                    size_t matches = 0;
                    const double start = threadCpuSeconds();
                    do {
                        for (const PathQuery& q : c.requests)
                            benchmark::DoNotOptimize(classifier->match(q));
                        matches += c.requests.size();
                    } while (threadCpuSeconds() - start < 0.3);
                    const double seconds = threadCpuSeconds() - start;
                    state.counters["classifier_memory"] =
                        static_cast<double>(classifier->memoryBytes());
                    state.counters["build_peak_memory"] = peak;
                    state.counters["build_cpu_time"] = cpu;
                    state.counters["family_match_time"] = seconds / static_cast<double>(matches);
                    state.counters["classifier_port_classes"] =
                        static_cast<double>(classifier->membershipClasses());
                    bench::setParams(state, {{"family", test::familyName(family)},
                                             {"ports", c.fabric.endpoints().size()}});
                })
                ->Arg(rules)
                ->ArgName("rules")
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->Iterations(1);
        }
    }

    // The time of one match, in ns, is each benchmark's figure: "classifier" and "baseline".
    for (unsigned rules : sizes) {
        benchmark::RegisterBenchmark(
            "classifier",
            [&cases, rules](benchmark::State& state) {
                Case& c = cases.get(rules);
                size_t i = 0, toDefault = 0;
                auto start = Clock::now();
                for (auto _ : state) {
                    QosMatch m = c.classifier->match(c.requests[i]);
                    toDefault += m.rule == NoRule;
                    benchmark::DoNotOptimize(m);
                    i = i + 1 == c.requests.size() ? 0 : i + 1;
                }
                const double n = static_cast<double>(state.iterations());
                c.classifierRate = n / std::chrono::duration<double>(Clock::now() - start).count();
                state.counters["classifier_matches_per_s"] =
                    benchmark::Counter(n, benchmark::Counter::kIsRate);
                state.counters["classifier_build_time"] = c.classifierBuildMs;
                state.counters["classifier_memory"] =
                    static_cast<double>(c.classifier->memoryBytes());
                state.counters["classifier_heap"] = c.classifierHeap;
                state.counters["classifier_port_classes"] =
                    static_cast<double>(c.classifier->membershipClasses());
                state.counters["default_level_share"] = static_cast<double>(toDefault) / n;
                bench::setParams(state, {{"ports", cases.workload().fabric.endpoints().size()}});
            })
            ->Arg(rules)
            ->ArgName("rules")
            ->UseRealTime()
            ->MinTime(0.5);
        benchmark::RegisterBenchmark(
            "baseline",
            [&cases, rules](benchmark::State& state) {
                Case& c = cases.get(rules);
                const Fabric& fabric = cases.workload().fabric;
                size_t i = 0;
                auto start = Clock::now();
                for (auto _ : state) {
                    QosMatch m = c.baseline->match(fabric, c.requests[i]);
                    benchmark::DoNotOptimize(m);
                    i = i + 1 == c.requests.size() ? 0 : i + 1;
                }
                const double n = static_cast<double>(state.iterations());
                const double rate = n / std::chrono::duration<double>(Clock::now() - start).count();
                state.counters["baseline_matches_per_s"] =
                    benchmark::Counter(n, benchmark::Counter::kIsRate);
                state.counters["baseline_build_time"] = c.baselineBuildMs;
                state.counters["baseline_heap"] = c.baselineHeap;
                // Against the classifier's rate measured the same way (its benchmark runs first).
                if (c.classifierRate > 0) state.counters["speedup"] = c.classifierRate / rate;
                bench::setParams(state, {{"ports", fabric.endpoints().size()}});
            })
            ->Arg(rules)
            ->ArgName("rules")
            ->UseRealTime()
            ->MinTime(0.5);
    }
    return program.run();
}
