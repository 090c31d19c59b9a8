// SPDX-License-Identifier: MIT
// Unit tests of PCC: the algorithms' rules, the engines' contract, the slots, and fairness of
// flows sharing a simulated link.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>

#include "compiler/pcc_algorithms.hpp"
#include "host-sched/pcc/pcc_mango.hpp"
#include "host-sched/pcc/pcc_simulated.hpp"
#include "host-sched/pcc/pcc_slots.hpp"
#include "tests/doubles/fluid_link.hpp"
#include "tests/host-sched/host_policies.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

mango_pcc_context_t context(uint32_t window, uint32_t cnps, uint64_t rttNs, bool updated = true) {
    mango_pcc_context_t ctx{};
    ctx.current_window = window;
    ctx.cnp_delta = cnps;
    ctx.latest_rtt_ns = rttNs;
    ctx.rtt_updated = updated;
    ctx.active_qp_count = 1;
    return ctx;
}

// One algorithm's parameter block and the calls the framework would make.
struct Caller {
    const PccAlgorithm& algorithm;
    std::vector<uint8_t> block;
    uint32_t window = 0;

    explicit Caller(const char* name)
        : algorithm(*findPccAlgorithm(name)), block(defaultParamBlock(algorithm)) {}
    uint32_t call(uint32_t cnps, uint64_t rttNs, bool updated = true) {
        mango_pcc_context_t ctx = context(window, cnps, rttNs, updated);
        window = algorithm.event(block.data(), &ctx).new_window;
        return window;
    }
};

// Flows of one algorithm sharing a 40 Gbit/s link, one joining every `staggerUs`. Rates are
// each flow's throughput per millisecond, judged from the first millisecond that starts after
// the last flow joined: one in which a flow sent for only part of the time says nothing.
struct FairnessResult {
    double firstFairMs = -1;         // end of the first such millisecond with Jain >= 0.95
    double worstDeviationAfter = 0;  // largest |rate - share| / share from then on
    double lastJain = 0;             // Jain index of each flow's average over the last 20 ms
    double lastUtilization = 0;      // the link's use over the last 20 ms
};

FairnessResult shareLink(const char* name, int flows, double staggerUs, uint64_t seed = 1) {
    const int untilMs = 40;
    const PccAlgorithm& algorithm = *findPccAlgorithm(name);
    SimulatedPccEngine engine(40'000 * 10 / 8);  // a line-rate window
    REQUIRE(engine.configureInterval(10).ok());
    std::vector<uint8_t> block = defaultParamBlock(algorithm);  // the papers' defaults
    REQUIRE(engine.registerAlgorithm(1, algorithm, block).ok());
    REQUIRE(engine.run(1).ok());
    FluidLinkConfig config;
    config.seed = seed;
    FluidLink link(config, engine);
    for (int i = 0; i < flows; ++i) {
        uint32_t qpn = 0x100 + static_cast<uint32_t>(i);
        REQUIRE(engine.apply(1, std::span<const uint32_t>(&qpn, 1)).ok());
        link.addFlow(qpn, i * staggerUs);
    }
    FairnessResult result;
    double share = config.capacityGbps / flows;
    double lastStart = (flows - 1) * staggerUs / 1000;
    std::vector<double> lastAverages(flows, 0);
    for (int ms = 1; ms <= untilMs; ++ms) {
        link.runUntil(ms * 1000.0);
        std::vector<double> rates = link.takeAverageRatesGbps();
        if (result.firstFairMs < 0 && ms - 1 >= lastStart && jainFairness(rates) >= 0.95)
            result.firstFairMs = ms;
        double worst = 0;
        for (double r : rates) worst = std::max(worst, std::abs(r - share) / share);
        if (result.firstFairMs >= 0 && ms > result.firstFairMs) {
            result.worstDeviationAfter = std::max(result.worstDeviationAfter, worst);
        }
        if (ms > untilMs - 20) {
            for (size_t i = 0; i < rates.size(); ++i) lastAverages[i] += rates[i] / 20;
        }
    }
    result.lastJain = jainFairness(lastAverages);
    for (double r : lastAverages) result.lastUtilization += r / config.capacityGbps;
    return result;
}

// An algorithm that records what the framework gave it.
mango_pcc_context_t lastContext;
mango_pcc_result_t probeEvent(void*, const mango_pcc_context_t* ctx) {
    lastContext = *ctx;
    mango_pcc_result_t r{};
    r.new_window = ctx->current_window + 1;
    return r;
}
void probeInit(void* block) { *static_cast<uint32_t*>(block) = 7; }
const mango_pcc_param_t probeParams[] = {{"seven", MANGO_PCC_PARAM_U32, 0}};
const PccAlgorithm probeCnp{"probe", "",        probeEvent, MANGO_PCC_METRIC_CNP,
                            4,       probeInit, probeParams};
const PccAlgorithm probeRtt{"probe", "",        probeEvent, MANGO_PCC_METRIC_RTT,
                            4,       probeInit, probeParams};

HostPlan twoSlotPlan() {
    return test::planOf(R"(
 sched-leaf
  name: a
  sl: 1
  pcc-slot: 1
  pcc-algorithm: dcqcn
 end-sched-leaf
 sched-leaf
  name: b
  sl: 2
  pcc-slot: 3
  pcc-algorithm: swift
 end-sched-leaf
)");
}

}  // namespace

