// SPDX-License-Identifier: MIT
// FluidLink: queue integration, ECN marking, CNP generation, RTT samples, engine cycles.
#include "tests/doubles/fluid_link.hpp"

#include <algorithm>

namespace ibqos::host {

FluidLink::FluidLink(FluidLinkConfig config, SimulatedPccEngine& engine)
    : config_(config), engine_(engine), rng_(config.seed), lastRttSampleUs_(config.baseRttUs) {}

void FluidLink::addFlow(uint32_t qpNum, double startUs) {
    Flow f;
    f.qpNum = qpNum;
    f.startUs = startUs;
    flows_.push_back(f);
}

// A uniform number in [0, 1) from the top 53 bits: the same sequence with every standard
// library, unlike the distributions of <random>.
double FluidLink::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

double FluidLink::markProbability(double queue) const {
    if (queue <= config_.kminBytes) return 0;
    if (queue >= config_.kmaxBytes) return 1;
    return config_.pmax * (queue - config_.kminBytes) / (config_.kmaxBytes - config_.kminBytes);
}

// The notification point (section 3.2): a marked packet for a flow that had no CNP in the
// last N us is answered at once; after that, at most one CNP per N us, sent at the end of a
// window in which a marked packet arrived. Marks inside a window are merged, not lost.
void FluidLink::notifyMarked(Flow& f, double atUs) {
    if (atUs - f.lastCnpUs >= config_.cnpIntervalUs) {
        sendCnp(f, atUs);
    } else {
        f.markPending = true;
    }
}

void FluidLink::notifyWindowEnd(Flow& f, double nowUs) {
    double windowEnd = f.lastCnpUs + config_.cnpIntervalUs;
    if (f.markPending && nowUs >= windowEnd) sendCnp(f, windowEnd);
}

void FluidLink::sendCnp(Flow& f, double atUs) {
    f.lastCnpUs = atUs;
    f.markPending = false;
    f.cnpArrivals.push_back(atUs + config_.baseRttUs / 2);
}

void FluidLink::step() {
    double dt = config_.stepUs;
    double capacity = config_.capacityGbps * 1e3 / 8;  // bytes per us
    double queueDelayUs = queue_ / capacity;
    double rttUs = config_.baseRttUs + queueDelayUs;
    // A packet entering the queue now reaches the receiver after its queueing delay and half
    // the base RTT; the receiver's answer (an ACK, a CNP) takes the other half back. The
    // queue is FIFO, so these times never decrease and the feedback stays in order.
    double atReceiverUs = now_ + queueDelayUs + config_.baseRttUs / 2;
    rttSamples_.push_back({atReceiverUs + config_.baseRttUs / 2, rttUs});

    // The engine runs its algorithms every interval, with the newest RTT sample that has
    // reached the senders.
    if (now_ >= nextCycleUs_) {
        while (!rttSamples_.empty() && rttSamples_.front().arrivalUs <= now_) {
            lastRttSampleUs_ = rttSamples_.front().rttUs;
            rttSamples_.pop_front();
        }
        for (const Flow& f : flows_) {
            if (now_ < f.startUs) continue;
            engine_.signal(f.qpNum, {0, static_cast<uint64_t>(lastRttSampleUs_ * 1000), true});
        }
        engine_.cycle();
        nextCycleUs_ += engine_.intervalUs();
    }

    double arrivals = 0;
    double p = markProbability(queue_);
    for (Flow& f : flows_) {
        if (now_ < f.startUs) {
            f.rateBps = 0;
            continue;
        }
        uint32_t window = 0;
        engine_.window(f.qpNum, window);
        f.rateBps = std::min(window / rttUs, capacity);
        double bytes = f.rateBps * dt;
        arrivals += bytes;
        f.bytesSinceTake += bytes;
        // The fluid becomes packets as it enters the queue, each marked with probability p
        // on its own, as RED does. Marking the expected fraction instead would mark flows of
        // equal rates in step and take away the randomness of the CNPs a flow receives.
        f.partialPacketBytes += bytes;
        for (; f.partialPacketBytes >= config_.packetBytes;
             f.partialPacketBytes -= config_.packetBytes) {
            if (p > 0 && uniform() < p) f.markArrivals.push_back(atReceiverUs);
        }
        while (!f.markArrivals.empty() && f.markArrivals.front() <= now_) {
            notifyWindowEnd(f, f.markArrivals.front());
            notifyMarked(f, f.markArrivals.front());
            f.markArrivals.pop_front();
        }
        notifyWindowEnd(f, now_);
        while (!f.cnpArrivals.empty() && f.cnpArrivals.front() <= now_) {
            f.cnpArrivals.pop_front();
            engine_.signal(f.qpNum, {1, 0, false});
        }
    }
    queue_ = std::max(0.0, queue_ + arrivals - capacity * dt);
    now_ += dt;
}

void FluidLink::runUntil(double us) {
    while (now_ < us) step();
}

std::vector<double> FluidLink::takeAverageRatesGbps() {
    std::vector<double> rates;
    double span = now_ - lastTakeUs_;
    for (Flow& f : flows_) {
        rates.push_back(span > 0 ? f.bytesSinceTake / span * 8 / 1e3 : 0);
        f.bytesSinceTake = 0;
    }
    lastTakeUs_ = now_;
    return rates;
}

double jainFairness(const std::vector<double>& rates) {
    double sum = 0, squares = 0;
    for (double r : rates) {
        sum += r;
        squares += r * r;
    }
    if (rates.empty() || squares == 0) return 0;
    return sum * sum / (static_cast<double>(rates.size()) * squares);
}

}  // namespace ibqos::host
