// SPDX-License-Identifier: MIT
// Mlx5SchedApi: the rdma-core 44 mlx5dv scheduling calls as a table of function pointers.
#pragma once

#include <infiniband/mlx5dv.h>

#include <string>

namespace ibqos::host {

// The seven calls the mlx5 backend makes. The same backend code runs against libmlx5 (the
// real device) and against the emulation of the documented contract (tests).
struct Mlx5SchedApi {
    mlx5dv_sched_node* (*nodeCreate)(ibv_context*, const mlx5dv_sched_attr*) = nullptr;
    mlx5dv_sched_leaf* (*leafCreate)(ibv_context*, const mlx5dv_sched_attr*) = nullptr;
    int (*nodeModify)(mlx5dv_sched_node*, const mlx5dv_sched_attr*) = nullptr;
    int (*leafModify)(mlx5dv_sched_leaf*, const mlx5dv_sched_attr*) = nullptr;
    int (*nodeDestroy)(mlx5dv_sched_node*) = nullptr;
    int (*leafDestroy)(mlx5dv_sched_leaf*) = nullptr;
    int (*modifyQpSchedElem)(ibv_qp*, const mlx5dv_sched_leaf*, const mlx5dv_sched_leaf*) = nullptr;

    bool complete() const {
        return nodeCreate && leafCreate && nodeModify && leafModify && nodeDestroy && leafDestroy &&
               modifyQpSchedElem;
    }
};

// libmlx5's own functions, linked at build time (the agent, tests, tools).
const Mlx5SchedApi& linkedMlx5Api();

// libmlx5's functions found at run time: first among the objects already loaded (an
// application linked with libmlx5, or a stand-in in tests), else by loading libmlx5.so.1.
// Used by the preload library, which must not pull verbs libraries into every process.
// Returns false with error set when the calls are not available. `find`, when given, is asked
// between the two (name, symbol version): the preload library knows libraries an application
// loaded privately.
bool loadMlx5Api(Mlx5SchedApi& api, std::string& error,
                 void* (*find)(const char* name, const char* version) = nullptr);

}  // namespace ibqos::host
