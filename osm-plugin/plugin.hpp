// SPDX-License-Identifier: MIT
// The ibqos OpenSM event plugin: the compiled policy applied at every heavy sweep, the last good
// policy kept when an edit breaks it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/source.hpp"
#include "compiler/policy.hpp"
#include "fabric/opensm_subnet.hpp"
#include "fabric/osm.hpp"
#include "fabric/plugin_options.hpp"
#include "osm-plugin/path_responder.hpp"
#include "osm-plugin/plugin_status.hpp"
#include "osm-plugin/routing_hooks.hpp"
#include "osm-plugin/sweep.hpp"

namespace ibqos::osm {

// event_plugin_options
// "policy=PATH[,generated=PATH][,status=PATH][,partitions=predict|live]
// [,pathrecord=plugin|opensm]".
class Plugin {
  public:
    Plugin(osm_opensm_t* osm, PluginOptions options);
    ~Plugin();
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    // Called for every event, from OpenSM's state-manager thread. Never throws, and never
    // returns with OpenSM's lock held.
    void report(osm_epi_event_id_t event, void* data) noexcept;

  private:
    struct LoadedPolicy {
        std::unique_ptr<SourceFile> source;
        std::shared_ptr<const Policy> policy;
        uint64_t hash = 0;
        unsigned version = 0;
        bool refusalLogged = false;  // a candidate refused on the fabric, judged again each sweep
        bool diagnosticsLogged = false;  // its findings, logged once while it waits for a write
        std::optional<Fabric> refusedOn = std::nullopt;  // the fabric it was last refused on
    };
    void log(int level, const char* id, const std::string& message);
    void heavySweepDone();
    // This sweep's fabric, read from OpenSM's subnet (nodes: OpenSM's node of each Fabric
    // node) with the partitions its PKey setup will make; opensm.conf's options taken again.
    Fabric readSubnet(std::vector<osm_node_t*>& nodes);
    // The candidate policy compiled on this sweep's fabric when stock OpenSM would take it
    // there; null when there is none, it was refused (logged and noted) or it failed.
    std::unique_ptr<CompiledSweep> judgeCandidate(const Fabric& fabric);
    // The policy in force compiled again on this sweep's fabric (what OpenSM would drop, logged).
    std::unique_ptr<CompiledSweep> compileInForce(const Fabric& fabric);
    // The candidate becomes the policy in force (logged, with what it changes, in the status).
    void promoteCandidate(const CompiledSweep& sweep);
    // Under OpenSM's lock: the class options, the hooks and the responder take the sweep (or
    // keep the one in force when sweep is null).
    void installSweep(std::unique_ptr<CompiledSweep> sweep, bool sameSubnet, bool newText,
                      const std::vector<osm_node_t*>& nodes);
    void routingDone();
    void subnetUp();
    // Each diagnostic's first line (file:line:col: severity: [code] message) as IBQOS-0012.
    void logDiagnostics(const Diagnostics& diagnostics, const SourceFile& source);
    // IBQOS-0018 when diagnostics hold errors (after openSmRejects(): all of them ibqos's own).
    void logStricterErrors(const Diagnostics& diagnostics);
    std::string lastGoodState() const;
    // IBQOS-0017 (and IBQOS-0019 per region, verbose): what the new policy changes against the
    // one it replaces, on this sweep's fabric.
    void logChange(const LoadedPolicy& previous, const CompiledSweep& sweep);
    // Gives the fabric the partitions this sweep's PKey setup will make.
    void predictPartitions(Fabric& fabric);
    void reloadPolicy();
    // Whether the options OpenSM holds are other than those ibqos last set (opensm.conf was read
    // again); takes the administrator's new ones, and returns true, when they really changed.
    bool takeReloadedOptions();
    // Writes the plain policy OpenSM's SA loads; false (logged once per reason) when it cannot,
    // and the file keeps the version OpenSM has.
    bool writeGeneratedPolicy(const std::string& text);
    void applyClassOptions(const CompiledSweep& sweep);
    // IBQOS-0101: what the PathRecord responder answered and left to OpenSM since the last one.
    void logResponderCounts();
    // Writes the status file (and, with a text, the copy of the text in force).
    void publishStatus(const std::string* textInForce = nullptr);
    // Records a refused version and its findings for the status.
    void noteRefusal(uint64_t hash, const Diagnostics& diagnostics, const SourceFile* source,
                     const std::string& why = "");

    osm_opensm_t* osm_;
    PluginOptions options_;
    LoadedPolicy good_;
    LoadedPolicy candidate_;       // read and checked, waiting to bind to the fabric
    uint64_t lastSeenHash_ = 0;    // the last file content looked at, good or not
    std::string readErrorLogged_;  // why the policy file could not be read, once logged
    OpenSmConf original_;          // the administrator's QoS options, before ibqos set its own
    osm_subn_opt_t* opt_ = nullptr;
    std::array<std::optional<ClassOptions>, 4> lastSet_;
    std::unique_ptr<CompiledSweep> sweep_;
    // The partitions the policy was judged against at HEAVY_SWEEP_DONE, and the partitions file
    // they were predicted from (nullopt: no file). Once OpenSM's own partitions prove the
    // prediction wrong, they are used instead for as long as the file stays the same.
    PartitionsKey judgedPartitions_;
    std::optional<std::string> partitionsText_;
    std::optional<std::optional<std::string>> preferLiveFor_;
    std::optional<std::string> partitionsErrorsLogged_;
    std::string lastGeneratedText_;  // the plain policy on disk, as the plugin last wrote it
    bool generatedIsOurs_ = false;   // the file holds lastGeneratedText_ (a write succeeded)
    std::string writeErrorLogged_;   // why the plain policy could not be written, once logged
    // What sweep_ was compiled from: a sweep is compiled again only when one of them changes.
    Fabric compiledFabric_;
    unsigned compiledVersion_ = 0;
    bool optionsChanged_ = false;
    bool compiledThisSweep_ = false;  // for the sweep summary
    RoutingHooks hooks_;
    PathResponder responder_;
    bool responding_ = false;  // the responder answers PathRecords
    std::string lastEngineWarned_;
    // Figures for the sweep summary.
    unsigned sweeps_ = 0;
    std::chrono::steady_clock::time_point sweepStart_;
    double workMs_ = 0;
    size_t expectedMads_ = 0;
    PluginStatus status_;
    std::unique_ptr<StatusPublisher> publisher_;  // stopped before the responder goes
};

}  // namespace ibqos::osm
