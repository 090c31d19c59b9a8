// SPDX-License-Identifier: MIT
// ibqos-agent plan and simulate: the tree a policy gives every host, and its long-run rates.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "host-sched/sched/sched_simulated.hpp"
#include "ib/qos.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::cli {

namespace {

const char* const planFooter =
    R"(Shows the transmit-scheduling tree every host builds from the policy's host-sched section
(in the order it is created: the root, nodes parent-first, then leaves), which SL attaches to
which leaf, and the congestion-control slots with their algorithms. --json prints {"depth",
"elements": [{"name", "kind", "parent", "bw_share", "max_avg_bw", "sls", "pcc_slot",
"pcc_algorithm"}], "sl_to_leaf": [16], "pcc_slots": [{"slot", "algorithm", "leaves"}],
"sl_enforcement": [{"mode", "programs", "except_programs", "resolve_timeout_ms"}]} (the
sl-enforcement blocks in order; a process takes the first that applies to it, none: respect).

Exit status: 0 success, 1 the policy has errors, 2 usage or I/O error.)";

const char* const simulateFooter =
    R"(Computes the long-run rate of every leaf of the host-sched tree on a link of N Mbit/s, under
the device scheduler's rules (mlx5dv_sched_node_create(3)): every element shares its bandwidth
among its children by bw-share, an element at its max-avg-bw takes no more, and what one
leaves unused goes to the others by weight. A leaf without --demand always has traffic; an
element without bw-share gets weight 1 (the device default is not documented). --json prints
{"link_mbps", "leaves": [{"name", "rate_mbps", "demand_mbps"}], "nodes": [{"name",
"rate_mbps"}]}.

Exit status: 0 success, 1 the policy has errors, 2 usage or I/O error (a LEAF that is not a
leaf of the policy).)";

struct PlanOptions {
    std::string policy;
    Value output;
    bool json = false;
};

struct SimulateOptions {
    std::string policy, linkMbps;
    std::vector<std::string> demand;
    bool json = false;
};

std::string slList(const std::bitset<ib::SlCount>& sls) {
    std::string out;
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        if (!sls.test(sl)) continue;
        unsigned end = sl;
        while (end + 1 < ib::SlCount && sls.test(end + 1)) ++end;
        out += (out.empty() ? "" : ",") + std::to_string(sl) +
               (end > sl ? "-" + std::to_string(end) : "");
        sl = end;
    }
    return out;
}

std::string describe(const host::PlanElement& e) {
    std::string out = e.name + " (" + (e.leaf ? "leaf" : "node");
    if (e.leaf) out += ", SL " + (e.sls.any() ? slList(e.sls) : std::string("none"));
    out += ", bw-share " + (e.bwShare ? std::to_string(e.bwShare) : std::string("default"));
    out += ", max-avg-bw " + describeBandwidth(e.maxAvgBw);
    if (e.pccSlot) out += ", pcc-slot " + std::to_string(*e.pccSlot) + " " + e.pccAlgorithm;
    return out + ")";
}

void printTree(const host::HostPlan& plan, std::optional<size_t> parent,
               const std::string& indent) {
    std::vector<size_t> children = plan.children(parent);
    for (size_t i = 0; i < children.size(); ++i) {
        bool last = i + 1 == children.size();
        std::cout << indent << (last ? "`-- " : "|-- ") << describe(plan.elements()[children[i]])
                  << "\n";
        printTree(plan, children[i], indent + (last ? "    " : "|   "));
    }
}

double parseMbps(const std::string& option, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || errno || *end || !std::isfinite(v) || v < 0) {
        throw UsageError{option + " takes a rate in Mbit/s (a number >= 0), not '" + text + "'"};
    }
    return v;
}

