// SPDX-License-Identifier: MIT
// Mlx5SchedBackend: the host plan's tree as mlx5dv scheduling elements on one device context.
#pragma once

#include <vector>

#include "host-sched/sched/mlx5_api.hpp"
#include "host-sched/sched/sched_backend.hpp"

namespace ibqos::host {

// Builds and tears down the tree through an Mlx5SchedApi (libmlx5, or the emulation in
// tests). Borrows the context and the table; both must outlive the backend.
class Mlx5SchedBackend : public SchedBackend {
  public:
    Mlx5SchedBackend(ibv_context* context, const Mlx5SchedApi& api);
    ~Mlx5SchedBackend() override;

    std::string_view name() const override { return "mlx5"; }
    SchedStatus build(const HostPlan& plan) override;
    bool built() const override { return root_ != nullptr; }
    SchedStatus attach(const QpRef& qp, size_t leaf) override;
    SchedStatus detach(const QpRef& qp) override;
    SchedStatus teardown() override;

  private:
    ibv_context* context_;
    const Mlx5SchedApi& api_;
    mlx5dv_sched_node* root_ = nullptr;
    std::vector<mlx5dv_sched_node*> nodes_;   // by plan element, NULL for leaves
    std::vector<mlx5dv_sched_leaf*> leaves_;  // by plan element, NULL for nodes
    std::vector<std::string> names_;
};

// A sentence for an errno from the mlx5dv scheduling calls.
std::string describeSchedError(int error);

}  // namespace ibqos::host
