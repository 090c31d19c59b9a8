// SPDX-License-Identifier: MIT
// Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
// Datacenter", SIGCOMM 2020), the sender's window rules as a seed 003 event-style algorithm.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "host-sched/pcc/pcc_algorithm.hpp"

namespace ibqos::host {

namespace {

// Tunables first (registered as parameters), then the per-QP state. Windows in packets.
struct SwiftParams {
    double ai;              // additive increment, packets per RTT
    double beta;            // multiplicative-decrease constant
    double maxMdf;          // largest fraction one decrease may take
    uint32_t baseTargetNs;  // target delay of a one-hop path before scaling
    uint32_t perHopNs;      // topology scaling: added per hop
    uint32_t hops;          // hops of the paths this slot carries
    double fsRangeNs;       // flow scaling: the most it adds to the target
    double fsMinCwnd;       // flow scaling reaches fsRange at this window
    double fsMaxCwnd;       // and 0 at this one
    double minCwnd;
    double maxCwnd;
    uint32_t mtuBytes;    // bytes per packet, to express the window in bytes
    uint32_t intervalUs;  // how often the framework calls the algorithm

    uint32_t started;
    double cwnd;
    uint64_t sinceDecreaseNs;
    uint64_t rttNs;
};

void initSwift(void* block) {
    auto* p = static_cast<SwiftParams*>(block);
    *p = SwiftParams{};
    // Algorithm 1's constants and the target-scaling ranges of section 3: ai = 1 packet per
    // RTT, beta = 0.8, max_mdf = 0.5, flow scaling between 0.1 and 100 packets over a range
    // of 5 x the base target. The base target and per-hop delay depend on the fabric; these
    // suit the simulated link (10 us base RTT).
    p->ai = 1.0;
    p->beta = 0.8;
    p->maxMdf = 0.5;
    p->baseTargetNs = 25'000;
    p->perHopNs = 1'000;
    p->hops = 1;
    p->fsRangeNs = 5.0 * 25'000;
    p->fsMinCwnd = 0.1;
    p->fsMaxCwnd = 100;
    p->minCwnd = 0.001;
    p->maxCwnd = 10'000;
    p->mtuBytes = 4096;
    p->intervalUs = 10;
}

// Section 3 target delay: base + hops x per-hop + flow scaling, where flow scaling is
// alpha / sqrt(cwnd) + beta' clamped to [0, fs_range], with alpha and beta' chosen so that it
// is fs_range at fs_min_cwnd and 0 at fs_max_cwnd: smaller windows get a larger target,
// which pulls competing flows toward fairness.
double targetDelayNs(const SwiftParams& p, double cwnd) {
    double lo = 1 / std::sqrt(p.fsMinCwnd), hi = 1 / std::sqrt(p.fsMaxCwnd);
    double alpha = lo > hi ? p.fsRangeNs / (lo - hi) : 0;
    double betaPrime = -alpha * hi;
    double flow = std::clamp(alpha / std::sqrt(std::max(cwnd, 1e-9)) + betaPrime, 0.0, p.fsRangeNs);
    return p.baseTargetNs + static_cast<double>(p.hops) * p.perHopNs + flow;
}

mango_pcc_result_t swiftEvent(void* params, const mango_pcc_context_t* ctx) {
    auto& p = *static_cast<SwiftParams*>(params);
    mango_pcc_result_t result{};
    result.new_window = ctx->current_window;
    double mtu = std::max(p.mtuBytes, 1u);
    if (!p.started) {
        // Algorithm 1 starts with t_last_decrease = 0: the first decrease is allowed at once.
        p.started = 1;
        p.cwnd = std::clamp(ctx->current_window / mtu, p.minCwnd, p.maxCwnd);
        p.sinceDecreaseNs = UINT64_MAX / 2;
    }
    uint64_t dtNs = uint64_t{p.intervalUs} * 1000;
    if (p.sinceDecreaseNs < UINT64_MAX / 2) p.sinceDecreaseNs += dtNs;
    if (ctx->latest_rtt_ns == 0) {
        result.request_rtt_probe = 1;  // no delay signal yet
        return result;
    }
    p.rttNs = ctx->latest_rtt_ns;
    if (!ctx->rtt_updated) return result;  // react to new measurements only

    double delay = static_cast<double>(p.rttNs);
    double target = targetDelayNs(p, p.cwnd);
    if (delay < target) {
        // Additive increase (Algorithm 1): ai / cwnd per ACKed packet when cwnd >= 1, ai per
        // ACKed packet below 1. The framework calls once per interval, in which about
        // cwnd * interval / rtt packets are ACKed.
        double acked = p.cwnd * static_cast<double>(dtNs) / delay;
        p.cwnd += p.cwnd >= 1 ? p.ai / p.cwnd * acked : p.ai * acked;
    } else if (static_cast<double>(p.sinceDecreaseNs) >= delay) {
        // Multiplicative decrease, at most once per RTT (Algorithm 1's can_decrease):
        // cwnd *= max(1 - beta * (delay - target) / delay, 1 - max_mdf).
        p.cwnd *= std::max(1 - p.beta * (delay - target) / delay, 1 - p.maxMdf);
        p.sinceDecreaseNs = 0;
    }
    p.cwnd = std::clamp(p.cwnd, p.minCwnd, p.maxCwnd);
    // A window below one packet is paced by the framework (rate = window / RTT).
    result.new_window = static_cast<uint32_t>(
        std::clamp(p.cwnd * mtu, 1.0, static_cast<double>(std::numeric_limits<uint32_t>::max())));
    return result;
}

const mango_pcc_param_t swiftParams[] = {
    {"ai", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, ai)},
    {"beta", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, beta)},
    {"max_mdf", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, maxMdf)},
    {"base_target_ns", MANGO_PCC_PARAM_U32, offsetof(SwiftParams, baseTargetNs)},
    {"per_hop_ns", MANGO_PCC_PARAM_U32, offsetof(SwiftParams, perHopNs)},
    {"hops", MANGO_PCC_PARAM_U32, offsetof(SwiftParams, hops)},
    {"fs_range_ns", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, fsRangeNs)},
    {"fs_min_cwnd", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, fsMinCwnd)},
    {"fs_max_cwnd", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, fsMaxCwnd)},
    {"min_cwnd", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, minCwnd)},
    {"max_cwnd", MANGO_PCC_PARAM_DOUBLE, offsetof(SwiftParams, maxCwnd)},
    {"mtu_bytes", MANGO_PCC_PARAM_U32, offsetof(SwiftParams, mtuBytes)},
    {"interval_us", MANGO_PCC_PARAM_U32, offsetof(SwiftParams, intervalUs)},
};

}  // namespace

const PccAlgorithm& swiftAlgorithm() {
    static const PccAlgorithm algorithm{
        "swift",
        "Swift (SIGCOMM 2020): delay target with flow and hop scaling, additive increase, "
        "multiplicative decrease bounded by max_mdf at most once per RTT",
        swiftEvent,
        MANGO_PCC_METRIC_RTT,
        sizeof(SwiftParams),
        initSwift,
        swiftParams};
    return algorithm;
}

}  // namespace ibqos::host
