// SPDX-License-Identifier: MIT
// MetricsServer: libmicrohttpd in epoll mode (no select(), so no FD_SETSIZE), with its own
// limits on connections, per-address connections, idle time and per-connection memory; every
// reply is a response object made once and queued by reference.
#include "monitor/metrics_server.hpp"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common/text.hpp"

namespace ibqos::monitor {

namespace {

const char* const IndexPage =
    "<html><head><title>ibqos monitor</title></head><body><h1>ibqos monitor</h1><ul>"
    "<li><a href=\"/metrics\">/metrics</a>: Prometheus text format</li>"
    "<li><a href=\"/report.json\">/report.json</a>: the last scrape's report</li>"
    "<li><a href=\"/shares.svg\">/shares.svg</a>: achieved and intended VL shares</li>"
    "</ul></body></html>\n";

// A response over static text, made once.
MHD_Response* staticResponse(const char* text, const char* type,
                             const std::optional<WebConfig>& web) {
    MHD_Response* response = MHD_create_response_from_buffer(
        std::strlen(text), const_cast<char*>(text), MHD_RESPMEM_PERSISTENT);
    if (!response) throw std::bad_alloc();
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (web)
        for (const auto& [name, value] : web->headers)
            MHD_add_response_header(response, name.c_str(), value.c_str());
    return response;
}

// libmicrohttpd's access handler.
MHD_Result handle(void* server, MHD_Connection* connection, const char* url, const char* method,
                  const char*, const char*, size_t*, void**) {
    return static_cast<MHD_Result>(
        static_cast<MetricsServer*>(server)->answer(connection, url, method));
}

// libmicrohttpd's logger: its message, formatted, to the server's rate-limited log.
void logMessage(void* server, const char* format, va_list arguments) {
    char text[512];
    std::vsnprintf(text, sizeof text, format, arguments);
    std::string message = text;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    static_cast<MetricsServer*>(server)->log(message);
}

// The soft limit on open files raised to what the connections need (a shell's default of 1,024
// would refuse them long before the limit does), within the hard limit.
void raiseFileLimit(unsigned connections) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    const rlim_t wanted = static_cast<rlim_t>(connections) + 256;
    if (limit.rlim_cur >= wanted) return;
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

struct MetricsServer::Published {
    std::shared_ptr<const std::string> body;
    MHD_Response* response = nullptr;
    ~Published() {
        if (response) MHD_destroy_response(response);
    }
};

bool MetricsServer::authorized(MHD_Connection* connection) {
    if (!web_ || web_->users.empty()) return true;
    char* password = nullptr;
    char* user = MHD_basic_auth_get_username_password(connection, &password);
    bool ok = false;
    if (user && password) {
        auto hash = web_->users.find(user);
        if (hash != web_->users.end()) {
            bool cached = false;
            {
                std::lock_guard<std::mutex> lock(lock_);
                auto known = passwords_.find(user);
                cached = known != passwords_.end() && known->second == password;
            }
            ok = cached || bcryptMatches(password, hash->second);
            if (ok && !cached) {
                std::lock_guard<std::mutex> lock(lock_);
                passwords_[user] = password;
            }
        }
    }
    if (user) MHD_free(user);
    if (password) MHD_free(password);
    return ok;
}

void MetricsServer::log(const std::string& message) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(logLock_);
    if (now - logWindow_ >= std::chrono::minutes(1)) {
        if (suppressed_ > 0)
            std::fprintf(stderr, "ibqos monitor: http: %llu more messages in the last minute\n",
                         static_cast<unsigned long long>(suppressed_));
        logWindow_ = now;
        logged_ = 0;
        suppressed_ = 0;
    }
    if (logged_ < LogBurst) {
        ++logged_;
        std::fprintf(stderr, "ibqos monitor: http: %s%s\n", message.c_str(),
                     logged_ == LogBurst ? " (more this minute are counted, not shown)" : "");
    } else {
        ++suppressed_;
    }
}

int MetricsServer::answer(MHD_Connection* connection, const char* url, const char* method) {
    ++requests_;
    if (!authorized(connection)) {
        ++unauthorized_;
        return MHD_queue_response(connection, MHD_HTTP_UNAUTHORIZED, replies_.unauthorized);
    }
    Route r{Route::Kind::NotFound, {}};
    std::shared_ptr<Published> page;
    {
        // (Pages may still be declared while the first requests come.)
        std::lock_guard<std::mutex> lock(lock_);
        r = route(method, url, pages_);
        if (r.kind == Route::Kind::Page) page = pages_.find(std::string(r.page))->second.current;
    }
    switch (r.kind) {
        case Route::Kind::MethodNotAllowed:
            return MHD_queue_response(connection, MHD_HTTP_METHOD_NOT_ALLOWED, replies_.notAllowed);
        case Route::Kind::Index:
            return MHD_queue_response(connection, MHD_HTTP_OK, replies_.index);
        case Route::Kind::NotFound:
            return MHD_queue_response(connection, MHD_HTTP_NOT_FOUND, replies_.notFound);
        case Route::Kind::Page:
            break;
    }
    if (!page)
        return MHD_queue_response(connection, MHD_HTTP_SERVICE_UNAVAILABLE, replies_.unavailable);
    return MHD_queue_response(connection, MHD_HTTP_OK, page->response);
}

namespace {

// --listen's [ADDRESS:]PORT: the address (brackets around an IPv6 one dropped) and the port.
void splitListen(const std::string& listen, std::string& host, std::string& service) {
    service = listen;
    if (auto colon = listen.rfind(':'); colon != std::string::npos) {
        host = listen.substr(0, colon);
        service = listen.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
            host = host.substr(1, host.size() - 2);
    }
}

// libmicrohttpd's options for the server, ended by MHD_OPTION_END.
std::vector<MHD_OptionItem> daemonOptions(MetricsServer* server, const ServerLimits& limits,
                                          const std::optional<WebConfig>& w,
                                          const addrinfo* address, unsigned threads, bool tls) {
    // Options in an array, the TLS and address ones only where they apply.
    std::vector<MHD_OptionItem> options = {
        // (First: libmicrohttpd logs with its own logger until this option is read.)
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&logMessage), server},
        {MHD_OPTION_CONNECTION_LIMIT, limits.connections, nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.connectionsPerClient, nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, limits.timeoutSeconds, nullptr},
        // A request here is a GET line and a few headers.
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, nullptr},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, nullptr},
    };
    if (threads > 1) options.push_back({MHD_OPTION_THREAD_POOL_SIZE, threads, nullptr});
    if (address) options.push_back({MHD_OPTION_SOCK_ADDR, 0, address->ai_addr});
    if (tls) {
        options.push_back(
            {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(w->certificate.c_str())});
        options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(w->key.c_str())});
        if (!w->tlsPriorities.empty())
            options.push_back(
                {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(w->tlsPriorities.c_str())});
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    return options;
}

}  // namespace

