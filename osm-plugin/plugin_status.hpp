// SPDX-License-Identifier: MIT
// PluginStatus: what the plugin publishes about itself in its status file (read by `ibqos
// status` and `ibqos apply`), written atomically beside a copy of the policy text in force.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ibqos::osm {

// The plugin's state, as the status file holds it.
struct PluginStatus {
    std::string policy;      // the policy file the plugin reads
    std::string generated;   // the plain policy it writes for OpenSM's SA
    std::string opensmConf;  // the opensm.conf OpenSM read (its qos_* options)
    std::string partitions;  // OpenSM's partition configuration
    long opensmPid = 0;
    unsigned intervalSeconds = 10;  // the file is written again at least this often
    bool inForce = false;
    uint64_t hash = 0;       // the version in force (IBQOS-0010's hash)
    unsigned version = 0;    // its number since OpenSM started
    double since = 0;        // when it was put in force (Unix seconds)
    uint64_t seen = 0;       // the hash of the policy file as the plugin last read it (0: none)
    uint64_t sweep = 0;      // heavy sweeps so far
    double sweepTime = 0;    // when the last one began its QoS work
    uint64_t sweepDone = 0;  // the heavy sweep the subnet was last up after
    struct Refusal {
        uint64_t hash = 0;
        double at = 0;
        std::vector<std::string> diagnostics;  // file:line:col: severity: [CODE] message
    };
    std::optional<Refusal> refused;      // the last version refused
    uint64_t answered = 0, records = 0;  // the PathRecord responder, since OpenSM started
    std::map<std::string, uint64_t> delegated;
    // The routing engine whose path_sl replaces the policy's SL in SA answers, if any.
    std::string pathSlEngine;
};

// The status as the file at statusPath holds it, at time `now` (Unix seconds).
std::string statusJson(const PluginStatus& status, const std::string& statusPath, double now);
// The copy of the text in force beside a status file: NAME.json -> NAME.policy.conf.
std::string policyCopyPath(const std::string& statusPath);
// Unix time now, in seconds.
double unixNow();

// Writes the status file at each change, and again every interval (a heartbeat, so that a
// status no longer written says OpenSM or the plugin is gone). Failures are reported once per
// reason through `report`.
class StatusPublisher {
  public:
    using Report = std::function<void(const std::string& message, bool error)>;
    // `refresh` updates the counters in the status before each heartbeat write.
    StatusPublisher(std::string path, Report report, std::function<void(PluginStatus&)> refresh);
    ~StatusPublisher();
    StatusPublisher(const StatusPublisher&) = delete;
    StatusPublisher& operator=(const StatusPublisher&) = delete;

    const std::string& path() const { return path_; }
    // Writes the status now; with `textInForce`, the copy of the text in force first.
    void publish(const PluginStatus& status, const std::string* textInForce = nullptr);
    // Stops the heartbeat (before what `refresh` reads goes away).
    void stop();

  private:
    bool write(const std::string& target, const std::string& content);
    void heartbeat();

    std::string path_;
    Report report_;
    std::function<void(PluginStatus&)> refresh_;
    std::mutex mutex_;
    std::condition_variable wake_;
    PluginStatus status_;
    bool published_ = false;
    bool stopping_ = false;
    std::string errorReported_;
    std::thread thread_;
};

}  // namespace ibqos::osm
