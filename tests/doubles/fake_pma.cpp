// SPDX-License-Identifier: MIT
// FakePma: answers on a simulated clock, encoded with the collector's own codec (libibmad).
#include "tests/doubles/fake_pma.hpp"

#include <algorithm>

#include "monitor/perf_codec.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;

FakePma::FakePma(std::chrono::microseconds roundTrip, std::chrono::milliseconds collectorTimeout)
    : roundTrip_(roundTrip), collectorTimeout_(collectorTimeout) {}

FakePma::Node& FakePma::addNode(const std::vector<uint16_t>& lids) {
    nodes_.emplace_back();
    for (uint16_t lid : lids) lidToNode_[lid] = nodes_.size() - 1;
    return nodes_.back();
}

size_t FakePma::sentOf(perf::Attribute attribute) const {
    return static_cast<size_t>(std::count_if(
        sent_.begin(), sent_.end(), [&](const Sent& s) { return s.attribute == attribute; }));
}

bool FakePma::send(const PmaRequest& request, std::string& error) {
    auto it = lidToNode_.find(request.lid);
    if (it == lidToNode_.end()) {
        error = "no node at LID " + std::to_string(request.lid);
        return false;
    }
    size_t n = it->second;
    Node& node = nodes_[n];
    uint8_t portSelect = decodePortSelect(request.attribute, request.data);
    sent_.push_back({request.lid, request.attribute, request.method, portSelect});
    for (const InFlight& f : inFlight_)
        if (f.node == n && f.at > now_) ++overlaps_;

    InFlight flight{now_ + roundTrip_, n, true, {}};
    PmaAnswer& answer = flight.answer;
    answer.tid = request.tid;
    answer.data = request.data;
    auto portIt = node.ports.find(portSelect);
    if (node.silent || node.dropped.count(request.attribute)) {
        flight.answered = false;
        flight.at = now_ + collectorTimeout_;
    } else if (node.refused.count(request.attribute)) {
        answer.status = perf::StatusUnsupportedAttribute;
    } else if (request.attribute == perf::Attribute::ClassPortInfo) {
        mad_set_field(answer.data.data(), 0, IB_CPI_CAPMASK_F, node.capabilityMask);
        mad_set_field(answer.data.data(), 0, IB_CPI_CAPMASK2_F, node.capabilityMask2);
    } else if (portIt == node.ports.end()) {
        answer.status = 7u << 2;  // invalid attribute or modifier value: a port it does not have
    } else {
        Counters& counters = portIt->second[request.attribute];
        if (request.method == IB_MAD_METHOD_SET) counters.fill(0);
        for (unsigned i = 0; i < perf::counterCount(request.attribute); ++i)
            encodeCounter(request.attribute, i, counters[i], answer.data);
    }
    inFlight_.push_back(flight);
    size_t outstanding = static_cast<size_t>(std::count_if(
        inFlight_.begin(), inFlight_.end(), [&](const InFlight& f) { return f.at > now_; }));
    maxInFlight_ = std::max(maxInFlight_, outstanding);
    return true;
}

void FakePma::wait(Clock::time_point until, std::vector<PmaAnswer>& answers) {
    Clock::time_point next = until;
    for (const InFlight& f : inFlight_)
        if (f.answered) next = std::min(next, f.at);
    now_ = std::max(now_, next);
    for (const InFlight& f : inFlight_)
        if (f.answered && f.at <= now_) answers.push_back(f.answer);
    inFlight_.erase(std::remove_if(inFlight_.begin(), inFlight_.end(),
                                   [&](const InFlight& f) { return f.at <= now_; }),
                    inFlight_.end());
}

}  // namespace ibqos::monitor