TEST_CASE("the shipped algorithms are exactly the ones a policy may name", "[host-sched][pcc]") {
    std::string names;
    for (const PccAlgorithm& a : pccAlgorithms()) {
        CHECK(isKnownPccAlgorithm(a.name));
        names += (names.empty() ? "" : ", ") + std::string(a.name);
    }
    CHECK(names == knownPccAlgorithmList());
    CHECK(findPccAlgorithm("Swift") == &pccAlgorithms()[1]);
    CHECK(findPccAlgorithm("timely") == nullptr);
}

TEST_CASE("the context and result have the seed's sizes and field order", "[host-sched][pcc]") {
    CHECK(sizeof(mango_pcc_context_t) == 64);
    CHECK(sizeof(mango_pcc_result_t) == 32);
    CHECK(offsetof(mango_pcc_context_t, current_window) < offsetof(mango_pcc_context_t, cnp_delta));
    CHECK(offsetof(mango_pcc_context_t, latest_rtt_ns) <
          offsetof(mango_pcc_context_t, rtt_updated));
    CHECK(offsetof(mango_pcc_context_t, active_qp_count) <
          offsetof(mango_pcc_context_t, _reserved));
    CHECK(offsetof(mango_pcc_result_t, new_window) == 0);
}

TEST_CASE(
    "DCQCN starts at line rate, halves on a CNP with alpha 1, and recovers halfway per timer event",
    "[host-sched][pcc][dcqcn]") {
    Caller d("dcqcn");
    // 40 Gbit/s for a 10 us RTT is 50,000 bytes in flight.
    CHECK(d.call(0, 10'000) == 50'000);
    CHECK(d.call(1, 10'000) == 25'000);  // R_T = 40G, R_C = 40G * (1 - 1/2)
    for (int i = 0; i < 5; ++i) CHECK(d.call(0, 10'000) == 25'000);  // 50 us: no timer event yet
    // At 60 us the 55 us timer fires: fast recovery R_C = (R_T + R_C) / 2 = 30G.
    CHECK(d.call(0, 10'000) == 37'500);
}

TEST_CASE("DCQCN raises its target by R_AI once F timer events passed without a CNP",
          "[host-sched][pcc][dcqcn]") {
    Caller d("dcqcn");
    REQUIRE(setParam(d.algorithm, d.block, "line_rate_mbps", "100000"));
    d.call(0, 10'000);
    d.call(1, 10'000);  // R_T = 100G, R_C = 50G, alpha stays 1
    d.call(1, 10'000);  // R_T = 50G, R_C = 25G
    // Events at 55, 110, 165, 220 us: fast recovery toward 50G; at 275 us (the fifth) the
    // target grows by 40 Mbit/s: R_C = (50040 + 48437.5) / 2.
    for (int i = 0; i < 27; ++i) d.call(0, 10'000);
    CHECK(d.window == static_cast<uint32_t>(48'437.5 * 10'000 / 8000));
    d.call(0, 10'000);
    CHECK(d.window == static_cast<uint32_t>((50'040 + 48'437.5) / 2 * 10'000 / 8000));
}

TEST_CASE("DCQCN's alpha decays without CNPs, so later cuts are gentler",
          "[host-sched][pcc][dcqcn]") {
    Caller d("dcqcn");
    d.call(0, 10'000);
    // Before its first CNP a flow is not rate limited: alpha keeps its initial 1 however long
    // it sends, so the first cut halves the rate.
    for (int i = 0; i < 600; ++i) d.call(0, 10'000);
    CHECK(d.call(1, 10'000) == 25'000);
    // 6 ms without a CNP after it: alpha = (1 - 1/256)^109, about 0.65, and R_C back at line
    // rate.
    for (int i = 0; i < 600; ++i) d.call(0, 10'000);
    CHECK(d.window == 50'000);
    double alpha = std::pow(1 - 1.0 / 256, 6000 / 55);
    uint32_t cut = d.call(1, 10'000);
    CHECK(cut == Approx(50'000 * (1 - alpha / 2)).margin(200));
}

TEST_CASE("Swift grows additively below its target delay", "[host-sched][pcc][swift]") {
    Caller s("swift");
    s.window = 10 * 4096;
    // 20 us is below the 25 us base target: ai / cwnd per ACK, ~cwnd * 10 / 20 ACKs.
    CHECK(s.call(0, 20'000) == static_cast<uint32_t>(10.5 * 4096));
    // A call without a new RTT sample changes nothing.
    CHECK(s.call(0, 20'000, false) == static_cast<uint32_t>(10.5 * 4096));
}

TEST_CASE("Swift's multiplicative decrease is bounded by max_mdf and happens once per RTT",
          "[host-sched][pcc][swift]") {
    Caller s("swift");
    s.window = 10 * 4096;
    // 100 us is far above the target: 1 - 0.8 * (100 - ~35) / 100 < 0.5, so max_mdf bounds it.
    CHECK(s.call(0, 100'000) == 5 * 4096);
    for (int i = 0; i < 9; ++i) CHECK(s.call(0, 100'000) == 5 * 4096);  // within the RTT
    // One RTT later: the smaller window has a larger target (flow scaling, section 3), so
    // this decrease is proportional: 1 - 0.8 * (delay - target) / delay, just above 1/2.
    double alpha = 125'000 / (1 / std::sqrt(0.1) - 1 / std::sqrt(100.0));
    double target = 25'000 + 1'000 + alpha * (1 / std::sqrt(5.0) - 1 / std::sqrt(100.0));
    double factor = 1 - 0.8 * (100'000 - target) / 100'000;
    CHECK(factor > 0.5);
    CHECK(s.call(0, 100'000) == static_cast<uint32_t>(5 * factor * 4096));
    // Slightly above the target the decrease is proportional, not the maximum.
    Caller t("swift");
    t.window = 10 * 4096;
    uint32_t w = t.call(0, 40'000);
    CHECK(w > 8 * 4096);
    CHECK(w < 10 * 4096);
}

TEST_CASE("the simulated engine honours the seed's contract", "[host-sched][pcc][engine]") {
    SimulatedPccEngine engine(1000);
    std::vector<uint8_t> block(4);
    probeInit(block.data());
    CHECK(engine.registerAlgorithm(16, probeCnp, block).code == -EINVAL);
    CHECK(engine.registerAlgorithm(1, probeCnp, std::vector<uint8_t>(3)).code == -EINVAL);
    REQUIRE(engine.registerAlgorithm(1, probeCnp, block).ok());
    CHECK(engine.registerAlgorithm(1, probeCnp, block).code == -EBUSY);
    CHECK(engine.unregisterAlgorithm(2).code == -ENOENT);
    uint32_t qps[] = {5, 6};
    CHECK(engine.apply(2, qps).code == -ENOENT);
    REQUIRE(engine.apply(1, qps).ok());
    CHECK(engine.cycle() == 0);  // not running
    REQUIRE(engine.run(1).ok());
    engine.signal(5, {2, 30'000, true});
    CHECK(engine.cycle() == 2);
    CHECK(lastContext.active_qp_count == 2);
    engine.signal(6, {1, 30'000, true});
    engine.cycle();
    // Only the metrics the algorithm asked for are filled in.
    CHECK(lastContext.cnp_delta == 1);
    CHECK(lastContext.latest_rtt_ns == 0);
    CHECK(engine.cnpCount(5) == 2);
    uint32_t window = 0;
    REQUIRE(engine.window(5, window).ok());
    CHECK(window == 1002);
    CHECK(engine.windowUpdates(5) == 2);

    REQUIRE(engine.registerAlgorithm(2, probeRtt, block).ok());
    uint32_t five[] = {5};
    REQUIRE(engine.apply(2, five).ok());
    CHECK(engine.windowUpdates(5) == 0);  // another slot: the count restarts
    engine.signal(5, {4, 30'000, true});
    engine.cycle();
    CHECK(engine.slotOf(5) == 2u);
    REQUIRE(engine.unregisterAlgorithm(2).ok());
    CHECK_FALSE(engine.slotOf(5));
}

TEST_CASE("slots are installed from the plan, applied to QPs and tuned by name",
          "[host-sched][pcc][slots]") {
    auto owned = std::make_unique<SimulatedPccEngine>();
    SimulatedPccEngine& engine = *owned;
    PccSlots slots(std::move(owned), 20);
    REQUIRE(slots.install(twoSlotPlan()).ok());
    CHECK(engine.running());
    CHECK(engine.intervalUs() == 20);
    REQUIRE(slots.algorithmOf(1));
    CHECK(slots.algorithmOf(1)->name == "dcqcn");
    CHECK(slots.algorithmOf(3)->name == "swift");
    CHECK(slots.applyToQp(2, 9).code == -ENOENT);
    REQUIRE(slots.applyToQp(3, 9).ok());
    CHECK(slots.slotOfQp(9) == 3u);
    CHECK(engine.slotOf(9) == 3u);
    uint32_t list[] = {10, 11};
    REQUIRE(slots.apply(1, list).ok());
    CHECK(engine.slotOf(11) == 1u);
    CHECK(slots.qps().size() == 3);

    std::vector<std::pair<std::string, std::string>> params;
    REQUIRE(slots.params(1, params).ok());
    CHECK(params.front() == std::pair<std::string, std::string>{"g", "0.00390625"});
    bool interval = false;
    for (auto& [k, v] : params) interval |= k == "interval_us" && v == "20";
    CHECK(interval);
    REQUIRE(slots.setParam(3, "ai", "2.5").ok());
    REQUIRE(slots.params(3, params).ok());
    CHECK(params.front() == std::pair<std::string, std::string>{"ai", "2.5"});
    CHECK(slots.setParam(3, "alpha", "1").code == -EINVAL);
    CHECK(slots.setParam(3, "ai", "fast").code == -EINVAL);

    REQUIRE(engine.slotOf(9));
    REQUIRE(slots.forgetQp(9).ok());
    CHECK_FALSE(slots.slotOfQp(9));
    CHECK_FALSE(engine.slotOf(9));  // back to the device's own congestion control
    REQUIRE(slots.uninstall().ok());
    CHECK_FALSE(engine.running());
    CHECK_FALSE(slots.algorithmOf(1));
}

TEST_CASE("the libmango backend drives the library it loads, through the documented calls",
          "[host-sched][pcc][mango]") {
    setenv("IBQOS_LIBMANGO", MANGO_STANDIN, 1);
    std::string error;
    auto engine = openPccEngine("mango", "mlx5_0", error);
    REQUIRE(engine);
    CHECK(engine->kind() == "mango");
    auto* raw = engine.get();
    {
        PccSlots slots(std::move(engine), 10);
        REQUIRE(slots.install(twoSlotPlan()).ok());
        REQUIRE(slots.applyToQp(1, 0x100).ok());
        CHECK(slots.applyToQp(1, 0x999).code == -ENOENT);
        // The stand-in runs each applied QP's algorithm once per run, with one CNP and a 20 us
        // RTT: DCQCN cuts its line rate to 20 Gbit/s, 50,000 bytes per 20 us.
        REQUIRE(raw->stop().ok());
        REQUIRE(raw->run(1).ok());
        uint32_t window = 0;
        REQUIRE(raw->window(0x100, window).ok());
        CHECK(window == 50'000);
        REQUIRE(slots.setParam(1, "g", "0.5").ok());
        std::vector<std::pair<std::string, std::string>> params;
        REQUIRE(slots.params(1, params).ok());
        CHECK(params.front().second == "0.5");
    }
    void* handle = dlopen(MANGO_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(handle);
    auto calls = reinterpret_cast<const char* (*)()>(dlsym(handle, "mango_standin_calls"))();
    std::string log = calls;
    CHECK(log.find("create mlx5_0\nconfig interval=10\nreg_algo_event slot=1 metrics=3") !=
          std::string::npos);
    CHECK(log.find("params_register slot=1 count=11") != std::string::npos);
    CHECK(log.find("reg_algo_event slot=3 metrics=2") != std::string::npos);
    CHECK(log.find("apply_algo slot=1 qps=256\n") != std::string::npos);
    CHECK(log.find("walk_params slot=1 mode=1") != std::string::npos);
    CHECK(log.find("stop\nunreg_algo slot=1\nunreg_algo slot=3\ndestroy") != std::string::npos);

    CHECK_FALSE(openPccEngine("mango", "missing0", error));
    CHECK(error.find("mango_pcc_create(missing0)") != std::string::npos);
    setenv("IBQOS_LIBMANGO", "/nonexistent/libmango.so", 1);
    CHECK_FALSE(openPccEngine("mango", "mlx5_0", error));
    CHECK(error.find("/nonexistent/libmango.so cannot be loaded") != std::string::npos);
    auto fallback = openPccEngine("auto", "mlx5_0", error);
    REQUIRE(fallback);
    CHECK(fallback->kind() == "simulated");
    unsetenv("IBQOS_LIBMANGO");
}

TEST_CASE("2 and 8 flows reach fairness within 10 ms and then keep within 10 % of their share",
          "[host-sched][pcc][fairness]") {
    // Two flows: the second joins after the first has had the link to itself for 1 ms.
    // Eight flows: one joins every 100 us.
    struct Case {
        const char* algorithm;
        int flows;
        double staggerUs;
    };
    for (Case c : {Case{"swift", 2, 1000}, Case{"swift", 8, 100}}) {
        INFO(c.flows << " " << c.algorithm << " flows");
        FairnessResult r = shareLink(c.algorithm, c.flows, c.staggerUs);
        CHECK(r.firstFairMs > 0);
        CHECK(r.firstFairMs <= 10);
        CHECK(r.worstDeviationAfter <= 0.10);
    }
}

TEST_CASE(
    "DCQCN flows with the paper's parameters share the link fairly over 20 ms, but miss the "
    "10 ms and 10 % target",
    "[host-sched][pcc][fairness][dcqcn]") {
    // The same two cases. A flow joining at line rate fills the queue to around Kmax before the
    // first marks come back; every flow then gets a CNP nearly every 50 us until the queue drains,
    // each one nearly halving its rate, and R_AI = 40 Mbit/s per 55 us brings them back to their
    // share only after many milliseconds. Near the share the queue holds 10-80 KB and marks at most
    // one packet in 250, so each flow gets one to three CNPs a millisecond, at random: its rate
    // swings by more than 10 % from one millisecond to the next. What holds is fairness on average,
    // for these seeds of the marking as for the 50 tried. Figures: docs/ibqos-agent.8.scd,
    // CONGESTION-CONTROL ALGORITHMS, Convergence.
    for (auto [flows, staggerUs] : {std::pair{2, 1000.0}, std::pair{8, 100.0}}) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            INFO(flows << " dcqcn flows, marking seed " << seed);
            FairnessResult r = shareLink("dcqcn", flows, staggerUs, seed);
            CHECK(r.firstFairMs > 0);
            CHECK(r.lastJain >= 0.9);
            CHECK(r.lastUtilization >= 0.95);
            CHECK(r.worstDeviationAfter > 0.10);  // the target is missed
        }
    }
}
