// SPDX-License-Identifier: MIT
// AgentServer: accept, receive datagrams, hand them to AgentState, send answers back.
#include "host-sched/agent/agent_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ibqos::host {

namespace {

// The serving loop wakes at least this often, to end the log's windows on time.
constexpr int TickMs = 1000;

bool makeAddress(const std::string& path, sockaddr_un& address, std::string& error) {
    address = {};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        error = "socket path '" + path + "' is empty or longer than " +
                std::to_string(sizeof address.sun_path - 1) + " bytes";
        return false;
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return true;
}

std::string errnoText() { return std::strerror(errno); }

void makeParentDirectory(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return;
    std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno == ENOENT) {
        makeParentDirectory(dir);
        mkdir(dir.c_str(), 0755);
    }
}

}  // namespace

AgentServer::AgentServer(AgentState& state, std::string socketPath, size_t maxClients)
    : state_(state), path_(std::move(socketPath)), maxClients_(maxClients) {}

AgentServer::~AgentServer() {
    while (!clients_.empty()) drop(clients_.begin()->first);
    if (listenFd_ >= 0) {
        close(listenFd_);
        unlink(path_.c_str());
    }
}

bool AgentServer::listen(std::string& error) {
    sockaddr_un address;
    if (!makeAddress(path_, address, error)) return false;
    makeParentDirectory(path_);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = "socket: " + errnoText();
        return false;
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (errno != EADDRINUSE) {
            error = "cannot bind " + path_ + ": " + errnoText();
            close(fd);
            return false;
        }
        // Something is there: another agent if it answers, else a stale socket file.
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        bool alive = probe >= 0 &&
                     connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        if (probe >= 0) close(probe);
        struct stat st;
        if (alive || lstat(path_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
            error = alive ? "another agent is running on " + path_
                          : path_ + " exists and is not a socket";
            close(fd);
            return false;
        }
        unlink(path_.c_str());
        if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            error = "cannot bind " + path_ + ": " + errnoText();
            close(fd);
            return false;
        }
    }
    // Every application may report its QPs; the kernel tells who is speaking.
    chmod(path_.c_str(), 0666);
    if (::listen(fd, 128) != 0) {
        error = "listen: " + errnoText();
        close(fd);
        unlink(path_.c_str());
        return false;
    }
    listenFd_ = fd;
    return true;
}

void AgentServer::accept() {
    for (;;) {
        int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;  // EAGAIN, or a client that left before we took it
        Client client;
        client.fd = fd;
        ucred cred{};
        socklen_t length = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
            close(fd);  // the kernel does not say who it is
            continue;
        }
        client.peer = {static_cast<uint32_t>(cred.pid), static_cast<uint32_t>(cred.uid)};
        // One user's connections cannot crowd out another's: each user has a share, and all
        // users together the descriptors the agent can hold.
        size_t& held = connectionsByUid_[client.peer.uid];
        if (held >= state_.limits().connections || clients_.size() >= maxClients_) {
            state_.refuse(client.peer.uid,
                          held >= state_.limits().connections
                              ? "connection refused: the user holds " + std::to_string(held) +
                                    " connections (the limit)"
                              : "connection refused: the agent serves " +
                                    std::to_string(clients_.size()) + " connections (its limit)");
            if (held == 0) connectionsByUid_.erase(client.peer.uid);
            close(fd);
            continue;
        }
        ++held;
        clients_.emplace(nextClient_++, std::move(client));
    }
}

bool AgentServer::queue(Client& client, std::string datagram) {
    size_t& queued = queuedByUid_[client.peer.uid];
    if (queued >= state_.limits().answers) {
        state_.refuse(client.peer.uid, "connection closed: the user's connections leave " +
                                           std::to_string(queued) + " answers unread (the limit)");
        return false;
    }
    ++queued;
    client.outbox.push_back(std::move(datagram));
    return true;
}

void AgentServer::dequeued(const Client& client, size_t count) {
    auto it = queuedByUid_.find(client.peer.uid);
    if (it == queuedByUid_.end()) return;
    it->second -= std::min(it->second, count);
    if (it->second == 0) queuedByUid_.erase(it);
}

