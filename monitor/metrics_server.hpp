// SPDX-License-Identifier: MIT
// The monitor's HTTP server (libmicrohttpd): /metrics in Prometheus' text format, /report.json
// and /shares.svg, each the last scrape's as the scrape loop published it. A request never
// sends a MAD.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

struct MHD_Daemon;
struct MHD_Connection;

namespace ibqos::monitor {

// What one scrape publishes.
struct Published {
    std::string metrics;  // Prometheus text exposition
    std::string json;     // the JSON report
    std::string svg;      // the share history
};

class MetricsServer {
  public:
    // Listens on "[ADDRESS:]PORT" (ADDRESS an IPv4 address, a name, or [IPv6]; without one,
    // every address, IPv4 and IPv6; PORT 0 picks a free port). nullptr with the reason in error.
    static std::unique_ptr<MetricsServer> start(const std::string& listen, std::string& error);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // Serves this from now on.
    void publish(std::shared_ptr<const Published> content);
    // The port it listens on.
    uint16_t port() const { return port_; }
    // Requests answered so far.
    uint64_t requests() const { return requests_; }

    // Answers one request (libmicrohttpd's thread calls it): MHD_YES or MHD_NO.
    int answer(MHD_Connection* connection, const char* url, const char* method);

  private:
    MetricsServer() = default;

    MHD_Daemon* daemon_ = nullptr;
    uint16_t port_ = 0;
    std::mutex lock_;
    std::shared_ptr<const Published> content_;
    std::atomic<uint64_t> requests_{0};
};

}  // namespace ibqos::monitor
