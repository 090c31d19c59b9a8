// SPDX-License-Identifier: MIT
// The ibqos plugin's event_plugin_options, read the same way by the plugin inside OpenSM and by
// `ibqos check --opensm-conf`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ibqos {

// The status file's name beside the plain policy, when the options give no status=.
inline constexpr char DefaultStatusName[] = "ibqos-status.json";

struct PluginOptions {
    std::string policy;
    std::string generated;  // the plain policy OpenSM's SA loads (qos_policy_file)
    std::string status;     // the status file `ibqos status` reads
    // Who answers PathRecord requests: the plugin's responder (the requests it leaves go to
    // OpenSM's handler), or OpenSM's handler alone, from the plain policy.
    bool answerPathRecords = true;
    // predict: judge a policy against the partitions this sweep's PKey setup will make, read
    // from OpenSM's partition configuration; live: against those the last sweep made (a change
    // then costs one more heavy sweep).
    bool predictPartitions = true;
};

// Parses "policy=PATH[,generated=PATH][,status=PATH][,partitions=predict|live]
// [,pathrecord=plugin|opensm]"; on failure returns nullopt and sets error (an unknown key names
// the known ones, and the closest). Paths not given are their defaults: generated in
// $OSM_CACHE_DIR (else /var/cache/opensm), status beside it.
std::optional<PluginOptions> parsePluginOptions(std::string_view text, std::string& error);

// The directory OpenSM's cache files go to: $OSM_CACHE_DIR, else /var/cache/opensm.
std::string openSmCacheDir();

}  // namespace ibqos
