// SPDX-License-Identifier: MIT
// A recording stand-in below the preload library: the verbs calls it interposes, and libmlx5's
// scheduling calls served by the emulated device. Each call is printed on stdout, in order.
//
// STANDIN_FAIL_RTR=1 makes ibv_modify_qp fail RTR transitions with EINVAL (errno EINVAL);
// STANDIN_QUIET=1 records nothing (for benchmarks).
#include "tests/host-sched/verbs_standin.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tests/doubles/mlx5_emulation.hpp"

namespace {

using ibqos::host::emulatedMlx5Api;
using ibqos::host::EmulatedMlx5Caps;
using ibqos::host::EmulatedMlx5Device;

std::mutex devicesMutex;
std::map<ibv_context*, std::unique_ptr<EmulatedMlx5Device>> devices;

EmulatedMlx5Device* deviceOf(ibv_context* context) {
    std::lock_guard lock(devicesMutex);
    auto it = devices.find(context);
    return it == devices.end() ? nullptr : it->second.get();
}

void record(const std::string& line) {
    static const bool quiet = std::getenv("STANDIN_QUIET") != nullptr;
    if (quiet) return;
    std::printf("standin: %s\n", line.c_str());
    std::fflush(stdout);
}

const char* stateName(int state) {
    static const char* const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return state >= 0 && state < 7 ? names[state] : "?";
}

unsigned idOf(ibv_context* context, const void* element) {
    EmulatedMlx5Device* device = deviceOf(context);
    return device ? device->idOf(element) : 0;
}

}  // namespace

extern "C" {

ibv_context* standin_open_device(const char* name, int caps) {
    EmulatedMlx5Caps c;
    if (caps & StandinNoQos) c.qos = false;
    if (caps & StandinNotMlx5) c.mlx5 = false;
    auto device = std::make_unique<EmulatedMlx5Device>(name, c);
    ibv_context* context = device->context();
    std::lock_guard lock(devicesMutex);
    devices[context] = std::move(device);
    return context;
}

ibv_qp* standin_create_qp(ibv_context* context, uint32_t qpNum, ibv_qp_type type) {
    EmulatedMlx5Device* device = deviceOf(context);
    return device ? device->createQp(qpNum, type, IBV_QPS_RESET) : nullptr;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    std::string line =
        "ibv_modify_qp qpn=" + std::to_string(qp->qp_num) + " mask=" + std::to_string(mask);
    if (mask & IBV_QP_STATE) line += std::string(" state=") + stateName(attr->qp_state);
    if (mask & IBV_QP_AV) line += " sl=" + std::to_string(attr->ah_attr.sl);
    static const bool failRtr = [] {
        const char* fail = std::getenv("STANDIN_FAIL_RTR");
        return fail && *fail == '1';
    }();
    if (failRtr && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) {
        record(line + " -> EINVAL");
        errno = EINVAL;
        return EINVAL;
    }
    // As libibverbs does: the QP's state follows a successful transition.
    if (mask & IBV_QP_STATE) qp->state = attr->qp_state;
    record(line + " -> 0");
    return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
    record("ibv_destroy_qp qpn=" + std::to_string(qp->qp_num) + " state=" + stateName(qp->state) +
           " -> 0");
    return 0;
}

int ibv_close_device(ibv_context* context) {
    record(std::string("ibv_close_device ") + context->device->name + " -> 0");
    return 0;
}

mlx5dv_sched_node* mlx5dv_sched_node_create(ibv_context* context, const mlx5dv_sched_attr* attr) {
    mlx5dv_sched_node* node = emulatedMlx5Api().nodeCreate(context, attr);
    int error = errno;
    record("mlx5dv_sched_node_create parent=" +
           std::to_string(idOf(context, attr ? attr->parent : nullptr)) +
           " flags=" + std::to_string(attr ? attr->flags : 0) +
           " bw_share=" + std::to_string(attr ? attr->bw_share : 0) +
           " max_avg_bw=" + std::to_string(attr ? attr->max_avg_bw : 0) + " -> " +
           (node ? std::to_string(idOf(context, node)) : "NULL errno=" + std::to_string(error)));
    errno = error;
    return node;
}

mlx5dv_sched_leaf* mlx5dv_sched_leaf_create(ibv_context* context, const mlx5dv_sched_attr* attr) {
    mlx5dv_sched_leaf* leaf = emulatedMlx5Api().leafCreate(context, attr);
    int error = errno;
    record("mlx5dv_sched_leaf_create parent=" +
           std::to_string(idOf(context, attr ? attr->parent : nullptr)) +
           " flags=" + std::to_string(attr ? attr->flags : 0) +
           " bw_share=" + std::to_string(attr ? attr->bw_share : 0) +
           " max_avg_bw=" + std::to_string(attr ? attr->max_avg_bw : 0) + " -> " +
           (leaf ? std::to_string(idOf(context, leaf)) : "NULL errno=" + std::to_string(error)));
    errno = error;
    return leaf;
}

int mlx5dv_sched_node_modify(mlx5dv_sched_node* node, const mlx5dv_sched_attr* attr) {
    int rc = emulatedMlx5Api().nodeModify(node, attr);
    record("mlx5dv_sched_node_modify -> " + std::to_string(rc));
    return rc;
}

int mlx5dv_sched_leaf_modify(mlx5dv_sched_leaf* leaf, const mlx5dv_sched_attr* attr) {
    int rc = emulatedMlx5Api().leafModify(leaf, attr);
    record("mlx5dv_sched_leaf_modify -> " + std::to_string(rc));
    return rc;
}

int mlx5dv_sched_node_destroy(mlx5dv_sched_node* node) {
    std::string line = "mlx5dv_sched_node_destroy";
    int rc = emulatedMlx5Api().nodeDestroy(node);
    record(line + " -> " + std::to_string(rc));
    return rc;
}

int mlx5dv_sched_leaf_destroy(mlx5dv_sched_leaf* leaf) {
    int rc = emulatedMlx5Api().leafDestroy(leaf);
    record("mlx5dv_sched_leaf_destroy -> " + std::to_string(rc));
    return rc;
}

int mlx5dv_modify_qp_sched_elem(ibv_qp* qp, const mlx5dv_sched_leaf* requestor,
                                const mlx5dv_sched_leaf* responder) {
    int rc = emulatedMlx5Api().modifyQpSchedElem(qp, requestor, responder);
    record("mlx5dv_modify_qp_sched_elem qpn=" + std::to_string(qp->qp_num) + " state=" +
           stateName(qp->state) + " requestor=" + std::to_string(idOf(qp->context, requestor)) +
           " responder=" + std::to_string(idOf(qp->context, responder)) + " -> " +
           std::to_string(rc));
    return rc;
}

}  // extern "C"
