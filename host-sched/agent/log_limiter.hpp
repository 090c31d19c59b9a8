// SPDX-License-Identifier: MIT
// LogLimiter: the agent's log, bounded per kind of line, with counts of what was held back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace ibqos::host {

struct LogLimits {
    size_t linesPerWindow = 10;  // lines of one kind written per window
    std::chrono::seconds window{60};
    size_t keysPerWindow = 4096;  // distinct repeat keys of one kind remembered per window
};

// Writes at most linesPerWindow lines of each kind per window, and a line with the key of an
// earlier one once per window; every line held back (repeats included) is counted, and when its
// window ends one summary line says how many of that kind were held back. Nothing is silenced for
// good: a kind gets its lines again in every window. The kinds are the agent's own words (never
// client text), so their number is bounded by the code.
class LogLimiter {
  public:
    using Clock = std::chrono::steady_clock;
    LogLimiter(std::function<void(const std::string&)> sink, LogLimits limits = {},
               std::function<Clock::time_point()> now = Clock::now);

    // Writes (or counts) one line of a kind; a non-empty key writes it at most once a window.
    void line(const std::string& kind, const std::string& message, const std::string& key = {});
    // Ends the window when its time has come, writing the summaries (the server calls it).
    void tick();
    // Writes the summaries of the window so far (the agent calls it on its way out).
    void flush();
    // Lines held back since the start, for tests and status.
    uint64_t suppressed() const { return suppressedTotal_; }

  private:
    void roll(Clock::time_point now, bool force = false);

    std::function<void(const std::string&)> sink_;
    LogLimits limits_;
    std::function<Clock::time_point()> now_;
    Clock::time_point windowStart_;
    std::map<std::string, size_t> written_;
    std::map<std::string, uint64_t> heldBack_;
    std::map<std::string, std::set<std::string>> keys_;  // per kind
    uint64_t suppressedTotal_ = 0;
};

}  // namespace ibqos::host
