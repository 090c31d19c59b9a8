// SPDX-License-Identifier: MIT
#include "fabric/plugin_options.hpp"

#include <array>
#include <cstdlib>

#include "common/text.hpp"

namespace ibqos {

namespace {

constexpr std::array<std::string_view, 5> Keys = {"policy", "generated", "status", "partitions",
                                                  "pathrecord"};
constexpr const char* Form =
    "policy=PATH[,generated=PATH][,status=PATH][,partitions=predict|live]"
    "[,pathrecord=plugin|opensm]";

}  // namespace

std::string openSmCacheDir() {
    const char* cache = std::getenv("OSM_CACHE_DIR");
    return cache && *cache ? cache : "/var/cache/opensm";
}

std::optional<PluginOptions> parsePluginOptions(std::string_view all, std::string& error) {
    PluginOptions options;
    size_t start = 0;
    while (start <= all.size()) {
        size_t comma = all.find(',', start);
        std::string_view item = trim(all.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        start = comma == std::string_view::npos ? all.size() + 1 : comma + 1;
        if (item.empty()) continue;
        size_t eq = item.find('=');
        std::string key(trim(item.substr(0, eq)));
        std::string value(eq == std::string_view::npos ? "" : trim(item.substr(eq + 1)));
        if (key == "policy") {
            options.policy = value;
        } else if (key == "generated") {
            options.generated = value;
        } else if (key == "status") {
            options.status = value;
        } else if (key == "partitions" && (value == "predict" || value == "live")) {
            options.predictPartitions = value == "predict";
        } else if (key == "pathrecord" && (value == "plugin" || value == "opensm")) {
            options.answerPathRecords = value == "plugin";
        } else {
            std::string_view guess = closest(key, Keys);
            bool known = std::find(Keys.begin(), Keys.end(), key) != Keys.end();
            error = "unknown option '" + std::string(item) + "' in event_plugin_options" +
                    (known           ? " (a value it does not take)"
                     : guess.empty() ? ""
                                     : " (did you mean '" + std::string(guess) + "'?)") +
                    "; it takes " + Form;
            return std::nullopt;
        }
    }
    if (options.policy.empty()) {
        error = std::string("event_plugin_options needs policy=PATH; it takes ") + Form;
        return std::nullopt;
    }
    if (options.generated.empty()) options.generated = openSmCacheDir() + "/ibqos-policy.conf";
    if (options.status.empty()) {
        // Beside the plain policy the plugin writes.
        size_t slash = options.generated.rfind('/');
        options.status =
            (slash == std::string::npos ? std::string() : options.generated.substr(0, slash + 1)) +
            DefaultStatusName;
    }
    return options;
}

}  // namespace ibqos
