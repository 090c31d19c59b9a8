// SPDX-License-Identifier: MIT
// ibqos diff: what changes when NEW replaces OLD: the requests whose SA answer changes, and the
// ports whose tables change.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "cli/answer_json.hpp"
#include "cli/commands.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/compile_policy.hpp"
#include "compiler/emit.hpp"
#include "sa-matcher/policy_diff.hpp"

namespace ibqos::cli {

namespace {

const char* const diffFooter =
    R"(Compares two policies on one fabric and prints what would change if NEW replaced OLD:
the regions of the request space whose SA answer changes (accepted or rejected, SL, MTU and
rate limits, packet life, the level's PKeys, the PKey answered), and every port whose SL2VL or
VL arbitration tables change. A different level name or deciding rule with the same answer is
no change, nor is a request the SA rejects under both policies (ports sharing no partition).

Each region is a product: source ports x destination ports x ServiceID ranges x QoS-class
ranges x PKey ranges ("any": every value, and requests without the field). Regions with the
same answers before and after are merged; each lists every rule that decides it. Two limits of
that form: where a request without a field changes answer while some of its values do not,
the field is "any"; the loopback paths of a region's ports go with it.

Without --topology the policies are compared on a witness fabric made from their own
selectors (a port for each GUID interval and port name they use, one in no GUID range, the
switches between them, and a partition for each PKey they name): the verdict holds for those ports, and regions name groups, not ports.

--json prints {"equivalent": bool, "regions": [{"sources", "destinations", "service_ids",
"qos_classes", "pkeys", "port_pairs", "old", "new"}], "ports": [{"guid", "port", "sl2vl",
"vlarb", "old", "new"}]}: sources and destinations are port GUIDs with a topology and group
names without (null: every port), ranges are [lo, hi] pairs, null means any value; "old" and
"new" are the objects `ibqos query --json` prints, with "rule" a list of every deciding rule;
"ports" entries hold the port's object of `ibqos compile --emit json` before and after.

Exit status (diff(1)'s convention): 0 nothing changes, 1 something changes, 2 usage or I/O
error, or a policy, the topology or the partitions have errors (reported as by ibqos check).)";

struct DiffOptions {
    std::string before, after;
    FabricOptions fabric;
    bool json = false;
};

Json rangesJson(const FieldValues& values) {
    if (values.any) return nullptr;
    Json out = Json::array();
    for (const Range& r : values.ranges) out.push_back({r.lo, r.hi});
    return out;
}

// The query object of an answer, with "rule" the list of every rule deciding the region.
Json answerJson(const Policy& policy, const AnswerWriter& writer, const PathAnswer& answer,
                const std::vector<uint32_t>& rules) {
    std::string text;
    writer.write(text, answer);
    Json out = Json::parse(text);
    Json list = Json::array();
    for (uint32_t r : rules) {
        list.push_back(r == NoRule ? Json(nullptr)
                                   : Json{{"index", r}, {"line", policy.rules[r].location.line}});
    }
    out["rule"] = std::move(list);
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

// The ports a region names: GUIDs with a topology; without one, the groups of either policy
// that hold one of the witness ports (null when the region holds every port).
Json portsJson(const Fabric& fabric, const std::vector<uint32_t>& ports, bool witness,
               const BoundPolicy& before, const BoundPolicy& after) {
    if (!witness) {
        Json out = Json::array();
        for (uint32_t p : ports) out.push_back(hex(fabric.ports[p].guid, 16));
        return out;
    }
    if (ports.size() == fabric.endpoints().size()) return nullptr;
    std::vector<std::string> names;
    for (const BoundPolicy* bound : {&after, &before}) {
        for (size_t g = 0; g < bound->groups.size(); ++g) {
            if (bound->policy->groups[g].origin != GroupOrigin::Written) continue;  // qos-ulps'
            const std::string& name = bound->policy->groups[g].name;
            bool holds = false;
            for (uint32_t p : ports) holds = holds || bound->groups[g].contains(fabric, p);
            if (holds && std::find_if(names.begin(), names.end(), [&](const std::string& n) {
                             return sameName(n, name);
                         }) == names.end())
                names.push_back(name);
        }
    }
    return names;
}

int diff(const DiffOptions& o) {
    Inputs inputs;
    Diagnostics diagnostics;
    Policy oldPolicy = loadPolicy(inputs.load(o.before), diagnostics);
    Policy newPolicy = loadPolicy(inputs.load(o.after), diagnostics);
    if (diagnostics.hasErrors()) {
        emitDiagnostics(diagnostics, inputs, false);
        return ExitUsage;
    }
    const bool witness = !o.fabric.topology;
    FabricOptions fabricOptions = o.fabric;
    if (witness) {
        const std::string path = "(witness fabric of " + o.before + " and " + o.after + ")";
        fabricOptions.topology = path;
        inputs.add(path, witnessTopology(oldPolicy, newPolicy));
        if (!fabricOptions.partitions) {
            fabricOptions.partitions = "(witness partitions)";
            inputs.add(*fabricOptions.partitions, witnessPartitions(oldPolicy, newPolicy));
        }
    }
    // On a witness fabric, what the policies name and it lacks is no finding.
    Diagnostics witnessDiagnostics;
    Diagnostics& fabricDiagnostics = witness ? witnessDiagnostics : diagnostics;
    auto compiled =
        compileForFabric({&oldPolicy, &newPolicy}, fabricOptions, inputs, fabricDiagnostics,
                         witness ? CompileStage::Bind : CompileStage::Tables);
    for (const Diagnostic& d : witnessDiagnostics.all()) {
        if (d.severity == Severity::Error && (d.code == "topology" || d.code == "partitions"))
            throw std::logic_error("the witness fabric cannot be read: " + d.message);
    }
    const FabricCompilation* before = compiled[0].get();
    const FabricCompilation* after = compiled[1].get();
    if (diagnostics.hasErrors()) {
        emitDiagnostics(diagnostics, inputs, false);
        return ExitUsage;
    }
    const Fabric& fabric = before->fabric();
    std::vector<DiffRegion> regions = *diffRequests(before->bound(), after->bound());

    // Ports whose tables change (the fabric's ports are the same on both sides).
    struct PortChange {
        Json old, now;
        bool sl2vl, vlarb;
    };
    std::vector<PortChange> ports;
    if (!witness) {
        for (const TableChange& c : changedTables(fabric, before->tables(), after->tables())) {
            ports.push_back(
                {portTablesJson(fabric, before->tables(), before->tables().ports[c.before]),
                 portTablesJson(fabric, after->tables(), after->tables().ports[c.after]), c.sl2vl,
                 c.vlarb});
        }
    }
    const bool equivalent = regions.empty() && ports.empty();

    if (o.json) {
        const AnswerWriter oldWriter(oldPolicy), newWriter(newPolicy);
        Json regionList = Json::array();
        for (const DiffRegion& r : regions) {
            regionList.push_back(
                {{"sources",
                  portsJson(fabric, r.sources, witness, before->bound(), after->bound())},
                 {"destinations",
                  portsJson(fabric, r.destinations, witness, before->bound(), after->bound())},
                 {"service_ids", rangesJson(r.serviceIds)},
                 {"qos_classes", rangesJson(r.qosClasses)},
                 {"pkeys", rangesJson(r.pkeys)},
                 {"port_pairs", witness ? Json(nullptr) : Json(r.portPairs)},
                 {"old", answerJson(oldPolicy, oldWriter, r.before, r.beforeRules)},
                 {"new", answerJson(newPolicy, newWriter, r.after, r.afterRules)}});
        }
        Json portList = Json::array();
        for (PortChange& p : ports) {
            Json guid = p.old["guid"], number = p.old["port"];
            portList.push_back({{"guid", std::move(guid)},
                                {"port", std::move(number)},
                                {"sl2vl", p.sl2vl},
                                {"vlarb", p.vlarb},
                                {"old", std::move(p.old)},
                                {"new", std::move(p.now)}});
        }
        std::cout << dumpJson({{"equivalent", equivalent},
                               {"regions", std::move(regionList)},
                               {"ports", std::move(portList)}})
                  << "\n";
    } else if (equivalent) {
        std::cout << "No change: every request gets the same answer"
                  << (witness ? " (on the policies' witness ports)"
                              : " and every port keeps its tables")
                  << ".\n";
    } else {
        uint64_t pairs = 0;
        for (const DiffRegion& r : regions) pairs += r.portPairs;
        std::cout << regions.size() << (regions.size() == 1 ? " region" : " regions")
                  << " of requests change answer";
        if (!witness) std::cout << " (" << pairs << " port pairs)";
        std::cout << "; " << ports.size() << (ports.size() == 1 ? " port" : " ports")
                  << " change tables.\n";
        for (size_t i = 0; i < regions.size(); ++i) {
            const DiffRegion& r = regions[i];
            auto ends = [&](const std::vector<uint32_t>& list) {
                Json names = portsJson(fabric, list, witness, before->bound(), after->bound());
                if (names.is_null()) return std::string("any port");
                std::string out;
                size_t shown = 0;
                for (const Json& n : names) {
                    if (shown == 4) {
                        out += ", ... (" + std::to_string(names.size()) + " in all)";
                        break;
                    }
                    out += (shown++ ? ", " : "") + n.get<std::string>();
                }
                return out;
            };
            std::cout << "\nRegion " << i + 1 << ": from " << ends(r.sources) << "\n"
                      << "          to " << ends(r.destinations) << "\n"
                      << "          service-id " << describeValues(r.serviceIds, true)
                      << ", qos-class " << describeValues(r.qosClasses, false) << ", pkey "
                      << describeValues(r.pkeys, true) << "\n"
                      << "  old: " << describeAnswer(oldPolicy, r.before) << "\n"
                      << "       decided by " << ruleNames(oldPolicy, r.beforeRules) << "\n"
                      << "  new: " << describeAnswer(newPolicy, r.after) << "\n"
                      << "       decided by " << ruleNames(newPolicy, r.afterRules) << "\n";
        }
        for (const PortChange& p : ports) {
            std::cout << "\nPort " << p.old["guid"].get<std::string>() << " port "
                      << p.old["port"].get<unsigned>() << " ("
                      << p.old["node_desc"].get<std::string>() << "): "
                      << (p.sl2vl && p.vlarb ? "SL2VL and VL arbitration"
                          : p.sl2vl          ? "SL2VL"
                                             : "VL arbitration")
                      << " change\n  old: " << dumpJson(p.old) << "\n  new: " << dumpJson(p.now)
                      << "\n";
        }
    }
    emitDiagnostics(diagnostics, inputs, false);
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
    c.add_flag("--json", o->json, "print the changes as one JSON object (below)");
}

}  // namespace ibqos::cli
