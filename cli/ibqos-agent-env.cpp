// SPDX-License-Identifier: MIT
// ibqos-agent env: the one SL a job's stacks should take (NCCL, UCX, MPI read it from the
// environment), when the policy gives every pair of host ports one SL for the job's requests.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "ib/qos.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/request_sls.hpp"

namespace ibqos::cli {

namespace {

// The settings of the stacks that take one SL a process and never ask the SA for it, each as
// its source reads it (docs/sl-enforcement.md cites them).
struct SlSetting {
    const char* variable;
    const char* stack;
};
constexpr SlSetting slSettings[] = {
    // NCCL's net_ib transport: the NCCL_IB_SL parameter (src/transport/net_ib/connect.cc).
    {"NCCL_IB_SL", "NCCL"},
    // UCX's IB transports, and Open MPI 5, MPICH and OpenSHMEM through UCX (ib_iface.c "SL").
    {"UCX_IB_SL", "UCX"},
    // Open MPI 4.x's openib BTL: the MCA parameter btl_openib_ib_service_level.
    {"OMPI_MCA_btl_openib_ib_service_level", "Open MPI openib BTL"},
    // MVAPICH2 (ibv_param.c: rdma_default_service_level).
    {"MV2_DEFAULT_SERVICE_LEVEL", "MVAPICH2"},
    // NVSHMEM's IB transports (its environment-variable reference).
    {"NVSHMEM_IB_SL", "NVSHMEM"},
};

const char* const envFooter =
    R"(Prints the settings that make the stacks which take one SL a process use the SL the policy
gives a job's traffic: NCCL_IB_SL, UCX_IB_SL (UCX, and Open MPI 5, MPICH and OpenSHMEM over
UCX), OMPI_MCA_btl_openib_ib_service_level (Open MPI 4's openib BTL),
MV2_DEFAULT_SERVICE_LEVEL (MVAPICH2) and NVSHMEM_IB_SL, as shell assignments, one a line, for
`eval`, a Slurm TaskProlog ("export NAME=VALUE" lines) or a job script. These stacks never ask
the SA, so the SL they use is whatever the environment says.

The job's requests are those that carry the --qos-class, --service-id and --pkey given (a field
not given: the requests carry none), between any two CA ports: of the --topology fabric, or,
without one, of every fabric the policy could meet (decided exactly on the policy's request
space, as `ibqos diff` does, never by trying ports). When they all get one SL, the settings are
printed and the exit status is 0. When port pairs get different SLs, nothing is printed on
stdout; stderr says which pairs get which SL, grouped by SL (each with the rules that decide
it and its regions of port pairs), and the exit status is 1: no one SL a process fits them.

--json prints one object: {"status": "ok", "sl", "request", "settings": {NAME: "VALUE"},
"levels", "rules"}, or {"status": "different", "request", "sls": [{"sl", "levels", "rules",
"port_pairs", "regions": [{"sources", "destinations"}]}]} (exit 1), or {"status": "no-path"}
when the policy answers none of those requests (exit 1), or {"status": "error",
"diagnostics": [...]} when the policy, topology or partitions have errors (exit 1). "rules" are {"index", "line"}
objects, null for the default level; sources and destinations are port GUIDs with a topology,
kinds of port without one (null: every CA port).

Exit status: 0 one SL; 1 different SLs, no path, or the policy, topology or partitions have
errors; 2 usage or I/O error, or the analysis did not finish within --analysis-budget.)";

struct EnvOptions {
    PolicyArgument policy;
    FabricOptions fabric;
    RequestFieldOptions fields;
    bool json = false;
    std::string analysisBudget;
};

std::string requestText(const ib::QosFields& f) {
    std::string out = f.qosClass ? "QoS class " + std::to_string(*f.qosClass) : "no QoS class";
    out += f.serviceId ? ", ServiceID " + hex(*f.serviceId) : ", no ServiceID";
    out += f.pkey ? ", PKey " + hex(*f.pkey, 4) : ", no PKey";
    return out;
}

Json requestJson(const ib::QosFields& f) {
    return {{"qos_class", jsonOptional(f.qosClass)},
            {"service_id", f.serviceId ? Json(hex(*f.serviceId)) : Json(nullptr)},
            {"pkey", jsonOptional(f.pkey)}};
}

std::string ruleText(const Policy& policy, uint32_t rule) {
    return rule == NoRule ? "the default level"
                          : "rule " + std::to_string(rule) + " (line " +
                                std::to_string(policy.rules[rule].location.line) + ")";
}

Json rulesJson(const Policy& policy, const std::vector<uint32_t>& rules) {
    Json out = Json::array();
    for (uint32_t r : rules) {
        if (r == NoRule) {
            out.push_back(nullptr);
        } else {
            out.push_back({{"index", r}, {"line", policy.rules[r].location.line}});
        }
    }
    return out;
}

