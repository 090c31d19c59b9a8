// SPDX-License-Identifier: MIT
// Plugin: reload, compile and apply at each heavy sweep (its log lines: plugin_log.cpp; the
// qos_* options it sets: plugin_qos_options.cpp).
#include "osm-plugin/plugin.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "fabric/opensm_subnet.hpp"
#include "fabric/partitions.hpp"
#include "osm-plugin/failpoint.hpp"
#include "osm-plugin/opensm_cache.hpp"
#include "osm-plugin/opensm_lock.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::osm {

namespace {

// The plain policy while no policy is in force: no default level, so OpenSM serves without a
// policy, as stock OpenSM does with a policy it drops (its ERR AC10 and AC04). No valid policy
// means that: OpenSM requires an SL in every qos-level, and a default level with an SL changes
// the answers to requests that name an SL or a partition with one.
constexpr const char* NoPolicyText =
    "# ibqos: no policy is in force yet. This file has no default qos-level on purpose: OpenSM\n"
    "# logs ERR AC10 and AC04 for it and answers PathRecords as with no policy, until the ibqos\n"
    "# plugin puts its policy in force here (IBQOS-0010).\n";

}  // namespace

Plugin::Plugin(osm_opensm_t* osm, PluginOptions options)
    : osm_(osm),
      options_(std::move(options)),
      hooks_(osm, [this](int level, const char* id,
                         const std::string& message) { log(level, id, message); }),
      responder_(osm, [this](int level, const char* id, const std::string& message) {
          log(level, id, message);
      }) {
    opt_ = &osm_->subn.opt;
    original_ = confFromOptions(*opt_);
    status_.policy = options_.policy;
    status_.generated = options_.generated;
    status_.opensmConf = opt_->config_file ? opt_->config_file : "";
    status_.partitions = opt_->partition_config_file ? opt_->partition_config_file
                                                     : OSM_DEFAULT_PARTITION_CONFIG_FILE;
    status_.opensmPid = static_cast<long>(getpid());
    // A few heartbeats make a sweep interval (OpenSM's light sweeps report no event).
    status_.intervalSeconds = opt_->sweep_interval ? std::min(opt_->sweep_interval, 10u) : 10;
    publisher_ = std::make_unique<StatusPublisher>(
        options_.status,
        [this](const std::string& message, bool error) {
            log(error ? OSM_LOG_ERROR : OSM_LOG_INFO, error ? "0024" : "0025", message);
        },
        nullptr);
    log(OSM_LOG_INFO, "0001",
        "ibqos plugin loaded: policy " + options_.policy + ", plain policy for OpenSM's SA " +
            options_.generated + ", status " + options_.status);
    if (!opt_->qos) {
        opt_->qos = TRUE;
        log(OSM_LOG_INFO, "0002",
            "QoS was off in opensm.conf ('qos FALSE'); turned on, as the policy needs it");
    }
    reloadPolicy();
    // Until a policy is in force (the first heavy sweep puts one there), OpenSM runs without
    // one, as a stock OpenSM does with a policy it drops: a file with no default level gives
    // exactly that (OpenSM logs its ERR AC10 for it).
    writeGeneratedPolicy(NoPolicyText);
    // OpenSM parses nothing before its first heavy sweep; the responder answers with no policy
    // only when the file says so too (else OpenSM's handler answers until a write succeeds).
    responder_.setSweep(nullptr, generatedIsOurs_);
    // OpenSM frees this string at shutdown and never re-reads it from opensm.conf: the old one
    // is left alone (OpenSM may still hold it).
    opt_->qos_policy_file = strdup(options_.generated.c_str());
    // Last: once the dispatcher holds the responder, this constructor may no longer fail (the
    // message is made before).
    if (options_.answerPathRecords) {
        const std::string answering =
            "PathRecord requests are answered by the plugin, from the compiled policy (the shapes "
            "it leaves go to OpenSM's own handler)";
        responding_ = responder_.install();
        if (responding_) log(OSM_LOG_INFO, "0051", answering);
    } else {
        log(OSM_LOG_INFO, "0052",
            "PathRecord requests are answered by OpenSM's own handler, from the plain policy "
            "(pathrecord=opensm)");
    }
    publishStatus();
}

