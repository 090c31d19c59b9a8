// SPDX-License-Identifier: MIT
// The SA PathRecord responder: OpenSM's dispatcher hands the plugin every PathRecord request,
// which it answers with the compiled classifier, field for field as OpenSM's own handler would
// with the plain policy, or hands on to that handler for the shapes it leaves to OpenSM.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "fabric/osm.hpp"
#include "osm-plugin/sweep.hpp"

namespace ibqos::osm {

// Why a request went to OpenSM's own handler instead of the responder.
enum class Delegated : uint8_t {
    MultiPathRecord,  // every MultiPathRecord (it needs RMPP both ways)
    Multicast,        // a multicast DGID: OpenSM answers from the group
    Routed,           // a DGID off this subnet: the path ends at a router
    OneEnd,           // a source or a destination left open: paths to or from every port
    AliasGuids,       // the subnet has alias GUIDs, which multiply a port's paths
    UnknownPort,      // an end the compiled policy does not know (a port newer than the sweep)
    Refused,          // OpenSM refuses the request itself: malformed, unsupported, unknown end
    // A new plain policy is written and OpenSM has not parsed it yet (its osm_qos_setup()
    // comes later in the sweep), or OpenSM's copy is not known to be the plugin's: OpenSM's
    // handler answers everything, so no answer mixes two versions.
    PolicyChange,
};
inline constexpr size_t DelegatedKinds = 8;
// A short name of each kind, for the sweep summary.
const char* delegatedName(Delegated kind);

// What the responder did since the counts were last taken.
struct ResponderCounts {
    uint64_t answered = 0;  // requests the responder answered
    uint64_t records = 0;   // PathRecords in those answers
    std::array<uint64_t, DelegatedKinds> delegated{};
};

class PathResponder {
  public:
    using Log = std::function<void(int level, const char* id, const std::string& message)>;

    PathResponder(osm_opensm_t* osm, Log log);
    PathResponder(const PathResponder&) = delete;
    PathResponder& operator=(const PathResponder&) = delete;

    // Puts the responder in the place of OpenSM's PathRecord and MultiPathRecord handlers (call
    // from the plugin's create(), when OpenSM's SA is set up and not yet bound, so no request
    // can arrive). On failure OpenSM's own handlers are registered again; returns whether the
    // responder answers. OpenSM unregisters the handlers at shutdown, before the plugin goes.
    bool install();

    // The sweep whose policy the responder answers from (nullptr: no policy in force), and
    // whether OpenSM's handler has parsed the same plain policy (until then every request goes
    // to that handler). Call with OpenSM's lock held exclusively: a request holds it shared
    // from start to end, so it never sees half a policy, nor a version OpenSM does not have.
    void setSweep(const CompiledSweep* sweep, bool openSmHasIt) {
        sweep_ = sweep;
        openSmHasIt_ = openSmHasIt;
    }
    // OpenSM has now parsed the plain policy of the sweep set last (same lock rule).
    void openSmHasSweep() { openSmHasIt_ = true; }
    bool answering() const { return openSmHasIt_; }

    // The counts since the last call.
    ResponderCounts takeCounts();

    // The dispatcher's callbacks (context: the responder, data: the request's osm_madw_t).
    static void onPathRecord(void* context, void* data);
    static void onMultiPathRecord(void* context, void* data);

  private:
    // Answers the request, or returns why OpenSM's handler must (then nothing was sent).
    std::optional<Delegated> answer(osm_madw_t* madw);
    void delegate(osm_madw_t* madw, Delegated why);

    osm_opensm_t* osm_;
    Log log_;
    const CompiledSweep* sweep_ = nullptr;
    bool openSmHasIt_ = false;
    std::atomic<uint64_t> answered_{0}, records_{0};
    std::array<std::atomic<uint64_t>, DelegatedKinds> delegated_{};
};

}  // namespace ibqos::osm
