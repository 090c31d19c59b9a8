// SPDX-License-Identifier: MIT
// libibqos_preload.so's interposed entry points: the verbs and librdmacm calls it sees, each
// passed to the real one with our part run around it (Preload).
//
// rdma-core 44 exports ibv_modify_qp, ibv_destroy_qp and ibv_close_device as real functions
// (version IBVERBS_1.1; verbs.h has no inline wrapper for them), so LD_PRELOAD interposes
// exactly what applications and librdmacm call. Defining them with the same version binds
// references to ibv_modify_qp@IBVERBS_1.1 here, while the 1.0 compatibility ABI (a different
// struct layout) is left alone. The next definition is found with dlvsym(RTLD_NEXT).
//
// SL enforcement (the plan's sl-enforcement blocks, IBQOS_SL_ENFORCEMENT stricter only): at
// RTR of an RC or UC QP, and in ibv_create_ah, the address vector's SL is compared with the
// SA's answer for the exact path (the agent asks the SA and caches), and in enforce mode the
// real call gets a copy of the caller's attributes with the SA's SL. Left alone: QPs and
// vectors librdmacm made from a PathRecord (rdma_create_qp[_ex], rdma_init_qp_attr and UD
// events of rdma_get_cm_event are interposed to know them), address handles made from a
// received work completion, RoCE ports, multicast DLIDs and GRHs to another subnet.
//
// Applications that load libibverbs themselves and look its calls up (NCCL) get these same
// definitions from dlsym and dlvsym (lookup_entry.cpp, interposed.cpp); the real call is then
// the one their lookup found.
//
// DEVX (UCX on mlx5 creates and moves its RC and DC QPs with device commands): the QP commands
// passed to mlx5dv_devx_obj_create, mlx5dv_devx_obj_modify and mlx5dv_devx_qp_modify are read
// (devx_command.hpp); an INIT2RTR_QP gets the same decision as ibv_modify_qp's RTR, from its
// primary address path (RLID, GRH, source path bits, port, and the P_Key index RST2INIT_QP
// set), and in enforce mode the device gets a copy of the command with the SA's SL.
//
// Rules: the verbs call always goes through, with the arguments and result it had (in enforce
// mode, the SL the SA gave); every failure of ours is logged once and changes nothing else;
// an answer that does not come in time leaves the application's SL; errno is the real call's;
// no exception leaves this file; nothing runs until the first QP reaches RTR.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "host-sched/preload/devx_command.hpp"
#include "host-sched/preload/interposed.hpp"
#include "host-sched/preload/preload.hpp"

namespace {

using namespace ibqos::host;

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using DestroyQpFn = int (*)(ibv_qp*);
using CloseDeviceFn = int (*)(ibv_context*);
using CreateAhFn = ibv_ah* (*)(ibv_pd*, ibv_ah_attr*);
using CreateAhFromWcFn = ibv_ah* (*)(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t);
using CreateCmQpFn = int (*)(rdma_cm_id*, ibv_pd*, ibv_qp_init_attr*);
using CreateCmQpExFn = int (*)(rdma_cm_id*, ibv_qp_init_attr_ex*);
using InitQpAttrFn = int (*)(rdma_cm_id*, ibv_qp_attr*, int*);
using GetCmEventFn = int (*)(rdma_event_channel*, rdma_cm_event**);
using DevxObjCreateFn = mlx5dv_devx_obj* (*)(ibv_context*, const void*, size_t, void*, size_t);
using DevxObjModifyFn = int (*)(mlx5dv_devx_obj*, const void*, size_t, void*, size_t);
using DevxObjDestroyFn = int (*)(mlx5dv_devx_obj*);
using DevxQpModifyFn = int (*)(ibv_qp*, const void*, size_t, void*, size_t);

// The definition a wrapper forwards to.
template <typename Fn>
Fn real(Interposed which) {
    return reinterpret_cast<Fn>(realDefinition(which));
}

// Set while ibv_create_ah_from_wc runs: the address handle it makes answers a requester and
// takes the SL the requester used.
thread_local bool makingReplyAh = false;

// Runs our part of an interposed call: nothing escapes, errno is left as it was.
template <typename Body>
void guarded(Body&& body) {
    int saved = errno;
    try {
        body();
    } catch (...) {
        static std::once_flag once;
        std::call_once(
            once, [] { std::fprintf(stderr, "ibqos-preload: internal error; carrying on\n"); });
    }
    errno = saved;
}

}  // namespace

