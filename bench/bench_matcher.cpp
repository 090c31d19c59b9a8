// SPDX-License-Identifier: MIT
// Benchmark: PathRecord matching on a 50,667-port fabric, the compiled Classifier against a
// straightforward implementation of OpenSM's own algorithm (rules scanned in order, group
// membership by hash-set lookup), at 10 to 10,000 rules.
//   ibqos-bench-matcher [--rules 10,100,1000,10000] [--requests N] [--seed S] [--json]
//
// The workload (issue 4): the synthetic fat tree of bench/synthetic.hpp, 48,000 hosts under
// 2,000 36-port leaves (24 hosts and 12 uplinks each) and 667 spines, so 50,667 endpoints,
// read into a Fabric as ibnetdiscover would give it; 200 port groups, each the first half of its
// own 1/200 slice of the hosts as one GUID range plus 8 random host GUIDs; rules 25 % source only,
// 25 % destination only, 50 % both (1-2 groups a side), half with a QoS-class range, half with
// 1-3 ServiceID ranges, a quarter with a PKey range; requests between random hosts with a
// ServiceID 90 %, a QoS class 70 % and a PKey 70 % of the time.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/synthetic.hpp"
#include "common/source.hpp"
#include "compiler/fabric_compilation.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "sa-matcher/classifier.hpp"

using namespace ibqos;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned Groups = 200, RandomMembers = 8;
constexpr unsigned BatchSize = 16;  // matches per timer reading

// The synthetic fat tree of the other benchmarks, read into a Fabric.
struct Workload {
    bench::FatTree tree;
    SourceFile topology{"synthetic fat tree", tree.ibnetdiscover()};
    Fabric fabric;
    std::vector<uint32_t> hostPorts;  // the endpoint of every host

    Workload() {
        Diagnostics d;
        fabric = readTopology(topology, d);
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
        group.guidRanges.push_back(
            {{tree.hostPortGuid(g * slice), tree.hostPortGuid(g * slice + slice / 2 - 1)}, {}});
        for (unsigned i = 0; i < RandomMembers; ++i) {
            uint64_t guid = tree.hostPortGuid(static_cast<unsigned>(pick(tree.hosts)));
            group.guidRanges.push_back({{guid, guid}, {}});
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

struct Timing {
    double matchesPerSecond = 0;
    double medianNs = 0;
    double p99Ns = 0;
    double defaultShare = 0;
};

// Runs `match` over the requests in batches of BatchSize timed together (a timer reading
// costs as much as a match), for `rounds` rounds of `seconds` each (and at least `minimum`
// matches a round). Other work on the machine can only slow a round down, so the figures are
// those of the round with the lowest median.
template <typename Match>
Timing measure(const std::vector<PathQuery>& requests, unsigned rounds, double seconds,
               size_t minimum, Match match) {
    Timing best;
    best.medianNs = 1e300;
    uint64_t sink = 0;
    size_t done = 0;
    for (unsigned round = 0; round < rounds; ++round) {
        std::vector<double> batchNs;
        size_t matches = 0, toDefault = 0;
        auto start = Clock::now();
        double elapsed = 0;
        while (elapsed < seconds || matches < minimum) {
            const PathQuery* batch = requests.data() + done % requests.size();
            auto t0 = Clock::now();
            for (unsigned i = 0; i < BatchSize; ++i) {
                QosMatch m = match(batch[i]);
                sink += m.level;
                toDefault += m.rule == NoRule;
            }
            auto t1 = Clock::now();
            batchNs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                              BatchSize);
            done += BatchSize;
            matches += BatchSize;
            elapsed = std::chrono::duration<double>(t1 - start).count();
        }
        std::sort(batchNs.begin(), batchNs.end());
        double median = batchNs[batchNs.size() / 2];
        if (median < best.medianNs) {
            best.medianNs = median;
            best.p99Ns = batchNs[batchNs.size() * 99 / 100];
            best.matchesPerSecond = static_cast<double>(matches) / elapsed;
            best.defaultShare = static_cast<double>(toDefault) / static_cast<double>(matches);
        }
    }
    if (sink == UINT64_MAX) std::puts("");  // keeps the work observable
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<unsigned> sizes{10, 100, 1000, 10000};
    size_t requestCount = 1 << 16;
    uint64_t seed = 4;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&] { return std::string(bench::optionValue(argc, argv, i)); };
        if (a == "--rules") {
            sizes.clear();
            std::string list = next();
            for (size_t p = 0; p < list.size();) {
                size_t comma = list.find(',', p);
                sizes.push_back(static_cast<unsigned>(std::stoul(list.substr(p, comma - p))));
                p = comma == std::string::npos ? list.size() : comma + 1;
            }
        } else if (a == "--requests") {
            requestCount = std::stoull(next());
            requestCount = std::max<size_t>(BatchSize, requestCount - requestCount % BatchSize);
        } else if (a == "--seed") {
            seed = std::stoull(next());
        } else if (a == "--json") {
            json = true;
        } else {
            std::fprintf(stderr,
                         "usage: ibqos-bench-matcher [--rules 10,100,1000,10000] [--requests N] "
                         "[--seed S] [--json]\n");
            return a == "--help" ? 0 : 2;
        }
    }

