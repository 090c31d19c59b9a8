// SPDX-License-Identifier: MIT
// The fabric found over SMPs, with the command's --sm and --partitions.
#include "cli/live_fabric.hpp"

#include "fabric/partitions.hpp"

namespace ibqos::cli {

probe::ProbeOptions localPortOptions(const LocalPortOptions& local) {
    probe::ProbeOptions options;
    options.ca = local.caName();
    options.port = local.portNumber();
    return options;
}

std::unique_ptr<probe::LiveFabric> discoverFabric(const LocalPortOptions& local, const Value& sm,
                                                  const Value& partitions, Inputs& inputs,
                                                  Diagnostics& diagnostics) {
    std::string error;
    auto live = probe::LiveFabric::discover(localPortOptions(local), error);
    if (!live) throw IoError{error};
    Fabric& fabric = live->fabric();
    if (sm) fabric.smPort = portOption(fabric, "sm", *sm);
    readPartitions(partitions ? &inputs.load(*partitions) : nullptr, fabric, diagnostics);
    return live;
}

}  // namespace ibqos::cli