extern "C" {

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int attr_mask) {
    const auto real = ::real<ModifyQpFn>(Interposed::ModifyQp);
    if (!real) return ENOSYS;
    bool rtr = qp && attr && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR;
    std::optional<uint8_t> sl;
    if (rtr) guarded([&] { sl = Preload::instance().beforeRtr(qp, attr, attr_mask); });
    int rc;
    if (sl) {
        ibv_qp_attr enforced = *attr;  // the caller's struct stays as it wrote it
        enforced.ah_attr.sl = *sl;
        rc = real(qp, &enforced, attr_mask);
    } else {
        rc = real(qp, attr, attr_mask);
    }
    if (rtr && rc == 0) guarded([&] { Preload::instance().afterRtr(qp); });
    return rc;
}

struct ibv_ah* ibv_create_ah(struct ibv_pd* pd, struct ibv_ah_attr* attr) {
    const auto real = ::real<CreateAhFn>(Interposed::CreateAh);
    if (!real) {
        errno = ENOSYS;
        return nullptr;
    }
    std::optional<uint8_t> sl;
    if (pd && attr && !makingReplyAh)
        guarded([&] { sl = Preload::instance().beforeCreateAh(pd->context, attr); });
    if (!sl) return real(pd, attr);
    ibv_ah_attr enforced = *attr;
    enforced.sl = *sl;
    return real(pd, &enforced);
}

struct ibv_ah* ibv_create_ah_from_wc(struct ibv_pd* pd, struct ibv_wc* wc, struct ibv_grh* grh,
                                     uint8_t port_num) {
    const auto real = ::real<CreateAhFromWcFn>(Interposed::CreateAhFromWc);
    if (!real) {
        errno = ENOSYS;
        return nullptr;
    }
    makingReplyAh = true;
    ibv_ah* ah = real(pd, wc, grh, port_num);
    makingReplyAh = false;
    return ah;
}

int ibv_destroy_qp(struct ibv_qp* qp) {
    const auto real = ::real<DestroyQpFn>(Interposed::DestroyQp);
    if (!real) return ENOSYS;
    if (qp) guarded([&] { Preload::instance().beforeDestroy(qp); });
    int rc = real(qp);
    if (qp) guarded([&] { Preload::instance().afterDestroy(qp, rc); });
    return rc;
}

int ibv_close_device(struct ibv_context* context) {
    const auto real = ::real<CloseDeviceFn>(Interposed::CloseDevice);
    if (!real) return ENOSYS;
    if (context) guarded([&] { Preload::instance().beforeClose(context); });
    return real(context);
}

// librdmacm: QPs it creates and vectors it fills come from a PathRecord.

int rdma_create_qp(struct rdma_cm_id* id, struct ibv_pd* pd, struct ibv_qp_init_attr* attr) {
    const auto real = ::real<CreateCmQpFn>(Interposed::CmCreateQp);
    if (!real) return ENOSYS;
    int rc = real(id, pd, attr);
    if (rc == 0 && id && id->qp) guarded([&] { Preload::instance().cmQp(id->qp); });
    return rc;
}

int rdma_create_qp_ex(struct rdma_cm_id* id, struct ibv_qp_init_attr_ex* attr) {
    const auto real = ::real<CreateCmQpExFn>(Interposed::CmCreateQpEx);
    if (!real) return ENOSYS;
    int rc = real(id, attr);
    if (rc == 0 && id && id->qp) guarded([&] { Preload::instance().cmQp(id->qp); });
    return rc;
}

