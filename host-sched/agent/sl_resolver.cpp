// SPDX-License-Identifier: MIT
// SlResolver: a cache in front of a few worker threads, each with its own SA client.
#include "host-sched/agent/sl_resolver.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>

namespace ibqos::host {

SlResolver::SlResolver(std::function<PathSource()> makeSource, ResolverOptions options)
    : options_(options) {
    eventFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (eventFd_ < 0) throw std::runtime_error("eventfd failed");
    for (unsigned i = 0; i < std::max(1u, options_.workers); ++i)
        workers_.emplace_back([this, makeSource] { work(makeSource); });
}

SlResolver::~SlResolver() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    // A worker in the middle of an SA query finishes it (bounded by its retries).
    for (std::thread& t : workers_) t.join();
    close(eventFd_);
}

std::optional<PathReply> SlResolver::cached(const PathKey& key) {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(key);
    // An expired entry stays until its path is answered again or eviction reaches it, so that
    // cacheOrder_ names each entry once.
    if (it == cache_.end() || Clock::now() - it->second.at >= options_.lifetime)
        return std::nullopt;
    return it->second.reply;
}

bool SlResolver::ask(const PathKey& key, Waiter waiter) {
    {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(key);
        if (it != pending_.end()) {
            it->second.push_back(waiter);
            return true;
        }
        if (pending_.size() >= options_.maxPending) return false;
        pending_[key].push_back(waiter);
        queue_.push_back(key);
    }
    wake_.notify_one();
    return true;
}

std::vector<std::pair<Waiter, PathReply>> SlResolver::takeAnswers() {
    uint64_t ignored;
    (void)!read(eventFd_, &ignored, sizeof ignored);
    std::lock_guard lock(mutex_);
    return std::exchange(answers_, {});
}

void SlResolver::invalidate() {
    std::lock_guard lock(mutex_);
    ++generation_;
    cache_.clear();
    cacheOrder_.clear();
}

uint64_t SlResolver::saQueries() const {
    std::lock_guard lock(mutex_);
    return saQueries_;
}

uint64_t SlResolver::saFailed() const {
    std::lock_guard lock(mutex_);
    return saFailed_;
}

size_t SlResolver::cacheEntries() const {
    std::lock_guard lock(mutex_);
    return cache_.size();
}

void SlResolver::work(std::function<PathSource()> makeSource) {
    PathSource source = makeSource();
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        PathKey key = std::move(queue_.front());
        queue_.pop_front();
        const uint64_t generation = generation_;
        ++saQueries_;
        lock.unlock();
        PathReply reply = source(key);
        lock.lock();
        if (reply.answer == PathAnswer::Failed) ++saFailed_;
        // A failure is not kept: the next RTR on the path asks again.
        if (reply.answer != PathAnswer::Failed && generation == generation_) {
            while (cache_.size() >= options_.cacheSize && !cacheOrder_.empty()) {
                cache_.erase(cacheOrder_.front());
                cacheOrder_.pop_front();
            }
            if (cache_.insert_or_assign(key, Entry{reply, Clock::now()}).second)
                cacheOrder_.push_back(key);
        }
        auto waiting = pending_.extract(key);
        if (!waiting.empty()) {
            for (const Waiter& w : waiting.mapped()) answers_.emplace_back(w, reply);
        }
        uint64_t one = 1;
        (void)!write(eventFd_, &one, sizeof one);
    }
}

}  // namespace ibqos::host
