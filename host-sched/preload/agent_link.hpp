// SPDX-License-Identifier: MIT
// AgentLink: a process's one connection to the agent, shared by its threads: messages sent
// without blocking, and questions whose answers reach the thread that asked, whichever thread
// reads them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "host-sched/agent/agent_protocol.hpp"

namespace ibqos::host {

class AgentLink {
    struct Connection;

  public:
    enum class SendResult {
        Sent,
        NotConnected,
        Busy,  // the socket's buffer is full: the message was dropped
        Lost,  // the connection failed: it is dropped, connect again later
    };
    enum class WaitResult { Answered, TimedOut, Lost };

    // A question in flight; lives on the asking thread's stack from ask() to await(), and is
    // forgotten by the link when it goes out of scope.
    class Question {
      public:
        Question() = default;
        ~Question();
        Question(const Question&) = delete;
        Question& operator=(const Question&) = delete;
        // The agent's answer, once await() returned Answered.
        const std::optional<AgentMessage>& answer() const { return answer_; }

      private:
        friend class AgentLink;
        AgentLink* link_ = nullptr;  // set while the link knows this question
        uint32_t id_ = 0;
        std::shared_ptr<Connection> connection_;
        std::optional<AgentMessage> answer_;
        bool done_ = false;      // answered, or its connection was lost
        bool sleeping_ = false;  // its thread waits for another to read its answer
        std::condition_variable wake_;
    };

    bool connected() const;
    // Takes a newly connected socket (SOCK_SEQPACKET, non-blocking) as the connection.
    void adopt(int fd);
    // Sends one message without waiting.
    SendResult send(const AgentMessage& message);
    // Sends a Resolve question (its id is set here) and registers it, so that an answer read
    // by any thread reaches it; on anything but Sent nothing is registered.
    SendResult ask(Question& question, AgentMessage message);
    // Waits until the question's answer comes, its connection is lost, or the deadline. Never
    // call it with a lock that other verbs calls take.
    WaitResult await(Question& question, std::chrono::steady_clock::time_point deadline);

    // fork(): the parent holds the link's lock across it (lockForFork, unlockAfterFork); the
    // child closes its copy of the socket (the parent's connection stays open) and forgets
    // every question (their threads are not in the child).
    void lockForFork() { mutex_.lock(); }
    void unlockAfterFork() { mutex_.unlock(); }
    void resetInChild();

  private:
    SendResult sendLocked(const std::string& text);
    // Reads the connection until the question is answered, the deadline passes (true) or the
    // connection fails (false); delivers every answer read to the question it belongs to.
    bool readFor(Connection& connection, Question& question,
                 std::chrono::steady_clock::time_point deadline) noexcept;
    // When nobody reads: wakes a thread that sleeps waiting for an answer, to read next.
    void handOverLocked();
    // Drops a connection: its socket is shut down, its questions end unanswered.
    void dropLocked(std::shared_ptr<Connection> connection);
    void forget(Question& question);

    mutable std::mutex mutex_;
    std::shared_ptr<Connection> current_;
    std::map<uint32_t, Question*> questions_;
    uint32_t nextId_ = 0;
    bool reading_ = false;  // one thread at a time reads the socket, for all
};

}  // namespace ibqos::host
