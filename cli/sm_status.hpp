// SPDX-License-Identifier: MIT
// The status file the OpenSM plugin writes, as `ibqos status` and `ibqos apply` read it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cli/command_line.hpp"
#include "common/json.hpp"

namespace ibqos::cli {

// The plugin's state as its status file says it.
struct SmStatus {
    std::string path;  // the status file
    Json json;         // the whole object, as written
    std::string policy;
    std::optional<std::string> version;  // in force ("0x" and 16 hex digits), or none
    bool inForce = false;
    std::string textInForce;  // the copy of the text in force beside the status
    std::optional<std::string> fileSeen;
    long opensmPid = 0;
    uint64_t sweep = 0, sweepDone = 0;
    double updated = 0;  // Unix seconds
    unsigned interval = 10;
    std::optional<std::string> refusedVersion;
    double refusedAt = 0;
    std::string opensmConf, partitions;
    std::string pathSlEngine;  // a routing engine that chooses the SL of SA answers itself
};

// The status file when --status is not given: ibqos-status.json beside the plain policy the
// plugin writes ($OSM_CACHE_DIR, else /var/cache/opensm).
std::string defaultStatusPath();

// --status FILE, for the commands that read the status file.
void addStatusOption(CLI::App& command, Value& status);

// Reads a status file; nullopt, with the reason, when there is none or it is no status.
std::optional<SmStatus> readSmStatus(const std::string& path, std::string& error);
// The same for the text of one (named `path` in messages).
std::optional<SmStatus> parseSmStatus(const std::string& path, const std::string& text,
                                      std::string& error);

// Why the status is stale (OpenSM not running, or not written for more than a few heartbeats),
// or empty when it is fresh.
std::string staleReason(const SmStatus& status, double now);

// A policy text's version as the plugin names it (IBQOS-0010's hash).
std::string policyVersion(std::string_view text);

// Unix time now, in seconds.
double unixTime();

}  // namespace ibqos::cli
