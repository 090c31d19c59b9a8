// SPDX-License-Identifier: MIT
// SlResolver: a cache in front of one thread that asks the SA for the waiting paths together.
#include "host-sched/agent/sl_resolver.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>

namespace ibqos::host {

SlResolver::SlResolver(std::function<PathSource()> makeSource, ResolverOptions options)
    : options_(options) {
    eventFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (eventFd_ < 0) throw std::runtime_error("eventfd failed");
    options_.inFlight = std::max<size_t>(1, options_.inFlight);
    thread_ = std::thread([this, makeSource] { work(makeSource); });
}

SlResolver::~SlResolver() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    // Queries in flight finish first (bounded by their retries).
    thread_.join();
    close(eventFd_);
}

std::optional<PathReply> SlResolver::cached(const PathKey& key) {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(key);
    // An expired entry stays until its path is answered again or eviction reaches it, so that
    // cacheOrder_ names each entry once.
    if (it == cache_.end()) return std::nullopt;
    auto age = Clock::now() - it->second.at;
    if (age >= options_.lifetime) return std::nullopt;
    if (age >= options_.refresh && enqueue(key)) wake_.notify_one();
    return it->second.reply;
}

bool SlResolver::enqueue(const PathKey& key) {
    if (pending_.count(key) || pending_.size() >= options_.maxPending) return false;
    pending_[key];
    queue_.push_back(key);
    return true;
}

bool SlResolver::ask(const PathKey& key, Waiter waiter) {
    {
        std::lock_guard lock(mutex_);
        if (!pending_.count(key) && !enqueue(key)) return false;
        pending_[key].push_back(waiter);
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

void SlResolver::setTable(PathTable* table) {
    std::lock_guard lock(mutex_);
    table_ = table;
}

void SlResolver::invalidate() {
    std::lock_guard lock(mutex_);
    dropAll();
}

void SlResolver::dropAll() {
    ++generation_;
    cache_.clear();
    cacheOrder_.clear();
    if (table_) table_->invalidate();
}

uint64_t SlResolver::saQueries() const {
    std::lock_guard lock(mutex_);
    return saQueries_;
}

uint64_t SlResolver::saFailed() const {
    std::lock_guard lock(mutex_);
    return saFailed_;
}

uint64_t SlResolver::changes() const {
    std::lock_guard lock(mutex_);
    return changes_;
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
        std::vector<PathKey> keys;
        while (!queue_.empty() && keys.size() < options_.inFlight) {
            keys.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        uint64_t generation = generation_;
        saQueries_ += keys.size();
        lock.unlock();
        std::vector<PathReply> replies = source(keys);
        lock.lock();
        replies.resize(keys.size());  // a source that answers short fails the rest
        for (size_t i = 0; i < keys.size(); ++i) {
            const PathKey& key = keys[i];
            const PathReply& reply = replies[i];
            if (reply.answer == PathAnswer::Failed) ++saFailed_;
            // A failure is not kept: the next RTR on the path asks again.
            if (reply.answer != PathAnswer::Failed && generation == generation_) {
                auto old = cache_.find(key);
                if (old != cache_.end() && (old->second.reply.answer != reply.answer ||
                                            old->second.reply.sl != reply.sl)) {
                    // The SA answers this path differently now: a new policy or fabric, which
                    // changes many paths at once. Everything is asked afresh.
                    ++changes_;
                    dropAll();
                    generation = generation_;  // this batch's answers are all new ones
                }
                while (cache_.size() >= options_.cacheSize && !cacheOrder_.empty()) {
                    cache_.erase(cacheOrder_.front());
                    cacheOrder_.pop_front();
                }
                if (cache_.insert_or_assign(key, Entry{reply, Clock::now()}).second)
                    cacheOrder_.push_back(key);
                // Processes read it until the refresh age; then they ask, and the path is
                // asked again.
                if (table_ && reply.answer != PathAnswer::Busy)
                    table_->publish(
                        key, TableAnswer{reply.answer == PathAnswer::Found, reply.sl.value_or(0)},
                        std::min(options_.refresh, options_.lifetime));
            }
            auto waiting = pending_.extract(key);
            if (!waiting.empty()) {
                for (const Waiter& w : waiting.mapped()) answers_.emplace_back(w, reply);
            }
        }
        uint64_t one = 1;
        (void)!write(eventFd_, &one, sizeof one);
    }
}

}  // namespace ibqos::host
