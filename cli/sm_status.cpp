// SPDX-License-Identifier: MIT
// Reading the plugin's status file, and when it is stale.
#include "cli/sm_status.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>

#include "common/source.hpp"
#include "common/text.hpp"
#include "fabric/plugin_options.hpp"

namespace ibqos::cli {

namespace {

// Heartbeats a status may miss before it is stale, and a margin for a slow sweep.
constexpr unsigned MissedHeartbeats = 3;
constexpr double StaleMarginSeconds = 5;

std::string stringOr(const Json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> optionalString(const Json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

template <typename T>
T numberOr(const Json& j, const char* key, T fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<T>() : fallback;
}

}  // namespace

double unixTime() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string defaultStatusPath() { return openSmCacheDir() + "/" + DefaultStatusName; }

void addStatusOption(CLI::App& command, Value& status) {
    addValue(command, "--status", status, "FILE",
             "the plugin's status file (default: ibqos-status.json in $OSM_CACHE_DIR, else "
             "/var/cache/opensm)");
}

std::optional<SmStatus> readSmStatus(const std::string& path, std::string& error) {
    std::optional<std::string> text = SourceFile::readText(path, error);
    if (!text) return std::nullopt;
    return parseSmStatus(path, *text, error);
}

std::optional<SmStatus> parseSmStatus(const std::string& path, const std::string& text,
                                      std::string& error) {
    SmStatus s;
    s.path = path;
    s.json = Json::parse(text, nullptr, false);
    if (s.json.is_discarded() || !s.json.is_object() || !s.json.contains("opensm_pid")) {
        error = path + ": not a status file of the ibqos OpenSM plugin";
        return std::nullopt;
    }
    const Json& j = s.json;
    // What the commands rely on has the type the plugin writes, or the file is no status.
    using Check = bool (Json::*)() const noexcept;
    const std::pair<const char*, Check> members[] = {
        {"policy", &Json::is_string},
        {"in_force", &Json::is_boolean},
        {"opensm_pid", &Json::is_number},
        {"sweep", &Json::is_number},
        {"updated_unix", &Json::is_number},
        {"interval", &Json::is_number},
        {"text_in_force", nullptr},
        {"version", nullptr},
        {"refused", nullptr},
    };
    for (const auto& [key, check] : members) {
        auto it = j.find(key);
        const bool ok =
            it != j.end() && (check ? (*it.*check)()
                                    : it->is_null() || it->is_string() ||
                                          (std::string_view(key) == "refused" && it->is_object()));
        if (!ok) {
            error = path + ": not a status file of the ibqos OpenSM plugin (\"" + key +
                    "\" is missing or of another type)";
            return std::nullopt;
        }
    }
    s.policy = stringOr(j, "policy");
    s.version = optionalString(j, "version");
    s.inForce = j["in_force"].get<bool>() && s.version;
    s.textInForce = stringOr(j, "text_in_force");
    s.fileSeen = optionalString(j, "file_seen");
    s.opensmPid = numberOr<long>(j, "opensm_pid", 0);
    s.sweep = numberOr<uint64_t>(j, "sweep", 0);
    s.sweepDone = numberOr<uint64_t>(j, "sweep_done", 0);
    s.updated = numberOr<double>(j, "updated_unix", 0);
    s.interval = numberOr<unsigned>(j, "interval", 10);
    if (auto r = j.find("refused"); r != j.end() && r->is_object()) {
        s.refusedVersion = optionalString(*r, "version");
        s.refusedAt = numberOr<double>(*r, "at_unix", 0);
    }
    s.opensmConf = stringOr(j, "opensm_conf");
    s.partitions = stringOr(j, "partitions");
    s.pathSlEngine = stringOr(j, "path_sl_engine");
    return s;
}

std::string staleReason(const SmStatus& s, double now) {
    // The status is read on the SM's host: a process that is gone is known at once (EPERM
    // means it runs as another user).
    if (s.opensmPid > 0 && ::kill(static_cast<pid_t>(s.opensmPid), 0) != 0 && errno == ESRCH)
        return "OpenSM (pid " + std::to_string(s.opensmPid) + ") is not running";
    const double age = now - s.updated;
    const double limit = MissedHeartbeats * std::max(1u, s.interval) + StaleMarginSeconds;
    if (age > limit) {
        return "not updated for " + std::to_string(static_cast<long>(age)) +
               " s (the plugin writes it every " + std::to_string(s.interval) +
               " s): OpenSM is down, or the plugin is no longer loaded";
    }
    return "";
}

std::string policyVersion(std::string_view text) { return hex(fnv1a(text), 16); }

}  // namespace ibqos::cli
