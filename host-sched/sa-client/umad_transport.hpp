// SPDX-License-Identifier: MIT
// UmadTransport: SA requests through libibumad from one local HCA port.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host-sched/sa-client/sa_client.hpp"

namespace ibqos::host {

// One registered SA agent on a local port. Works against a kernel umad device and, unchanged,
// against ibsim through libumad2sim (LD_PRELOAD).
class UmadTransport : public SaTransport {
  public:
    // Opens caName's port (empty name: the first CA; port 0: its first active port).
    // Returns nullptr and sets error when the port cannot be used.
    static std::unique_ptr<UmadTransport> open(const std::string& caName, int port,
                                               std::string& error);
    ~UmadTransport() override;
    UmadTransport(const UmadTransport&) = delete;
    UmadTransport& operator=(const UmadTransport&) = delete;

    const LocalPort& localPort() const override { return port_; }
    std::string send(std::span<const uint8_t> mad, std::chrono::milliseconds timeout) override;
    Received receive(std::chrono::milliseconds timeout) override;

  private:
    UmadTransport(LocalPort port, int fd, int agent);

    LocalPort port_;
    int fd_;
    int agent_;
    std::vector<uint8_t> buffer_;  // umad_size() header, then the MAD
};

}  // namespace ibqos::host
