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
// Rules: the verbs call always goes through, with the arguments and result it had (in enforce
// mode, the SL the SA gave); every failure of ours is logged once and changes nothing else;
// an answer that does not come in time leaves the application's SL; errno is the real call's;
// no exception leaves this file; nothing runs until the first QP reaches RTR.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <optional>

#include "host-sched/preload/next_symbol.hpp"
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
    static const ModifyQpFn real = nextSymbol<ModifyQpFn>("ibv_modify_qp");
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
    static const CreateAhFn real = nextSymbol<CreateAhFn>("ibv_create_ah");
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
    static const CreateAhFromWcFn real = nextSymbol<CreateAhFromWcFn>("ibv_create_ah_from_wc");
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
    static const DestroyQpFn real = nextSymbol<DestroyQpFn>("ibv_destroy_qp");
    if (!real) return ENOSYS;
    if (qp) guarded([&] { Preload::instance().beforeDestroy(qp); });
    int rc = real(qp);
    if (qp) guarded([&] { Preload::instance().afterDestroy(qp, rc); });
    return rc;
}

int ibv_close_device(struct ibv_context* context) {
    static const CloseDeviceFn real = nextSymbol<CloseDeviceFn>("ibv_close_device");
    if (!real) return ENOSYS;
    if (context) guarded([&] { Preload::instance().beforeClose(context); });
    return real(context);
}

// librdmacm: QPs it creates and vectors it fills come from a PathRecord.

int rdma_create_qp(struct rdma_cm_id* id, struct ibv_pd* pd, struct ibv_qp_init_attr* attr) {
    static const CreateCmQpFn real = nextSymbol<CreateCmQpFn>("rdma_create_qp", "RDMACM_1.0");
    if (!real) return ENOSYS;
    int rc = real(id, pd, attr);
    if (rc == 0 && id && id->qp) guarded([&] { Preload::instance().cmQp(id->qp); });
    return rc;
}

int rdma_create_qp_ex(struct rdma_cm_id* id, struct ibv_qp_init_attr_ex* attr) {
    static const CreateCmQpExFn real =
        nextSymbol<CreateCmQpExFn>("rdma_create_qp_ex", "RDMACM_1.0");
    if (!real) return ENOSYS;
    int rc = real(id, attr);
    if (rc == 0 && id && id->qp) guarded([&] { Preload::instance().cmQp(id->qp); });
    return rc;
}

int rdma_init_qp_attr(struct rdma_cm_id* id, struct ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    static const InitQpAttrFn real = nextSymbol<InitQpAttrFn>("rdma_init_qp_attr", "RDMACM_1.2");
    if (!real) return ENOSYS;
    int rc = real(id, qp_attr, qp_attr_mask);
    if (rc == 0 && qp_attr && qp_attr_mask && (*qp_attr_mask & IBV_QP_AV))
        Preload::cmAttributes(qp_attr);
    return rc;
}

int rdma_get_cm_event(struct rdma_event_channel* channel, struct rdma_cm_event** event) {
    static const GetCmEventFn real = nextSymbol<GetCmEventFn>("rdma_get_cm_event", "RDMACM_1.0");
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
