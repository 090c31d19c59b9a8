// SPDX-License-Identifier: MIT
// ibqos query: the QoS level, SL, limits and PKey the SA answers for a path, and why.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <unistd.h>

#include <ext/stdio_filebuf.h>

#include "cli/answer_json.hpp"
#include "cli/commands.hpp"
#include "cli/query_batch.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/bind.hpp"
#include "ib/qos.hpp"
#include "policy-space/load_policy.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/reference_match.hpp"

namespace ibqos::cli {

namespace {

const char* const queryFooter =
    R"(Answers offline, from the topology file, what OpenSM's SA answers for a PathRecord request under
the policy: the QoS level, its SL, MTU and rate limits and packet life, the PKey of the path,
and which rule decided it. Rules are tried in OpenSM's order (qos-match-rules, then qos-ulps
lines); a rule naming a field the request does not carry never matches it. The answer is
"rejected" where OpenSM answers nothing: a requested SL other than the level's, a requested PKey
the two ports do not share (or that the level does not list), or ports sharing no partition.
Offline there are no routes: the MTU and rate are the level's limits (the path's own where it
sets none), and an SL that a switch's SL2VL table drops on the way is not seen.

A PORT is a port GUID (0x...), a LID (decimal), or NodeDescription/P<n>. With --batch FILE
('-': standard input) every line is a request SRC DST SERVICE_ID QOS_CLASS PKEY SL: fields
separated by blanks, a field holding blanks in double quotes, '-' for a field the request does
not have. One JSON object is printed a line, in order; a line that cannot be read or names an
unknown port gives {"status": "error", "message": ...} and the batch goes on.

JSON keys: status ("ok", "rejected" or "error"), level, sl, mtu_limit, rate_limit (IB enums),
packet_life (0 on a loopback path), pkeys ([[low, high], ...] of the level), each null where
the level leaves it unset; pkey (the PKey answered, null when rejected), rule ({"index": N,
"line": L}, N counting from 0 in OpenSM's order, or null for the default level), and reason
when rejected.

Exit status: 0 every request was answered ("ok" or "rejected": a rejection is an answer);
1 the policy, topology or partitions have errors, or a request names an unknown port or
(--batch) a line cannot be read; 2 usage or I/O error.)";

struct QueryOptions {
    std::string policy;
    FabricOptions fabric;
    Value src, dst, batch;
    RequestFieldOptions fields;
    bool json = false;
};

// What the query command holds once the inputs are read.
class Answerer {
  public:
    Answerer(const Policy& policy, const Fabric& fabric, const BoundPolicy& bound)
        : policy_(policy), fabric_(fabric), bound_(bound), requests_(policy, fabric, bound) {}

    const RequestAnswerer& requests() const { return requests_; }
    PathAnswer answer(const PathQuery& q) const { return requests_.answer(q); }

    // The answer as the one-line JSON object the contract gives.
    std::string json(const PathAnswer& a) const {
        std::string out;
        requests_.write(out, a);
        return out;
    }

    std::string explain(const PathQuery& q, const PathAnswer& a) const {
        MatchExplanation e = explainMatch(bound_, q);
        if (e.match != a.match)
            throw std::logic_error("the classifier and OpenSM's rule scan disagree");
        std::string out = "Request  " + describePort(q.source) + "\n      -> " +
                          describePort(q.destination) + "\n";
        out += "         service-id " + (q.serviceId ? hex(*q.serviceId) : "-") + ", qos-class " +
               (q.qosClass ? std::to_string(*q.qosClass) : "-") + ", pkey " +
               (q.pkey ? hex(*q.pkey, 4) : "-") + ", sl " + (q.sl ? std::to_string(*q.sl) : "-") +
               "\n";
        const QosLevel& level = policy_.levels[a.match.level];
        out += "Answer   " +
               std::string(a.ok() ? "ok" : "rejected: " + std::string(rejectionText(a.rejection))) +
               "\n";
        out += "         level '" + level.name + "'" + where(level.location) + ": SL " +
               std::to_string(level.sl) + "\n";
        out +=
            "         MTU " + (a.mtuLimit ? "at most " + std::to_string(mtuBytes(*a.mtuLimit)) +
                                                " (mtu-limit " + std::to_string(*a.mtuLimit) + ")"
                                          : std::string("the path's"));
        out += ", rate " + (a.rateLimit ? "at most " + gbps(*a.rateLimit) + " (rate-limit " +
                                              std::to_string(*a.rateLimit) + ")"
                                        : std::string("the path's"));
        out +=
            ", packet life " + (a.packetLife ? std::to_string(*a.packetLife) +
                                                   (q.source == q.destination ? " (loopback)" : "")
                                             : std::string("OpenSM's subnet_timeout"));
        out += "\n";
        if (a.ok()) out += "         PKey " + hex(a.pkey, 4) + pkeySource(q, level) + "\n";
        if (a.rejection == Rejection::SlMismatch) {
            out += "         the request asks for SL " + std::to_string(*q.sl) + "\n";
        }
        if (a.match.rule == NoRule) {
            out += "No rule matched: the default level.\n";
        } else {
            const MatchRule& rule = policy_.rules[a.match.rule];
            out +=
                "Decided by rule " + std::to_string(a.match.rule) + " " + ruleLabel(rule) + ":\n";
            out += matchedFields(rule, q, e);
        }
        if (!e.earlier.empty()) {
            out += a.match.rule == NoRule ? "Every rule, and why it did not match:\n"
                                          : "Earlier rules, and why they did not match:\n";
            for (auto [r, why] : e.earlier) {
                out += "  rule " + std::to_string(r) + " " + ruleLabel(policy_.rules[r]) + ": " +
                       mismatch(policy_.rules[r], q, why) + "\n";
            }
        }
        return out;
    }

