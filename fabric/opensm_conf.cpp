// SPDX-License-Identifier: MIT
// readOpenSmConf: "key value" lines, '#' comments, OpenSM's option names and value checks.
#include "fabric/opensm_conf.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "fabric/plugin_options.hpp"

namespace ibqos {

namespace {

// OpenSM's clean_val: trimmed, one pair of surrounding quotes dropped.
std::string cleanValue(std::string_view v) {
    v = trim(v);
    if (v.size() >= 2 &&
        ((v.front() == '"' && v.back() == '"') || (v.front() == '\'' && v.back() == '\''))) {
        v = v.substr(1, v.size() - 2);
    }
    return std::string(v);
}

// Where the dynamic loader finds lib<name>.so for OpenSM's dlopen: LD_LIBRARY_PATH, the
// directories of /etc/ld.so.conf (and the files it includes), and the default ones.
std::vector<std::string> loaderDirectories() {
    std::vector<std::string> dirs;
    if (const char* path = std::getenv("LD_LIBRARY_PATH")) {
        std::string_view rest = path;
        while (!rest.empty()) {
            size_t colon = rest.find(':');
            if (colon) dirs.emplace_back(rest.substr(0, colon));
            rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
        }
    }
    std::vector<std::filesystem::path> files{"/etc/ld.so.conf"};
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/etc/ld.so.conf.d", ec)) {
        if (entry.path().extension() == ".conf") files.push_back(entry.path());
    }
    for (const auto& file : files) {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) {
            std::string_view l = trim(line);
            if (!l.empty() && l[0] == '/') dirs.emplace_back(l);
        }
    }
    for (const char* d : {"/lib", "/usr/lib", "/lib64", "/usr/lib64"}) dirs.emplace_back(d);
    return dirs;
}

// One qos_ line of opensm.conf into the option set its prefix names.
template <class Warn>
void readQosOption(OpenSmConf& conf, const std::string& key, const std::string& value,
                   SourceLocation at, Warn warn) {
    QosOptionSet* set = nullptr;
    std::string name;
    for (auto [prefix, target] : {std::pair<const char*, QosOptionSet*>{"qos_ca_", &conf.ca},
                                  {"qos_rtr_", &conf.router},
                                  {"qos_sw0_", &conf.switchPort0},
                                  {"qos_swe_", &conf.switchExternal}}) {
        size_t n = std::char_traits<char>::length(prefix);
        if (key.compare(0, n, prefix) == 0) {
            set = target;
            name = key.substr(n);
        }
    }
    if (!set) {
        set = &conf.all;
        name = key.substr(4);
    }
    bool null = value == "(null)";  // OpenSM's spelling of "unset"
    if (name == "max_vls") {
        unsigned long v = std::strtoul(value.c_str(), nullptr, 0);
        if (v == 0 || v > 15) {
            if (v > 15) warn(key + " must be 1..15; OpenSM uses its default");
            set->maxVls.reset();
        } else {
            set->maxVls = static_cast<unsigned>(v);
        }
    } else if (name == "high_limit") {
        long v = std::strtol(value.c_str(), nullptr, 0);
        if (v < 0 || v > 255) {
            if (v > 255) warn(key + " must be 0..255; OpenSM uses its default");
            set->highLimit.reset();
        } else {
            set->highLimit = static_cast<int>(v);
            set->highLimitAt = at;
        }
    } else if (name == "vlarb_high" || name == "vlarb_low" || name == "sl2vl") {
        std::optional<std::string>& target = name == "vlarb_high"  ? set->vlarbHigh
                                             : name == "vlarb_low" ? set->vlarbLow
                                                                   : set->sl2vl;
        SourceLocation& where = name == "vlarb_high"  ? set->vlarbHighAt
                                : name == "vlarb_low" ? set->vlarbLowAt
                                                      : set->sl2vlAt;
        if (null) {
            target.reset();
        } else {
            target = value;
            where = at;
        }
    }
}

}  // namespace

const char* portClassPrefix(PortClass c) {
    switch (c) {
        case PortClass::Ca:
            return "qos_ca_";
        case PortClass::Router:
            return "qos_rtr_";
        case PortClass::SwitchPort0:
            return "qos_sw0_";
        case PortClass::SwitchExternal:
            return "qos_swe_";
    }
    return "qos_";
}

