// SPDX-License-Identifier: MIT
// The mlx5dv scheduling calls of libmlx5, linked at build time.
#include "host-sched/sched/mlx5_api.hpp"

namespace ibqos::host {

const Mlx5SchedApi& linkedMlx5Api() {
    static const Mlx5SchedApi api{mlx5dv_sched_node_create,   mlx5dv_sched_leaf_create,
                                  mlx5dv_sched_node_modify,   mlx5dv_sched_leaf_modify,
                                  mlx5dv_sched_node_destroy,  mlx5dv_sched_leaf_destroy,
                                  mlx5dv_modify_qp_sched_elem};
    return api;
}

}  // namespace ibqos::host
