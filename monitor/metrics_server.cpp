// SPDX-License-Identifier: MIT
// MetricsServer: libmicrohttpd's own thread answers from the last published text, or renders a
// page.
#include "monitor/metrics_server.hpp"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <optional>

#include "common/text.hpp"

namespace ibqos::monitor {

namespace {

const char* const IndexPage =
    "<html><head><title>ibqos monitor</title></head><body><h1>ibqos monitor</h1><ul>"
    "<li><a href=\"/metrics\">/metrics</a>: Prometheus text format</li>"
    "<li><a href=\"/report.json\">/report.json</a>: the last scrape's report</li>"
    "<li><a href=\"/shares.svg\">/shares.svg</a>: achieved and intended VL shares</li>"
    "</ul></body></html>\n";

MHD_Result reply(MHD_Connection* connection, unsigned status, const std::string& body,
                 const char* type) {
    MHD_Response* response = MHD_create_response_from_buffer(
        body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!response) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

// libmicrohttpd's access handler.
MHD_Result handle(void* server, MHD_Connection* connection, const char* url, const char* method,
                  const char*, const char*, size_t*, void**) {
    return static_cast<MHD_Result>(
        static_cast<MetricsServer*>(server)->answer(connection, url, method));
}

}  // namespace

int MetricsServer::answer(MHD_Connection* connection, const char* url, const char* method) {
    ++requests_;
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", "text/plain");
    const std::string path = url;
    if (path == "/") return reply(connection, MHD_HTTP_OK, IndexPage, "text/html; charset=utf-8");
    std::shared_ptr<const std::string> metrics;
    const Rendered* page = nullptr;
    {
        std::lock_guard<std::mutex> lock(lock_);
        metrics = metrics_;
        if (auto it = pages_.find(path); it != pages_.end()) page = &it->second;
    }
    std::optional<std::string> body;
    const char* type = "text/plain; version=0.0.4; charset=utf-8";
    if (path == "/metrics") {
        if (metrics) body = *metrics;
    } else if (page) {
        body = page->render();
        type = page->contentType.c_str();
    } else {
        return reply(connection, MHD_HTTP_NOT_FOUND, "not found\n", "text/plain");
    }
    if (!body)
        return reply(connection, MHD_HTTP_SERVICE_UNAVAILABLE, "no scrape has finished yet\n",
                     "text/plain");
    return reply(connection, MHD_HTTP_OK, *body, type);
}

std::unique_ptr<MetricsServer> MetricsServer::start(const std::string& listen, std::string& error) {
    std::string host, service = listen;
    if (auto colon = listen.rfind(':'); colon != std::string::npos) {
        host = listen.substr(0, colon);
        service = listen.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
            host = host.substr(1, host.size() - 2);
    }
    std::optional<uint64_t> port = parseNumber(service, 10);
    if (!port || *port > 65535) {
        error = "--listen takes [ADDRESS:]PORT, not '" + listen + "'";
        return nullptr;
    }
    std::unique_ptr<MetricsServer> server(new MetricsServer());
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    addrinfo* address = nullptr;
    if (host.empty()) {
        flags |= MHD_USE_DUAL_STACK;
    } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &address);
        if (rc != 0) {
            error = "--listen: cannot resolve '" + host + "': " + gai_strerror(rc);
            return nullptr;
        }
        if (address->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    }
    MHD_AccessHandlerCallback handler = &handle;
    server->daemon_ =
        address
            ? MHD_start_daemon(flags, static_cast<uint16_t>(*port), nullptr, nullptr, handler,
                               server.get(), MHD_OPTION_SOCK_ADDR, address->ai_addr,
                               MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END)
            : MHD_start_daemon(flags, static_cast<uint16_t>(*port), nullptr, nullptr, handler,
                               server.get(), MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (address) freeaddrinfo(address);
    if (!server->daemon_) {
        error = "cannot listen on '" + listen + "' (in use, or not an address of this host?)";
        return nullptr;
    }
    const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
    server->port_ = info ? info->port : static_cast<uint16_t>(*port);
    return server;
}

MetricsServer::~MetricsServer() {
    if (daemon_) MHD_stop_daemon(daemon_);
}

void MetricsServer::publishMetrics(std::shared_ptr<const std::string> text) {
    std::lock_guard<std::mutex> lock(lock_);
    metrics_ = std::move(text);
}

void MetricsServer::addPage(const std::string& path, const std::string& contentType, Page render) {
    std::lock_guard<std::mutex> lock(lock_);
    pages_[path] = {contentType, std::move(render)};
}

}  // namespace ibqos::monitor
