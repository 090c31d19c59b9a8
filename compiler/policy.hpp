// SPDX-License-Identifier: MIT
// Policy: a checked QoS policy with names resolved and qos-ulps lowered, ready to bind to a fabric.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/diagnostics.hpp"
#include "common/text.hpp"
#include "compiler/range_set.hpp"
#include "fabric/node_type.hpp"
#include "ib/sl2vl_vlarb.hpp"
#include "policy-grammar/host_words.hpp"

namespace ibqos {

// A name used somewhere in the policy, with where it was written.
struct NameRef {
    std::string name;
    std::string openSm;  // OpenSM's reading: blanks outside quotes dropped
    SourceLocation location;
};

// "NodeDescription/P<n>" from a port-name list, read as OpenSM reads it: blanks outside quotes
// dropped. That reading is the port it selects, in every command and in the plugin.
struct PortNameRef {
    std::string nodeDescription;
    uint32_t port = 0;  // 1..254; 0 when the name selects no port
    SourceLocation location;
    uint64_t openSmPort = 0;  // the number OpenSM reads; 0 when it reads no port name
    std::string written;      // the description with the blanks OpenSM drops ("" when none)
};

// One range as written, for warnings that point at it (a GUID range that matches no port).
struct WrittenRange {
    Range range;  // as read: a PKey without its membership bit
    SourceLocation location;
    Range text;  // the values the file writes (a PKey with its membership bit)

