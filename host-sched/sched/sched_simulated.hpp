// SPDX-License-Identifier: MIT
// The simulated transmit scheduler: seed 000's rules as long-run rates, and a backend.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "host-sched/sched/sched_backend.hpp"

namespace ibqos::host {

// The weight an element without bw-share gets. The device default is undocumented; like the
// kernel's eswitch QoS (MLX5_MIN_BW_SHARE), the model uses the smallest weight, 1.
inline constexpr uint32_t DefaultBwShare = 1;

// Long-run rate of every element when the root sends on a link of linkMbps. demand[i] is
// what leaf i would send (nullopt: always has traffic); entries for nodes are ignored.
// Seed 000: each scheduling element shares its bandwidth among its ready children by
// bw_share; a child at its max_avg_bw stops for the rest of the cycle and what it leaves is
// shared among the others by weight. In the long run that is weighted max-min fairness with
// caps, computed here by weighted water-filling at every node.
std::vector<double> simulateRates(const HostPlan& plan, double linkMbps,
                                  const std::vector<std::optional<double>>& demand);

// A backend that keeps the tree and the attachments in memory, with the device's rules
// for QP types, for hosts without an mlx5 device and for tests.
class SimulatedSchedBackend : public SchedBackend {
  public:
    std::string_view name() const override { return "simulated"; }
    SchedStatus build(const HostPlan& plan) override;
    bool built() const override { return plan_.has_value(); }
    SchedStatus attach(const QpRef& qp, size_t leaf) override;
    SchedStatus detach(const QpRef& qp) override;
    SchedStatus teardown() override;

    // The leaf a QP is attached to.
    std::optional<size_t> leafOf(uint32_t qpNum) const;
    size_t attachedCount() const { return attached_.size(); }

  private:
    std::optional<HostPlan> plan_;
    std::map<uint32_t, size_t> attached_;
};

}  // namespace ibqos::host
