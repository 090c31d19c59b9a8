// SPDX-License-Identifier: MIT
// The status file: a JSON object written to a temporary file and renamed over the last one, so a
// reader always sees a whole status; a heartbeat thread writes it again between sweeps.
#include "osm-plugin/plugin_status.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <unistd.h>

#include "common/json.hpp"
#include "common/text.hpp"

namespace ibqos::osm {

namespace {

// RFC 3339 in UTC, to the second.
std::string timeText(double unixSeconds) {
    if (unixSeconds <= 0) return "";
    std::time_t t = static_cast<std::time_t>(unixSeconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Json timeJson(double unixSeconds) {
    return unixSeconds > 0 ? Json(timeText(unixSeconds)) : Json(nullptr);
}

}  // namespace

double unixNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string policyCopyPath(const std::string& statusPath) {
    std::string base = statusPath;
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0)
        base.resize(base.size() - 5);
    return base + ".policy.conf";
}

std::string statusJson(const PluginStatus& s, const std::string& statusPath, double now) {
    Json refused = nullptr;
    if (s.refused) {
        refused = {{"version", hex(s.refused->hash, 16)},
                   {"at", timeJson(s.refused->at)},
                   {"at_unix", jsonNumber(s.refused->at)},
                   {"diagnostics", s.refused->diagnostics}};
    }
    Json delegated = Json::object();
    for (const auto& [kind, count] : s.delegated) delegated[kind] = count;
    Json out = {{"format", 1},
                {"policy", s.policy},
                {"version", s.inForce ? Json(hex(s.hash, 16)) : Json(nullptr)},
                {"version_number", s.inForce ? Json(s.version) : Json(nullptr)},
                {"in_force", s.inForce},
                {"since", timeJson(s.inForce ? s.since : 0)},
                {"since_unix", s.inForce ? jsonNumber(s.since) : Json(nullptr)},
                {"text_in_force", s.inForce ? Json(policyCopyPath(statusPath)) : Json(nullptr)},
                {"file_seen", s.seen ? Json(hex(s.seen, 16)) : Json(nullptr)},
                {"opensm_pid", s.opensmPid},
                {"sweep", s.sweep},
                {"sweep_time", timeJson(s.sweepTime)},
                {"sweep_done", s.sweepDone},
                {"updated", timeJson(now)},
                {"updated_unix", jsonNumber(now)},
                {"interval", s.intervalSeconds},
                {"refused", std::move(refused)},
                {"responder",
                 {{"answered", s.answered},
                  {"records", s.records},
                  {"left_to_opensm", std::move(delegated)}}},
                {"path_sl_engine", jsonName(s.pathSlEngine)},
                {"generated", s.generated},
                {"opensm_conf", jsonName(s.opensmConf)},
                {"partitions", jsonName(s.partitions)}};
    return dumpJson(out) + "\n";
}

StatusPublisher::StatusPublisher(std::string path, Report report,
                                 std::function<void(PluginStatus&)> refresh)
    : path_(std::move(path)), report_(std::move(report)), refresh_(std::move(refresh)) {
    thread_ = std::thread([this] { heartbeat(); });
}

StatusPublisher::~StatusPublisher() { stop(); }

void StatusPublisher::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool StatusPublisher::write(const std::string& target, const std::string& content) {
    // Beside the target (one file system), written whole, then renamed over it: a reader sees
    // the old file or the new one. Called with mutex_ held.
    std::string temporary = target + ".tmp";
    std::string why;
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        why = "cannot write " + temporary + ": " + std::strerror(errno);
    } else {
        size_t done = 0;
        while (done < content.size()) {
            ssize_t n = ::write(fd, content.data() + done, content.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                why = "cannot write " + temporary + ": " + std::strerror(errno);
                break;
            }
            done += static_cast<size_t>(n);
        }
        if (::close(fd) != 0 && why.empty())
            why = "cannot write " + temporary + ": " + std::strerror(errno);
        if (why.empty() && std::rename(temporary.c_str(), target.c_str()) != 0)
            why = "cannot replace " + target + ": " + std::strerror(errno);
        if (!why.empty()) std::remove(temporary.c_str());
    }
    if (!why.empty()) {
        if (why != errorReported_) {
            errorReported_ = why;
            report_(why +
                        ": `ibqos status` shows an older state (tried again at every change "
                        "and heartbeat)",
                    true);
        }
        return false;
    }
    if (!errorReported_.empty()) {
        errorReported_.clear();
        report_("the status can be written again: " + target, false);
    }
    return true;
}

void StatusPublisher::publish(const PluginStatus& status, const std::string* textInForce) {
    std::lock_guard lock(mutex_);
    status_ = status;
    published_ = true;
    if (textInForce) write(policyCopyPath(path_), *textInForce);
    write(path_, statusJson(status_, path_, unixNow()));
}

void StatusPublisher::heartbeat() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        const auto interval = std::chrono::seconds(std::max(1u, status_.intervalSeconds));
        if (wake_.wait_for(lock, interval, [this] { return stopping_; })) break;
        if (!published_) continue;
        if (refresh_) refresh_(status_);
        write(path_, statusJson(status_, path_, unixNow()));
    }
}

}  // namespace ibqos::osm
