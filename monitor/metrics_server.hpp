// SPDX-License-Identifier: MIT
// The monitor's HTTP server (libmicrohttpd, epoll): the pages the scrape loop rendered from its
// last scrape (/metrics, /report.json, /shares.svg), each an immutable buffer every request
// shares. A request never renders, copies a page or sends a MAD, and holds no lock the scrape
// loop waits for. Connections are bounded in total and per client address, slow clients time
// out, and --web-config-file adds TLS and basic auth as Prometheus' exporters do.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "monitor/web_config.hpp"

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

namespace ibqos::monitor {

struct ServerLimits {
    unsigned connections = 8192;          // open at once, in total
    unsigned connectionsPerClient = 128;  // open at once from one address
    unsigned timeoutSeconds = 10;         // a connection idle this long is closed
};

// What a request asks for, decided from its method and path alone (no server library).
struct Route {
    enum class Kind : uint8_t { Index, Page, NotFound, MethodNotAllowed } kind;
    std::string_view page;  // the page's path, for Kind::Page
};
// `pages` is a map of path to anything; a path is matched whole, without its query string.
template <typename Pages>
Route route(std::string_view method, std::string_view url, const Pages& pages) {
    if (method != "GET" && method != "HEAD") return {Route::Kind::MethodNotAllowed, {}};
    url = url.substr(0, url.find('?'));
    if (url == "/") return {Route::Kind::Index, {}};
    auto it = pages.find(std::string(url));
    if (it == pages.end()) return {Route::Kind::NotFound, {}};
    return {Route::Kind::Page, it->first};
}

class MetricsServer {
  public:
    // Listens on "[ADDRESS:]PORT" (ADDRESS an IPv4 address, a name, or [IPv6]; without one,
    // every address, IPv4 and IPv6; PORT 0 picks a free port). nullptr with the reason in error.
    static std::unique_ptr<MetricsServer> start(const std::string& listen,
                                                const ServerLimits& limits,
                                                std::optional<WebConfig> web, std::string& error);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // Declares a page; it answers 503 until its first publication. Call before requests come.
    void addPage(const std::string& path, const std::string& contentType);
    // Serves `body` at `path` from now on (requests under way finish with the previous one).
    void publish(const std::string& path, std::shared_ptr<const std::string> body);
    // The port it listens on.
    uint16_t port() const { return port_; }
    // Requests answered so far, and those refused for want of credentials.
    uint64_t requests() const { return requests_; }
    uint64_t unauthorized() const { return unauthorized_; }

    // Answers one request (libmicrohttpd's threads call it): MHD_YES or MHD_NO.
    int answer(MHD_Connection* connection, const char* url, const char* method);
    // Logs one of libmicrohttpd's messages (one comes with every connection a client drops):
    // at most LogBurst a minute on stderr; the rest are counted, and the count is logged with
    // the first message of a later minute.
    void log(const std::string& message);
    static constexpr unsigned LogBurst = 10;

  private:
    MetricsServer() = default;
    bool authorized(MHD_Connection* connection);

    // One publication of a page: its body and the response every request queues (libmicrohttpd
    // counts its references; the last one frees the body).
    struct Published;
    struct Page {
        std::string contentType;
        std::shared_ptr<Published> current;
    };
    // The replies that never change, made once.
    struct StaticReplies {
        MHD_Response *index = nullptr, *notFound = nullptr, *notAllowed = nullptr,
                     *unavailable = nullptr, *unauthorized = nullptr;
    };
    MHD_Daemon* daemon_ = nullptr;
    StaticReplies replies_;
    // The static replies, for the web config in web_.
    void makeReplies();
    uint16_t port_ = 0;
    std::optional<WebConfig> web_;
    std::mutex lock_;  // guards pages_' pointers and passwords_ (never held across a render)
    std::map<std::string, Page> pages_;
    // Passwords that matched their bcrypt hash, by user (bcrypt costs tens of milliseconds: a
    // scraper that sends the same credentials every scrape pays it once).
    std::map<std::string, std::string> passwords_;
    std::atomic<uint64_t> requests_{0}, unauthorized_{0};
    std::mutex logLock_;
    std::chrono::steady_clock::time_point logWindow_{};
    unsigned logged_ = 0;
    uint64_t suppressed_ = 0;
};

}  // namespace ibqos::monitor
