// SPDX-License-Identifier: MIT
// UmadTransport: libibumad port, SA agent registration, sends and receives.
#include "host-sched/sa-client/umad_transport.hpp"

#include <endian.h>
#include <infiniband/umad.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibqos::host {

namespace {

constexpr int Qp1 = 1;
constexpr uint32_t Qp1Qkey = 0x80010000;
constexpr int RmppVersion = 1;
constexpr size_t MaxAnswer = size_t{1} << 24;  // bigger than any RMPP transfer of an SA

std::string errnoText(int error) { return std::strerror(error < 0 ? -error : error); }

const char* portStateName(unsigned state) {
    static const char* const names[] = {"no change", "down", "initializing", "armed", "active"};
    return state < 5 ? names[state] : "unknown";
}

}  // namespace

std::unique_ptr<UmadTransport> UmadTransport::open(const std::string& caName, int portNumber,
                                                   std::string& error) {
    if (umad_init() < 0) {
        error = "libibumad cannot be initialised";
        return nullptr;
    }
    umad_port_t info{};
    const char* name = caName.empty() ? nullptr : caName.c_str();
    std::string which = (caName.empty() ? std::string("the first HCA") : "HCA " + caName) +
                        (portNumber ? " port " + std::to_string(portNumber) : std::string());
    if (int rc = umad_get_port(name, portNumber, &info); rc < 0) {
        error = "cannot open " + which + ": " + errnoText(rc);
        return nullptr;
    }
    LocalPort port;
    port.caName = info.ca_name;
    port.port = info.portnum;
    port.lid = static_cast<uint16_t>(info.base_lid);
    port.lmc = static_cast<uint8_t>(info.lmc);
    port.smLid = static_cast<uint16_t>(info.sm_lid);
    port.smSl = static_cast<uint8_t>(info.sm_sl);
    port.gid = ib::Gid::fromParts(be64toh(info.gid_prefix), be64toh(info.port_guid));
    unsigned state = info.state;
    umad_release_port(&info);
    std::string where = port.caName + "/" + std::to_string(port.port);
    if (state != 4) {
        error = "port " + where + " is " + portStateName(state) + ", not active";
        return nullptr;
    }
    if (port.lid == 0) {
        error = "port " + where + " has no LID yet";
        return nullptr;
    }
    int fd = umad_open_port(port.caName.c_str(), port.port);
    if (fd < 0) {
        error = "cannot open the umad device of " + where + ": " + errnoText(fd);
        return nullptr;
    }
    int agent = umad_register(fd, ib::SaClass, ib::SaClassVersion, RmppVersion, nullptr);
    if (agent < 0) {
        error = "cannot register an SA agent on " + where + ": " + errnoText(agent);
        umad_close_port(fd);
        return nullptr;
    }
    return std::unique_ptr<UmadTransport>(new UmadTransport(std::move(port), fd, agent));
}

UmadTransport::UmadTransport(LocalPort port, int fd, int agent)
    : port_(std::move(port)), fd_(fd), agent_(agent), buffer_(umad_size() + 64 * 1024) {}

UmadTransport::~UmadTransport() {
    umad_unregister(fd_, agent_);
    umad_close_port(fd_);
}

std::string UmadTransport::send(std::span<const uint8_t> mad, std::chrono::milliseconds timeout) {
    std::vector<uint8_t> request(umad_size() + mad.size(), 0);
    std::copy(mad.begin(), mad.end(), static_cast<uint8_t*>(umad_get_mad(request.data())));
    umad_set_addr(request.data(), port_.smLid, Qp1, port_.smSl, static_cast<int>(Qp1Qkey));
    // The MAD layer waits `timeout` for the answer and reports a request it gave up on; the
    // client does its own retries, so the layer makes none.
    int ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, 1 << 30));
    if (int rc = umad_send(fd_, agent_, request.data(), static_cast<int>(mad.size()), ms, 0);
        rc < 0) {
        return errnoText(errno ? errno : rc);
    }
    return {};
}

Received UmadTransport::receive(std::chrono::milliseconds timeout) {
    Received in;
    // umad_recv blocks forever with a 0 timeout, so wait at least a millisecond.
    int ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, 1 << 30));
    for (;;) {
        int length = static_cast<int>(buffer_.size() - umad_size());
        errno = 0;
        int rc = umad_recv(fd_, buffer_.data(), &length, ms);
        if (rc >= 0) {
            uint8_t* mad = static_cast<uint8_t*>(umad_get_mad(buffer_.data()));
            if (int status = umad_status(buffer_.data()); status != 0) {
                // The MAD layer returns our own request with an error status (ETIMEDOUT when
                // no answer came in time).
                in.status = ReceiveStatus::SendTimedOut;
                in.message = "the MAD layer reports " + errnoText(status);
                uint64_t tid = 0;
                std::memcpy(&tid, mad + 8, sizeof tid);
                in.transactionId = be64toh(tid);
                return in;
            }
            size_t size = std::min<size_t>(static_cast<size_t>(std::max(length, 0)),
                                           buffer_.size() - umad_size());
            in.status = ReceiveStatus::Mad;
            in.mad.assign(mad, mad + size);
            return in;
        }
        int error = errno ? errno : -rc;
        if (error == ETIMEDOUT || error == EAGAIN) {
            in.status = ReceiveStatus::Timeout;
            return in;
        }
        if (error == EINTR) continue;
        if (error == ENOSPC && static_cast<size_t>(length) <= MaxAnswer &&
            static_cast<size_t>(length) > buffer_.size() - umad_size()) {
            buffer_.resize(umad_size() + static_cast<size_t>(length));
            continue;
        }
        in.status = ReceiveStatus::Error;
        in.message = errnoText(error);
        return in;
    }
}

}  // namespace ibqos::host
