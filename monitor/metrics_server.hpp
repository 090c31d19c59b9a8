// SPDX-License-Identifier: MIT
// The monitor's HTTP server (libmicrohttpd): /metrics in Prometheus' text format as the scrape
// loop published it, and pages the loop renders on request from its last scrape (/report.json,
// /shares.svg). A request never sends a MAD.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

struct MHD_Daemon;
struct MHD_Connection;

namespace ibqos::monitor {

class MetricsServer {
  public:
    // Renders a page from the last scrape, or nullopt before the first. It runs on the server's
    // thread: it takes whatever lock keeps the scrape loop away.
    using Page = std::function<std::optional<std::string>()>;

    // Listens on "[ADDRESS:]PORT" (ADDRESS an IPv4 address, a name, or [IPv6]; without one,
    // every address, IPv4 and IPv6; PORT 0 picks a free port). nullptr with the reason in error.
    static std::unique_ptr<MetricsServer> start(const std::string& listen, std::string& error);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // Serves this text at /metrics from now on (a big fabric's text is built once a scrape).
    void publishMetrics(std::shared_ptr<const std::string> text);
    // Serves what `render` gives at `path` (rendered for each request: an occasional page
    // costs nothing between requests).
    void addPage(const std::string& path, const std::string& contentType, Page render);
    // The port it listens on.
    uint16_t port() const { return port_; }
    // Requests answered so far.
    uint64_t requests() const { return requests_; }

    // Answers one request (libmicrohttpd's thread calls it): MHD_YES or MHD_NO.
    int answer(MHD_Connection* connection, const char* url, const char* method);

  private:
    MetricsServer() = default;

    struct Rendered {
        std::string contentType;
        Page render;
    };
    MHD_Daemon* daemon_ = nullptr;
    uint16_t port_ = 0;
    std::mutex lock_;
    std::shared_ptr<const std::string> metrics_;
    std::map<std::string, Rendered> pages_;
    std::atomic<uint64_t> requests_{0};
};

}  // namespace ibqos::monitor