const QosOptionSet& OpenSmConf::forClass(PortClass c) const {
    switch (c) {
        case PortClass::Ca:
            return ca;
        case PortClass::Router:
            return router;
        case PortClass::SwitchPort0:
            return switchPort0;
        case PortClass::SwitchExternal:
            return switchExternal;
    }
    return all;
}

OpenSmConf readOpenSmConf(const SourceFile& source, Diagnostics& diagnostics) {
    OpenSmConf conf;
    conf.file = source.name();
    auto warn = [&](SourceLocation at, std::string message) {
        diagnostics.warning("opensm-conf", source.name(), at, std::move(message));
    };
    std::string_view text = source.text();
    size_t offset = 0;
    while (offset < text.size()) {
        size_t end = text.find('\n', offset);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(offset, end - offset);
        SourceLocation at = source.locate(static_cast<uint32_t>(offset));
        offset = end + 1;
        if (size_t hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        size_t blank = line.find_first_of(" \t");
        std::string key(line.substr(0, blank));
        std::string value = blank == std::string_view::npos ? "" : cleanValue(line.substr(blank));
        at = source.locate(static_cast<uint32_t>(line.data() - text.data()));

        if (key == "qos") {
            conf.qos = value == "TRUE";
            continue;
        }
        if (key == "event_plugin_name" || key == "event_plugin_options") {
            const bool name = key == "event_plugin_name";
            (name ? conf.eventPluginName : conf.eventPluginOptions) = value;
            (name ? conf.eventPluginNameAt : conf.eventPluginOptionsAt) = at;
            continue;
        }
        if (key == "max_op_vls") {
            char* e = nullptr;
            unsigned long v = std::strtoul(value.c_str(), &e, 0);
            if (*e != '\0' || v > 255) {
                warn(at, "max_op_vls must be a number; ignored");
            } else {
                conf.maxOpVls = static_cast<uint8_t>(v);
            }
            continue;
        }
        if (key.compare(0, 4, "qos_") != 0) continue;
        readQosOption(conf, key, value, at, [&](std::string message) { warn(at, message); });
    }
    return conf;
}

void checkPluginLines(const OpenSmConf& conf, Diagnostics& diagnostics) {
    if (!conf.eventPluginName) return;
    std::vector<std::string> names;
    for (std::string_view rest = trim(*conf.eventPluginName); !rest.empty();) {
        size_t blank = rest.find_first_of(" \t");
        names.emplace_back(rest.substr(0, blank));
        rest = blank == std::string_view::npos ? "" : trim(rest.substr(blank));
    }
    const std::vector<std::string> dirs = loaderDirectories();
    std::error_code ec;
    for (const std::string& name : names) {
        const std::string library = "lib" + name + ".so";
        bool found = false;
        for (const std::string& d : dirs)
            found = found || std::filesystem::exists(d + "/" + library, ec);
        if (!found) {
            diagnostics.warning("plugin-options", conf.file, conf.eventPluginNameAt,
                                "OpenSM loads the plugin '" + name + "' as " + library +
                                    ", which is in no directory the dynamic loader searches "
                                    "here (LD_LIBRARY_PATH, /etc/ld.so.conf, /lib, /usr/lib)");
        }
    }
    if (std::find(names.begin(), names.end(), "ibqos_osm") == names.end()) return;
    const SourceLocation at =
        conf.eventPluginOptions ? conf.eventPluginOptionsAt : conf.eventPluginNameAt;
    std::string error;
    auto options = parsePluginOptions(conf.eventPluginOptions.value_or(""), error);
    if (!options) {
        diagnostics.error("plugin-options", conf.file, at,
                          error + " (the plugin would log IBQOS-0006 and do nothing: no policy)");
        return;
    }
    if (!std::filesystem::exists(options->policy, ec)) {
        diagnostics.warning("plugin-options", conf.file, at,
                            "policy=" + options->policy +
                                ": no such file here; the plugin puts no policy in force until "
                                "it can read it");
    }
}

}  // namespace ibqos
