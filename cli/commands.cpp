// SPDX-License-Identifier: MIT
// What the ibqos subcommands share.
#include "cli/commands.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/json.hpp"
#include "common/text.hpp"
#include "fabric/partitions.hpp"
#include "fabric/port_caps.hpp"
#include "fabric/topology.hpp"
#include "ib/link.hpp"
#include "ib/qos.hpp"

namespace ibqos::cli {

const SourceFile& Inputs::load(const std::string& path) {
    if (path == "-") {
        if (readStdin()) throw UsageError{"standard input ('-') can be read only once"};
        std::ostringstream text;
        text << std::cin.rdbuf();
        if (std::cin.bad()) throw IoError{"reading standard input failed"};
        if (text.view().size() > SourceFile::MaxSize)
            throw IoError{"standard input is larger than 2 GiB"};
        add(StdinName, std::move(text).str());
        return *find(StdinName);
    }
    if (auto it = files_.find(path); it != files_.end()) return *it->second;
    std::string error;
    auto source = SourceFile::load(path, error);
    if (!source) throw IoError{error};
    auto [it, inserted] = files_.emplace(path, std::make_unique<SourceFile>(std::move(*source)));
    return *it->second;
}

void Inputs::add(const std::string& name, std::string text) {
    files_[name] = std::make_unique<SourceFile>(name, std::move(text));
}

const SourceFile* Inputs::find(const std::string& name) const {
    auto it = files_.find(name);
    return it == files_.end() ? nullptr : it->second.get();
}

namespace {

// The help of the fabric options, for the fabric read offline; a live fabric's differs only
// where the text says so.
constexpr char topologyHelp[] = "the fabric: ibnetdiscover output (or an ibsim net file)";
constexpr char partitionsHelp[] =
    "OpenSM's partitions.conf (without it: the Default partition, all full)";
constexpr char smHelp[] = "the SM's port, for node-type SELF (GUID 0x..., LID, or Desc/P<n>)";
constexpr char vlsHelp[] =
    "data VLs assumed on every port (1, 2, 4, 8 or 15; default 8), as ibnetdiscover files do not "
    "carry VL capabilities";
constexpr char portCapsHelp[] =
    "per-port capabilities: lines \"PORT [vls=N] [vlarb-high=N] [vlarb-low=N] [mtu=BYTES]\", "
    "PORT being '*', a port GUID or Desc/P<n>";
constexpr char opensmConfHelp[] =
    "the opensm.conf whose qos_* options (and max_op_vls) give the tables before qos-setup "
    "applies (default: OpenSM's built-in defaults)";

}  // namespace

void FabricOptions::add(CLI::App& command, bool needTopology) {
    CLI::Option* t = addValue(command, "--topology", topology, "FILE", topologyHelp);
    if (needTopology) t->required();
    addValue(command, "--partitions", partitions, "FILE", partitionsHelp)->needs(t);
    addValue(command, "--sm", sm, "PORT", smHelp)->needs(t);
    addValue(command, "--vls", vls, "N", vlsHelp)->needs(t);
    addValue(command, "--port-caps", portCaps, "FILE", portCapsHelp)->needs(t);
    addValue(command, "--opensm-conf", opensmConf, "FILE", opensmConfHelp)->needs(t);
}

void FabricOptions::addLive(CLI::App& command, bool orTopology) {
    // --vls and --port-caps without --topology are refused by the command, which says why.
    if (orTopology)
        addValue(command, "--topology", topology, "FILE",
                 std::string(topologyHelp) + ", with LIDs, read instead of discovering the fabric");
    addValue(command, "--partitions", partitions, "FILE", partitionsHelp);
    addValue(command, "--sm", sm, "PORT",
             std::string(smHelp) +
                 "; on a fabric discovered, by default the master SM the local "
                 "port knows");
    if (orTopology) {
        addValue(command, "--vls", vls, "N", std::string("with --topology: ") + vlsHelp);
        addValue(command, "--port-caps", portCaps, "FILE",
                 std::string("with --topology: ") + portCapsHelp);
    }
    addValue(command, "--opensm-conf", opensmConf, "FILE", opensmConfHelp);
}

std::optional<Fabric> loadFabric(const FabricOptions& options, Inputs& inputs,
                                 Diagnostics& diagnostics) {
    std::optional<Fabric> fabric = loadTopology(options, inputs, diagnostics);
    if (fabric) loadPartitions(options.partitions, inputs, *fabric, diagnostics);
    return fabric;
}

void loadPartitions(const Value& path, Inputs& inputs, Fabric& fabric, Diagnostics& diagnostics) {
    readPartitions(path ? &inputs.load(*path) : nullptr, fabric, diagnostics);
}

std::optional<Fabric> loadTopology(const FabricOptions& options, Inputs& inputs,
                                   Diagnostics& diagnostics) {
    if (!options.topology) return std::nullopt;
    uint8_t operVls = 4;
    if (options.vls) {
        operVls = ib::vlEncoding(parseNumberOption("vls", *options.vls, ib::DataVlCount));
        if (operVls == 0) throw UsageError{"--vls takes 1, 2, 4, 8 or 15"};
    }
    const size_t errorsBefore = diagnostics.errorCount();
    Fabric fabric = readTopology(inputs.load(*options.topology), diagnostics, operVls);
    // A file that yielded no node and errors is no fabric to check against (each name of the
    // policy would be reported as matching nothing).
    if (fabric.nodes.empty() && diagnostics.errorCount() > errorsBefore) return std::nullopt;
    if (options.portCaps) readPortCaps(inputs.load(*options.portCaps), fabric, diagnostics);
    if (options.sm) fabric.smPort = portOption(fabric, "sm", *options.sm);
    return fabric;
}

uint32_t portOption(const Fabric& fabric, const std::string& option, const std::string& spec) {
    std::string error;
    uint32_t port = fabric.findEndpoint(spec, error);
    if (port == NoPort) throw InputError{"--" + option + ": " + error};
    return port;
}

OpenSmConf loadOpenSmConf(const Value& path, Inputs& inputs, Diagnostics& diagnostics) {
    if (!path) return OpenSmConf{};
    OpenSmConf conf = readOpenSmConf(inputs.load(*path), diagnostics);
    checkPluginLines(conf, diagnostics);
    return conf;
}

std::vector<std::unique_ptr<FabricCompilation>> compileForFabric(
    const std::vector<const Policy*>& policies, const FabricOptions& options, Inputs& inputs,
    Diagnostics& diagnostics, CompileStage upTo) {
    std::optional<Fabric> fabric = loadFabric(options, inputs, diagnostics);
    if (!fabric) return {};
    OpenSmConf conf = loadOpenSmConf(options.opensmConf, inputs, diagnostics);
    negotiateOperVls(*fabric, conf.maxOpVls);
    std::vector<std::unique_ptr<FabricCompilation>> out;
    for (const Policy* policy : policies)
        out.push_back(FabricCompilation::compile(*policy, *fabric, conf, diagnostics, upTo));
    return out;
}

std::unique_ptr<FabricCompilation> compileForFabric(const Policy& policy,
                                                    const FabricOptions& options, Inputs& inputs,
                                                    Diagnostics& diagnostics, CompileStage upTo) {
    auto compiled = compileForFabric({&policy}, options, inputs, diagnostics, upTo);
    return compiled.empty() ? nullptr : std::move(compiled.front());
}

void addAnalysisBudget(CLI::App& command, std::string& value, const std::string& help) {
    command.add_option("--analysis-budget", value, help)->type_name("STEPS");
}

std::optional<uint64_t> analysisBudgetOption(const std::string& value) {
    if (value.empty()) return std::nullopt;
    if (value == "unlimited") return 0;
    std::optional<uint64_t> steps = parseNumber(value, 10);
    if (!steps)
        throw UsageError{"--analysis-budget: '" + value + "' is not a number or 'unlimited'"};
    return steps;
}

std::string tableDifferenceLine(const std::string& port, const std::string& table,
                                const char* firstLabel, const std::string& first,
                                const char* secondLabel, const std::string& second) {
    return port + " " + table + ": " + firstLabel + " " + first + ", " + secondLabel + " " +
           second + "\n";
}

void writeFileAtomically(const std::string& path, const std::string& content) {
    // The temporary file sits beside the target, so that the rename cannot cross file systems;
    // what fails with it fails for the target, which is what messages name.
    std::string temporary = path + ".tmp." + std::to_string(getpid());
    auto failed = [&](int err) {
        std::remove(temporary.c_str());
        return IoError{"cannot write '" + path + "': " + std::strerror(err)};
    };
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) throw failed(errno);
        out << content;
        out.flush();
        if (!out) throw failed(errno);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) throw failed(errno);
}

