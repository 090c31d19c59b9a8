// SPDX-License-Identifier: MIT
// The command lines of ibqos and ibqos-agent, parsed by CLI11: a program of subcommands, each
// with its options and its help, the exit codes of the command-line contract, and the values
// every command reads the same way (numbers, the QoS fields of a request).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ib/path_record.hpp"

namespace ibqos::cli {

// Exit codes of every command (the command-line contract).
enum ExitCode : int { ExitOk = 0, ExitInputErrors = 1, ExitUsage = 2 };

// A usage error: the command prints it with a hint to --help and exits 2.
struct UsageError {
    std::string message;
};

// An input file that cannot be read, or a device or daemon that does not answer: the command
// prints it and exits 2.
struct IoError {
    std::string message;
};

// A mistake in what the command was asked about, found outside a file (a port that is not in
// the fabric): the command prints it and exits 1, as for errors in its input files.
struct InputError {
    std::string message;
};

// An option's value, or nothing when the option is not given. CLI11 keeps the text; numbers
// are read from it by parseNumberOption, as the policy language reads them.
using Value = std::optional<std::string>;

// A program made of subcommands: `PROGRAM COMMAND [OPTIONS]`, `PROGRAM help`, `--help` and
// `--version`. Every error is printed as "PROGRAM COMMAND: message" with the contract's exit
// code (CLI11's own parse errors are usage errors: 2).
class Program {
  public:
    Program(const std::string& name, const std::string& description, const std::string& footer);

    // A subcommand. `summary` is its line in the program's help; `footer` closes its own help
    // (what it does in full, its exit status). run is called once the options are parsed.
    CLI::App& command(const std::string& name, const std::string& summary,
                      const std::string& footer, std::function<int()> run);

    int main(int argc, char** argv);

  private:
    CLI::App app_;
    int result_ = ExitOk;
};

// A value option ("--name VALUE" or "--name=VALUE", at most once).
CLI::Option* addValue(CLI::App& command, const std::string& name, Value& value,
                      const std::string& type, const std::string& help);

// The required POLICY argument every policy command takes.
void addPolicyArgument(CLI::App& command, std::string& policy);

// POLICY for the commands that first took it as `--policy POLICY`: both forms are accepted,
// not both at once.
struct PolicyArgument {
    Value positional, option;

    // Adds POLICY and --policy; `required`: one of them must be given.
    void add(CLI::App& command, const std::string& help, bool required);
    // The policy given, or nullopt. Throws UsageError when both forms are given, or neither
    // and one is required.
    Value get() const;

  private:
    bool required_ = false;
};

// An unsigned number (decimal, 0x hex or 0 octal) from an option, or a UsageError naming it.
uint64_t parseNumberOption(const std::string& name, const std::string& text, uint64_t max);
// The same with a default for an option not given.
uint64_t numberOption(const std::string& name, const Value& value, uint64_t fallback, uint64_t max);

// The QoS fields a request may carry: --service-id, --qos-class, --pkey, --sl.
struct RequestFieldOptions {
    Value serviceId, qosClass, pkey, sl;

    // Adds them to a command; `withSl`: --sl too (a request that asks for an SL).
    void add(CLI::App& command, bool withSl = true);
    bool any() const { return serviceId || qosClass || pkey || sl; }
    void read(ib::QosFields& request) const;
};

// The local port a command sends its MADs from: --hca NAME (default: the first HCA) and --port N
// (default: its first active port).
struct LocalPortOptions {
    Value hca, port;

    void add(CLI::App& command);
    // The HCA's name, "" for the first.
    std::string caName() const { return hca.value_or(""); }
    // The port's number, 0 for the first active one; a UsageError for one that is no port.
    int portNumber() const;
};

}  // namespace ibqos::cli
