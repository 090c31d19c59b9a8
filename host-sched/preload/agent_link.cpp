// SPDX-License-Identifier: MIT
// AgentLink: one connection to the agent, any number of threads waiting for answers on it.
//
// One connection demultiplexed, not a socket per thread: the agent keeps a process's QPs by
// connection (it forgets them when the connection closes; the library reports them all again
// on a new one). Sockets per thread would spread one process's QPs over as many connections as
// it has threads, drop QPs other threads own when a thread exits, and multiply the agent's
// connections by the threads of every rank of a job. One connection keeps the agent's view of
// the process as it was.
//
// How, with no thread of our own in the application: a thread that waits for an answer and
// finds nobody reading the socket reads it, for everyone, until its own answer comes or its
// deadline passes; each answer it reads goes to its question by id, and that question's thread
// is woken. When it stops, it wakes a thread still waiting, which reads next. Waiting threads
// sleep on their question's own condition variable (on their own stack: nothing shared is left
// half-used by a fork). Sends never block (MSG_DONTWAIT). No lock is held while a thread polls
// the socket: the link's lock guards the question table and the connection for a few
// instructions at a time, and a connection is closed only when its last reader lets go of it.
#include "host-sched/preload/agent_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace ibqos::host {

using Clock = std::chrono::steady_clock;

struct AgentLink::Connection {
    int fd;
    explicit Connection(int socket) : fd(socket) {}
    ~Connection() {
        if (fd >= 0) close(fd);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
};

AgentLink::Question::~Question() {
    if (link_) link_->forget(*this);
}

bool AgentLink::connected() const {
    std::lock_guard lock(mutex_);
    return current_ != nullptr;
}

void AgentLink::adopt(int fd) {
    auto connection = std::make_shared<Connection>(fd);
    std::lock_guard lock(mutex_);
    dropLocked(current_);
    current_ = std::move(connection);
}

AgentLink::SendResult AgentLink::sendLocked(const std::string& text) {
    if (!current_) return SendResult::NotConnected;
    if (::send(current_->fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
        return SendResult::Sent;
    int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK) return SendResult::Busy;
    dropLocked(current_);
    errno = error;  // the caller says why
    return SendResult::Lost;
}

AgentLink::SendResult AgentLink::send(const AgentMessage& message) {
    std::string text = encodeAgentMessage(message);
    std::lock_guard lock(mutex_);
    return sendLocked(text);
}

AgentLink::SendResult AgentLink::ask(Question& question, AgentMessage message) {
    std::lock_guard lock(mutex_);
    if (!current_) return SendResult::NotConnected;
    message.id = ++nextId_;
    SendResult sent = sendLocked(encodeAgentMessage(message));
    if (sent != SendResult::Sent) return sent;
    // Registered before the lock is let go: no reader can see the answer first.
    question.id_ = message.id;
    question.connection_ = current_;
    question.answer_.reset();
    question.done_ = false;
    questions_[question.id_] = &question;
    question.link_ = this;
    return sent;
}

AgentLink::WaitResult AgentLink::await(Question& question, Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (!question.link_) return WaitResult::Lost;  // never asked
    while (!question.done_ && Clock::now() < deadline) {
        if (reading_) {
            question.sleeping_ = true;
            question.wake_.wait_until(lock, deadline);
            question.sleeping_ = false;
            continue;
        }
        reading_ = true;
        std::shared_ptr<Connection> connection = question.connection_;
        lock.unlock();
        bool alive = readFor(*connection, question, deadline);
        lock.lock();
        reading_ = false;
        if (!alive) dropLocked(connection);
        handOverLocked();
    }
    WaitResult result = question.answer_ ? WaitResult::Answered
                        : question.done_ ? WaitResult::Lost
                                         : WaitResult::TimedOut;
    questions_.erase(question.id_);
    question.link_ = nullptr;
    return result;
}

bool AgentLink::readFor(Connection& connection, Question& question,
                        Clock::time_point deadline) noexcept {
    char buffer[MaxAgentMessage + 1];
    try {
        for (;;) {
            auto left =
                std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
            if (left.count() <= 0) return true;
            pollfd p{connection.fd, POLLIN, 0};
            const timespec wait{left.count() / 1000000, left.count() % 1000000 * 1000};
            int ready = ppoll(&p, 1, &wait, nullptr);
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0) return true;
            ssize_t n = recv(connection.fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) return false;
            MessageError error;
            auto m = parseAgentMessage(std::string_view(buffer, static_cast<size_t>(n)), error);
            std::lock_guard lock(mutex_);
            // Anything else, and the late answer to a question that gave up, is dropped.
            if (m && m->kind == MessageKind::Path) {
                auto it = questions_.find(m->id);
                if (it != questions_.end() && !it->second->done_) {
                    it->second->answer_ = std::move(*m);
                    it->second->done_ = true;
                    it->second->wake_.notify_one();
                }
            }
            if (question.done_) return true;
        }
    } catch (...) {
        return true;  // out of memory: this thread stops reading, another reads next
    }
}

void AgentLink::handOverLocked() {
    if (reading_) return;
    for (auto& [id, waiting] : questions_) {
        if (waiting->sleeping_ && !waiting->done_) {
            waiting->wake_.notify_one();
            return;
        }
    }
}

void AgentLink::dropLocked(std::shared_ptr<Connection> connection) {
    if (!connection) return;
    if (current_ == connection) current_.reset();
    // Wakes a reader in ppoll; the socket is closed when its last holder lets go of it.
    shutdown(connection->fd, SHUT_RDWR);
    for (auto& [id, q] : questions_) {
        if (q->connection_ == connection && !q->done_) {
            q->done_ = true;
            q->wake_.notify_one();
        }
    }
}

void AgentLink::forget(Question& question) {
    std::lock_guard lock(mutex_);
    auto it = questions_.find(question.id_);
    if (it != questions_.end() && it->second == &question) questions_.erase(it);
    question.link_ = nullptr;
    handOverLocked();
}

void AgentLink::resetInChild() {
    // Only this thread exists in the child: no one reads, no one waits. The parent's socket
    // stays connected: the child's copy is closed without a shutdown.
    if (current_) {
        close(current_->fd);
        current_->fd = -1;
    }
    current_.reset();
    questions_.clear();
    reading_ = false;
}

}  // namespace ibqos::host