    auto fabricStart = Clock::now();
    Workload w;
    bench::Report report(json);
    report.header("PathRecord matching: compiled classifier vs OpenSM's rule scan (one core)");
    report.add({"fabric_endpoints",
                static_cast<double>(w.fabric.endpoints().size()),
                "ports",
                {{"build_s", std::to_string(bench::secondsSince(fabricStart))}}});

    for (unsigned rules : sizes) {
        std::mt19937_64 rng(seed + rules);
        Policy policy = buildPolicy(w.tree, rules, rng);
        Diagnostics diagnostics;
        auto compiled =
            FabricCompilation::compile(policy, w.fabric, {}, diagnostics, CompileStage::Bind);
        const BoundPolicy& bound = compiled->bound();
        std::vector<PathQuery> requests = buildRequests(w, requestCount, rng);
        std::vector<std::pair<std::string, std::string>> params{
            {"rules", std::to_string(rules)},
            {"ports", std::to_string(w.fabric.endpoints().size())}};

        size_t heapBefore = heapInUse();
        auto buildStart = Clock::now();
        Classifier classifier(bound);
        double buildSeconds = bench::secondsSince(buildStart);
        size_t classifierHeap = heapInUse() - heapBefore;

        heapBefore = heapInUse();
        auto baselineStart = Clock::now();
        Baseline baseline(policy, bound);
        double baselineBuildSeconds = bench::secondsSince(baselineStart);
        size_t baselineHeap = heapInUse() - heapBefore;

        // Both must give every answer alike before either is timed.
        size_t checked = std::min<size_t>(requests.size(), rules >= 10000 ? 2000 : 20000);
        for (size_t i = 0; i < checked; ++i) {
            if (classifier.match(requests[i]) != baseline.match(w.fabric, requests[i])) {
                std::fprintf(stderr, "request %zu: the classifier and the baseline disagree\n", i);
                return 1;
            }
        }

        Timing c = measure(requests, 10, 0.25, requests.size(),
                           [&](const PathQuery& q) { return classifier.match(q); });
        Timing b = measure(requests, 10, 0.25, 0,
                           [&](const PathQuery& q) { return baseline.match(w.fabric, q); });

        report.add({"classifier_matches_per_s", c.matchesPerSecond, "1/s", params});
        report.add({"classifier_median_ns", c.medianNs, "ns", params});
        report.add({"classifier_p99_ns", c.p99Ns, "ns", params});
        report.add({"classifier_build_time", buildSeconds * 1e3, "ms", params});
        report.add({"classifier_memory", static_cast<double>(classifier.memoryBytes()) / 1e6, "MB",
                    params});
        report.add({"classifier_heap", static_cast<double>(classifierHeap) / 1e6, "MB", params});
        report.add({"classifier_port_classes", static_cast<double>(classifier.membershipClasses()),
                    "classes", params});
        report.add({"baseline_matches_per_s", b.matchesPerSecond, "1/s", params});
        report.add({"baseline_median_ns", b.medianNs, "ns", params});
        report.add({"baseline_p99_ns", b.p99Ns, "ns", params});
        report.add({"baseline_build_time", baselineBuildSeconds * 1e3, "ms", params});
        report.add({"baseline_heap", static_cast<double>(baselineHeap) / 1e6, "MB", params});
        report.add({"speedup", c.matchesPerSecond / b.matchesPerSecond, "x", params});
        report.add({"default_level_share", c.defaultShare * 100, "%", params});
    }
    return 0;
}