bool AgentServer::flush(Client& client) {
    while (!client.outbox.empty()) {
        const std::string& m = client.outbox.front();
        ssize_t n = send(client.fd, m.data(), m.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        client.outbox.pop_front();
        dequeued(client, 1);
    }
    return true;
}

bool AgentServer::serve(uint64_t id, Client& client) {
    char buffer[MaxAgentMessage + 1];
    for (int messages = 0; messages < 256; ++messages) {  // then let the others speak
        iovec io{buffer, sizeof buffer};
        msghdr header{};
        header.msg_iov = &io;
        header.msg_iovlen = 1;
        ssize_t n = recvmsg(client.fd, &header, MSG_DONTWAIT);
        if (n == 0) return false;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        // A datagram longer than the buffer arrives cut (MSG_TRUNC): the size check rejects it.
        size_t size = (header.msg_flags & MSG_TRUNC) ? sizeof buffer : static_cast<size_t>(n);
        // A user whose connections keep asking without reading what they were sent loses
        // the connection that asks; one large answer (the status of a host with many QPs)
        // is queued whole.
        if (queuedByUid_.count(client.peer.uid) &&
            queuedByUid_[client.peer.uid] >= state_.limits().answers) {
            state_.refuse(client.peer.uid, "connection closed: the user's connections leave " +
                                               std::to_string(queuedByUid_[client.peer.uid]) +
                                               " answers unread (the limit)");
            return false;
        }
        for (std::string& reply : state_.handle(id, client.peer, std::string_view(buffer, size))) {
            ++queuedByUid_[client.peer.uid];
            client.outbox.push_back(std::move(reply));
        }
        if (!flush(client)) return false;
    }
    return true;
}

void AgentServer::drop(uint64_t id) {
    auto it = clients_.find(id);
    if (it == clients_.end()) return;
    close(it->second.fd);
    dequeued(it->second, it->second.outbox.size());
    if (auto held = connectionsByUid_.find(it->second.peer.uid);
        held != connectionsByUid_.end() && --held->second == 0)
        connectionsByUid_.erase(held);
    clients_.erase(it);
    state_.clientGone(id);
}

void AgentServer::run(const std::vector<int>& eventFds, const std::function<bool(int)>& onEvent) {
    const size_t answers = 1 + eventFds.size();  // the SA answers, then the clients
    const size_t first = answers + 1;
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<uint64_t> ids;
        fds.push_back({listenFd_, POLLIN, 0});
        for (int fd : eventFds) fds.push_back({fd, POLLIN, 0});
        fds.push_back({state_.answersFd(), POLLIN, 0});  // a negative fd is skipped by poll
        for (auto& [id, client] : clients_) {
            short events = POLLIN;
            if (!client.outbox.empty()) events |= POLLOUT;
            fds.push_back({client.fd, events, 0});
            ids.push_back(id);
        }
        int ready = poll(fds.data(), fds.size(), TickMs);
        state_.tick();
        if (ready < 0) {
            if (errno == EINTR) continue;
            return;
        }
        for (size_t i = 1; i < answers; ++i) {
            if ((fds[i].revents & POLLIN) && !onEvent(fds[i].fd)) return;
        }
        if (fds[answers].revents & POLLIN) {
            for (auto& [id, reply] : state_.answers()) {
                auto it = clients_.find(id);
                if (it == clients_.end()) continue;  // it left before its answer came
                if (!queue(it->second, std::move(reply)) || !flush(it->second)) drop(id);
            }
        }
        for (size_t i = 0; i < ids.size(); ++i) {
            short revents = fds[first + i].revents;
            if (!revents) continue;
            auto it = clients_.find(ids[i]);
            if (it == clients_.end()) continue;
            bool alive = true;
            if (revents & (POLLIN | POLLHUP | POLLERR)) alive = serve(ids[i], it->second);
            if (alive && (revents & POLLOUT)) alive = flush(it->second);
            if (alive && (revents & (POLLHUP | POLLERR)) && !(revents & POLLIN)) alive = false;
            if (!alive) drop(ids[i]);
        }
        if (fds[0].revents & POLLIN) accept();
    }
}

bool requestAgentStatus(const std::string& socketPath, std::chrono::milliseconds timeout,
                        std::vector<AgentMessage>& qps, std::string& error,
                        std::optional<Counters>* counters) {
    sockaddr_un address;
    if (!makeAddress(socketPath, address, error)) return false;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        error = "no agent answers on " + socketPath + ": " + errnoText();
        if (fd >= 0) close(fd);
        return false;
    }
    AgentMessage request;
    request.kind = MessageKind::Status;
    std::string text = encodeAgentMessage(request);
    bool ok = send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
    auto deadline = std::chrono::steady_clock::now() + timeout;
    qps.clear();
    while (ok) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            error = "the agent on " + socketPath + " did not finish its answer in time";
            ok = false;
            break;
        }
        char buffer[MaxAgentMessage + 1];
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            error = "the agent on " + socketPath + " closed the connection";
            ok = false;
            break;
        }
        MessageError parseError;
        auto m = parseAgentMessage(std::string_view(buffer, static_cast<size_t>(n)), parseError);
        if (!m || (m->kind != MessageKind::Qp && m->kind != MessageKind::End)) {
            error = "the agent answered something unreadable: " +
                    (m ? std::string("unexpected message") : parseError.message);
            ok = false;
            break;
        }
        if (m->kind == MessageKind::End) {
            if (counters) *counters = m->counters;
            if (m->count != qps.size()) {
                error = "the agent announced " + std::to_string(m->count) + " QPs and sent " +
                        std::to_string(qps.size());
                ok = false;
            }
            break;
        }
        qps.push_back(*m);
    }
    close(fd);
    return ok;
}

size_t raiseDescriptorLimit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return static_cast<size_t>(limit.rlim_cur);
}

}  // namespace ibqos::host