Plugin::~Plugin() {
    if (publisher_) publisher_->stop();
    hooks_.install(false, false, 0);
    log(OSM_LOG_INFO, "0003", "ibqos plugin unloaded");
}

void Plugin::report(osm_epi_event_id_t event, void* data) noexcept {
    try {
        switch (event) {
            case OSM_EVENT_ID_HEAVY_SWEEP_START:
                sweepStart_ = std::chrono::steady_clock::now();
                break;
            case OSM_EVENT_ID_HEAVY_SWEEP_DONE:
                // A first sweep and a standby's takeover sweep report DISCOVERING here; a
                // standby never reaches this event while it is standby.
                if (osm_->subn.sm_state == IB_SMINFO_STATE_STANDBY ||
                    osm_->subn.sm_state == IB_SMINFO_STATE_NOTACTIVE) {
                    break;
                }
                heavySweepDone();
                break;
            case OSM_EVENT_ID_UCAST_ROUTING_DONE:
                routingDone();
                break;
            case OSM_EVENT_ID_SUBNET_UP:
                subnetUp();
                break;
            case OSM_EVENT_ID_STATE_CHANGE:
                log(OSM_LOG_VERBOSE, "0004",
                    "SM state is now " + std::to_string(osm_->subn.sm_state));
                break;
            default:
                break;
        }
        (void)data;
    } catch (const std::exception& e) {
        log(OSM_LOG_ERROR, "0900",
            std::string("internal error, the previous state stays in force: ") + e.what());
    } catch (...) {
        log(OSM_LOG_ERROR, "0900", "internal error, the previous state stays in force");
    }
}

void Plugin::predictPartitions(Fabric& fabric) {
    const char* path = opt_->partition_config_file ? opt_->partition_config_file
                                                   : OSM_DEFAULT_PARTITION_CONFIG_FILE;
    // osm_prtn_make_partitions() reads the file at every heavy sweep, after this event.
    std::optional<std::string> text;
    if (std::ifstream in{path, std::ios::binary}) {
        std::stringstream all;
        all << in.rdbuf();
        text = std::move(all).str();
    }
    partitionsText_ = text;
    if (!options_.predictPartitions) return;  // OpenSM's own, from the last sweep
    if (preferLiveFor_ && *preferLiveFor_ == text) return;
    preferLiveFor_.reset();
    std::optional<SourceFile> source;
    if (text) source.emplace(path, *text);
    Diagnostics diagnostics;
    readPartitions(source ? &*source : nullptr, fabric, diagnostics);
    if (diagnostics.hasErrors() && partitionsErrorsLogged_ != text) {
        partitionsErrorsLogged_ = text;
        log(OSM_LOG_ERROR, "0016",
            std::string(path) +
                " has errors: OpenSM ignores it and makes every port a full member of the "
                "Default partition alone; the policy is judged against that");
        logDiagnostics(diagnostics, *source);
    }
}

