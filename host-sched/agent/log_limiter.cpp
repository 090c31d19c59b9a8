// SPDX-License-Identifier: MIT
// LogLimiter: per-kind line budgets in fixed windows, summaries of what each window held back.
#include "host-sched/agent/log_limiter.hpp"

namespace ibqos::host {

LogLimiter::LogLimiter(std::function<void(const std::string&)> sink, LogLimits limits,
                       std::function<Clock::time_point()> now)
    : sink_(std::move(sink)), limits_(limits), now_(std::move(now)), windowStart_(now_()) {}

void LogLimiter::roll(Clock::time_point now, bool force) {
    if (!force && now - windowStart_ < limits_.window) return;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - windowStart_);
    for (const auto& [kind, count] : heldBack_) {
        sink_(kind + ": " + std::to_string(count) + " more line" + (count == 1 ? "" : "s") +
              " of this kind in the last " + std::to_string(seconds.count()) +
              " s were not written");
    }
    heldBack_.clear();
    written_.clear();
    keys_.clear();
    windowStart_ = now;
}

void LogLimiter::tick() { roll(now_()); }

void LogLimiter::flush() { roll(now_(), true); }

void LogLimiter::line(const std::string& kind, const std::string& message, const std::string& key) {
    roll(now_());
    if (!key.empty()) {
        // A repeat within the window is not news, and past the kind's bound of keys every
        // new line of that kind is held back too (other kinds keep their own): both counted.
        std::set<std::string>& keys = keys_[kind];
        if (keys.count(key) || keys.size() >= limits_.keysPerWindow) {
            ++heldBack_[kind];
            ++suppressedTotal_;
            return;
        }
        keys.insert(key);
    }
    if (written_[kind] >= limits_.linesPerWindow) {
        ++heldBack_[kind];
        ++suppressedTotal_;
        return;
    }
    ++written_[kind];
    sink_(message);
}

}  // namespace ibqos::host