Json levelsJson(const Policy& policy, const std::vector<uint32_t>& levels) {
    Json out = Json::array();
    for (uint32_t l : levels) out.push_back(policy.levels[l].name);
    return out;
}

Json kindJson(const PortKind& k) {
    Json out = Json::object();
    auto ranges = [](const std::vector<Range>& rs) {
        Json list = Json::array();
        for (const Range& r : rs) list.push_back({hex(r.lo), hex(r.hi)});
        return list;
    };
    if (k.guids) out["guids"] = ranges(*k.guids);
    if (k.sm) out["sm"] = *k.sm;
    if (k.names) out["port_names"] = *k.names;
    if (k.notNames) out["not_port_names"] = *k.notNames;
    if (!k.inPartitions.empty()) out["partitions"] = k.inPartitions;
    if (!k.notInPartitions.empty()) out["not_partitions"] = k.notInPartitions;
    if (!k.inPkeys.empty()) out["pkeys"] = ranges(k.inPkeys);
    if (!k.notInPkeys.empty()) out["not_pkeys"] = ranges(k.notInPkeys);
    return out;
}

Json endJson(const Fabric* fabric, const std::vector<uint32_t>& ports,
             const std::vector<PortKind>& kinds, bool any) {
    Json out = Json::array();
    if (fabric) {
        for (uint32_t p : ports) out.push_back(hex(fabric->ports[p].guid, 16));
        return out;
    }
    if (any) return nullptr;
    for (const PortKind& k : kinds) out.push_back(kindJson(k));
    return out;
}

// How many ports, names or GUID ranges a line of text shows before it counts the rest.
constexpr size_t ItemsShown = 4;

// A kind of CA port for people: its names and GUID ranges cut to the first few, counted.
std::string kindText(const PortKind& kind) {
    PortKind shown = kind;
    std::string more;
    auto cut = [&](auto& list, const char* what) {
        if (list.size() <= ItemsShown) return;
        more += ", ... (" + std::to_string(list.size()) + " " + what + " in all)";
        list.resize(ItemsShown);
    };
    if (shown.names) cut(*shown.names, "names");
    if (shown.notNames) cut(*shown.notNames, "names");
    if (shown.guids) cut(*shown.guids, "GUID ranges");
    const std::string text = describePortKind(shown);
    return text == "any port" ? "any CA port" : "CA port, " + text + more;
}

// For people: up to four ports by name, or the kinds of CA port.
std::string endText(const Fabric* fabric, const std::vector<uint32_t>& ports,
                    const std::vector<PortKind>& kinds, bool any) {
    std::string out;
    if (fabric) {
        for (size_t i = 0; i < ports.size() && i < ItemsShown; ++i)
            out += (i ? ", " : "") + fabric->portName(ports[i]);
        if (ports.size() > ItemsShown) out += ", ... (" + std::to_string(ports.size()) + " in all)";
        return out;
    }
    if (any) return "any CA port";
    for (size_t i = 0; i < kinds.size() && i < ItemsShown; ++i)
        out += (i ? "; or " : "") + kindText(kinds[i]);
    if (kinds.size() > ItemsShown)
        out += "; or ... (" + std::to_string(kinds.size()) + " kinds of port in all)";
    return out;
}

// The regions of one SL shown in text before "... and N more".
constexpr size_t RegionsShown = 4;

// Every request gets one SL: the settings that give it.
void printOneSl(const Policy& policy, const ib::QosFields& fields, const SlShare& s, bool json) {
    const std::string value = std::to_string(s.sl);
    if (json) {
        Json settings = Json::object();
        for (const SlSetting& setting : slSettings) settings[setting.variable] = value;
        std::cout << dumpJson({{"status", "ok"},
                               {"sl", s.sl},
                               {"request", requestJson(fields)},
                               {"settings", std::move(settings)},
                               {"levels", levelsJson(policy, s.levels)},
                               {"rules", rulesJson(policy, s.rules)}})
                  << "\n";
    } else {
        for (const SlSetting& setting : slSettings)
            std::cout << setting.variable << "=" << value << "\n";
    }
}

// Port pairs get different SLs: which, and where, as JSON on stdout.
void printSlsJson(const Policy& policy, const ib::QosFields& fields, const Fabric* fabric,
                  const std::vector<SlShare>& sls) {
    Json list = Json::array();
    for (const SlShare& s : sls) {
        Json regions = Json::array();
        for (size_t i = 0; i < s.regions.size(); ++i) {
            const DiffRegion& r = s.regions[i];
            static const std::vector<uint32_t> none;
            regions.push_back({{"sources", endJson(fabric, fabric ? s.sources[i] : none,
                                                   r.sourceKinds, r.anySource)},
                               {"destinations", endJson(fabric, fabric ? s.destinations[i] : none,
                                                        r.destinationKinds, r.anyDestination)}});
        }
        list.push_back({{"sl", s.sl},
                        {"levels", levelsJson(policy, s.levels)},
                        {"rules", rulesJson(policy, s.rules)},
                        {"port_pairs", fabric ? Json(s.portPairs) : Json(nullptr)},
                        {"regions", std::move(regions)}});
    }
    std::cout << dumpJson({{"status", "different"},
                           {"request", requestJson(fields)},
                           {"sls", std::move(list)}})
              << "\n";
}