void Plugin::reloadPolicy() {
    // The loader every command uses: a directory, a read error or an oversized file is a file
    // that cannot be read (stock OpenSM exits on a directory), never an empty policy.
    std::string error;
    std::optional<std::string> text = SourceFile::readText(options_.policy, error);
    if (!text) {
        if (error != readErrorLogged_) {
            readErrorLogged_ = error;
            log(OSM_LOG_ERROR, "0013",
                error + "; " +
                    (good_.policy
                         ? "the last good policy (version " + std::to_string(good_.version) +
                               ") stays in force"
                         : "no policy is in force yet (OpenSM's default: SL 0 for every path)"));
        }
        return;
    }
    readErrorLogged_.clear();
    uint64_t hash = fnv1a(*text);
    if (hash == lastSeenHash_) return;
    lastSeenHash_ = hash;
    status_.seen = hash;

    auto source = std::make_unique<SourceFile>(options_.policy, std::move(*text));
    Diagnostics diagnostics;
    auto policy = std::make_shared<const Policy>(loadPolicy(*source, diagnostics));
    diagnostics.sort();
    // Only what stock OpenSM would drop the file for is refused; an error only ibqos reports
    // leaves OpenSM's meaning in force.
    if (diagnostics.openSmRejects()) {
        log(OSM_LOG_ERROR, "0011",
            options_.policy + " is rejected, as stock OpenSM would drop it (" +
                std::to_string(diagnostics.errorCount()) + " errors): " + lastGoodState());
        logDiagnostics(diagnostics, *source);
        noteRefusal(hash, diagnostics, source.get());
        candidate_ = {};
        return;
    }
    logDiagnostics(diagnostics, *source);
    logStricterErrors(diagnostics);
    candidate_ = {std::move(source), std::move(policy), hash, good_.version + 1};
}

bool Plugin::writeGeneratedPolicy(const std::string& text) {
    if (generatedIsOurs_ && text == lastGeneratedText_) return true;
    // A failed write leaves the file as it was, so OpenSM's handler keeps the version it has
    // and the caller keeps that version for everything; each reason is logged once.
    auto fail = [this](const std::string& why) {
        if (why != writeErrorLogged_) {
            writeErrorLogged_ = why;
            log(OSM_LOG_ERROR, "0021",
                why +
                    ": the plain policy OpenSM's SA loads keeps its version, and so does "
                    "everything the plugin sets (" +
                    lastGoodState() + "); the write is tried again at every heavy sweep");
        }
        return false;
    };
    std::string temporary = options_.generated + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush()) {
            const int error = errno;
            out.close();
            std::remove(temporary.c_str());
            return fail("cannot write " + temporary + ": " + std::strerror(error));
        }
    }
    if (std::rename(temporary.c_str(), options_.generated.c_str()) != 0) {
        const int error = errno;
        std::remove(temporary.c_str());
        return fail("cannot replace " + options_.generated + ": " + std::strerror(error));
    }
    lastGeneratedText_ = text;
    generatedIsOurs_ = true;
    if (!writeErrorLogged_.empty()) {
        writeErrorLogged_.clear();
        log(OSM_LOG_INFO, "0023", "the plain policy can be written again: " + options_.generated);
    }
    log(OSM_LOG_VERBOSE, "0020",
        "wrote " + options_.generated + " (" + std::to_string(text.size()) + " bytes)");
    return true;
}

