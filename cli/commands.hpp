// SPDX-License-Identifier: MIT
// The ibqos subcommands and what they share: loading inputs, printing diagnostics, exit codes.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_line.hpp"
#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "fabric/opensm_conf.hpp"
#include "policy-space/policy_diff.hpp"

namespace ibqos::cli {

// The files a command has read, kept for the source excerpts of diagnostics.
class Inputs {
  public:
    // The name diagnostics give standard input.
    static constexpr const char* StdinName = "<stdin>";

    // Loads a file, or standard input for "-" (at most once: a second "-" is a UsageError), or
    // throws IoError.
    const SourceFile& load(const std::string& path);
    // Whether standard input has been read.
    bool readStdin() const { return find(StdinName) != nullptr; }
    // Holds a text made in the program under a name that load() then returns.
    void add(const std::string& name, std::string text);
    const SourceFile* find(const std::string& name) const;

  private:
    std::map<std::string, std::unique_ptr<SourceFile>> files_;
};

// How much of a policy's diagnostics a command prints: all of them (check), or its errors and a
// count of the rest (the commands that use the policy: `ibqos check` is where to read them).
enum class Shown : uint8_t { All, ErrorsAndCounts };

// Prints diagnostics: as text with source excerpts on stderr, one entry per cause (the other
// places of a cause counted on a line after it), with a count line; or as a JSON array on
// stdout. Returns the exit code they imply.
int emitDiagnostics(Diagnostics& diagnostics, const Inputs& inputs, bool json,
                    Shown shown = Shown::All);
// On a terminal, for work that runs past two seconds: "WHAT: N s" on standard error, once a
// second, the line cleared when the object goes. Nothing anywhere else.
class ElapsedNotice {
  public:
    explicit ElapsedNotice(std::string what);
    ~ElapsedNotice();
    ElapsedNotice(const ElapsedNotice&) = delete;
    ElapsedNotice& operator=(const ElapsedNotice&) = delete;

  private:
    std::string what_;
    std::mutex mutex_;
    std::condition_variable done_;
    bool finished_ = false;
    bool shown_ = false;
    std::thread thread_;
};

// What a --json command prints when its input has errors: {"status": "error", "diagnostics":
// [...]} (with `"ports": []` for a command whose output has them) on stdout, the errors as text
// on stderr; returns 1.
int emitErrorObject(Diagnostics& diagnostics, const Inputs& inputs, bool emptyPorts = false);

// The options that name a fabric: --topology, --partitions, --sm, --vls, --port-caps,
// --opensm-conf. Each is declared here only, with one help text, for every command.
struct FabricOptions {
    Value topology, partitions, sm, vls, portCaps, opensmConf;

    // The fabric read offline: the topology is required or optional, the others need it.
    void add(CLI::App& command, bool needTopology);
    // The fabric found live from the local port: --partitions, --sm and --opensm-conf, the
    // files the SM uses. `orTopology`: --topology (with --vls and --port-caps) reads it offline
    // instead.
    void addLive(CLI::App& command, bool orTopology);
};

// Reads the fabric the options name (nullopt without --topology, or when the topology file
// yielded no node and errors: nothing to check against). Problems in the files go to
// diagnostics; an --sm or --vls that makes no sense is a UsageError.
std::optional<Fabric> loadFabric(const FabricOptions& options, Inputs& inputs,
                                 Diagnostics& diagnostics);
// loadFabric in two steps: the fabric without partitions (--partitions is not read), then a
// partitions.conf (none: OpenSM's default partition).
std::optional<Fabric> loadTopology(const FabricOptions& options, Inputs& inputs,
                                   Diagnostics& diagnostics);
void loadPartitions(const Value& path, Inputs& inputs, Fabric& fabric, Diagnostics& diagnostics);

// The port an option names in a fabric (a GUID, a LID or NodeDescription/P<n>). A port the
// fabric does not have is an InputError ("--sm: no node is described as ...").
uint32_t portOption(const Fabric& fabric, const std::string& option, const std::string& spec);

// The opensm.conf QoS options of a file (OpenSM's built-in defaults without one).
OpenSmConf loadOpenSmConf(const Value& path, Inputs& inputs, Diagnostics& diagnostics);

// The policy compiled for the fabric the options name (nullptr without --topology), up to a
// stage.
std::unique_ptr<FabricCompilation> compileForFabric(
    const Policy& policy, const FabricOptions& options, Inputs& inputs, Diagnostics& diagnostics,
    CompileStage upTo = CompileStage::Realizability);
// The same for several policies on one fabric, whose files are read once.
std::vector<std::unique_ptr<FabricCompilation>> compileForFabric(
    const std::vector<const Policy*>& policies, const FabricOptions& options, Inputs& inputs,
    Diagnostics& diagnostics, CompileStage upTo);

// --analysis-budget STEPS|unlimited: the work budget of the policy-space analyses (nullopt:
// not given; 0: unlimited). Throws UsageError for anything else.
void addAnalysisBudget(CLI::App& command, std::string& value, const std::string& help);
std::optional<uint64_t> analysisBudgetOption(const std::string& value);

// One table of a port that differs, on one line as verify and diff print it: "node-01
// HCA-1/P1 vlarb low: expected 1:128,2:64, found 1:64,2:64" (labels "expected"/"found" or
// "old"/"new").
std::string tableDifferenceLine(const std::string& port, const std::string& table,
                                const char* firstLabel, const std::string& first,
                                const char* secondLabel, const std::string& second);

// Writes a file whole or not at all: a temporary file renamed over the target. Throws IoError.
void writeFileAtomically(const std::string& path, const std::string& content);

// The ibqos program's description and the footer of its help (ibqos-monitor, which runs
// `ibqos monitor`, is the same program to its user), and monitor's line in that help.
inline constexpr char ibqosDescription[] =
    "InfiniBand QoS policies, checked and compiled before they reach the fabric.";
inline constexpr char ibqosFooter[] =
    "Run 'ibqos COMMAND --help' for the options of a command; 'man ibqos' for the whole story. "
    "A POLICY or FILE of '-' is standard input.\nExit status: 0 success, 1 the input has "
    "errors, 2 usage or I/O error.";
inline constexpr char monitorSummary[] =
    "per-VL and per-SL traffic from the performance counters, against the policy's intent";

// What `ibqos diff` found: whether nothing changes, and the regions of requests that do.
struct DiffOutcome {
    bool equivalent = true;
    PolicyDiff diff;
};
// Prints what `ibqos diff` prints (text or JSON) for two policies, compiled on one fabric or
// (nullptr) on none; nullopt when the comparison passed the budget (nothing printed).
std::optional<DiffOutcome> writeDiff(const Policy& oldPolicy, const Policy& newPolicy,
                                     const FabricCompilation* oldCompiled,
                                     const FabricCompilation* newCompiled,
                                     std::optional<uint64_t> budget, bool json, std::ostream& out);

// The ibqos subcommands.
void addCheck(Program& program);
void addCompile(Program& program);
void addVerify(Program& program);
void addQuery(Program& program);
void addDiff(Program& program);
void addMonitor(Program& program);
void addStatus(Program& program);
void addApply(Program& program);

}  // namespace ibqos::cli
