// SPDX-License-Identifier: MIT
// What the policy means for the counters: each SL's qos-level names, each port's port groups,
// the SLs each VL of an output port carries (through its compiled SL2VL tables), and the share
// of the link each VL should get by the port's VL-arbitration tables (the arbitration setups
// `ibqos compile --emit shares` reports, simulated for the VLs that actually compete).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/emit.hpp"
#include "compiler/fabric_compilation.hpp"
#include "ib/link.hpp"
#include "ib/qos.hpp"

namespace ibqos::monitor {

// The number of data VLs an OperVLs value puts in operation (1, 2, 4, 8 or 15; none for 0).
using ib::dataVls;

struct PortIntent {
    std::vector<uint32_t> groups;  // indices into Policy::groups (groups of the file)
    std::array<uint16_t, ib::VlCount> slsOfVl{};  // per VL: a bit per SL the port sends on it
    int setup = -1;          // its arbitration setup (index into setups()), or -1
    bool hasTables = false;  // the port receives tables (an output port)
};

class Intent {
  public:
    // The compilation is borrowed: it must outlive the intent.
    explicit Intent(const FabricCompilation& compiled);

    const FabricCompilation& compiled() const { return compiled_; }
    const PortIntent& port(uint32_t fabricPort) const { return ports_[fabricPort]; }
    // The names of the levels whose SL is sl (in file order), empty when the policy gives it none.
    const std::vector<std::string>& levelsOfSl(unsigned sl) const {
        return levels_[sl & ib::MaxSl];
    }
    const std::vector<ArbitrationSetup>& setups() const { return setups_; }

    // Each VL's long-run share of the link under a setup when exactly the VLs in `competing`
    // (a bit per VL) have packets waiting: the port's arbitration with every other VL idle.
    std::array<double, ib::DataVlCount> shares(int setup, uint16_t competing) const;

  private:
    const FabricCompilation& compiled_;
    std::vector<PortIntent> ports_;
    std::array<std::vector<std::string>, ib::SlCount> levels_;
    std::vector<ArbitrationSetup> setups_;
    mutable std::mutex cacheLock_;
    mutable std::map<std::pair<int, uint16_t>, std::array<double, ib::DataVlCount>> cache_;
};

}  // namespace ibqos::monitor