void Plugin::heavySweepDone() {
    auto start = std::chrono::steady_clock::now();
    auto finish = [&] {
        workMs_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        publishStatus();
    };
    ++sweeps_;
    status_.sweep = sweeps_;
    status_.sweepTime = unixNow();
    compiledThisSweep_ = false;
    reloadPolicy();

    std::vector<osm_node_t*> nodes;
    Fabric fabric = readSubnet(nodes);

    // A new policy takes over once stock OpenSM would take it on this fabric too; until then it
    // is judged again at every heavy sweep (the fabric or its partitions may change).
    std::unique_ptr<CompiledSweep> sweep = judgeCandidate(fabric);
    const bool promote = sweep != nullptr;
    // The policy in force is compiled again only when the fabric or the options changed.
    const bool sameSubnet = sweep_ && sameFabric(compiledFabric_, fabric);
    const bool stale = !sameSubnet || compiledVersion_ != good_.version || optionsChanged_;
    if (!sweep && good_.policy && stale) sweep = compileInForce(fabric);
    if (!sweep && !sweep_) {
        // No policy in force yet: the file says so (again, if the first write failed), and
        // OpenSM's errors about it, which follow, are announced.
        log(OSM_LOG_INFO, "0026",
            "no policy is in force yet, so the plain policy OpenSM reads (" + options_.generated +
                ") has no default qos-level: OpenSM's ERR AC10 and AC04 for it are expected, "
                "and it answers PathRecords as with no policy");
        writeGeneratedPolicy(NoPolicyText);
        return finish();
    }
    // One version for everything: the tables, the hooks, the plain policy OpenSM's handler
    // parses and the responder's answers change together, or not at all.
    bool newText = false;
    bool textChanged = false;  // a new version in force: its copy beside the status
    if (sweep) {
        compiledThisSweep_ = true;
        newText = !generatedIsOurs_ || sweep->policyText() != lastGeneratedText_;
        if (!writeGeneratedPolicy(sweep->policyText())) {
            // The version in force stays for everything; a candidate waits for the next sweep.
            compiledThisSweep_ = false;
            sweep.reset();
            if (!sweep_) return finish();
        } else if (newText) {
            // OpenSM parses the new file later in this sweep, whatever happens below: from now
            // until UCAST_ROUTING_DONE its handler answers every PathRecord.
            OpenSmLock lock(*osm_, OpenSmLock::Mode::Exclusive);
            responder_.setSweep(sweep_.get(), false);
        }
        if (sweep && promote) {
            promoteCandidate(*sweep);
            textChanged = true;
        }
    }

    if (textChanged) {
        const std::string text(good_.source->text());
        publishStatus(&text);
    }
    installSweep(std::move(sweep), sameSubnet, newText, nodes);
    // What sweep_ was compiled from, once it is in place (a failure above compiles again).
    if (sweep_ && compiledThisSweep_) {
        compiledVersion_ = good_.version;
        compiledFabric_ = std::move(fabric);
        optionsChanged_ = false;
    }
    finish();
}

Fabric Plugin::readSubnet(std::vector<osm_node_t*>& nodes) {
    // The subnet and the options are read, never changed, here: OpenSM's lock shared, so the
    // SA goes on answering.
    Fabric fabric;
    bool optionsChanged = false;
    {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Shared);
        IBQOS_FAILPOINT("sweep-read");
        fabric = fabricFromSubnet(osm_->subn, &nodes);
        optionsChanged = takeReloadedOptions();
    }
    if (optionsChanged) {
        optionsChanged_ = true;
        log(OSM_LOG_INFO, "0005",
            "opensm.conf's QoS options changed; they are the new starting point");
    }

    predictPartitions(fabric);
    judgedPartitions_ = partitionsKey(fabric);
    return fabric;
}

std::unique_ptr<CompiledSweep> Plugin::judgeCandidate(const Fabric& fabric) {
    // A refused candidate is judged again only on another fabric or other options.
    const bool judgedAlready =
        candidate_.refusedOn && sameFabric(*candidate_.refusedOn, fabric) && !optionsChanged_;
    if (!candidate_.policy || judgedAlready) return nullptr;
    std::unique_ptr<CompiledSweep> trial;
    Diagnostics diagnostics;
    std::string failure;
    try {
        IBQOS_FAILPOINT_FOR("candidate-compile", candidate_.source->text());
        trial = CompiledSweep::compile(candidate_.policy, fabric, original_, diagnostics);
    } catch (const std::exception& e) {
        failure = e.what();
    } catch (...) {
        failure = "unknown exception";
    }
    if (!trial) {
        // Dropped until the file changes: the last good policy is compiled instead.
        log(OSM_LOG_ERROR, "0900",
            "internal error compiling " + options_.policy + " (version " +
                std::to_string(candidate_.version) + "): " + failure +
                "; it is dropped until the file changes, " + lastGoodState());
        noteRefusal(candidate_.hash, diagnostics, candidate_.source.get(),
                    "internal error compiling the policy: " + failure);
        candidate_ = {};
        return nullptr;
    }
    diagnostics.sort();
    if (diagnostics.openSmRejects()) {
        candidate_.refusedOn = fabric;
        if (!candidate_.refusalLogged) {
            candidate_.refusalLogged = true;
            log(OSM_LOG_ERROR, "0011",
                options_.policy +
                    " is rejected, as stock OpenSM would drop it on this "
                    "fabric (" +
                    std::to_string(diagnostics.errorCount()) + " errors): " + lastGoodState() +
                    "; it is judged again at every heavy sweep");
            logDiagnostics(diagnostics, *candidate_.source);
            noteRefusal(candidate_.hash, diagnostics, candidate_.source.get());
        }
        return nullptr;
    }
    if (!candidate_.diagnosticsLogged) {
        candidate_.diagnosticsLogged = true;
        logDiagnostics(diagnostics, *candidate_.source);
        logStricterErrors(diagnostics);
    }
    return trial;
}

