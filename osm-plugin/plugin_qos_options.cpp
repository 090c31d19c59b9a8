// SPDX-License-Identifier: MIT
// Plugin: OpenSM's qos_* options, which carry each port class's tables: set from the policy's
// qos-setup, and told apart from an edit of opensm.conf that OpenSM rescans at every sweep.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>

#include "osm-plugin/plugin.hpp"

namespace ibqos::osm {

namespace {

constexpr PortClass AllClasses[] = {PortClass::Ca, PortClass::Router, PortClass::SwitchPort0,
                                    PortClass::SwitchExternal};

osm_qos_options_t& optionsOf(osm_subn_opt_t& opt, PortClass c) {
    switch (c) {
        case PortClass::Ca:
            return opt.qos_ca_options;
        case PortClass::Router:
            return opt.qos_rtr_options;
        case PortClass::SwitchPort0:
            return opt.qos_sw0_options;
        case PortClass::SwitchExternal:
            return opt.qos_swe_options;
    }
    return opt.qos_options;
}

bool sameOption(const char* current, const std::string& set) { return current && set == current; }

bool sameOptionSet(const QosOptionSet& a, const QosOptionSet& b) {
    return std::tie(a.maxVls, a.highLimit, a.vlarbHigh, a.vlarbLow, a.sl2vl) ==
           std::tie(b.maxVls, b.highLimit, b.vlarbHigh, b.vlarbLow, b.sl2vl);
}

// Whether two readings of opensm.conf give the same table options.
bool sameQosOptions(const OpenSmConf& a, const OpenSmConf& b) {
    return a.maxOpVls == b.maxOpVls && sameOptionSet(a.all, b.all) && sameOptionSet(a.ca, b.ca) &&
           sameOptionSet(a.router, b.router) && sameOptionSet(a.switchPort0, b.switchPort0) &&
           sameOptionSet(a.switchExternal, b.switchExternal);
}

}  // namespace

bool Plugin::takeReloadedOptions() {
    bool reread = false;
    for (PortClass c : AllClasses) {
        const auto& set = lastSet_[static_cast<size_t>(c)];
        const osm_qos_options_t& now = optionsOf(*opt_, c);
        if (set && !(sameOption(now.vlarb_high, set->vlarbHigh) &&
                     sameOption(now.vlarb_low, set->vlarbLow) &&
                     sameOption(now.sl2vl, set->sl2vl) && now.high_limit == set->highLimit)) {
            reread = true;
        }
    }
    if (!reread) return false;
    // OpenSM rescans opensm.conf at every heavy sweep and puts its options back in place of
    // ibqos's: they are set again this sweep, and only a real change is news.
    lastSet_ = {};
    OpenSmConf now = confFromOptions(*opt_);
    if (sameQosOptions(now, original_)) return false;
    original_ = std::move(now);
    return true;
}

void Plugin::applyClassOptions(const CompiledSweep& sweep) {
    osm_subn_opt_t* file = opt_->file_opts;
    for (PortClass c : AllClasses) {
        std::optional<ClassOptions> wanted = sweep.classOptions(c);
        auto& set = lastSet_[static_cast<size_t>(c)];
        if (!wanted || (set && *set == *wanted)) continue;
        osm_qos_options_t& options = optionsOf(*opt_, c);
        osm_qos_options_t* inFile = file ? &optionsOf(*file, c) : nullptr;
        // OpenSM keeps an option and its copy as read from opensm.conf (file_opts) as one
        // string; its rescan frees the option and forgets the copy. So ibqos's string takes
        // both places and the one it replaces is freed once: nothing leaks, nothing is freed
        // twice.
        auto replace = [](char*& current, char** copy, const std::string& value) {
            char* old = current;
            char* oldCopy = copy ? *copy : nullptr;
            current = strdup(value.c_str());
            if (copy) *copy = current;
            std::free(old);
            if (oldCopy != old) std::free(oldCopy);
        };
        options.high_limit = wanted->highLimit;
        replace(options.vlarb_high, inFile ? &inFile->vlarb_high : nullptr, wanted->vlarbHigh);
        replace(options.vlarb_low, inFile ? &inFile->vlarb_low : nullptr, wanted->vlarbLow);
        replace(options.sl2vl, inFile ? &inFile->sl2vl : nullptr, wanted->sl2vl);
        if (inFile) inFile->high_limit = wanted->highLimit;
        set = wanted;
        log(OSM_LOG_VERBOSE, "0022",
            std::string(portClassPrefix(c)) + "* options set: high_limit " +
                std::to_string(wanted->highLimit) + ", vlarb_high " + wanted->vlarbHigh +
                ", vlarb_low " + wanted->vlarbLow + ", sl2vl " + wanted->sl2vl);
    }
}

}  // namespace ibqos::osm
