// SPDX-License-Identifier: MIT
// SlResolver: the SA's SL for the paths QPs are brought up on, cached and asked for in the
// background, so that an RTR waits on the SA at most once per path. One thread asks the SA:
// the paths waiting go out together, up to a bound, each path once however many wait for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/agent/path_table.hpp"

namespace ibqos::host {

struct PathReply {
    PathAnswer answer = PathAnswer::Failed;
    std::optional<uint8_t> sl;
};

// Who waits for an answer: a client of the agent and the number of its question.
struct Waiter {
    uint64_t client = 0;
    uint32_t id = 0;
};

struct ResolverOptions {
    size_t inFlight = 16;  // SA queries in flight at most
    size_t cacheSize = 65536;
    std::chrono::milliseconds lifetime{60000};
    // An answer older than this is still given, and its path asked again in the background;
    // an answer that changed means a new policy or fabric, and the whole cache is dropped.
    std::chrono::milliseconds refresh{10000};
    size_t maxPending = 4096;  // distinct paths waiting; beyond that: busy
};

// Asks the SA for several paths at once (all in flight together); blocking.
using PathSource = std::function<std::vector<PathReply>(const std::vector<PathKey>&)>;

class SlResolver {
  public:
    // makeSource is called once, on the thread that asks the SA.
    SlResolver(std::function<PathSource()> makeSource, ResolverOptions options);
    ~SlResolver();
    SlResolver(const SlResolver&) = delete;
    SlResolver& operator=(const SlResolver&) = delete;

    // A cached answer younger than the lifetime (one past the refresh age is asked again).
    std::optional<PathReply> cached(const PathKey& key);
    // Queues a question; one already pending for the same path takes the waiter too. False
    // when too many paths are pending (the caller answers busy).
    bool ask(const PathKey& key, Waiter waiter);
    // Publishes every answer it caches into this table (borrowed; it must outlive the
    // resolver), each for the refresh age, and drops the table's with its own.
    void setTable(PathTable* table);
    // Readable when answers are ready.
    int eventFd() const { return eventFd_; }
    // The answers that came since the last call, with who waited for each.
    std::vector<std::pair<Waiter, PathReply>> takeAnswers();
    // Forgets every cached answer; answers to questions asked before are passed on but not kept.
    void invalidate();

    uint64_t saQueries() const;
    uint64_t saFailed() const;
    // Caches dropped because the SA's answer for a path changed.
    uint64_t changes() const;
    size_t cacheEntries() const;

  private:
    using Clock = std::chrono::steady_clock;
    struct Entry {
        PathReply reply;
        Clock::time_point at;
    };

    void work(std::function<PathSource()> makeSource);
    // Under the lock: forgets every cached answer, here and in the table.
    void dropAll();
    // Under the lock: queue a path unless it is pending already.
    bool enqueue(const PathKey& key);

    ResolverOptions options_;
    int eventFd_ = -1;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    uint64_t generation_ = 0;
    std::map<PathKey, Entry> cache_;
    std::deque<PathKey> cacheOrder_;  // oldest first, for eviction
    std::map<PathKey, std::vector<Waiter>> pending_;
    std::deque<PathKey> queue_;  // pending paths not asked yet
    std::vector<std::pair<Waiter, PathReply>> answers_;
    uint64_t saQueries_ = 0;
    uint64_t saFailed_ = 0;
    uint64_t changes_ = 0;
    PathTable* table_ = nullptr;
    std::thread thread_;
};

}  // namespace ibqos::host
