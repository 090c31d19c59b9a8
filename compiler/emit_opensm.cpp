// SPDX-License-Identifier: MIT
// emitOpenSm: a plain qos-policy.conf and opensm.conf QoS lines with the same meaning, for a
// stock OpenSM (and for the plugin, which hands the policy to OpenSM's own SA).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "common/text.hpp"
#include "compiler/emit.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos {

namespace {

// A value OpenSM reads back exactly: quoted (so inner blanks and commas survive).
std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += (c == '"' || c == '\n' || c == '\r') ? '\'' : c;
    return out + "\"";
}

std::string rangeList(const RangeSet& set, bool asHex) {
    std::string out;
    for (const Range& r : set.ranges()) {
        if (!out.empty()) out += ", ";
        out += asHex ? hex(r.lo) : std::to_string(r.lo);
        if (r.hi != r.lo) out += "-" + (asHex ? hex(r.hi) : std::to_string(r.hi));
    }
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Names for generated groups and levels that no written name takes.
class NameSpace {
  public:
    void reserve(const std::string& name) { taken_.insert(lower(name)); }
    std::string fresh(const std::string& base) {
        std::string name = base;
        for (int n = 2; taken_.count(lower(name)); ++n) name = base + "-" + std::to_string(n);
        taken_.insert(lower(name));
        return name;
    }

  private:
    std::set<std::string> taken_;
};

}  // namespace

std::string vlarbOptionString(const VlArbTable& table) {
    size_t last = 0;
    for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].weight || table[i].vl) last = i + 1;
    }
    std::string out;
    for (size_t i = 0; i < std::max<size_t>(last, 1); ++i) {
        out += (i ? "," : "") + std::to_string(table[i].vl) + ":" + std::to_string(table[i].weight);
    }
    return out;
}

std::string sl2vlOptionString(const Sl2VlTable& table) {
    std::string out;
    for (size_t i = 0; i < table.size(); ++i) out += (i ? "," : "") + std::to_string(table[i]);
    return out;
}

ClassPlan planClassOptions(const Fabric& fabric, const FabricTables& tables) {
    using Key = std::tuple<uint32_t, uint32_t, uint8_t, uint32_t>;
    // Switch port 0's pairs (in, 0) for in != 0 use the external-port options; its class
    // decides only (0, 0).
    auto keyOf = [](const PortTables& t) {
        return Key{t.rawHigh, t.rawLow, t.highLimit, t.rawSl2vlFor(0)};
    };
    std::array<std::map<Key, size_t>, 4> counts;
    for (const PortTables& t : tables.ports) ++counts[static_cast<size_t>(t.portClass)][keyOf(t)];
    ClassPlan plan;
    std::array<Key, 4> chosen{};
    for (size_t c = 0; c < 4; ++c) {
        size_t best = 0;
        for (const auto& [key, n] : counts[c]) {
            if (n <= best) continue;
            best = n;
            chosen[c] = key;
            auto [high, low, limit, sl2vl] = key;
            plan.classes[c] = {true, high, low, sl2vl, limit};
        }
    }
    uint32_t externalSl2vl = std::get<3>(chosen[static_cast<size_t>(PortClass::SwitchExternal)]);
    for (uint32_t i = 0; i < tables.ports.size(); ++i) {
        const PortTables& t = tables.ports[i];
        size_t c = static_cast<size_t>(t.portClass);
        bool differs = keyOf(t) != chosen[c];
        const FabricNode& node = fabric.nodeOf(t.port);
        if (node.type == NodeType::Switch) {
            bool port0 = t.portClass == PortClass::SwitchPort0;
            uint32_t others = port0 ? externalSl2vl : std::get<3>(chosen[c]);
            for (unsigned in = port0 ? 1 : 0; in <= node.portCount; ++in)
                differs |= t.rawSl2vlFor(in) != others;
        }
        if (differs) plan.specialPorts.push_back(i);
    }
    return plan;
}

namespace {

using ast::BlockKind;
using ast::Key;

// The policy file as OpenSM reads it, its words from the keyword table: sections at the left
// margin, their blocks indented by four, the blocks' fields by eight.
class PolicyWriter {
  public:
    explicit PolicyWriter(std::string& out) : out_(out) {}

    void section(BlockKind kind) { out_ += "\n" + std::string(ast::openKeyword(kind)) + "\n"; }
    void endSection(BlockKind kind) { out_ += std::string(ast::closeKeyword(kind)) + "\n"; }
    void block(BlockKind kind) { out_ += "    " + std::string(ast::openKeyword(kind)) + "\n"; }
    void endBlock(BlockKind kind) { out_ += "    " + std::string(ast::closeKeyword(kind)) + "\n"; }
    void field(Key key, const std::string& value) {
        out_ += "        " + std::string(ast::keyName(key)) + ": " + value + "\n";
    }

