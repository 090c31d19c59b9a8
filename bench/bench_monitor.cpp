// SPDX-License-Identifier: MIT
// Benchmark: `ibqos monitor` at scale, by measurement and model. ibsim forwards MADs on one
// thread, so a 50,000-port scrape cannot be timed on a simulated fabric. Instead, on a synthetic
// fat tree of about 50,000 linked ports:
//   - the exact MAD count of a scrape, as the collector plans and sends it (all attributes
//     answered; without the per-SL ones; without per-VL and per-SL; each with the per-VL and
//     per-SL counters cleared after each read (the default), and all answered with no counter
//     cleared and with PortCounters cleared too);
//   - the collector's CPU time per MAD, measured against an in-process PMA that answers at once
//     (building each request with libibmad, mad_build_pkt included, bookkeeping, decoding), and
//     the report and Prometheus text per scrape;
//   - the scrape time at a 50 us and a 1 ms MAD round trip with the default in-flight bound: the
//     real collector run against fake PMAs on a simulated clock (each node's chain of MADs, the
//     in-flight bound), plus the measured CPU time of its MADs.
//   ibqos-bench-monitor [--hosts N] [--in-flight N] [--json] [--benchmark_... flags]
#include <time.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "bench/synthetic.hpp"
#include "fabric/partitions.hpp"
#include "monitor/exposition.hpp"
#include "monitor/monitor.hpp"
#include "monitor/perf_codec.hpp"
#include "policy-space/load_policy.hpp"
#include "tests/doubles/fake_pma.hpp"

using namespace ibqos;
using namespace ibqos::monitor;
using ib::perf::Attribute;

namespace {

double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A PMA that answers every request at once with counters that move between scrapes: the
// collector's own CPU cost without a wire. Each request is also built into a umad buffer with
// mad_build_pkt, as the real transport does before umad_send (the kernel's write and read of
// each MAD are not in the figure).
class InstantPma : public PmaTransport {
  public:
    std::set<Attribute> dropped;  // never answered (the collector gives up at its deadline)

    Clock::time_point now() const override { return now_; }
    bool send(const PmaRequest& request, std::string&) override {
        ib_rpc_t rpc{};
        rpc.mgtclass = ib::perf::Class;
        rpc.method = request.method;
        rpc.attr.id = static_cast<unsigned>(request.attribute);
        rpc.datasz = IB_PC_DATA_SZ;
        rpc.dataoffs = IB_PC_DATA_OFFS;
        rpc.trid = request.tid;
        ib_portid_t destination{};
        ib_portid_set(&destination, request.lid, 1, IB_DEFAULT_QP1_QKEY);
        PerfData data = request.data;
        mad_build_pkt(umad_, &rpc, &destination, nullptr, data.data());
        if (dropped.count(request.attribute)) return true;
        PmaAnswer answer;
        answer.tid = request.tid;
        answer.data = this->answer(request.attribute);
        ready_.push_back(answer);
        return true;
    }
    void wait(Clock::time_point until, std::vector<PmaAnswer>& answers) override {
        if (ready_.empty()) now_ = std::max(now_, until);
        answers.insert(answers.end(), ready_.begin(), ready_.end());
        ready_.clear();
    }
    void nextScrape() {
        ++tick_;
        answers_.clear();
        now_ += std::chrono::seconds(10);
    }

  private:
    // Every port's counters are alike: each attribute's answer is encoded once a scrape, so
    // that the PMA's own work stays out of the collector's figure.
    const PerfData& answer(Attribute attribute) {
        auto [it, fresh] = answers_.try_emplace(attribute);
        if (fresh) {
            if (attribute == Attribute::ClassPortInfo) {
                mad_set_field(it->second.data(), 0, IB_CPI_CAPMASK_F,
                              ib::perf::CapExtendedWidth | ib::perf::CapXmitWait);
            }
            // Traffic on the policy's SLs 0-2 (VLs 0-2), the port-wide counters all moving.
            for (unsigned i = 0; i < ib::perf::counterCount(attribute); ++i) {
                bool moves = !ib::perf::isLaneAttribute(attribute) || i < 3;
                encodeCounter(attribute, i, moves ? tick_ * (i + 1) : 0, it->second);
            }
        }
        return it->second;
    }
    std::map<Attribute, PerfData> answers_;
    Clock::time_point now_{std::chrono::hours(1)};
    std::vector<PmaAnswer> ready_;
    uint64_t tick_ = 1;
    uint8_t umad_[4096] = {0};
};

// Fake PMAs for every node of the fabric on a simulated clock, answering after roundTrip.
std::unique_ptr<FakePma> fakeFabric(const Fabric& fabric, std::chrono::microseconds roundTrip,
                                    const std::set<Attribute>& dropped) {
    auto pma = std::make_unique<FakePma>(roundTrip);
    for (const NodeTarget& t : targetsOf(fabric)) {
        std::vector<uint16_t> lids;
        for (const PortTarget& p : t.ports)
            if (lids.empty() || lids.back() != p.lid) lids.push_back(p.lid);
        FakePma::Node& node = pma->addNode(lids);
        node.dropped = dropped;
        for (const PortTarget& p : t.ports) node.ports[p.number];
    }
    return pma;
}

}  // namespace

