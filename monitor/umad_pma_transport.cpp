// SPDX-License-Identifier: MIT
// UmadPmaTransport: umad_send and umad_recv on a PerfMgt agent of the local port.
#include "monitor/umad_pma_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

extern "C" {
#include <infiniband/umad.h>
}

namespace ibqos::monitor {

namespace perf = ib::perf;

std::unique_ptr<UmadPmaTransport> UmadPmaTransport::open(const std::string& ca, int port,
                                                         unsigned timeoutMs, std::string& error) {
    std::unique_ptr<UmadPmaTransport> t(new UmadPmaTransport());
    t->timeoutMs_ = timeoutMs;
    t->portId_ = umad_open_port(ca.empty() ? nullptr : ca.c_str(), port);
    if (t->portId_ < 0) {
        error = "cannot open the local port" + (ca.empty() ? std::string() : " of " + ca) +
                " for MADs (is an HCA present, with umad access?)";
        return nullptr;
    }
    t->agent_ = umad_register(t->portId_, perf::Class, perf::ClassVersion, 0, nullptr);
    if (t->agent_ < 0) {
        error = "cannot register a Performance Management agent on the local port";
        return nullptr;
    }
    t->buffer_.resize(umad_size() + IB_MAD_SIZE);
    t->sendBuffer_.resize(umad_size() + IB_MAD_SIZE);
    return t;
}

UmadPmaTransport::~UmadPmaTransport() {
    if (agent_ >= 0) umad_unregister(portId_, agent_);
    if (portId_ >= 0) umad_close_port(portId_);
}

bool UmadPmaTransport::send(const PmaRequest& request, std::string& error) {
    std::vector<uint8_t>& umad = sendBuffer_;
    std::fill(umad.begin(), umad.end(), 0);
    ib_rpc_t rpc{};
    rpc.mgtclass = perf::Class;
    rpc.method = request.method;
    rpc.attr.id = static_cast<unsigned>(request.attribute);
    rpc.attr.mod = 0;
    rpc.timeout = static_cast<int>(timeoutMs_);
    rpc.datasz = IB_PC_DATA_SZ;
    rpc.dataoffs = IB_PC_DATA_OFFS;
    rpc.trid = request.tid;
    ib_portid_t destination{};
    ib_portid_set(&destination, request.lid, 1, IB_DEFAULT_QP1_QKEY);
    PerfData data = request.data;
    int length = mad_build_pkt(umad.data(), &rpc, &destination, nullptr, data.data());
    if (length < 0) {
        error = "cannot build the MAD";
        return false;
    }
    // The collector keeps its own deadline; the kernel's ends a request it never sees answered.
    if (umad_send(portId_, agent_, umad.data(), length, static_cast<int>(timeoutMs_), 0) < 0) {
        error = std::string("umad_send: ") + std::strerror(errno);
        return false;
    }
    return true;
}

bool UmadPmaTransport::receive(int timeoutMs, std::vector<PmaAnswer>& answers) {
    int length = IB_MAD_SIZE;
    std::memset(buffer_.data(), 0, buffer_.size());
    if (umad_recv(portId_, buffer_.data(), &length, timeoutMs) < 0) return false;
    auto* mad = static_cast<uint8_t*>(umad_get_mad(buffer_.data()));
    PmaAnswer answer;
    // The high 32 bits of a transaction ID belong to the agent layers (the kernel's, umad2sim's).
    answer.tid = static_cast<uint32_t>(mad_get_field64(mad, 0, IB_MAD_TRID_F));
    if (umad_status(buffer_.data()) == ETIMEDOUT) {
        answer.timedOut = true;
        answers.push_back(answer);
        return true;
    }
    if (!mad_get_field(mad, 0, IB_MAD_RESPONSE_F)) return true;  // a request to us: not ours
    answer.status = static_cast<uint16_t>(mad_get_field(mad, 0, IB_MAD_STATUS_F));
    std::memcpy(answer.data.data(), mad + IB_PC_DATA_OFFS, answer.data.size());
    answers.push_back(answer);
    return true;
}

void UmadPmaTransport::wait(Clock::time_point until, std::vector<PmaAnswer>& answers) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now()).count();
    if (!receive(static_cast<int>(std::max<long long>(left, 0)), answers)) return;
    while (receive(0, answers)) {
    }
}

}  // namespace ibqos::monitor