  private:
    const Policy& policy_;
    const Fabric& fabric_;
    const BoundPolicy& bound_;
    RequestAnswerer requests_;

    static std::string gbps(uint8_t rate) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g Gb/s", rateGbps(rate));
        return buf;
    }

    std::string where(SourceLocation at) const {
        return at.line ? " (" + policy_.file + ":" + std::to_string(at.line) + ")" : "";
    }

    std::string describePort(uint32_t port) const {
        const FabricPort& p = fabric_.ports[port];
        return fabric_.portName(port) + " (LID " + std::to_string(p.lid) + ", GUID " +
               hex(p.guid, 16) + ")";
    }

    std::string ruleLabel(const MatchRule& rule) const {
        std::string label = "(" + policy_.file + ":" + std::to_string(rule.location.line);
        if (!rule.use.empty()) label += ", " + std::string(rule.fromUlps ? "" : "use: ") + rule.use;
        return label + ")";
    }

    std::string groupNames(const std::vector<uint32_t>& groups) const {
        std::string out;
        for (uint32_t g : groups) {
            const PortGroup& group = policy_.groups[g];
            out += out.empty() ? "" : ", ";
            out += group.origin == GroupOrigin::Written ? "'" + group.name + "'"
                                                        : "the line's port GUIDs";
        }
        return out;
    }

    std::string groupName(uint32_t g) const {
        const PortGroup& group = policy_.groups[g];
        return group.origin == GroupOrigin::Written ? "port-group '" + group.name + "'"
                                                    : "the line's port GUIDs";
    }

    std::string pkeySource(const PathQuery& q, const QosLevel& level) const {
        if (q.pkey) return " (requested)";
        if (!level.pkeys.empty()) return " (the first of the level's pkeys both ports share)";
        return " (the first PKey both ports share, in OpenSM's order)";
    }

    std::string matchedFields(const MatchRule& rule, const PathQuery& q,
                              const MatchExplanation& e) const {
        std::string out;
        if (e.sourceGroup != NoGroup) {
            out += "         source " + fabric_.portName(q.source) + " is in " +
                   groupName(e.sourceGroup) + "\n";
        }
        if (e.destinationGroup != NoGroup) {
            out += "         destination " + fabric_.portName(q.destination) + " is in " +
                   groupName(e.destinationGroup) + "\n";
        }
        if (!rule.qosClasses.empty()) {
            out += "         qos-class " + std::to_string(*q.qosClass) + " is in " +
                   rule.qosClasses.str() + "\n";
        }
        if (!rule.serviceIds.empty()) {
            out += "         service-id " + hex(*q.serviceId) + " is in " +
                   rule.serviceIds.str(true) + "\n";
        }
        if (!rule.pkeys.empty()) {
            out += "         pkey " + hex(*q.pkey, 4) + " is in " + rule.pkeys.str(true) + "\n";
        }
        if (out.empty()) out = "         the rule sets no condition\n";
        return out;
    }

    std::string mismatch(const MatchRule& rule, const PathQuery& q, RuleMismatch why) const {
        switch (why) {
            case RuleMismatch::Source:
                return "source " + fabric_.portName(q.source) + " is in none of " +
                       groupNames(rule.sources);
            case RuleMismatch::Destination:
                return "destination " + fabric_.portName(q.destination) + " is in none of " +
                       groupNames(rule.destinations);
            case RuleMismatch::QosClassAbsent:
                return "it needs a qos-class (" + rule.qosClasses.str() + "); the request has none";
            case RuleMismatch::QosClass:
                return "qos-class " + std::to_string(*q.qosClass) + " is not in " +
                       rule.qosClasses.str();
            case RuleMismatch::ServiceIdAbsent:
                return "it needs a service-id (" + rule.serviceIds.str(true) +
                       "); the request has none";
            case RuleMismatch::ServiceId:
                return "service-id " + hex(*q.serviceId) + " is not in " +
                       rule.serviceIds.str(true);
            case RuleMismatch::PkeyAbsent:
                return "it needs a pkey (" + rule.pkeys.str(true) + "); the request has none";
            case RuleMismatch::Pkey:
                return "pkey " + hex(*q.pkey, 4) + " (base " + hex(ib::pkeyBase(*q.pkey), 4) +
                       ") is not in " + rule.pkeys.str(true);
            case RuleMismatch::None:
                break;
        }
        return "matches";
    }
};