// The plan as one JSON object.
void printPlanJson(const host::HostPlan& plan) {
    const auto& elements = plan.elements();
    auto name = [&](std::optional<size_t> e) {
        return e ? Json(elements[*e].name) : Json(nullptr);
    };
    Json list = Json::array();
    for (const host::PlanElement& e : elements) {
        std::vector<unsigned> sls;
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (e.sls.test(sl)) sls.push_back(sl);
        }
        list.push_back({{"name", e.name},
                        {"kind", e.leaf ? "leaf" : "node"},
                        {"parent", name(e.parent)},
                        {"bw_share", e.bwShare},
                        {"max_avg_bw", e.maxAvgBw},
                        {"sls", sls},
                        {"pcc_slot", jsonOptional(e.pccSlot)},
                        {"pcc_algorithm", jsonName(e.pccAlgorithm)}});
    }
    Json slToLeaf = Json::array();
    for (unsigned sl = 0; sl < ib::SlCount; ++sl)
        slToLeaf.push_back(name(plan.leafForSl(static_cast<uint8_t>(sl))));
    Json slots = Json::array();
    for (const host::PlanSlot& s : plan.slots()) {
        Json leaves = Json::array();
        for (size_t l : s.leaves) leaves.push_back(elements[l].name);
        slots.push_back({{"slot", s.slot}, {"algorithm", s.algorithm}, {"leaves", leaves}});
    }
    Json enforcement = Json::array();
    for (const SlEnforcement& e : plan.enforcement()) {
        enforcement.push_back({{"mode", slModeName(e.mode)},
                               {"programs", e.programs},
                               {"except_programs", e.exceptPrograms},
                               {"resolve_timeout_ms", e.resolveTimeoutMs}});
    }
    Json out = {{"depth", plan.depth()},
                {"elements", std::move(list)},
                {"sl_to_leaf", std::move(slToLeaf)},
                {"pcc_slots", std::move(slots)},
                {"sl_enforcement", std::move(enforcement)}};
    std::cout << dumpJson(out) << "\n";
}

// The plan for people: SL enforcement, the tree, the SLs on no leaf, the PCC slots.
void printPlanText(const host::HostPlan& plan) {
    const auto& elements = plan.elements();
    auto names = [](const std::vector<std::string>& list) {
        std::string out;
        for (const std::string& n : list) out += (out.empty() ? "" : ", ") + n;
        return out;
    };
    for (const SlEnforcement& e : plan.enforcement()) {
        std::cout << ast::openKeyword(ast::BlockKind::SlEnforcement) << ' ' << slModeName(e.mode)
                  << " for " << (e.programs.empty() ? "every program" : names(e.programs))
                  << (e.exceptPrograms.empty() ? "" : " except " + names(e.exceptPrograms))
                  << " (resolve-timeout " << e.resolveTimeoutMs << " ms)\n";
    }
    if (plan.enforcement().empty())
        std::cout << "no sl-enforcement block: every program's own SL is used (respect)\n";
    if (plan.empty()) {
        std::cout << "no scheduling tree: QPs keep the device's default scheduling\n";
        return;
    }
    std::cout << "root (no weight, no cap: the device's share of the port)\n";
    printTree(plan, std::nullopt, "");
    std::bitset<ib::SlCount> unattached;
    for (unsigned sl = 0; sl < ib::SlCount; ++sl)
        unattached.set(sl, !plan.leafForSl(static_cast<uint8_t>(sl)));
    std::cout << "SLs on no leaf (device default): "
              << (unattached.any() ? slList(unattached) : "none") << "\n";
    for (const host::PlanSlot& s : plan.slots()) {
        std::string leaves;
        for (size_t l : s.leaves) leaves += (leaves.empty() ? "" : ", ") + elements[l].name;
        std::cout << "pcc-slot " << s.slot << ": " << s.algorithm << " (" << leaves << ")\n";
    }
    std::cout << "depth " << plan.depth() << " below the root\n";
}

int showPlan(const PlanOptions& o) {
    bool json = o.json;
    int exitCode = ExitOk;
    auto plan = loadPlanOrReport(o.policy, json, exitCode);
    if (!plan) return exitCode;
    if (o.output) {
        writeFileAtomically(*o.output, host::planFileText(*plan, o.policy));
        return ExitOk;
    }
    if (json) {
        printPlanJson(*plan);
    } else {
        printPlanText(*plan);
    }
    return ExitOk;
}

