// SPDX-License-Identifier: MIT
// The real PmaTransport: PerfMgt MADs through the local port's libibumad agent, built with
// libibmad (mad_build_pkt); a timeout the kernel reports and one the collector keeps both end a
// request.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "monitor/pma_transport.hpp"

namespace ibqos::monitor {

class UmadPmaTransport : public PmaTransport {
  public:
    // Opens the local port (ca "" = the first, port 0 = the first active) and registers a
    // PerfMgt agent; nullptr with the reason in error.
    static std::unique_ptr<UmadPmaTransport> open(const std::string& ca, int port,
                                                  unsigned timeoutMs, std::string& error);
    ~UmadPmaTransport() override;
    UmadPmaTransport(const UmadPmaTransport&) = delete;
    UmadPmaTransport& operator=(const UmadPmaTransport&) = delete;

    Clock::time_point now() const override { return Clock::now(); }
    bool send(const PmaRequest& request, std::string& error) override;
    void wait(Clock::time_point until, std::vector<PmaAnswer>& answers) override;

  private:
    UmadPmaTransport() = default;
    bool receive(int timeoutMs, std::vector<PmaAnswer>& answers);

    int portId_ = -1;
    int agent_ = -1;
    unsigned timeoutMs_ = 500;
    std::vector<uint8_t> buffer_, sendBuffer_;
};

}  // namespace ibqos::monitor