int main(int argc, char** argv) {
    bench::Program program("ibqos-bench-monitor",
                           "ibqos monitor's MADs per scrape, CPU per MAD and modelled scrape time "
                           "on a synthetic fat tree.");
    bench::FatTree tree;
    tree.hosts = 16800;
    tree.leaves = 700;
    tree.spines = 234;
    unsigned inFlight = CollectorOptions{}.inFlight;
    program.options().add_option("--hosts", tree.hosts,
                                 "hosts (24 a leaf; spines follow), default 16,800: 50,400 ports");
    program.options().add_option("--in-flight", inFlight, "MADs in flight at most (default 128)");
    if (auto status = program.parse(argc, argv)) return *status;
    tree.leaves = (tree.hosts + tree.down - 1) / tree.down;
    tree.hosts = tree.leaves * tree.down;
    tree.spines = (tree.leaves * tree.up + tree.radix - 1) / tree.radix;

    Diagnostics d;
    Fabric fabric = tree.fabric();
    readPartitions(nullptr, fabric, d);
    SourceFile policyText(
        "policy.conf",
        "port-groups\n  port-group\n    name: all\n    node-type: ALL\n  end-port-group\n"
        "end-port-groups\n"
        "qos-levels\n  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n"
        "  qos-level\n    name: storage\n    sl: 1\n  end-qos-level\n"
        "  qos-level\n    name: mpi\n    sl: 2\n  end-qos-level\nend-qos-levels\n"
        "qos-setup\n  vlarb-tables\n    vlarb-scope\n      group: all\n"
        "      bandwidth: 0:20%, 1:50%, 2:30%\n"
        "    end-vlarb-scope\n  end-vlarb-tables\nend-qos-setup\n");
    Policy policy = loadPolicy(policyText, d);
    if (d.hasErrors()) {
        for (const Diagnostic& e : d.all()) std::fprintf(stderr, "%s\n", e.message.c_str());
        std::fprintf(stderr, "the generated inputs have errors\n");
        return 1;
    }
    auto compile = [&] { return FabricCompilation::compile(policy, fabric, OpenSmConf{}, d); };
    size_t ports = 0;
    for (const NodeTarget& t : targetsOf(fabric)) ports += t.ports.size();
    const Json params = {{"ports", ports},
                         {"nodes", targetsOf(fabric).size()},
                         {"switches", tree.leaves + tree.spines},
                         {"in_flight", inFlight}};

    CollectorOptions options;
    options.inFlight = inFlight;

    // The collector's CPU per MAD in steady scrapes (support learnt, ClassPortInfo known).
    double cpuPerMad = 0;
    bench::counterUnit("cpu_per_mad", "us", 1e6);
    bench::counterUnit("mads_per_scrape", "MADs");
    benchmark::RegisterBenchmark("collector_scrape", [&](benchmark::State& state) {
        InstantPma pma;
        Collector collector(pma, targetsOf(fabric), options);
        collector.scrape();
        double cpu = 0, mads = 0;
        for (auto _ : state) {
            pma.nextScrape();
            double start = cpuSeconds();
            ScrapeStats s = collector.scrape();
            cpu += cpuSeconds() - start;
            mads += static_cast<double>(s.sent);
        }
        cpuPerMad = cpu / mads;
        state.counters["cpu_per_mad"] = cpuPerMad;
        state.counters["mads_per_scrape"] = mads / static_cast<double>(state.iterations());
        bench::setParams(state, params);
    })->Unit(benchmark::kMillisecond);

    // What a service adds per scrape: the report (deltas, shares, findings) and the text.
    bench::counterUnit("prometheus_text_size", "MB", 1e-6);
    bench::counterUnit("prometheus_text", "ms", 1e3);
    bench::counterUnit("scrape_and_report", "ms", 1e3);
    bench::counterUnit("json_report", "ms", 1e3);
    bench::counterUnit("json_report_size", "MB", 1e-6);
    benchmark::RegisterBenchmark(
        "report_and_metrics",
        [&](benchmark::State& state) {
            InstantPma pma;
            Monitor monitor(pma, compile(), MonitorOptions{});
            monitor.scrape();
            double report = 0, text = 0, size = 0, json = 0, jsonSize = 0;
            for (auto _ : state) {
                pma.nextScrape();
                double start = cpuSeconds();
                monitor.scrape();
                report += cpuSeconds() - start;
                start = cpuSeconds();
                size = static_cast<double>(prometheusText(monitor).size());
                text += cpuSeconds() - start;
                start = cpuSeconds();
                jsonSize = static_cast<double>(dumpJson(reportJson(monitor)).size());
                json += cpuSeconds() - start;
            }
            double n = static_cast<double>(state.iterations());
            state.counters["scrape_and_report"] = report / n;
            state.counters["prometheus_text"] = text / n;
            state.counters["prometheus_text_size"] = size;
            state.counters["json_report"] = json / n;
            state.counters["json_report_size"] = jsonSize;
            bench::setParams(state, params);
        })
        ->MeasureProcessCPUTime()
        ->Unit(benchmark::kMillisecond);

    // The MAD count by what the PMAs answer, and the scrape time at two round trips.
    struct Case {
        const char* name;
        std::set<Attribute> dropped;
        CounterReset reset;
    };
    const std::vector<Case> cases = {
        {"all_attributes", {}, CounterReset::Lanes},
        {"no_per_sl", {Attribute::PortXmitDataSl, Attribute::PortRcvDataSl}, CounterReset::Lanes},
        {"no_per_vl_no_per_sl",
         {Attribute::PortXmitDataSl, Attribute::PortRcvDataSl, Attribute::PortVlXmitWaitCounters,
          Attribute::PortVlOpData, Attribute::PortVlOpPackets},
         CounterReset::Lanes},
        {"all_attributes_no_reset", {}, CounterReset::None},
        {"all_attributes_reset_all", {}, CounterReset::All},
    };
    for (const char* name : {"first_scrape_mads", "steady_scrape_mads", "first_scrape_timeouts"})
        bench::counterUnit(name, "MADs");
    for (const char* name : {"wire_s_at_50us", "wire_s_at_1ms", "collector_cpu_s",
                             "modelled_scrape_s_at_50us", "modelled_scrape_s_at_1ms"})
        bench::counterUnit(name, "s");
    for (const Case& c : cases) {
        benchmark::RegisterBenchmark(
            (std::string("model_") + c.name).c_str(),
            [&, c](benchmark::State& state) {
                CollectorOptions o = options;
                o.reset = c.reset;
                // The CPU per MAD of these answers (the collector_scrape benchmark's way).
                InstantPma instant;
                instant.dropped = c.dropped;
                Collector measured(instant, targetsOf(fabric), o);
                measured.scrape();
                double cpu = 0, mads = 0;
                for (int i = 0; i < 3; ++i) {
                    instant.nextScrape();
                    double start = cpuSeconds();
                    mads += static_cast<double>(measured.scrape().sent);
                    cpu += cpuSeconds() - start;
                }
                double perMad = cpu / mads;
                for (auto _ : state) {
                    for (auto [roundTrip, label] :
                         {std::pair{std::chrono::microseconds(50), "50us"},
                          std::pair{std::chrono::microseconds(1000), "1ms"}}) {
                        auto pma = fakeFabric(fabric, roundTrip, c.dropped);
                        Collector collector(*pma, targetsOf(fabric), o);
                        ScrapeStats first = collector.scrape();
                        pma->advance(std::chrono::seconds(10));
                        ScrapeStats steady = collector.scrape();
                        double wire = steady.seconds;
                        double collectorCpu = perMad * static_cast<double>(steady.sent);
                        state.counters[std::string("wire_s_at_") + label] = wire;
                        state.counters[std::string("modelled_scrape_s_at_") + label] =
                            wire + collectorCpu;
                        state.counters["collector_cpu_s"] = collectorCpu;
                        state.counters["first_scrape_mads"] = static_cast<double>(first.sent);
                        state.counters["first_scrape_timeouts"] =
                            static_cast<double>(first.timedOut);
                        state.counters["steady_scrape_mads"] = static_cast<double>(steady.sent);
                    }
                }
                state.counters["cpu_per_mad"] = perMad;
                bench::setParams(state, params);
            })
            ->Iterations(1)
            ->UseRealTime()
            ->Unit(benchmark::kSecond);
    }
    return program.run();
}
