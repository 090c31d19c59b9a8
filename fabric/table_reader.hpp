// SPDX-License-Identifier: MIT
// What reads the SL2VL and VL-arbitration tables the ports of a live fabric hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "ib/sl2vl_vlarb.hpp"

namespace ibqos {

class TableReader {
  public:
    virtual ~TableReader() = default;
    // The fabric whose ports the reads name.
    virtual const Fabric& fabric() const = 0;
    // The SL2VL table a port applies for (in, out): out is the port itself (0 on a CA); nullopt
    // with the reason in error when it cannot be read.
    virtual std::optional<Sl2VlTable> readSl2Vl(uint32_t port, unsigned in, std::string& error) = 0;
    // A port's high or low VLArb table, its cap's worth of entries.
    virtual std::optional<std::vector<VlArbEntry>> readVlArb(uint32_t port, bool high, unsigned cap,
                                                             std::string& error) = 0;
};

}  // namespace ibqos