  private:
    std::string& out_;
};

void writeHeader(std::string& p, const Policy& policy, const Fabric& fabric) {
    p += "# qos-policy.conf written by ibqos from " + policy.file + " for the fabric " +
         fabric.source + ".\n";
    p += "# Every port group is an explicit GUID list, qos-ulps lines are match rules in their "
         "place,\n";
    p += "# and qos-setup is in the opensm.conf lines written with this file.\n";
    p += "# Frozen from that fabric: which ports a port-name, node-type (SELF and SWITCH too),\n"
         "# partition or pkey selects is the GUID list below, and per-port tables are per port\n"
         "# class. Make both files again (ibqos compile --emit opensm -o DIR) whenever a port\n"
         "# is added, removed or replaced, or partitions.conf changes; the ibqos plugin does\n"
         "# that at every heavy sweep.\n";
}

// Groups: every group a rule uses, written or generated, as the GUIDs it binds to. Returns the
// name each group is written under ("" for a group not written).
std::vector<std::string> writePortGroups(PolicyWriter& w, const BoundPolicy& bound,
                                         NameSpace& names) {
    const Policy& policy = *bound.policy;
    const Fabric& fabric = *bound.fabric;
    std::vector<std::string> groupName(policy.groups.size());
    std::vector<bool> used(policy.groups.size(), false);
    for (const MatchRule& r : policy.rules) {
        for (uint32_t g : r.sources) used[g] = true;
        for (uint32_t g : r.destinations) used[g] = true;
    }
    bool anyGroup = false;
    for (size_t g = 0; g < policy.groups.size(); ++g) {
        const PortGroup& group = policy.groups[g];
        if (!used[g] && group.origin != GroupOrigin::Written) continue;
        groupName[g] =
            group.origin == GroupOrigin::Written ? group.name : names.fresh("ibqos-ulp-ports");
        if (!anyGroup) w.section(BlockKind::PortGroups);
        anyGroup = true;
        w.block(BlockKind::PortGroup);
        w.field(Key::Name, quote(groupName[g]));
        if (!group.use.empty()) w.field(Key::Use, quote(group.use));
        std::vector<Range> guids;
        for (uint32_t port : bound.groups[g].all(fabric))
            guids.push_back({fabric.ports[port].guid, fabric.ports[port].guid});
        RangeSet set = RangeSet::build(std::move(guids));
        const auto& ranges = set.ranges();
        for (size_t i = 0; i < ranges.size(); i += 8) {
            std::string line;
            for (size_t j = i; j < ranges.size() && j < i + 8; ++j) {
                line += (j > i ? ", " : "") + hex(ranges[j].lo);
                if (ranges[j].hi != ranges[j].lo) line += "-" + hex(ranges[j].hi);
            }
            w.field(Key::PortGuid, line);
        }
        w.endBlock(BlockKind::PortGroup);
    }
    if (anyGroup) w.endSection(BlockKind::PortGroups);
    return groupName;
}

// Levels: the written ones, OpenSM's implicit qos-ulps levels under fresh names, the default.
// Returns the name each level is written under.
std::vector<std::string> writeQosLevels(PolicyWriter& w, const Policy& policy, NameSpace& names) {
    std::vector<std::string> levelName(policy.levels.size());
    w.section(BlockKind::QosLevels);
    for (size_t l = 0; l < policy.levels.size(); ++l) {
        const QosLevel& level = policy.levels[l];
        bool isDefault = policy.hasDefaultLevel && l == policy.defaultLevel;
        if (level.generated) {
            levelName[l] =
                isDefault ? "default" : names.fresh("ibqos-ulp-sl" + std::to_string(level.sl));
        } else {
            levelName[l] = level.name;
        }
        w.block(BlockKind::QosLevel);
        w.field(Key::Name, quote(levelName[l]));
        if (!level.use.empty()) w.field(Key::Use, quote(level.use));
        w.field(Key::Sl, std::to_string(level.sl));
        if (level.mtuLimit) w.field(Key::MtuLimit, std::to_string(*level.mtuLimit));
        if (level.rateLimit) w.field(Key::RateLimit, std::to_string(*level.rateLimit));
        if (level.packetLife) w.field(Key::PacketLife, std::to_string(*level.packetLife));
        if (!level.pkeys.empty()) w.field(Key::Pkey, rangeList(level.pkeys, true));
        w.endBlock(BlockKind::QosLevel);
    }
    w.endSection(BlockKind::QosLevels);
    return levelName;
}

void writeMatchRules(PolicyWriter& w, const Policy& policy,
                     const std::vector<std::string>& groupName,
                     const std::vector<std::string>& levelName) {
    if (policy.rules.empty()) return;
    auto groupList = [&](const std::vector<uint32_t>& gs) {
        std::string s;
        for (uint32_t g : gs) s += (s.empty() ? "" : ", ") + quote(groupName[g]);
        return s;
    };
    w.section(BlockKind::QosMatchRules);
    for (const MatchRule& rule : policy.rules) {
        w.block(BlockKind::QosMatchRule);
        if (!rule.use.empty()) w.field(Key::Use, quote(rule.use));
        if (!rule.qosClasses.empty()) w.field(Key::QosClass, rangeList(rule.qosClasses, false));
        if (!rule.serviceIds.empty()) w.field(Key::ServiceId, rangeList(rule.serviceIds, true));
        if (!rule.pkeys.empty()) w.field(Key::Pkey, rangeList(rule.pkeys, true));
        if (!rule.sources.empty()) w.field(Key::Source, groupList(rule.sources));
        if (!rule.destinations.empty()) w.field(Key::Destination, groupList(rule.destinations));
        w.field(Key::QosLevelName, quote(levelName[rule.level]));
        w.endBlock(BlockKind::QosMatchRule);
    }
    w.endSection(BlockKind::QosMatchRules);
}

// Options: per port class, the tables most of its ports receive. Ports whose tables differ
// from their class's need per-port programming, which opensm.conf cannot express.
void writeOptions(std::string& o, const Policy& policy, const Fabric& fabric,
                  const FabricTables& tables, Diagnostics& diagnostics) {
    o += "# opensm.conf QoS lines written by ibqos from " + policy.file + " for the fabric " +
         fabric.source + ".\n";
    o += "qos TRUE\n";
    ClassPlan plan = planClassOptions(fabric, tables);
    static const char* classNames[] = {"CA ports", "router ports", "switch ports 0 (enhanced)",
                                       "switch external ports"};
    for (PortClass c :
         {PortClass::Ca, PortClass::Router, PortClass::SwitchPort0, PortClass::SwitchExternal}) {
        const ClassTemplate& t = plan.classes[static_cast<size_t>(c)];
        if (!t.present) continue;
        std::string prefix = portClassPrefix(c);
        o += "\n# " + std::string(classNames[static_cast<size_t>(c)]) + "\n";
        o += prefix + "high_limit " + std::to_string(t.highLimit) + "\n";
        o += prefix + "vlarb_high " + vlarbOptionString(tables.vlarbs[t.high]) + "\n";
        o += prefix + "vlarb_low " + vlarbOptionString(tables.vlarbs[t.low]) + "\n";
        o += prefix + "sl2vl " + sl2vlOptionString(tables.sl2vls[t.sl2vl]) + "\n";
    }
    std::vector<std::string> special;
    for (uint32_t i : plan.specialPorts) special.push_back(fabric.portName(tables.ports[i].port));
    if (special.empty()) return;
    o += "\n# " + std::to_string(special.size()) +
         " ports need tables that these per-class options cannot give;\n";
    o += "# a stock OpenSM gives them their class's tables. The ibqos plugin "
         "(event_plugin_name ibqos_osm)\n";
    o += "# programs them port by port:\n";
    for (const std::string& name : special) o += "#   " + name + "\n";
    diagnostics.warning(
        "per-port-tables", policy.file,
        policy.qosSetupLocation.line ? policy.qosSetupLocation : SourceLocation{1, 1},
        std::to_string(special.size()) + " port" + (special.size() == 1 ? "" : "s") + " (e.g. " +
            special.front() +
            ") need tables that opensm.conf's per-class options cannot express: a stock OpenSM "
            "will give them their class's tables; the ibqos OpenSM plugin programs them");
}

}  // namespace

OpenSmFiles emitOpenSm(const BoundPolicy& bound, const FabricTables& tables,
                       Diagnostics& diagnostics) {
    const Policy& policy = *bound.policy;
    OpenSmFiles files;
    NameSpace names;
    for (const PortGroup& g : policy.groups) {
        if (g.origin == GroupOrigin::Written) names.reserve(g.name);
    }
    for (const QosLevel& l : policy.levels) {
        if (!l.generated) names.reserve(l.name);
    }
    writeHeader(files.policy, policy, *bound.fabric);
    PolicyWriter writer(files.policy);
    std::vector<std::string> groupName = writePortGroups(writer, bound, names);
    std::vector<std::string> levelName = writeQosLevels(writer, policy, names);
    writeMatchRules(writer, policy, groupName, levelName);
    writeOptions(files.options, policy, *bound.fabric, tables, diagnostics);
    return files;
}

}  // namespace ibqos
