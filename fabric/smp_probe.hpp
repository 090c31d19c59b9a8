// SPDX-License-Identifier: MIT
// The live subnet seen from this host with SMPs, as infiniband-diags see it (libibnetdisc for
// discovery, libibmad for queries): the Fabric, and every port's SL2VL and VLArb tables as found.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/table_reader.hpp"
#include "ib/sl2vl_vlarb.hpp"

namespace ibqos::probe {

struct ProbeOptions {
    std::string ca;  // local HCA ("" = the first)
    int port = 0;    // local port (0 = the first active)
    unsigned timeoutMs = 500;
    unsigned retries = 2;
};

class LiveFabric : public TableReader {
  public:
    // Discovers the subnet from the local port; nullptr with a reason in error on failure.
    static std::unique_ptr<LiveFabric> discover(const ProbeOptions& options, std::string& error);
    ~LiveFabric();

    Fabric& fabric() { return fabric_; }
    const Fabric& fabric() const override { return fabric_; }
    std::optional<Sl2VlTable> readSl2Vl(uint32_t port, unsigned in, std::string& error) override;
    std::optional<std::vector<VlArbEntry>> readVlArb(uint32_t port, bool high, unsigned cap,
                                                     std::string& error) override;
    // Queries sent so far.
    size_t queries() const { return queries_; }

  private:
    LiveFabric() = default;
    struct Native;
    std::unique_ptr<Native> native_;
    Fabric fabric_;
    size_t queries_ = 0;
};

}  // namespace ibqos::probe