// Port pairs get different SLs: which, and where, for people on stderr.
void printSlsText(const Policy& policy, const ib::QosFields& fields, const Fabric* fabric,
                  const std::vector<SlShare>& sls, const std::string& where) {
    std::cerr << "ibqos-agent env: requests with " << requestText(fields) << " get " << sls.size()
              << " different SLs " << where
              << ": no one SL a process fits them, so nothing is set.\n";
    for (const SlShare& s : sls) {
        std::string levels, rules;
        for (uint32_t l : s.levels)
            levels += (levels.empty() ? "'" : ", '") + policy.levels[l].name + "'";
        for (uint32_t r : s.rules) rules += (rules.empty() ? "" : ", ") + ruleText(policy, r);
        std::cerr << "\nSL " << int{s.sl} << " (level " << levels << ")";
        if (fabric) std::cerr << ", " << s.portPairs << " port pairs";
        std::cerr << ", decided by " << rules << ":\n";
        static const std::vector<uint32_t> none;
        for (size_t i = 0; i < s.regions.size() && i < RegionsShown; ++i) {
            const DiffRegion& r = s.regions[i];
            std::cerr << "  from "
                      << endText(fabric, fabric ? s.sources[i] : none, r.sourceKinds, r.anySource)
                      << "\n    to "
                      << endText(fabric, fabric ? s.destinations[i] : none, r.destinationKinds,
                                 r.anyDestination)
                      << "\n";
        }
        if (s.regions.size() > RegionsShown)
            std::cerr << "  ... and " << s.regions.size() - RegionsShown
                      << " more regions of port pairs (--json lists them all)\n";
    }
}

int env(const EnvOptions& o) {
    ib::QosFields fields;
    o.fields.read(fields);
    const std::optional<uint64_t> budget = analysisBudgetOption(o.analysisBudget);

    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(*o.policy.get()), diagnostics);
    std::unique_ptr<FabricCompilation> compiled;
    if (!diagnostics.hasErrors())
        compiled = compileForFabric(policy, o.fabric, inputs, diagnostics, CompileStage::Bind);
    // Errors go to stderr as `ibqos check` prints them (warnings are check's business); with
    // --json, stdout says so too, as the command-line contract asks of a --json command.
    if (diagnostics.hasErrors() && o.json) {
        std::cout << dumpJson(
                         {{"status", "error"}, {"diagnostics", diagnosticsJson(diagnostics.all())}})
                  << "\n";
    }
    if (emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts) != ExitOk)
        return ExitInputErrors;
    const Fabric* fabric = compiled ? &compiled->fabric() : nullptr;
    const std::optional<RequestSls> found =
        compiled ? requestSls(compiled->bound(), fields, budget.value_or(0))
                 : requestSls(policy, fields, budget.value_or(0));
    if (!found) {
        std::cerr << "ibqos-agent env: the analysis did not finish within the analysis budget of "
                  << *budget << " steps; raise --analysis-budget (or give 'unlimited')\n";
        return ExitUsage;
    }
    const std::vector<SlShare>& sls = found->sls;
    const std::string where = fabric ? "between the CA ports of " + fabric->source
                                     : "between CA ports on every fabric the policy could meet";

    if (sls.empty()) {
        if (o.json) {
            std::cout << dumpJson({{"status", "no-path"}, {"request", requestJson(fields)}})
                      << "\n";
        } else {
            std::cerr << "ibqos-agent env: the policy answers no request with "
                      << requestText(fields) << " " << where << "\n";
        }
        return ExitInputErrors;
    }
    if (sls.size() == 1) {
        printOneSl(policy, fields, sls.front(), o.json);
        return ExitOk;
    }
    if (o.json) {
        printSlsJson(policy, fields, fabric, sls);
    } else {
        printSlsText(policy, fields, fabric, sls, where);
    }
    return ExitInputErrors;
}

}  // namespace

void addEnv(Program& program) {
    auto o = std::make_shared<EnvOptions>();
    CLI::App& c = program.command(
        "env", "the SL settings of NCCL, UCX and MPI for a job, when the policy gives it one SL",
        envFooter, [o] { return env(*o); });
    o->policy.add(c, "the QoS policy", true);
    o->fabric.add(c, false);
    o->fields.add(c, false);
    c.add_flag("--json", o->json, "print one JSON object (below)");
    addAnalysisBudget(c, o->analysisBudget,
                      "work the analysis may do, in decision-diagram steps (default: "
                      "unlimited); past it the command stops with exit status 2");
}

}  // namespace ibqos::cli
