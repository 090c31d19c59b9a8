// SPDX-License-Identifier: MIT
// Command-line options of the ibqos tools: "--name value", "--name=value", flags, positionals.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ib/path_record.hpp"

namespace ibqos::cli {

// A usage error: the command prints it with a hint to --help and exits 2.
struct UsageError {
    std::string message;
};

struct OptionSpec {
    std::string name;  // without the leading "--"
    bool takesValue = false;
    bool repeatable = false;
};

// The parsed command line of one subcommand.
class Options {
  public:
    // Throws UsageError for unknown options, missing values and repeats.
    Options(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs);

    bool flag(const std::string& name) const { return values_.count(name) != 0; }
    std::optional<std::string> value(const std::string& name) const;
    std::vector<std::string> values(const std::string& name) const;
    const std::vector<std::string>& positionals() const { return positionals_; }

    // The value of a required option, or a UsageError naming it.
    std::string required(const std::string& name) const;

  private:
    std::map<std::string, std::vector<std::string>> values_;
    std::vector<std::string> positionals_;
};

// Parses an unsigned number (decimal or 0x hex) for an option, or throws UsageError.
uint64_t parseNumberOption(const std::string& name, const std::string& text, uint64_t max);

// The QoS fields a request may carry (--service-id, --qos-class, --pkey, --sl).
void readRequestFields(const Options& options, ib::QosFields& request);

}  // namespace ibqos::cli
