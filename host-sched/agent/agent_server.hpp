// SPDX-License-Identifier: MIT
// AgentServer: the agent's unix socket, its clients and the poll loop around AgentState.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "host-sched/agent/agent_state.hpp"

namespace ibqos::host {

// Serves a SOCK_SEQPACKET socket: each client connection is one process; its credentials
// come from the kernel. A user holds at most the state's limits of connections and of unread
// answers; maxClients bounds all users together (and the descriptors the agent holds). Borrows
// the state, which must outlive the server.
class AgentServer {
  public:
    AgentServer(AgentState& state, std::string socketPath, size_t maxClients = 4096);
    ~AgentServer();
    AgentServer(const AgentServer&) = delete;
    AgentServer& operator=(const AgentServer&) = delete;

    // Creates the socket (and its directory). Refuses when another agent answers on it;
    // replaces a stale socket file. Returns false with error set.
    bool listen(std::string& error);
    // Serves until onEvent returns false. The eventFds are polled too (a signalfd for SIGTERM
    // and SIGHUP, a watchdog timer); when one is readable onEvent(fd) decides whether to go on.
    void run(const std::vector<int>& eventFds, const std::function<bool(int)>& onEvent);
    size_t clientCount() const { return clients_.size(); }

  private:
    struct Client {
        int fd = -1;
        ClientCredentials peer;
        std::deque<std::string> outbox;
    };

    // Queues a datagram for a client; false (and the client is to be dropped) when its user
    // has too many unread.
    bool queue(Client& client, std::string datagram);
    void dequeued(const Client& client, size_t count);

    void accept();
    // Reads what a client sent; false when it is gone.
    bool serve(uint64_t id, Client& client);
    bool flush(Client& client);
    void drop(uint64_t id);

    AgentState& state_;
    std::string path_;
    size_t maxClients_;
    int listenFd_ = -1;
    uint64_t nextClient_ = 1;
    std::map<uint64_t, Client> clients_;
    std::map<uint32_t, size_t> connectionsByUid_;
    std::map<uint32_t, size_t> queuedByUid_;
};

// Raises the soft limit of open descriptors to the hard one; returns the limit now in force.
size_t raiseDescriptorLimit();

// Asks a running agent for every QP it knows (the `status` exchange), and its enforcement
// counters when it sends them. Returns false with error set when the agent cannot be reached
// or answers nonsense.
bool requestAgentStatus(const std::string& socketPath, std::chrono::milliseconds timeout,
                        std::vector<AgentMessage>& qps, std::string& error,
                        std::optional<Counters>* counters = nullptr);

}  // namespace ibqos::host
