// SPDX-License-Identifier: MIT
// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
// the reaction point as a seed 003 event-style algorithm.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "host-sched/pcc/pcc_algorithm.hpp"

namespace ibqos::host {

namespace {

// Tunables first (registered as parameters), then the per-QP state.
struct DcqcnParams {
    double g;                    // alpha gain
    uint32_t alphaTimerUs;       // K: alpha decays after K us without a CNP
    uint32_t rateTimerUs;        // T: rate-increase timer
    uint64_t byteCounterBytes;   // B: rate-increase byte counter
    uint32_t fastRecoverySteps;  // F
    double rateAiMbps;           // R_AI
    double rateHaiMbps;          // R_HAI
    double lineRateMbps;         // the rate a flow starts at and never exceeds
    double minRateMbps;          // floor of the current rate
    uint32_t intervalUs;         // how often the framework calls the algorithm
    uint32_t baseRttNs;          // RTT for the window until the first sample

    uint32_t started;
    uint32_t limited;  // a CNP has arrived: the rate limiter and its timers are running
    double alpha;
    double currentRateMbps;  // R_C
    double targetRateMbps;   // R_T
    uint64_t alphaElapsedNs;
    uint64_t timerElapsedNs;
    double bytesSinceEvent;
    uint32_t timerCount;  // T in the paper's rate-increase stages
    uint32_t byteCount;   // BC
    uint64_t rttNs;
};

void initDcqcn(void* block) {
    auto* p = static_cast<DcqcnParams*>(block);
    *p = DcqcnParams{};
    // The values the paper recommends with its algorithm (section 3) for its 40 Gbit/s
    // testbed: g = 1/256, K = 55 us, T = 55 us, B = 10 MB, F = 5, R_AI = 40 Mbit/s. R_HAI has
    // no value there; 10 x R_AI is ibqos's choice. The CP side (Kmin 5 KB, Kmax 200 KB,
    // Pmax 1 %) and the NP's 50 us CNP interval belong to the link model (fluid_link.hpp).
    p->g = 1.0 / 256;
    p->alphaTimerUs = 55;
    p->rateTimerUs = 55;
    p->byteCounterBytes = 10'000'000;
    p->fastRecoverySteps = 5;
    p->rateAiMbps = 40;
    p->rateHaiMbps = 400;
    p->lineRateMbps = 40'000;
    p->minRateMbps = 10;
    p->intervalUs = 10;
    p->baseRttNs = 10'000;
}

// One rate-increase event (timer expiry or B bytes sent), section 3.3:
//   fast recovery while both counters are below F:   R_C = (R_T + R_C) / 2        (Eq. 3)
//   additive increase once one of them reaches F:    R_T += R_AI, then Eq. 3
//   hyper increase once both have passed F:          R_T += i * R_HAI, then Eq. 3,
//   with i the number of events past F (the QCN hyper-active stage DCQCN keeps).
void increase(DcqcnParams& p) {
    uint32_t high = std::max(p.timerCount, p.byteCount), low = std::min(p.timerCount, p.byteCount);
    if (high < p.fastRecoverySteps) {
        // fast recovery: the target stays
    } else if (low > p.fastRecoverySteps) {
        p.targetRateMbps += (low - p.fastRecoverySteps) * p.rateHaiMbps;
    } else {
        p.targetRateMbps += p.rateAiMbps;
    }
    p.targetRateMbps = std::min(p.targetRateMbps, p.lineRateMbps);
    p.currentRateMbps = (p.targetRateMbps + p.currentRateMbps) / 2;
}

mango_pcc_result_t dcqcnEvent(void* params, const mango_pcc_context_t* ctx) {
    auto& p = *static_cast<DcqcnParams*>(params);
    mango_pcc_result_t result{};
    result.new_window = ctx->current_window;
    if (!p.started) {
        // A new flow starts at line rate with alpha = 1 (section 3.3).
        p.started = 1;
        p.alpha = 1;
        p.currentRateMbps = p.targetRateMbps = p.lineRateMbps;
    }
    if (ctx->latest_rtt_ns) p.rttNs = ctx->latest_rtt_ns;
    uint64_t dtNs = uint64_t{p.intervalUs} * 1000;

    if (ctx->cnp_delta > 0) {
        // A CNP (Eq. 1): remember the rate as the target, cut by alpha/2, raise alpha.
        // One cut per call: the notification point sends at most one CNP per 50 us.
        p.limited = 1;
        p.targetRateMbps = p.currentRateMbps;
        p.currentRateMbps *= 1 - p.alpha / 2;
        p.alpha = (1 - p.g) * p.alpha + p.g;
        p.alphaElapsedNs = p.timerElapsedNs = 0;
        p.bytesSinceEvent = 0;
        p.timerCount = p.byteCount = 0;
    } else if (p.limited) {
        // No CNP for K: alpha decays (Eq. 2). Like the rate-increase timer, the alpha timer
        // starts with the first CNP: until then the flow sends at line rate with its initial
        // alpha, as the reference implementation and the NIC's rate limiter do.
        uint64_t k = uint64_t{std::max(p.alphaTimerUs, 1u)} * 1000;
        for (p.alphaElapsedNs += dtNs; p.alphaElapsedNs >= k; p.alphaElapsedNs -= k) {
            p.alpha *= 1 - p.g;
        }
        // The timer and the byte counter each trigger increase events.
        uint64_t t = uint64_t{std::max(p.rateTimerUs, 1u)} * 1000;
        for (p.timerElapsedNs += dtNs; p.timerElapsedNs >= t; p.timerElapsedNs -= t) {
            ++p.timerCount;
            increase(p);
        }
        double b = static_cast<double>(std::max<uint64_t>(p.byteCounterBytes, 1));
        p.bytesSinceEvent += p.currentRateMbps * 1e6 / 8 * static_cast<double>(dtNs) * 1e-9;
        for (; p.bytesSinceEvent >= b; p.bytesSinceEvent -= b) {
            ++p.byteCount;
            increase(p);
        }
    }
    p.currentRateMbps = std::clamp(p.currentRateMbps, p.minRateMbps, p.lineRateMbps);

    // The framework limits a QP by its window: the bytes the rate sends in one RTT.
    double rtt = static_cast<double>(p.rttNs ? p.rttNs : p.baseRttNs);
    double window = p.currentRateMbps * rtt / 8000;
    result.new_window = static_cast<uint32_t>(
        std::clamp(window, 1.0, static_cast<double>(std::numeric_limits<uint32_t>::max())));
    return result;
}

const mango_pcc_param_t dcqcnParams[] = {
    {"g", MANGO_PCC_PARAM_DOUBLE, offsetof(DcqcnParams, g)},
    {"alpha_timer_us", MANGO_PCC_PARAM_U32, offsetof(DcqcnParams, alphaTimerUs)},
    {"rate_timer_us", MANGO_PCC_PARAM_U32, offsetof(DcqcnParams, rateTimerUs)},
    {"byte_counter_bytes", MANGO_PCC_PARAM_U64, offsetof(DcqcnParams, byteCounterBytes)},
    {"fast_recovery_steps", MANGO_PCC_PARAM_U32, offsetof(DcqcnParams, fastRecoverySteps)},
    {"rate_ai_mbps", MANGO_PCC_PARAM_DOUBLE, offsetof(DcqcnParams, rateAiMbps)},
    {"rate_hai_mbps", MANGO_PCC_PARAM_DOUBLE, offsetof(DcqcnParams, rateHaiMbps)},
    {"line_rate_mbps", MANGO_PCC_PARAM_DOUBLE, offsetof(DcqcnParams, lineRateMbps)},
    {"min_rate_mbps", MANGO_PCC_PARAM_DOUBLE, offsetof(DcqcnParams, minRateMbps)},
    {"interval_us", MANGO_PCC_PARAM_U32, offsetof(DcqcnParams, intervalUs)},
    {"base_rtt_ns", MANGO_PCC_PARAM_U32, offsetof(DcqcnParams, baseRttNs)},
};

}  // namespace

const PccAlgorithm& dcqcnAlgorithm() {
    static const PccAlgorithm algorithm{
        "dcqcn",
        "DCQCN (SIGCOMM 2015): CNP-driven multiplicative decrease with alpha, fast recovery, "
        "additive and hyper increase on a timer and a byte counter",
        dcqcnEvent,
        MANGO_PCC_METRIC_CNP | MANGO_PCC_METRIC_RTT,
        sizeof(DcqcnParams),
        initDcqcn,
        dcqcnParams};
    return algorithm;
}

}  // namespace ibqos::host
