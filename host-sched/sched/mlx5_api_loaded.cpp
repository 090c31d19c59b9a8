// SPDX-License-Identifier: MIT
// The mlx5dv scheduling calls of libmlx5, found at run time.
#include <dlfcn.h>

#include <type_traits>

#include "host-sched/sched/mlx5_api.hpp"

namespace ibqos::host {

namespace {

// The symbol version these calls were introduced with (rdma-core libmlx5.map).
constexpr const char* SchedVersion = "MLX5_1.17";

template <typename Fn>
bool lookUp(void* handle, const char* name, Fn& fn) {
    void* p = dlvsym(handle, name, SchedVersion);
    if (!p) p = dlsym(handle, name);
    fn = reinterpret_cast<Fn>(p);
    return p != nullptr;
}

bool lookUpAll(void* handle, Mlx5SchedApi& api) {
    return lookUp(handle, "mlx5dv_sched_node_create", api.nodeCreate) &&
           lookUp(handle, "mlx5dv_sched_leaf_create", api.leafCreate) &&
           lookUp(handle, "mlx5dv_sched_node_modify", api.nodeModify) &&
           lookUp(handle, "mlx5dv_sched_leaf_modify", api.leafModify) &&
           lookUp(handle, "mlx5dv_sched_node_destroy", api.nodeDestroy) &&
           lookUp(handle, "mlx5dv_sched_leaf_destroy", api.leafDestroy) &&
           lookUp(handle, "mlx5dv_modify_qp_sched_elem", api.modifyQpSchedElem);
}

}  // namespace

bool loadMlx5Api(Mlx5SchedApi& api, std::string& error,
                 void* (*find)(const char* name, const char* version)) {
    if (lookUpAll(RTLD_DEFAULT, api)) return true;
    if (find) {
        auto found = [&](const char* name, auto& fn) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(find(name, SchedVersion));
            return fn != nullptr;
        };
        if (found("mlx5dv_sched_node_create", api.nodeCreate) &&
            found("mlx5dv_sched_leaf_create", api.leafCreate) &&
            found("mlx5dv_sched_node_modify", api.nodeModify) &&
            found("mlx5dv_sched_leaf_modify", api.leafModify) &&
            found("mlx5dv_sched_node_destroy", api.nodeDestroy) &&
            found("mlx5dv_sched_leaf_destroy", api.leafDestroy) &&
            found("mlx5dv_modify_qp_sched_elem", api.modifyQpSchedElem))
            return true;
        api = {};
    }
    // libibverbs loads its providers privately, so libmlx5 may be in the process and still
    // invisible to RTLD_DEFAULT; dlopen then returns that same object.
    void* handle = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* reason = dlerror();
        error =
            std::string("libmlx5.so.1 cannot be loaded: ") + (reason ? reason : "unknown reason");
        return false;
    }
    if (!lookUpAll(handle, api)) {
        error = "libmlx5.so.1 has no mlx5dv_sched_* calls (rdma-core older than v32?)";
        api = {};
        return false;
    }
    return true;
}

}  // namespace ibqos::host