int rdma_init_qp_attr(struct rdma_cm_id* id, struct ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    const auto real = ::real<InitQpAttrFn>(Interposed::CmInitQpAttr);
    if (!real) return ENOSYS;
    int rc = real(id, qp_attr, qp_attr_mask);
    if (rc == 0 && qp_attr && qp_attr_mask && (*qp_attr_mask & IBV_QP_AV))
        Preload::cmAttributes(qp_attr);
    return rc;
}

int rdma_get_cm_event(struct rdma_event_channel* channel, struct rdma_cm_event** event) {
    const auto real = ::real<GetCmEventFn>(Interposed::CmGetEvent);
    if (!real) return ENOSYS;
    int rc = real(channel, event);
    if (rc == 0 && event && *event && (*event)->id &&
        ((*event)->event == RDMA_CM_EVENT_ESTABLISHED ||
         (*event)->event == RDMA_CM_EVENT_MULTICAST_JOIN) &&
        ((*event)->id->ps == RDMA_PS_UDP || (*event)->id->ps == RDMA_PS_IPOIB)) {
        const ibv_ah_attr av = (*event)->param.ud.ah_attr;
        guarded([&] { Preload::instance().cmVector(av); });
    }
    return rc;
}

}  // extern "C"

// mlx5 DEVX: the QP commands of applications that drive the device themselves (UCX).

namespace {

// Runs a DEVX QP command through the decision, then the real call with the command as the
// application wrote it, or (enforce) a copy with the SA's SL.
template <typename Call>
int devxQpCommand(const void* key, ibv_qp* verbsQp, const void* in, size_t inlen, Call&& call) {
    std::optional<devx::QpCommand> command = devx::readQpCommand(in, inlen);
    if (!command || command->opcode == devx::OpCreateQp) return call(in);
    std::optional<uint8_t> sl;
    guarded([&] { sl = Preload::instance().beforeDevxCommand(key, verbsQp, *command); });
    int rc;
    if (sl) {
        std::vector<uint8_t> enforced(static_cast<const uint8_t*>(in),
                                      static_cast<const uint8_t*>(in) + inlen);
        devx::writeSl(enforced.data(), *sl);
        rc = call(enforced.data());
    } else {
        rc = call(in);
    }
    if (command->opcode == devx::OpInit2RtrQp && rc == 0)
        guarded([&] { Preload::instance().afterRtr(key); });
    return rc;
}

}  // namespace

extern "C" {

struct mlx5dv_devx_obj* mlx5dv_devx_obj_create(struct ibv_context* context, const void* in,
                                               size_t inlen, void* out, size_t outlen) {
    const auto real = ::real<DevxObjCreateFn>(Interposed::DevxObjCreate);
    if (!real) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    mlx5dv_devx_obj* obj = real(context, in, inlen, out, outlen);
    if (obj && context) {
        int saved = errno;
        std::optional<devx::QpCommand> command = devx::readQpCommand(in, inlen);
        if (command && command->opcode == devx::OpCreateQp) {
            if (std::optional<uint32_t> qpn = devx::createdQpn(out, outlen))
                guarded([&] { Preload::instance().devxCreated(obj, context, *command, *qpn); });
        }
        errno = saved;
    }
    return obj;
}

int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out,
                           size_t outlen) {
    const auto real = ::real<DevxObjModifyFn>(Interposed::DevxObjModify);
    if (!real) return EOPNOTSUPP;
    if (!obj) return real(obj, in, inlen, out, outlen);
    return devxQpCommand(obj, nullptr, in, inlen, [&](const void* command) {
        return real(obj, command, inlen, out, outlen);
    });
}