int simulateLink(const SimulateOptions& o) {
    double link = parseMbps("--link-mbps", o.linkMbps);
    bool json = o.json;
    int exitCode = ExitOk;
    auto plan = loadPlanOrReport(o.policy, json, exitCode);
    if (!plan) return exitCode;
    if (plan->empty()) {
        const std::string message =
            o.policy +
            " has no host-sched tree: there is nothing to simulate (every QP keeps the device's "
            "default scheduling)";
        if (json) std::cout << dumpJson(Json{{"status", "error"}, {"message", message}}) << "\n";
        std::cerr << "ibqos-agent simulate: " << message << "\n";
        return ExitInputErrors;
    }
    const auto& elements = plan->elements();

    std::vector<std::optional<double>> demand(elements.size());
    for (const std::string& d : o.demand) {
        size_t eq = d.rfind('=');
        if (eq == std::string::npos || eq == 0)
            throw UsageError{"--demand takes LEAF=MBPS, not '" + d + "'"};
        std::string name = d.substr(0, eq);
        auto index = plan->find(name);
        if (!index || !elements[*index].leaf)
            throw UsageError{"--demand: the policy has no sched-leaf '" + name + "'"};
        demand[*index] = parseMbps("--demand " + name, d.substr(eq + 1));
    }
    std::vector<double> rates = host::simulateRates(*plan, link, demand);

    if (json) {
        Json leaves = Json::array(), nodes = Json::array();
        for (size_t i = 0; i < elements.size(); ++i) {
            const host::PlanElement& e = elements[i];
            if (e.leaf) {
                leaves.push_back({{"name", e.name},
                                  {"rate_mbps", jsonNumber(rates[i])},
                                  {"demand_mbps", demand[i] ? jsonNumber(*demand[i]) : nullptr}});
            } else {
                nodes.push_back({{"name", e.name}, {"rate_mbps", jsonNumber(rates[i])}});
            }
        }
        Json out = {{"link_mbps", jsonNumber(link)},
                    {"leaves", std::move(leaves)},
                    {"nodes", std::move(nodes)}};
        std::cout << dumpJson(out) << "\n";
        return ExitOk;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-24s %-5s %14s %14s\n", "element", "kind", "demand Mbit/s",
                  "rate Mbit/s");
    std::cout << line;
    for (size_t i = 0; i < elements.size(); ++i) {
        const host::PlanElement& e = elements[i];
        std::string want = !e.leaf ? "" : demand[i] ? decimal(*demand[i]) : "any";
        std::snprintf(line, sizeof line, "%-24s %-5s %14s %14s\n", e.name.c_str(),
                      e.leaf ? "leaf" : "node", want.c_str(), decimal(rates[i]).c_str());
        std::cout << line;
    }
    return ExitOk;
}

}  // namespace

void addPlan(Program& program) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App& c =
        program.command("plan", "show the scheduling tree and PCC slots a policy gives every host",
                        planFooter, [o] { return showPlan(*o); });
    addPolicyArgument(c, o->policy);
    addValue(c, "-o,--output", o->output, "FILE",
             "write the compiled plan libibqos_preload.so reads (IBQOS_PLAN) to FILE, as "
             "`ibqos-agent run` does, instead of showing it");
    c.add_flag("--json", o->json, "print the plan as one JSON object (below)");
}

void addSimulate(Program& program) {
    auto o = std::make_shared<SimulateOptions>();
    CLI::App& c =
        program.command("simulate", "compute each leaf's long-run rate on a link of a given speed",
                        simulateFooter, [o] { return simulateLink(*o); });
    addPolicyArgument(c, o->policy);
    c.add_option("--link-mbps", o->linkMbps, "the link's rate in Mbit/s")
        ->required()
        ->type_name("N");
    c.add_option("--demand", o->demand, "what LEAF would send (repeatable); 0 for an idle leaf")
        ->type_name("LEAF=MBPS")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    c.add_flag("--json", o->json, "print the rates as one JSON object (below)");
}

}  // namespace ibqos::cli