    // A value of `range` as the file writes it (0x8001 for PKey 0x1 written 0x8001).
    uint64_t asWritten(uint64_t value) const {
        return text.hi - text.lo == range.hi - range.lo ? value - range.lo + text.lo : value;
    }
};

enum class GroupOrigin : uint8_t {
    Written,            // a port-group of the file
    UlpTargets,         // "any, target-port-guid" (OpenSM's _ULP_Targets_)
    UlpSources,         // "any, source-port-guid" (_ULP_Sources_)
    UlpSourcesTargets,  // "any, source-target-port-guid" (_ULP_Sources_Targets_)
    SrpTargets,         // "srp, target-port-guid" (_SRP_Targets_)
};

struct PortGroup {
    std::string name;
    std::string openSmName;  // OpenSM's reading of the name, which references resolve by
    std::string use;
    SourceLocation location;
    GroupOrigin origin = GroupOrigin::Written;
    RangeSet guids;
    std::vector<WrittenRange> guidRanges;
    std::vector<PortNameRef> portNames;
    RangeSet pkeys;  // membership bit masked off
    std::vector<WrittenRange> pkeyRanges;
    std::vector<NameRef> partitions;
    uint8_t nodeTypes = 0;  // nodeTypeBit() mask
    bool self = false;      // node-type SELF: the SM's own port
};

// The SL OpenSM's SA answers for a level's sl, or nullopt for no path. OpenSM keeps sl: in
// 8 bits without a range check, tests (1 << sl) against a 16-bit mask of usable SLs (x86 keeps
// the low five bits of a shift count) and writes the low four bits into the PathRecord.
constexpr std::optional<uint8_t> answeredSl(uint8_t sl) {
    if ((sl & 31) >= ib::SlCount) return std::nullopt;
    return static_cast<uint8_t>(sl & ib::MaxSl);
}

struct QosLevel {
    std::string name;
    std::string openSmName;  // OpenSM's reading of the name, which references resolve by
    std::string use;
    SourceLocation location;
    bool generated = false;  // one of OpenSM's implicit levels behind qos-ulps lines
    bool unused = false;     // no rule that can match names it, on any fabric (the policy pass)
    uint8_t sl = 0;          // 0..15; OpenSM's reading of a larger one: answeredSl()
    std::optional<uint8_t> mtuLimit;    // IB MTU enum 1..5
    std::optional<uint8_t> rateLimit;   // IB rate enum 2..22
    std::optional<uint8_t> packetLife;  // 0..63; OpenSM answers the low six bits of more
    RangeSet pathBits;                  // parsed, never used (as in OpenSM)
    RangeSet pkeys;                     // membership bit masked off
};

struct MatchRule {
    std::string use;
    SourceLocation location;
    bool fromUlps = false;                 // lowered from a qos-ulps line
    bool ipoib = false;                    // an "ipoib" qos-ulps line
    std::vector<WrittenRange> ipoibPkeys;  // an "ipoib, pkey" line's PKeys, as written
    RangeSet qosClasses;                   // empty: the rule does not name qos-class
    RangeSet serviceIds;
    RangeSet pkeys;  // membership bit masked off
    std::vector<NameRef> sourceNames;
    std::vector<NameRef> destinationNames;
    std::vector<uint32_t> sources;       // indices into Policy::groups
    std::vector<uint32_t> destinations;  // indices into Policy::groups
    NameRef levelName;
    uint32_t level = 0;     // index into Policy::levels
    bool shadowed = false;  // no request reaches it on any fabric (found by the policy pass)
};

struct VlShare {
    uint8_t vl = 0;
    uint8_t percent = 0;
};

// A vlarb-scope: which output ports it selects and what it sets on them.
struct VlArbScope {
    SourceLocation location;
    std::vector<NameRef> groupNames;
    std::vector<NameRef> acrossNames;
    std::vector<uint32_t> groups;
    std::vector<uint32_t> across;
    std::optional<std::vector<VlArbEntry>> high;
    std::optional<std::vector<VlArbEntry>> low;
    std::optional<uint8_t> highLimit;
    std::optional<std::vector<VlShare>> bandwidth;  // extension: fills the low table
    SourceLocation bandwidthLocation;
    // The first line of each field, for what the tables say of it (the scope's when none).
    SourceLocation highLocation, lowLocation, highLimitLocation;
};

// A sl2vl-scope: which (in-port, out-port) pairs it selects and the table it writes there.
struct Sl2VlScope {
    SourceLocation location;
    std::vector<NameRef> groupNames;
    std::vector<NameRef> acrossFromNames;
    std::vector<NameRef> acrossToNames;
    std::vector<uint32_t> groups;
    std::vector<uint32_t> acrossFrom;
    std::vector<uint32_t> acrossTo;
    std::bitset<128> from;  // all set when "from:" is absent or "*"
    std::bitset<128> to;
    Sl2VlTable table{};
};

// An element of the host transmit-scheduling tree (extension).
struct SchedElement {
    std::string name;
    std::string use;
    SourceLocation location;
    NameRef parentName;              // empty name: child of the root
    std::optional<uint32_t> parent;  // index into HostSched::nodes; nullopt: the root
    uint32_t bwShare = 0;            // relative weight among siblings, 0 = device default
    uint32_t maxAvgBw = 0;           // Mbit/s, 0 = unlimited
};

struct SchedLeaf : SchedElement {
    std::bitset<ib::SlCount> sls;
    SourceLocation slLocation;
    std::optional<uint32_t> pccSlot;
    std::string pccAlgorithm;
};

// What a host's preload library does with the SL an application put in its address vector
// (extension): use it, report it when the SA would answer another, or replace it.
// Ordered from the loosest to the strictest.
enum class SlMode : uint8_t { Respect, Audit, Enforce };

static_assert(std::size(slModeWords) == static_cast<size_t>(SlMode::Enforce) + 1);
// The mode's word in the language (and the plan file).
inline const char* slModeName(SlMode mode) { return slModeWords[static_cast<size_t>(mode)]; }
// The mode a name says (any case), or nullopt.
inline std::optional<SlMode> slModeFromName(std::string_view name) {
    for (SlMode m : {SlMode::Respect, SlMode::Audit, SlMode::Enforce}) {
        if (sameName(name, slModeName(m))) return m;
    }
    return std::nullopt;
}

// An sl-enforcement block: the mode of the programs it names.
struct SlEnforcement {
    SourceLocation location;
    SlMode mode = SlMode::Respect;
    std::vector<std::string> programs;        // executable names; empty: every program
    std::vector<std::string> exceptPrograms;  // names it does not apply to
    uint32_t resolveTimeoutMs = 5;            // how long a QP's RTR waits for the SA's answer
};

// The host-sched section: the tree every host builds and which SL goes to which leaf.
struct HostSched {
    bool present = false;
    SourceLocation location;
    std::vector<SchedElement> nodes;
    std::vector<SchedLeaf> leaves;
    std::vector<SlEnforcement>
        enforcement;  // in file order: a program takes the first that names it
    std::array<int16_t, ib::SlCount> leafOfSl{-1, -1, -1, -1, -1, -1, -1, -1,
                                              -1, -1, -1, -1, -1, -1, -1, -1};
};

// The checked policy. Every index it holds is valid, even when diagnostics report errors
// (an unresolved reference is dropped), so later stages can run and find more problems.
struct Policy {
    std::string file;
    size_t sourceBytes = 0;  // the size of the text it was compiled from
    std::vector<PortGroup> groups;
    std::vector<QosLevel> levels;
    std::vector<MatchRule> rules;  // qos-match-rules in file order, then qos-ulps lines
    size_t firstUlpRule = 0;
    uint32_t defaultLevel = 0;
    bool hasDefaultLevel = false;
    bool hasQosSetup = false;
    SourceLocation qosSetupLocation;
    SourceLocation qosLevelsLocation;  // the first qos-levels section, where a default belongs
    // qos-setup has an error OpenSM does not check: as in OpenSM, no scope is applied.
    bool qosSetupIgnored = false;
    std::vector<VlArbScope> vlarbScopes;
    std::vector<Sl2VlScope> sl2vlScopes;
    HostSched hostSched;
};

}  // namespace ibqos