std::unique_ptr<CompiledSweep> Plugin::compileInForce(const Fabric& fabric) {
    Diagnostics diagnostics;
    std::unique_ptr<CompiledSweep> sweep =
        CompiledSweep::compile(good_.policy, fabric, original_, diagnostics);
    // Stock OpenSM would now drop the policy (and serve none); the plugin keeps it.
    for (const Diagnostic& d : diagnostics.all()) {
        if (!d.openSmRejects) continue;
        std::string line = renderText(d, good_.source.get());
        log(OSM_LOG_ERROR, "0014", "on this fabric: " + line.substr(0, line.find('\n')));
    }
    return sweep;
}

void Plugin::promoteCandidate(const CompiledSweep& sweep) {
    LoadedPolicy previous = std::move(good_);
    good_ = std::move(candidate_);
    candidate_ = {};
    log(OSM_LOG_INFO, "0010",
        "policy " + options_.policy + " version " + std::to_string(good_.version) + " (" +
            hex(good_.hash, 16) + ") in force");
    if (!status_.inForce || status_.hash != good_.hash) status_.since = unixNow();
    status_.inForce = true;
    status_.hash = good_.hash;
    status_.version = good_.version;
    if (previous.policy) logChange(previous, sweep);
}

void Plugin::installSweep(std::unique_ptr<CompiledSweep> sweep, bool sameSubnet, bool newText,
                          const std::vector<osm_node_t*>& nodes) {
    std::unique_ptr<CompiledSweep> replaced;  // freed once OpenSM's lock is released
    {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Exclusive);
        IBQOS_FAILPOINT_FOR("sweep-apply",
                            good_.source ? good_.source->text() : std::string_view());
        const CompiledSweep& now = sweep ? *sweep : *sweep_;
        // OpenSM's nodes are this sweep's: a sweep kept from another fabric is not counted.
        size_t mads = sweep || sameSubnet
                          ? expectedQosMads(osm_->subn, now.fabric(), nodes, now.tables())
                          : 0;
        applyClassOptions(now);
        hooks_.install(now.needsSl2VlHook(), now.needsVlArbHook(), now.overriddenPorts());
        expectedMads_ = mads;
        if (sweep) {
            replaced = std::move(sweep_);
            sweep_ = std::move(sweep);
            // A new plain policy: the responder waits for OpenSM's parse (above); the same one:
            // it answers from the new sweep at once, if it answered.
            responder_.setSweep(sweep_.get(), responder_.answering() && !newText);
        }
        hooks_.setSweep(sweep_.get());
    }
}