int emitDiagnostics(Diagnostics& diagnostics, const Inputs& inputs, bool json, Shown shown) {
    diagnostics.sort();
    if (json) {
        std::cout << renderJson(diagnostics.all());
        return diagnostics.hasErrors() ? ExitInputErrors : ExitOk;
    }
    std::string out;
    size_t causes = 0;
    // Written 64 KiB at a time: a large policy's diagnostics run to megabytes.
    for (const DiagnosticGroup& g : groupByCause(diagnostics.all())) {
        if (shown == Shown::ErrorsAndCounts && g.first->severity != Severity::Error) continue;
        ++causes;
        appendGroupText(out, g, inputs.find(g.first->file));
        if (out.size() >= 64 * 1024) {
            std::cerr << out;
            out.clear();
        }
    }
    size_t errors = diagnostics.errorCount(), warnings = diagnostics.warningCount();
    size_t notes = diagnostics.all().size() - errors - warnings;
    if (!diagnostics.all().empty()) {
        out += std::to_string(errors) + (errors == 1 ? " error" : " errors") + ", " +
               std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
        if (notes) out += ", " + std::to_string(notes) + (notes == 1 ? " note" : " notes");
        if (shown == Shown::ErrorsAndCounts && warnings + notes > 0) {
            out += " (`ibqos check` shows the warnings";
            out += notes ? " and notes)" : ")";
        } else if (causes < diagnostics.all().size()) {
            out += ", from " + std::to_string(causes) + (causes == 1 ? " cause" : " causes");
        }
        out += "\n";
    }
    std::cerr << out;
    return diagnostics.hasErrors() ? ExitInputErrors : ExitOk;
}

