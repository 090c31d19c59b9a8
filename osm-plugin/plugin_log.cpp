// SPDX-License-Identifier: MIT
// Plugin: what it says in OpenSM's log (IBQOS-xxxx lines) and publishes in its status file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "osm-plugin/plugin.hpp"
#include "policy-space/policy_diff.hpp"

namespace ibqos::osm {

void Plugin::log(int level, const char* id, const std::string& message) {
    osm_log(&osm_->log, static_cast<osm_log_level_t>(level), "IBQOS-%s: %s\n", id, message.c_str());
}

std::string Plugin::lastGoodState() const {
    return good_.policy ? "the last good policy (version " + std::to_string(good_.version) +
                              ") stays in force"
                        : "no policy is in force yet";
}

void Plugin::logChange(const LoadedPolicy& previous, const CompiledSweep& sweep) {
    // The previous policy on this fabric; the request space is compared up to a work bound,
    // as this runs in OpenSM's sweep (about a second at most).
    constexpr uint64_t WorkBudget = 10'000'000;
    Diagnostics ignored;
    auto old = FabricCompilation::compile(*previous.policy, sweep.fabric(), original_, ignored,
                                          CompileStage::Tables);
    const size_t ports = changedTables(sweep.fabric(), old->tables(), sweep.tables()).size();
    const std::optional<PolicyDiff> diff = diffPolicies(old->bound(), sweep.bound(), WorkBudget);
    const std::vector<DiffRegion>* regions = diff ? &diff->regions : nullptr;
    std::string what = "version " + std::to_string(good_.version) + " replaces version " +
                       std::to_string(previous.version) + ": ";
    if (!regions) {
        what += "the requests were not compared (past the comparison's work bound)";
    } else {
        uint64_t pairs = 0;
        size_t slChanges = 0;
        for (const DiffRegion& r : *regions) {
            pairs += r.portPairs;
            slChanges += r.before.ok() != r.after.ok() || r.before.sl != r.after.sl;
        }
        what += std::to_string(regions->size()) + " regions of requests change answer (" +
                std::to_string(pairs) + " port pairs; " + std::to_string(slChanges) +
                " regions change status or SL)";
    }
    log(OSM_LOG_INFO, "0017", what + ", " + std::to_string(ports) + " ports change tables");
    if (!regions || !osm_log_is_active(&osm_->log, OSM_LOG_VERBOSE)) return;
    for (size_t i = 0; i < regions->size(); ++i) {
        const DiffRegion& r = (*regions)[i];
        log(OSM_LOG_VERBOSE, "0019",
            "region " + std::to_string(i + 1) + ": " + std::to_string(r.sources.size()) +
                " sources, " + std::to_string(r.destinations.size()) +
                " destinations, service-id " + describeValues(r.serviceIds, true) + ", qos-class " +
                describeValues(r.qosClasses, false) + ", pkey " + describeValues(r.pkeys, true) +
                ": " + describeAnswer(*previous.policy, r.before) + " -> " +
                describeAnswer(*good_.policy, r.after));
    }
}

void Plugin::logStricterErrors(const Diagnostics& diagnostics) {
    if (!diagnostics.hasErrors()) return;
    log(OSM_LOG_INFO, "0018",
        std::to_string(diagnostics.errorCount()) +
            " errors only ibqos reports (stock OpenSM accepts them, see docs/compatibility.md): "
            "the policy keeps OpenSM's meaning; a qos-setup section with such an error, or a "
            "scope that would drop or starve a level's SL, is not applied (opensm.conf's tables "
            "there)");
}

void Plugin::logDiagnostics(const Diagnostics& diagnostics, const SourceFile& source) {
    for (const Diagnostic& d : diagnostics.all()) {
        std::string line = renderText(d, &source);
        log(d.severity == Severity::Error ? OSM_LOG_ERROR : OSM_LOG_INFO, "0012",
            line.substr(0, line.find('\n')));
    }
}

void Plugin::logResponderCounts() {
    ResponderCounts c = responder_.takeCounts();
    status_.answered += c.answered;
    status_.records += c.records;
    for (size_t i = 0; i < DelegatedKinds; ++i) {
        if (c.delegated[i])
            status_.delegated[delegatedName(static_cast<Delegated>(i))] += c.delegated[i];
    }
    std::string left;
    uint64_t delegated = 0;
    for (size_t i = 0; i < DelegatedKinds; ++i) {
        if (!c.delegated[i]) continue;
        delegated += c.delegated[i];
        left += std::string(left.empty() ? " (" : ", ") + delegatedName(static_cast<Delegated>(i)) +
                " " + std::to_string(c.delegated[i]);
    }
    log(OSM_LOG_INFO, "0101",
        "since the last sweep: " + std::to_string(c.answered) +
            " PathRecord requests answered by ibqos (" + std::to_string(c.records) + " records), " +
            std::to_string(delegated) + " left to OpenSM's handler" +
            (left.empty() ? "" : left + ")"));
}

void Plugin::publishStatus(const std::string* textInForce) {
    if (publisher_) publisher_->publish(status_, textInForce);
}

void Plugin::noteRefusal(uint64_t hash, const Diagnostics& diagnostics, const SourceFile* source,
                         const std::string& why) {
    PluginStatus::Refusal refusal;
    refusal.hash = hash;
    refusal.at = unixNow();
    if (!why.empty()) refusal.diagnostics.push_back(why);
    for (const Diagnostic& d : diagnostics.all()) {
        if (d.severity != Severity::Error) continue;
        std::string line = renderText(d, source);
        refusal.diagnostics.push_back(line.substr(0, line.find('\n')));
    }
    status_.refused = std::move(refusal);
    publishStatus();
}

}  // namespace ibqos::osm
