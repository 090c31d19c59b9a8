// SPDX-License-Identifier: MIT
// The fabric found over SMPs, with the command's --sm and --partitions.
#include "cli/live_fabric.hpp"

#include "fabric/partitions.hpp"

namespace ibqos::cli {

probe::ProbeOptions localPortOptions(const Value& hca, const Value& port) {
    probe::ProbeOptions options;
    options.ca = hca.value_or("");
    if (port) options.port = static_cast<int>(parseNumberOption("port", *port, 254));
    return options;
}

std::unique_ptr<probe::LiveFabric> discoverFabric(const Value& hca, const Value& port,
                                                  const Value& sm, const Value& partitions,
                                                  Inputs& inputs, Diagnostics& diagnostics) {
    std::string error;
    auto live = probe::LiveFabric::discover(localPortOptions(hca, port), error);
    if (!live) throw IoError{error};
    Fabric& fabric = live->fabric();
    if (sm) fabric.smPort = portOption(fabric, "sm", *sm);
    readPartitions(partitions ? &inputs.load(*partitions) : nullptr, fabric, diagnostics);
    return live;
}

}  // namespace ibqos::cli