int mlx5dv_devx_qp_modify(struct ibv_qp* qp, const void* in, size_t inlen, void* out,
                          size_t outlen) {
    const auto real = ::real<DevxQpModifyFn>(Interposed::DevxQpModify);
    if (!real) return EOPNOTSUPP;
    if (!qp) return real(qp, in, inlen, out, outlen);
    return devxQpCommand(qp, qp, in, inlen, [&](const void* command) {
        return real(qp, command, inlen, out, outlen);
    });
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj* obj) {
    const auto real = ::real<DevxObjDestroyFn>(Interposed::DevxObjDestroy);
    if (!real) return EOPNOTSUPP;
    int rc = real(obj);
    if (rc == 0 && obj) guarded([&] { Preload::instance().devxDestroyed(obj); });
    return rc;
}

}  // extern "C"

// The wrappers' own addresses: hidden aliases, which no other definition can take the place of.
extern "C" {
#define IBQOS_OWN(name) \
    __attribute__((visibility("hidden"), alias(#name))) decltype(name) ibqos_own_##name;
IBQOS_OWN(ibv_modify_qp)
IBQOS_OWN(ibv_destroy_qp)
IBQOS_OWN(ibv_close_device)
IBQOS_OWN(ibv_create_ah)
IBQOS_OWN(ibv_create_ah_from_wc)
IBQOS_OWN(rdma_create_qp)
IBQOS_OWN(rdma_create_qp_ex)
IBQOS_OWN(rdma_init_qp_attr)
IBQOS_OWN(rdma_get_cm_event)
IBQOS_OWN(mlx5dv_devx_obj_create)
IBQOS_OWN(mlx5dv_devx_obj_modify)
IBQOS_OWN(mlx5dv_devx_obj_destroy)
IBQOS_OWN(mlx5dv_devx_qp_modify)
#undef IBQOS_OWN
}

namespace ibqos::host {

const InterposedSymbol& interposedSymbol(Interposed which) {
    // Versions: rdma-core's libibverbs.map, librdmacm.map and libmlx5.map.
    static const std::array<InterposedSymbol, static_cast<size_t>(Interposed::Count)> table{{
        {"ibv_modify_qp", "IBVERBS_1.1", reinterpret_cast<void*>(&ibqos_own_ibv_modify_qp)},
        {"ibv_destroy_qp", "IBVERBS_1.1", reinterpret_cast<void*>(&ibqos_own_ibv_destroy_qp)},
        {"ibv_close_device", "IBVERBS_1.1", reinterpret_cast<void*>(&ibqos_own_ibv_close_device)},
        {"ibv_create_ah", "IBVERBS_1.1", reinterpret_cast<void*>(&ibqos_own_ibv_create_ah)},
        {"ibv_create_ah_from_wc", "IBVERBS_1.1",
         reinterpret_cast<void*>(&ibqos_own_ibv_create_ah_from_wc)},
        {"rdma_create_qp", "RDMACM_1.0", reinterpret_cast<void*>(&ibqos_own_rdma_create_qp)},
        {"rdma_create_qp_ex", "RDMACM_1.0", reinterpret_cast<void*>(&ibqos_own_rdma_create_qp_ex)},
        {"rdma_init_qp_attr", "RDMACM_1.2", reinterpret_cast<void*>(&ibqos_own_rdma_init_qp_attr)},
        {"rdma_get_cm_event", "RDMACM_1.0", reinterpret_cast<void*>(&ibqos_own_rdma_get_cm_event)},
        {"mlx5dv_devx_obj_create", "MLX5_1.7",
         reinterpret_cast<void*>(&ibqos_own_mlx5dv_devx_obj_create)},
        {"mlx5dv_devx_obj_modify", "MLX5_1.7",
         reinterpret_cast<void*>(&ibqos_own_mlx5dv_devx_obj_modify)},
        {"mlx5dv_devx_obj_destroy", "MLX5_1.7",
         reinterpret_cast<void*>(&ibqos_own_mlx5dv_devx_obj_destroy)},
        {"mlx5dv_devx_qp_modify", "MLX5_1.8",
         reinterpret_cast<void*>(&ibqos_own_mlx5dv_devx_qp_modify)},
    }};
    return table[static_cast<size_t>(which)];
}

}  // namespace ibqos::host