void MetricsServer::makeReplies() {
    const std::optional<WebConfig>& w = web_;
    StaticReplies& replies = replies_;
    replies.index = staticResponse(IndexPage, "text/html; charset=utf-8", w);
    replies.notFound = staticResponse("not found\n", "text/plain", w);
    replies.notAllowed = staticResponse("only GET and HEAD\n", "text/plain", w);
    MHD_add_response_header(replies.notAllowed, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    replies.unavailable = staticResponse("no scrape has finished yet\n", "text/plain", w);
    // (libmicrohttpd's own 401 helper adds its header to the response at every call.)
    replies.unauthorized = staticResponse("unauthorized\n", "text/plain", w);
    MHD_add_response_header(replies.unauthorized, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Basic realm=\"ibqos monitor\"");
}

std::unique_ptr<MetricsServer> MetricsServer::start(const std::string& listen,
                                                    const ServerLimits& limits,
                                                    std::optional<WebConfig> web,
                                                    std::string& error) {
    std::string host, service;
    splitListen(listen, host, service);
    std::optional<uint64_t> port = parseNumber(service, 10);
    if (!port || *port > 65535) {
        error = "--listen takes [ADDRESS:]PORT, not '" + listen + "'";
        return nullptr;
    }
    if (web && web->tls() && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
        error =
            "this libmicrohttpd has no TLS: the web config's tls_server_config cannot be served";
        return nullptr;
    }
    std::unique_ptr<MetricsServer> server(new MetricsServer());
    server->web_ = std::move(web);
    const std::optional<WebConfig>& w = server->web_;
    server->makeReplies();
    raiseFileLimit(limits.connections);

    // epoll where the kernel has it, with libmicrohttpd's own thread; basic auth's bcrypt runs in
    // a request's thread, so two threads keep one slow check from holding every scrape.
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
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
    const bool tls = w && w->tls(), auth = w && !w->users.empty();
    if (tls) flags |= MHD_USE_TLS;
    const unsigned threads = auth ? 2 : 1;
    std::vector<MHD_OptionItem> options =
        daemonOptions(server.get(), limits, w, address, threads, tls);
    server->daemon_ =
        MHD_start_daemon(flags, static_cast<uint16_t>(*port), nullptr, nullptr, &handle,
                         server.get(), MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
    if (address) freeaddrinfo(address);
    if (!server->daemon_) {
        error = "cannot listen on '" + listen + "'" +
                (tls ? " (in use, not an address of this host, or a certificate and "
                       "key GnuTLS cannot use?)"
                     : " (in use, or not an address of this host?)");
        return nullptr;
    }
    const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
    server->port_ = info ? info->port : static_cast<uint16_t>(*port);
    return server;
}

MetricsServer::~MetricsServer() {
    if (daemon_) MHD_stop_daemon(daemon_);
    for (MHD_Response* r : {replies_.index, replies_.notFound, replies_.notAllowed,
                            replies_.unavailable, replies_.unauthorized})
        if (r) MHD_destroy_response(r);
}

void MetricsServer::addPage(const std::string& path, const std::string& contentType) {
    std::lock_guard<std::mutex> lock(lock_);
    pages_[path].contentType = contentType;
}

void MetricsServer::publish(const std::string& path, std::shared_ptr<const std::string> body) {
    auto published = std::make_shared<Published>();
    published->body = std::move(body);
    // The response reads the body in place; it holds the publication's body alive through a
    // reference of its own, released by libmicrohttpd when the last request is done with it.
    auto* keep = new std::shared_ptr<const std::string>(published->body);
    published->response = MHD_create_response_from_buffer_with_free_callback_cls(
        keep->get()->size(), const_cast<char*>(keep->get()->data()),
        [](void* held) { delete static_cast<std::shared_ptr<const std::string>*>(held); }, keep);
    if (!published->response) {
        delete keep;
        throw std::bad_alloc();
    }
    std::shared_ptr<Published> previous;
    std::lock_guard<std::mutex> lock(lock_);
    Page& page = pages_.at(path);
    MHD_add_response_header(published->response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            page.contentType.c_str());
    if (web_)
        for (const auto& [name, value] : web_->headers)
            MHD_add_response_header(published->response, name.c_str(), value.c_str());
    previous = std::exchange(page.current, std::move(published));
}

}  // namespace ibqos::monitor