int runBatch(const RequestAnswerer& answerer, const Fabric& fabric, const std::string& path) {
    std::ifstream file;
    // Standard input through a buffer of its own descriptor: read as it comes, in pieces.
    std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> standardInput;
    std::streambuf* in = nullptr;
    if (path == "-") {
        const int fd = dup(0);
        if (fd < 0) throw IoError{"cannot read standard input: " + std::string(strerror(errno))};
        standardInput = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::in);
        in = standardInput.get();
    } else {
        if (std::string error; !SourceFile::open(path, file, error)) throw IoError{error};
        in = file.rdbuf();
    }
    bool readFailed = false;
    bool answeredAll = answerBatch(answerer, fabric, *in, std::cout, readFailed);
    if (readFailed) throw IoError{"reading '" + path + "' failed"};
    return answeredAll ? ExitOk : ExitInputErrors;
}

int query(const QueryOptions& o) {
    if (!o.batch && (!o.src || !o.dst)) throw UsageError{"give --src and --dst, or --batch FILE"};
    PathQuery query;
    o.fields.read(query);

    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(o.policy), diagnostics);
    auto compiled = compileForFabric(policy, o.fabric, inputs, diagnostics, CompileStage::Bind);
    // Warnings and errors go to standard error, whatever the output form; --json says too.
    if (diagnostics.hasErrors() && (o.json || o.batch)) return emitErrorObject(diagnostics, inputs);
    if (emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts) != ExitOk)
        return ExitInputErrors;
    const Fabric& fabric = compiled->fabric();

    if (o.batch && *o.batch == "-" && inputs.readStdin())
        throw UsageError{"standard input ('-') can be read only once"};
    Answerer answerer(policy, fabric, compiled->bound());
    if (o.batch) return runBatch(answerer.requests(), fabric, *o.batch);

    for (const auto& [end, name] : {std::pair{&o.src, "src"}, std::pair{&o.dst, "dst"}}) {
        std::string error;
        uint32_t port = fabric.findEndpoint(**end, error);
        if (port == NoPort) {
            std::string message = std::string("--") + name + ": " + error;
            if (o.json) {
                std::cout << dumpJson(errorObject(message)) << '\n';
            } else {
                std::cerr << "ibqos query: " << message << "\n";
            }
            return ExitInputErrors;
        }
        (end == &o.src ? query.source : query.destination) = port;
    }
    PathAnswer answer = answerer.answer(query);
    std::cout << (o.json ? answerer.json(answer) + "\n" : answerer.explain(query, answer));
    return ExitOk;
}

}  // namespace

void addQuery(Program& program) {
    auto o = std::make_shared<QueryOptions>();
    CLI::App& c = program.command("query",
                                  "which QoS level, SL and PKey the SA answers for a path, "
                                  "and why",
                                  queryFooter, [o] { return query(*o); });
    addPolicyArgument(c, o->policy);
    o->fabric.add(c, true);
    CLI::Option* src = addValue(c, "--src", o->src, "PORT", "the source end of the path");
    CLI::Option* dst = addValue(c, "--dst", o->dst, "PORT", "its destination end");
    o->fields.add(c);
    c.add_flag("--json", o->json, "print the answer as one JSON object instead of the explanation");
    CLI::Option* batch = addValue(c, "--batch", o->batch, "FILE",
                                  "answer every line of FILE, a request a line (below)");
    for (CLI::Option* single : {src, dst}) batch->excludes(single);
    for (const char* name : {"--service-id", "--qos-class", "--pkey", "--sl"})
        batch->excludes(c.get_option(name));
}

}  // namespace ibqos::cli
