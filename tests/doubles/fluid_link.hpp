// SPDX-License-Identifier: MIT
// FluidLink: a fluid model of flows sharing one congested link, driving a simulated PCC engine.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "host-sched/pcc/pcc_simulated.hpp"

namespace ibqos::host {

// The link and the network around the senders.
struct FluidLinkConfig {
    double capacityGbps = 40;
    double baseRttUs = 10;        // RTT with empty queues
    uint32_t packetBytes = 1024;  // RoCE payload per packet (marking is per packet)
    // The congestion point marks ECN like RED (DCQCN section 3.1): each arriving packet with
    // a probability of the queue it finds, 0 below Kmin, rising linearly to Pmax at Kmax, 1
    // above; the paper's 5 KB, 200 KB and 1 %.
    double kminBytes = 5'000;
    double kmaxBytes = 200'000;
    double pmax = 0.01;
    // The notification point sends at most one CNP per flow in this interval, at its end if a
    // marked packet arrived during it (section 3.2).
    double cnpIntervalUs = 50;
    double stepUs = 0.25;  // integration step
    uint64_t seed = 1;     // of the marking decisions: a run is reproducible
};

// Flows are QPs of the engine, each limited by its window: it sends window / RTT, RTT being
// the base RTT plus the queue's delay, and never more than the line rate. The queue grows
// by what arrives beyond the capacity. A sender's rate reaches the queue at once; a packet
// entering it waits its queueing delay, reaches the receiver half a base RTT later, and the
// receiver's answer takes the other half back: a CNP for a marked packet, an RTT sample
// (base RTT plus that queueing delay) for any. The engine's algorithms run every engine
// interval with the CNPs and RTT samples that arrived in between.
class FluidLink {
  public:
    FluidLink(FluidLinkConfig config, SimulatedPccEngine& engine);

    // A flow of an engine QP (already applied to a slot) that starts sending at startUs.
    void addFlow(uint32_t qpNum, double startUs);
    void runUntil(double us);

    double nowUs() const { return now_; }
    double queueBytes() const { return queue_; }
    // Each flow's throughput since the previous call (Gbit/s), in addFlow order.
    std::vector<double> takeAverageRatesGbps();

  private:
    struct Flow {
        uint32_t qpNum = 0;
        double startUs = 0;
        double rateBps = 0;  // bytes per us
        double lastCnpUs = -1e18;
        double partialPacketBytes = 0;    // sent, but not yet a whole packet
        std::deque<double> markArrivals;  // when marked packets reach the receiver
        bool markPending = false;         // a marked packet arrived in the current CNP window
        std::deque<double> cnpArrivals;   // when CNPs reach the sender
        double bytesSinceTake = 0;
    };

    double uniform();
    double markProbability(double queue) const;
    void notifyMarked(Flow& f, double atUs);
    void notifyWindowEnd(Flow& f, double nowUs);
    void sendCnp(Flow& f, double atUs);
    void step();

    FluidLinkConfig config_;
    SimulatedPccEngine& engine_;
    std::mt19937_64 rng_;
    std::vector<Flow> flows_;
    double now_ = 0;
    double queue_ = 0;
    double lastTakeUs_ = 0;
    double nextCycleUs_ = 0;
    struct RttSample {
        double arrivalUs;  // when the ACK reaches the sender
        double rttUs;
    };
    std::deque<RttSample> rttSamples_;  // in flight, oldest first
    double lastRttSampleUs_;
};

// Jain's fairness index of a set of rates: 1 when equal, 1/n when one takes everything.
double jainFairness(const std::vector<double>& rates);

}  // namespace ibqos::host