void Plugin::routingDone() {
    // osm_qos_setup() has parsed the plain policy on disk: the responder answers again, from
    // the sweep whose plain policy that is (a failure between the write and the switch leaves
    // OpenSM's handler answering until a sweep puts it right).
    const std::string& inForce = sweep_ ? sweep_->policyText() : std::string(NoPolicyText);
    if (responding_ && generatedIsOurs_ && !responder_.answering() &&
        inForce == lastGeneratedText_) {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Exclusive);
        responder_.openSmHasSweep();
    }
    osm_routing_engine_t* engine = osm_->routing_engine_used;
    status_.pathSlEngine = engine && engine->path_sl && engine->name ? engine->name : "";
    if (engine && engine->path_sl) {
        std::string name = engine->name ? engine->name : "?";
        if (name != lastEngineWarned_) {
            lastEngineWarned_ = name;
            log(OSM_LOG_INFO, "0040",
                "routing engine " + name +
                    " chooses each path's SL itself (to stay deadlock-free): in SA answers its SL "
                    "replaces the policy's, and a request asking for the policy's SL may get no "
                    "path");
        }
    }
    // This sweep's PKey setup is done: were the partitions the policy was judged against the
    // ones OpenSM made? If not, judge again with OpenSM's own in a heavy sweep that follows now.
    if (!candidate_.policy && !good_.policy) return;
    PartitionsKey live;
    {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Shared);
        IBQOS_FAILPOINT("routing-read");
        live = livePartitionsKey(osm_->subn);
    }
    if (live == judgedPartitions_) return;
    preferLiveFor_ = partitionsText_;
    log(OSM_LOG_INFO, "0015",
        "the partitions OpenSM set up differ from those predicted from its partition "
        "configuration: the policy is judged again against OpenSM's own in a heavy sweep that "
        "follows now");
    {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Exclusive);
        osm_->subn.force_heavy_sweep = TRUE;
    }
    osm_sm_signal(&osm_->sm, OSM_SIGNAL_SWEEP);
}

void Plugin::subnetUp() {
    if (responding_) logResponderCounts();
    status_.sweepDone = sweeps_;
    publishStatus();
    if (!sweep_) return;
    double sweepMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sweepStart_)
            .count();
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "sweep %u: policy version %u (%s), %zu ports with tables (%zu through hooks, %zu "
        "hook calls), "
        "%zu QoS MADs by osm_qos.c's rules, ibqos %.1f ms of a %.1f ms sweep (%s)",
        sweeps_, good_.version, hex(good_.hash, 16).c_str(), sweep_->tables().ports.size(),
        sweep_->overriddenPorts(), hooks_.calls(), expectedMads_, workMs_, sweepMs,
        compiledThisSweep_ ? "compiled" : "policy, options and fabric unchanged: nothing compiled");
    log(OSM_LOG_INFO, "0100", buf);
}

}  // namespace ibqos::osm

// The C entry points (osm_event_plugin in plugin_entry.c points at them). No exception crosses
// them.
extern "C" void* ibqos_osm_create(osm_opensm_t* osm) {
    using namespace ibqos::osm;
    try {
        std::string error;
        auto options = ibqos::parsePluginOptions(
            osm->subn.opt.event_plugin_options ? osm->subn.opt.event_plugin_options : "", error);
        if (!options) {
            osm_log(&osm->log, OSM_LOG_ERROR, "IBQOS-0006: %s; the plugin does nothing\n",
                    error.c_str());
            return nullptr;
        }
        return new Plugin(osm, std::move(*options));
    } catch (const std::exception& e) {
        osm_log(&osm->log, OSM_LOG_ERROR, "IBQOS-0900: cannot start: %s\n", e.what());
    } catch (...) {
        osm_log(&osm->log, OSM_LOG_ERROR, "IBQOS-0900: cannot start\n");
    }
    return nullptr;
}

extern "C" void ibqos_osm_delete(void* plugin) {
    try {
        delete static_cast<ibqos::osm::Plugin*>(plugin);
    } catch (...) {
    }
}

extern "C" void ibqos_osm_report(void* plugin, osm_epi_event_id_t event, void* data) {
    if (plugin) static_cast<ibqos::osm::Plugin*>(plugin)->report(event, data);
}
