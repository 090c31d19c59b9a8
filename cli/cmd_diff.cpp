// SPDX-License-Identifier: MIT
// ibqos diff: what changes when NEW replaces OLD: the requests whose SA answer changes, and the
// ports whose tables change (with a topology) or the qos-setup scopes that may change them.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "cli/answer_json.hpp"
#include "cli/commands.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/emit.hpp"
#include "compiler/vlarb_sim.hpp"
#include "policy-grammar/keywords.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/policy_diff.hpp"

namespace ibqos::cli {

namespace {

const char* const diffFooter =
    R"(Compares two policies and prints what would change if NEW replaced OLD: the regions of
the request space whose SA answer changes (accepted or rejected, SL, MTU and rate limits,
packet life, the level's PKeys, the PKey answered), and the tables: with a topology every port
whose SL2VL or VL arbitration tables change, without one every qos-setup scope whose effect
may differ. A different level name or deciding rule with the same answer is no change, nor is
a request the SA rejects under both policies. The comparison is exact: every request whose
answer changes lies in a region, and no region holds one whose answer stays.

Each region is a product: source ports x destination ports x ServiceID ranges x QoS-class
ranges x PKey ranges ("any": every value, and requests without the field; "absent": only
requests without it). Regions with the same answers before and after are joined; each lists
every rule that decides it. A region may hold only paths between two different ports, or only
loopback paths (a port to itself), where those answer otherwise.

Without --topology the comparison covers every fabric the policies could meet: a request
changes when its answer differs on some fabric, ports are described by kind (GUID range, node
type, SM port, port name, partition and PKey memberships), and the answers shown are those on
a fabric where both ends share every partition (the PKey answered is then the requested one or
the fabric's: null). On a fabric too, a region whose requests keep their PKey shows it so.

--old-partitions/--new-partitions and --old-opensm-conf/--new-opensm-conf give one side its
own partitions.conf or opensm.conf (the other side keeps --partitions, --opensm-conf): an edit
of the partitions or of the qos_* options is previewed with the same policy as OLD and NEW.

--json prints {"equivalent": bool, "regions": [{"sources", "destinations", "service_ids",
"service_ids_hex", "qos_classes", "pkeys", "port_pairs", "old", "new"}], "ports": [{"guid",
"port", "name", "sl2vl", "vlarb", "old", "new", "changes"}], "scopes": [...]}: sources and
destinations are port GUIDs with a topology and port kinds without (null: every port), ranges
are [lo, hi] pairs, null means any value ("service_ids_hex": the same ranges as "0x..."
strings, exact where a JSON reader keeps 53 bits); a region adds "absent": [FIELD, ...] when it
holds only requests without those fields, and "loopback": "excluded" or "only"; "old" and
"new" are the objects `ibqos query --json` prints, with "rule" a list of every deciding rule;
"ports" entries hold the port's object of `ibqos compile --emit json` before and after, and
"changes": [{"table", "old", "new"}], each changed table in that object's form.

Exit status (diff(1)'s convention): 0 nothing changes, 1 something changes, 2 usage or I/O
error, a policy, the topology or the partitions have errors (reported as by ibqos check), or
the comparison did not finish within --analysis-budget.)";

struct DiffOptions {
    std::string before, after;
    FabricOptions fabric;
    Value oldOpensmConf, newOpensmConf, oldPartitions, newPartitions;
    bool json = false;
    std::string analysisBudget;
};

// A region is written as text, member by member, as dumpJson would print it: a Json tree of
// each cost most of the command on a diff of thousands of regions.

// [[lo, hi], ...]; `asHex`: each end as a "0x..." string, for 64-bit values (a JSON reader
// that keeps numbers in doubles rounds them).
void appendRanges(std::string& out, const std::vector<Range>& ranges, bool asHex = false) {
    auto end = [&](uint64_t v) {
        if (asHex) {
            out += '"';
            appendHex(out, v, 16);
            out += '"';
        } else {
            out += std::to_string(v);
        }
    };
    out += '[';
    for (size_t i = 0; i < ranges.size(); ++i) {
        out += i ? ",[" : "[";
        end(ranges[i].lo);
        out += ',';
        end(ranges[i].hi);
        out += ']';
    }
    out += ']';
}

// A field's ranges, or null for any value.
std::string rangesText(const FieldValues& values, bool asHex = false) {
    if (values.any || values.absent) return "null";
    std::string out;
    appendRanges(out, values.ranges, asHex);
    return out;
}

void appendKind(std::string& out, const PortKind& k) {
    char sep = '{';
    auto key = [&](const char* name) {
        out += sep;
        out += '"';
        out += name;
        out += "\":";
        sep = ',';
    };
    if (k.guids) {
        key("guids");
        appendRanges(out, *k.guids, true);
    }
    if (k.nodeTypes) {
        key("node_types");
        out += '[';
        for (size_t i = 0; i < k.nodeTypes->size(); ++i)
            out += (i ? ",\"" : "\"") + std::string(nodeTypeName((*k.nodeTypes)[i])) + '"';
        out += ']';
    }
    if (k.sm) {
        key("sm");
        out += *k.sm ? "true" : "false";
    }
    // Names as the JSON library escapes them.
    if (k.names) {
        key("port_names");
        out += dumpJson(*k.names);
    }
    if (k.notNames) {
        key("not_port_names");
        out += dumpJson(*k.notNames);
    }
    if (!k.inPartitions.empty()) {
        key("partitions");
        out += dumpJson(k.inPartitions);
    }
    if (!k.notInPartitions.empty()) {
        key("not_partitions");
        out += dumpJson(k.notInPartitions);
    }
    if (!k.inPkeys.empty()) {
        key("pkeys");
        appendRanges(out, k.inPkeys);
    }
    if (!k.notInPkeys.empty()) {
        key("not_pkeys");
        appendRanges(out, k.notInPkeys);
    }
    out += sep == '{' ? "{}" : "}";
}

// The ports one end of a region names: GUIDs on a fabric, kinds without one; null for all.
std::string endJson(const Fabric* fabric, const EndpointSet& ports,
                    const std::vector<PortKind>& kinds, bool any) {
    std::string out = "[";
    if (!fabric) {
        if (any) return "null";
        for (const PortKind& k : kinds) {
            if (out.size() > 1) out += ',';
            appendKind(out, k);
        }
    } else {
        for (uint32_t p : ports.list()) {
            out += out.size() > 1 ? ",\"" : "\"";
            appendHex(out, fabric->ports[p].guid, 16);
            out += '"';
        }
    }
    return out + ']';
}

// For people: up to four ports by name, or the kinds.
std::string endText(const Fabric* fabric, const EndpointSet& ports,
                    const std::vector<PortKind>& kinds, bool any) {
    std::string out;
    if (!fabric) {
        if (any) return "any port";
        for (const PortKind& k : kinds) out += (out.empty() ? "" : "; or ") + describePortKind(k);
        return out;
    }
    for (uint32_t p : ports.list(4)) out += (out.empty() ? "" : ", ") + fabric->portName(p);
    if (ports.size() > 4) out += ", ... (" + std::to_string(ports.size()) + " in all)";
    return out;
}

std::string ruleNames(const Policy& policy, const std::vector<uint32_t>& rules) {
    std::string out;
    for (uint32_t r : rules) {
        if (!out.empty()) out += ", ";
        out += r == NoRule ? "the default level"
                           : "rule " + std::to_string(r) + " (line " +
                                 std::to_string(policy.rules[r].location.line) + ")";
    }
    return out;
}

const char* fieldName(int f) { return f == 0 ? "service_ids" : f == 1 ? "qos_classes" : "pkeys"; }

const char* scopeKeyword(ScopeChange::Kind kind) {
    return ast::openKeyword(kind == ScopeChange::Kind::VlArb ? ast::BlockKind::VlArbScope
                                                             : ast::BlockKind::Sl2VlScope);
}

std::string scopeLine(const Policy& policy, const ScopeChange& c, bool before) {
    const std::optional<uint32_t>& index = before ? c.before : c.after;
    if (!index) return "none";
    const SourceLocation at = c.kind == ScopeChange::Kind::VlArb
                                  ? policy.vlarbScopes[*index].location
                                  : policy.sl2vlScopes[*index].location;
    return "line " + std::to_string(at.line);
}

}  // namespace

namespace {

// The long-run share of each VL one VLArb table gives, alone, with full-size packets: "VL1 25%,
// VL2 75%".
std::string sharesText(const std::vector<VlArbEntry>& entries) {
    const auto shares = simulateArbitration(nullptr, 0, entries.data(), entries.size(), 0);
    std::string out;
    for (size_t vl = 0; vl < shares.size(); ++vl) {
        if (shares[vl] <= 0) continue;
        out += (out.empty() ? "VL" : ", VL") + std::to_string(vl) + " " +
               percentText(shares[vl], PercentForm::Short);
    }
    return out.empty() ? "none" : out;
}

// Ports whose tables change the same way, once: the table, how it changes (for a VLArb table,
// the shares it gives before and after), and the ports, the first few named.
void writeTableChanges(std::ostream& out, const Fabric& fabric, const FabricTables& before,
                       const std::vector<TableChange>& ports) {
    struct Change {
        const TableDifference* difference;
        std::vector<std::string> ports;
    };
    std::vector<Change> changes;
    std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
    for (const TableChange& c : ports) {
        const std::string name = fabric.portName(before.ports[c.before].port);
        for (const TableDifference& t : c.differences) {
            auto key = std::make_tuple(t.table, tableText(t.before), tableText(t.after));
            auto [it, fresh] = index.emplace(std::move(key), changes.size());
            if (fresh) changes.push_back({&t, {}});
            changes[it->second].ports.push_back(name);
        }
    }
    constexpr size_t Named = 4;
    for (const Change& c : changes) {
        const TableDifference& t = *c.difference;
        const size_t n = c.ports.size();
        out << "\n" << t.table << " on " << n << (n == 1 ? " port" : " ports") << " (";
        for (size_t i = 0; i < n && i < Named; ++i) out << (i ? ", " : "") << c.ports[i];
        if (n > Named) out << " and " << n - Named << " more";
        out << ")\n  old " << tableText(t.before) << "\n  new " << tableText(t.after) << "\n";
        const auto* old = std::get_if<std::vector<VlArbEntry>>(&t.before);
        const auto* now = std::get_if<std::vector<VlArbEntry>>(&t.after);
        if (old && now) {
            out << "  VL shares of this table alone (full-size packets): " << sharesText(*old)
                << " -> " << sharesText(*now) << "\n";
        }
    }
}

}  // namespace

namespace {

// One region in JSON, member by member (see appendRanges).
std::string regionJson(const Fabric* fabric, const DiffRegion& r, const AnswerWriter& oldWriter,
                       const AnswerWriter& newWriter) {
    // The answers before and after as their writer prints them (a Json tree of each cost 85 %
    // of the command on a diff of 3,000 regions).
    std::string before, after;
    oldWriter.writeForRegion(before, r.before, r.pkeyKnown, r.beforeRules);
    newWriter.writeForRegion(after, r.after, r.pkeyKnown, r.afterRules);
    std::vector<std::pair<std::string, std::string>> region = {
        {"sources", endJson(fabric, r.sources, r.sourceKinds, r.anySource)},
        {"destinations", endJson(fabric, r.destinations, r.destinationKinds, r.anyDestination)},
        {"service_ids", rangesText(r.serviceIds)},
        {"service_ids_hex", rangesText(r.serviceIds, true)},
        {"qos_classes", rangesText(r.qosClasses)},
        {"pkeys", rangesText(r.pkeys)},
        {"port_pairs", fabric ? std::to_string(r.portPairs) : "null"},
        {"old", std::move(before)},
        {"new", std::move(after)}};
    Json absent = Json::array();
    for (int f = 0; f < 3; ++f) {
        const FieldValues& v = f == 0 ? r.serviceIds : f == 1 ? r.qosClasses : r.pkeys;
        if (v.absent) absent.push_back(fieldName(f));
    }
    if (!absent.empty()) region.emplace_back("absent", dumpJson(absent));
    if (r.loopback != Loopback::Both)
        region.emplace_back("loopback", r.loopback == Loopback::Only ? "\"only\"" : "\"excluded\"");
    return dumpJsonObject(region);
}

// The ports whose tables change, in JSON: each port's tables before and after, and each table
// that changes.
Json portChangesJson(const Fabric& fabric, const FabricCompilation& oldCompiled,
                     const FabricCompilation& newCompiled, const std::vector<TableChange>& ports) {
    Json portList = Json::array();
    for (const TableChange& c : ports) {
        const PortTables& a = oldCompiled.tables().ports[c.before];
        const PortTables& b = newCompiled.tables().ports[c.after];
        Json old = portTablesJson(fabric, oldCompiled.tables(), a);
        Json changes = Json::array();
        for (const TableDifference& t : c.differences) {
            changes.push_back(
                {{"table", t.table}, {"old", tableJson(t.before)}, {"new", tableJson(t.after)}});
        }
        Json guid = old["guid"], number = old["port"];
        portList.push_back({{"guid", std::move(guid)},
                            {"port", std::move(number)},
                            {"name", fabric.portName(a.port)},
                            {"sl2vl", c.sl2vl},
                            {"vlarb", c.vlarb},
                            {"old", std::move(old)},
                            {"new", portTablesJson(fabric, newCompiled.tables(), b)},
                            {"changes", std::move(changes)}});
    }
    return portList;
}

// The qos-setup scopes that change (without a fabric), in JSON.
Json scopeChangesJson(const Policy& oldPolicy, const Policy& newPolicy,
                      const std::vector<ScopeChange>& scopes) {
    Json scopeList = Json::array();
    for (const ScopeChange& c : scopes) {
        auto line = [&](const Policy& p, const std::optional<uint32_t>& i) -> Json {
            if (!i) return nullptr;
            return c.kind == ScopeChange::Kind::VlArb ? p.vlarbScopes[*i].location.line
                                                      : p.sl2vlScopes[*i].location.line;
        };
        scopeList.push_back({{"kind", scopeKeyword(c.kind)},
                             {"old_line", line(oldPolicy, c.before)},
                             {"new_line", line(newPolicy, c.after)},
                             {"changes", c.fields}});
    }
    return scopeList;
}

// The whole diff as one JSON object.
void writeDiffJson(const Policy& oldPolicy, const Policy& newPolicy,
                   const FabricCompilation* oldCompiled, const FabricCompilation* newCompiled,
                   const PolicyDiff& d, const std::vector<TableChange>& ports, bool equivalent,
                   std::ostream& out) {
    const Fabric* fabric = oldCompiled ? &oldCompiled->fabric() : nullptr;
    const AnswerWriter oldWriter(oldPolicy), newWriter(newPolicy);
    // Each region dumped on its own as it is made, and the document joined from the parts
    // (dumpJsonArray, dumpJsonObject): a large diff has tens of thousands of regions, too
    // many to hold as one Json tree.
    std::vector<std::string> regions;
    regions.reserve(d.regions.size());
    for (const DiffRegion& r : d.regions)
        regions.push_back(regionJson(fabric, r, oldWriter, newWriter));
    Json portList = Json::array();
    if (fabric) portList = portChangesJson(*fabric, *oldCompiled, *newCompiled, ports);
    out << dumpJsonObject({{"equivalent", dumpJson(equivalent)},
                           {"regions", dumpJsonArray(regions)},
                           {"ports", dumpJson(portList)},
                           {"scopes", dumpJson(scopeChangesJson(oldPolicy, newPolicy, d.scopes))}})
        << "\n";
}

// How answers change, once per change: the regions it covers (with more than one region).
void writeAnswerChanges(std::ostream& out, const Policy& oldPolicy, const Policy& newPolicy,
                        const std::vector<DiffRegion>& regions, const Fabric* fabric) {
    std::map<std::pair<std::string, std::string>, std::pair<size_t, uint64_t>> byChange;
    std::vector<std::pair<std::string, std::string>> order;
    for (const DiffRegion& r : regions) {
        // The PKey answered is named only where it changes.
        const bool pkeyChanges =
            r.pkeyKnown && (r.before.ok() != r.after.ok() || r.before.pkey != r.after.pkey);
        auto text = [&](const Policy& policy, const PathAnswer& answer) {
            std::string s = describeAnswer(policy, answer, pkeyChanges);
            const std::string any = ", PKey as requested or the fabric's";
            if (size_t at = s.find(any); at != std::string::npos) s.erase(at, any.size());
            return s;
        };
        auto key = std::make_pair(text(oldPolicy, r.before), text(newPolicy, r.after));
        auto [it, fresh] = byChange.emplace(key, std::make_pair(size_t{0}, uint64_t{0}));
        if (fresh) order.push_back(key);
        ++it->second.first;
        it->second.second += r.portPairs;
    }
    out << "\nHow answers change:\n";
    for (const auto& key : order) {
        const auto& [count, pairs] = byChange[key];
        out << "  " << count << (count == 1 ? " region" : " regions");
        if (fabric) out << " (" << pairs << " port pairs)";
        out << ": " << key.first << "  ->  " << key.second << "\n";
    }
}

// Region number `number` for people: its ends, fields and paths, and its answers before and
// after with the rules that decide them.
void writeRegionText(std::ostream& out, size_t number, const DiffRegion& r, const Fabric* fabric,
                     const Policy& oldPolicy, const Policy& newPolicy) {
    out << "\nRegion " << number << ": from "
        << endText(fabric, r.sources, r.sourceKinds, r.anySource) << "\n"
        << "          to " << endText(fabric, r.destinations, r.destinationKinds, r.anyDestination)
        << "\n"
        << "          service-id " << describeValues(r.serviceIds, true) << ", qos-class "
        << describeValues(r.qosClasses, false) << ", pkey " << describeValues(r.pkeys, true);
    if (r.loopback == Loopback::Excluded) out << ", paths between two ports";
    if (r.loopback == Loopback::Only) out << ", loopback paths only";
    out << "\n  old: " << describeAnswer(oldPolicy, r.before, r.pkeyKnown) << "\n"
        << "       decided by " << ruleNames(oldPolicy, r.beforeRules) << "\n"
        << "  new: " << describeAnswer(newPolicy, r.after, r.pkeyKnown) << "\n"
        << "       decided by " << ruleNames(newPolicy, r.afterRules) << "\n";
}

// The qos-setup scopes that change (without a fabric), one a line.
void writeScopeChanges(std::ostream& out, const Policy& oldPolicy, const Policy& newPolicy,
                       const std::vector<ScopeChange>& scopes) {
    for (const ScopeChange& c : scopes) {
        out << "\n"
            << (scopeKeyword(c.kind)) << " (old " << scopeLine(oldPolicy, c, true) << ", new "
            << scopeLine(newPolicy, c, false) << "): ";
        if (!c.before) {
            out << "added";
        } else if (!c.after) {
            out << "removed";
        } else {
            std::string fields;
            for (const std::string& f : c.fields) fields += (fields.empty() ? "" : ", ") + f;
            out << fields << " changed";
        }
        out << "\n";
    }
}

// A diff that changes something, for people: the counts, how answers change, each region,
// then the ports whose tables change (with a fabric) or the scopes (without).
void writeDiffText(const Policy& oldPolicy, const Policy& newPolicy,
                   const FabricCompilation* oldCompiled, const PolicyDiff& d,
                   const std::vector<TableChange>& ports, std::ostream& out) {
    const Fabric* fabric = oldCompiled ? &oldCompiled->fabric() : nullptr;
    uint64_t pairs = 0;
    for (const DiffRegion& r : d.regions) pairs += r.portPairs;
    out << d.regions.size() << (d.regions.size() == 1 ? " region" : " regions")
        << " of requests change answer";
    if (fabric) out << " (" << pairs << " port pairs)";
    if (fabric) {
        out << "; " << ports.size() << (ports.size() == 1 ? " port" : " ports")
            << " change tables.\n";
    } else {
        out << "; " << d.scopes.size()
            << (d.scopes.size() == 1 ? " qos-setup scope changes" : " qos-setup scopes change")
            << " (the tables of the ports they select may change).\n";
    }
    if (d.regions.size() > 1) writeAnswerChanges(out, oldPolicy, newPolicy, d.regions, fabric);
    for (size_t i = 0; i < d.regions.size(); ++i)
        writeRegionText(out, i + 1, d.regions[i], fabric, oldPolicy, newPolicy);
    if (fabric) writeTableChanges(out, *fabric, oldCompiled->tables(), ports);
    writeScopeChanges(out, oldPolicy, newPolicy, d.scopes);
}

}  // namespace

std::optional<DiffOutcome> writeDiff(const Policy& oldPolicy, const Policy& newPolicy,
                                     const FabricCompilation* oldCompiled,
                                     const FabricCompilation* newCompiled,
                                     std::optional<uint64_t> budget, bool json, std::ostream& out) {
    const Fabric* fabric = oldCompiled ? &oldCompiled->fabric() : nullptr;
    std::optional<PolicyDiff> found =
        fabric ? diffPolicies(oldCompiled->bound(), newCompiled->bound(), budget.value_or(0))
               : diffPolicies(oldPolicy, newPolicy, budget.value_or(0));
    if (!found) return std::nullopt;
    const PolicyDiff& d = *found;
    std::vector<TableChange> ports;
    if (fabric) ports = changedTables(*fabric, oldCompiled->tables(), newCompiled->tables());
    const bool equivalent = d.regions.empty() && ports.empty() && d.scopes.empty();
    if (json) {
        writeDiffJson(oldPolicy, newPolicy, oldCompiled, newCompiled, d, ports, equivalent, out);
    } else if (equivalent) {
        out << "No change: every request gets the same answer"
            << (fabric ? " and every port keeps its tables"
                       : " and every qos-setup scope is the same, on every fabric")
            << ".\n";
    } else {
        writeDiffText(oldPolicy, newPolicy, oldCompiled, d, ports, out);
    }
    return DiffOutcome{equivalent, std::move(*found)};
}

namespace {

// Each side on the topology with its own partitions.conf and opensm.conf (its max_op_vls
// negotiated on its copy of the fabric); a file both sides share is read once.
std::vector<std::unique_ptr<FabricCompilation>> compileSides(const Policy& oldPolicy,
                                                             const Policy& newPolicy,
                                                             const DiffOptions& o, Inputs& inputs,
                                                             Diagnostics& diagnostics) {
    const Value partitions[] = {o.oldPartitions ? o.oldPartitions : o.fabric.partitions,
                                o.newPartitions ? o.newPartitions : o.fabric.partitions};
    const Value confs[] = {o.oldOpensmConf ? o.oldOpensmConf : o.fabric.opensmConf,
                           o.newOpensmConf ? o.newOpensmConf : o.fabric.opensmConf};
    std::optional<Fabric> fabric = loadTopology(o.fabric, inputs, diagnostics);
    if (!fabric) return {};
    const bool samePartitions = partitions[0] == partitions[1];
    if (samePartitions) loadPartitions(partitions[0], inputs, *fabric, diagnostics);
    std::optional<OpenSmConf> sharedConf;
    if (confs[0] == confs[1]) sharedConf = loadOpenSmConf(confs[0], inputs, diagnostics);
    std::vector<std::unique_ptr<FabricCompilation>> out;
    for (size_t side = 0; side < 2; ++side) {
        Fabric own = *fabric;
        if (!samePartitions) loadPartitions(partitions[side], inputs, own, diagnostics);
        OpenSmConf conf =
            sharedConf ? *sharedConf : loadOpenSmConf(confs[side], inputs, diagnostics);
        negotiateOperVls(own, conf.maxOpVls);
        out.push_back(FabricCompilation::compile(side == 0 ? oldPolicy : newPolicy, std::move(own),
                                                 std::move(conf), diagnostics,
                                                 CompileStage::Tables));
    }
    return out;
}

// Errors in the inputs, reported as by ibqos check (in JSON: an error object).
int inputErrors(const DiffOptions& o, Diagnostics& diagnostics, const Inputs& inputs) {
    if (o.json)
        emitErrorObject(diagnostics, inputs);
    else
        emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
    return ExitUsage;  // diff(1)'s convention: 1 means "they differ"
}

int diff(const DiffOptions& o) {
    Inputs inputs;
    Diagnostics diagnostics;
    Policy oldPolicy = loadPolicy(inputs.load(o.before), diagnostics);
    Policy newPolicy = loadPolicy(inputs.load(o.after), diagnostics);
    if (diagnostics.hasErrors()) return inputErrors(o, diagnostics, inputs);
    const std::optional<uint64_t> budget = analysisBudgetOption(o.analysisBudget);
    const std::pair<const char*, const Value*> perSide[] = {{"--old-opensm-conf", &o.oldOpensmConf},
                                                            {"--new-opensm-conf", &o.newOpensmConf},
                                                            {"--old-partitions", &o.oldPartitions},
                                                            {"--new-partitions", &o.newPartitions}};
    const auto given = std::find_if(std::begin(perSide), std::end(perSide),
                                    [](const auto& option) { return bool(*option.second); });
    if (given != std::end(perSide) && !o.fabric.topology)
        throw UsageError{std::string(given->first) + " requires --topology"};
    std::vector<std::unique_ptr<FabricCompilation>> compiled;
    try {
        if (given != std::end(perSide)) {
            compiled = compileSides(oldPolicy, newPolicy, o, inputs, diagnostics);
        } else {
            compiled = compileForFabric({&oldPolicy, &newPolicy}, o.fabric, inputs, diagnostics,
                                        CompileStage::Tables);
        }
    } catch (const InputError& e) {
        throw IoError{e.message};  // diff(1)'s convention: 1 means "they differ"
    }
    if (diagnostics.hasErrors()) return inputErrors(o, diagnostics, inputs);
    std::optional<ElapsedNotice> notice;
    notice.emplace("ibqos diff: comparing the two policies' answers and tables");
    std::ostringstream text;
    const std::optional<DiffOutcome> outcome =
        writeDiff(oldPolicy, newPolicy, compiled.empty() ? nullptr : compiled[0].get(),
                  compiled.empty() ? nullptr : compiled[1].get(), budget, o.json, text);
    notice.reset();  // its line cleared before the output goes out
    std::cout << text.str();
    if (!outcome) {
        emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
        std::cerr << "ibqos diff: the comparison did not finish within the analysis budget of "
                  << *budget << " steps; raise --analysis-budget (or give 'unlimited')\n";
        return ExitUsage;
    }
    const bool equivalent = outcome->equivalent;
    emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
    return equivalent ? ExitOk : ExitInputErrors;
}

}  // namespace

void addDiff(Program& program) {
    auto o = std::make_shared<DiffOptions>();
    CLI::App& c = program.command(
        "diff", "what changes, request by request and port by port, if NEW replaces OLD",
        diffFooter, [o] { return diff(*o); });
    c.add_option("OLD", o->before, "the policy in force")->required()->type_name("");
    c.add_option("NEW", o->after, "the policy that would replace it")->required()->type_name("");
    o->fabric.add(c, false);
    c.add_option("--old-opensm-conf", o->oldOpensmConf,
                 "OLD's opensm.conf (its qos_* options and max_op_vls), instead of --opensm-conf")
        ->type_name("FILE");
    c.add_option("--new-opensm-conf", o->newOpensmConf,
                 "NEW's opensm.conf, instead of --opensm-conf: previews an edit of the qos_* "
                 "options")
        ->type_name("FILE");
    c.add_option("--old-partitions", o->oldPartitions,
                 "OLD's partitions.conf, instead of --partitions")
        ->type_name("FILE");
    c.add_option("--new-partitions", o->newPartitions,
                 "NEW's partitions.conf, instead of --partitions: previews an edit of the "
                 "partitions")
        ->type_name("FILE");
    c.add_flag("--json", o->json, "print the changes as one JSON object (below)");
    addAnalysisBudget(c, o->analysisBudget,
                      "work the comparison may do, in decision-diagram steps (default: "
                      "unlimited); past it the command stops with exit status 2");
}

}  // namespace ibqos::cli
