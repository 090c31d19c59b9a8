// SPDX-License-Identifier: MIT
// The fabric a command reads from this host over SMPs (ibqos verify, ibqos monitor).
#pragma once

#include <memory>

#include "cli/commands.hpp"
#include "common/json.hpp"
#include "fabric/smp_probe.hpp"

namespace ibqos::cli {

// The probe's options for the local port --hca and --port name.
probe::ProbeOptions localPortOptions(const LocalPortOptions& local);

// Discovers the fabric from the local port and gives it --sm's port and --partitions'
// partitions (problems in the file go to diagnostics). Throws IoError when the fabric cannot be
// reached, and InputError for an --sm the fabric does not have.
std::unique_ptr<probe::LiveFabric> discoverFabric(const LocalPortOptions& local, const Value& sm,
                                                  const Value& partitions, Inputs& inputs,
                                                  Diagnostics& diagnostics);

// What `ibqos verify` finds on a live fabric: {"ports_checked", "queries", "differences"} (its
// --json object without "diagnostics") and its text lines.
struct TableVerification {
    Json report;
    std::string text;
    size_t differences = 0;
};
// Compiles the policy for the fabric found and reads every port's tables back (as `ibqos
// verify` does).
TableVerification verifyLiveTables(const Policy& policy, const OpenSmConf& conf,
                                   probe::LiveFabric& live, Diagnostics& diagnostics);

}  // namespace ibqos::cli
