// SPDX-License-Identifier: MIT
// The ibqos subcommands and what they share: loading inputs, printing diagnostics, exit codes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "fabric/opensm_conf.hpp"

namespace ibqos::cli {

// Exit codes of every command (the command-line contract).
enum ExitCode : int { ExitOk = 0, ExitInputErrors = 1, ExitUsage = 2 };

// An input file that cannot be read: the command prints it and exits 2.
struct IoError {
    std::string message;
};

// The files a command has read, kept for the source excerpts of diagnostics.
class Inputs {
  public:
    // Loads a file or throws IoError.
    const SourceFile& load(const std::string& path);
    const SourceFile* find(const std::string& name) const;

  private:
    std::map<std::string, std::unique_ptr<SourceFile>> files_;
};

// Prints diagnostics: as text with source excerpts on stderr (with a count line), or as a
// JSON array on stdout. Returns the exit code they imply.
int emitDiagnostics(Diagnostics& diagnostics, const Inputs& inputs, bool json);

// The options that name a fabric: --topology, --partitions, --sm, --vls.
std::vector<OptionSpec> fabricOptions();
extern const char* const fabricOptionsHelp;

// Reads the fabric the options name (nullopt without --topology). Problems in the files go to
// diagnostics; an --sm or --vls that makes no sense is a UsageError.
std::optional<Fabric> loadFabric(const Options& options, Inputs& inputs, Diagnostics& diagnostics);

// The opensm.conf QoS options --opensm-conf names (OpenSM's built-in defaults without it).
OpenSmConf loadOpenSmConf(const Options& options, Inputs& inputs, Diagnostics& diagnostics);

// The policy compiled for the fabric the options name (nullptr without --topology), up to a
// stage.
std::unique_ptr<FabricCompilation> compileForFabric(
    const Policy& policy, const Options& options, Inputs& inputs, Diagnostics& diagnostics,
    CompileStage upTo = CompileStage::Realizability);

// Writes a file whole or not at all: a temporary file renamed over the target. Throws IoError.
void writeFileAtomically(const std::string& path, const std::string& content);

// One subcommand of a program: its name and what runs it.
struct Command {
    const char* name;
    int (*run)(const std::vector<std::string>& args);
};

// The main of a program made of subcommands: `help`, `--help`, `--version`, then the command
// named by the first argument; usage errors get a hint to --help, and every error is printed
// as "PROGRAM COMMAND: message" with the exit code of the command-line contract.
int dispatch(const char* program, const char* help, const std::vector<Command>& commands, int argc,
             char** argv);

int runCheck(const std::vector<std::string>& args);
int runCompile(const std::vector<std::string>& args);
int runVerify(const std::vector<std::string>& args);
int runQuery(const std::vector<std::string>& args);

}  // namespace ibqos::cli
