// SPDX-License-Identifier: MIT
// The live subnet seen from this host with SMPs, as infiniband-diags see it (libibnetdisc for
// discovery, libibmad for queries): the Fabric, and every port's SL2VL and VLArb tables as found.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fabric.hpp"
#include "compiler/tables.hpp"

namespace ibqos::probe {

struct ProbeOptions {
    std::string ca;  // local HCA ("" = the first)
    int port = 0;    // local port (0 = the first active)
    unsigned timeoutMs = 500;
    unsigned retries = 2;
};

class LiveFabric {
  public:
    // Discovers the subnet from the local port; nullptr with a reason in error on failure.
    static std::unique_ptr<LiveFabric> discover(const ProbeOptions& options, std::string& error);
    ~LiveFabric();

    Fabric& fabric() { return fabric_; }
    // The SL2VL table a port applies for (in, out): out is the port itself (0 on a CA).
    std::optional<Sl2VlTable> readSl2Vl(uint32_t port, unsigned in, std::string& error);
    // A port's high or low VLArb table, its cap's worth of entries.
    std::optional<std::vector<VlArbEntry>> readVlArb(uint32_t port, bool high, unsigned cap,
                                                     std::string& error);
    // Queries sent so far.
    size_t queries() const { return queries_; }

  private:
    LiveFabric() = default;
    struct Native;
    std::unique_ptr<Native> native_;
    Fabric fabric_;
    size_t queries_ = 0;
};

// One way a port's tables differ from what the policy compiles to.
struct Drift {
    uint32_t port = 0;  // index into Fabric::ports
    std::string table;  // "sl2vl in 3", "vlarb high", "vlarb low"
    std::string expected;
    std::string found;
};

// Reads every port that receives tables and compares with the compiled tables. Ports that
// cannot be read are reported as drift with the reason as "found".
std::vector<Drift> verifyTables(LiveFabric& live, const FabricTables& tables);

}  // namespace ibqos::probe