ElapsedNotice::ElapsedNotice(std::string what) : what_(std::move(what)) {
    if (!::isatty(STDERR_FILENO)) return;
    thread_ = std::thread([this] {
        const auto start = std::chrono::steady_clock::now();
        std::unique_lock<std::mutex> lock(mutex_);
        auto wait = std::chrono::seconds(2);
        while (!done_.wait_for(lock, wait, [this] { return finished_; })) {
            const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
            std::fprintf(stderr, "\r%s: %lld s", what_.c_str(), static_cast<long long>(seconds));
            std::fflush(stderr);
            shown_ = true;
            wait = std::chrono::seconds(1);
        }
    });
}

ElapsedNotice::~ElapsedNotice() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_ = true;
    }
    done_.notify_one();
    thread_.join();
    if (shown_) std::fprintf(stderr, "\r\033[K");  // the notice's line, cleared
}

int emitErrorObject(Diagnostics& diagnostics, const Inputs& inputs, bool emptyPorts) {
    diagnostics.sort();
    Json out = {{"status", "error"}};
    if (emptyPorts) out["ports"] = Json::array();
    out["diagnostics"] = diagnosticsJson(diagnostics.all());
    std::cout << dumpJson(out) << "\n";
    emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
    return ExitInputErrors;
}

}  // namespace ibqos::cli
