// SPDX-License-Identifier: MIT
// A program that reaches verbs the way NCCL does (src/misc/ibvsymbols.cc, ibvwrap.cc and
// src/transport/net_ib): it links no verbs library, dlopens one (RTLD_NOW, not global) and takes
// each call with dlvsym(handle, name, "IBVERBS_1.1"); its SL is NCCL_IB_SL (0 when unset) and
// its P_Key index NCCL_IB_PKEY. The device and its QPs come from the verbs stand-in's own calls
// (standin_open_device, standin_create_qp), in place of ibv_open_device and ibv_create_qp.
//
//   nccl-loader LIBRARY DEVICE QPN DLID [QPN DLID ...]
// Each QP goes INIT -> RTR (to DLID) -> RTS and is destroyed; the device is closed at the end.
// Each call prints "driver: CALL rc=N errno=E us=T" as preload-driver does.
#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using OpenDeviceFn = ibv_context* (*)(const char*, int);
using CreateQpFn = ibv_qp* (*)(ibv_context*, uint32_t, ibv_qp_type);
using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using DestroyQpFn = int (*)(ibv_qp*);
using CloseDeviceFn = int (*)(ibv_context*);

// NCCL's IBVERBS_VERSION.
constexpr const char* VerbsVersion = "IBVERBS_1.1";

void report(const std::string& call, int rc, Clock::time_point start) {
    int error = rc ? errno : 0;
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    std::printf("driver: %s rc=%d errno=%d us=%lld\n", call.c_str(), rc, error,
                static_cast<long long>(us));
    std::fflush(stdout);
}

unsigned long envNumber(const char* name, unsigned long otherwise) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoul(v, nullptr, 0) : otherwise;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5 || (argc - 3) % 2 != 0) {
        std::fprintf(stderr, "usage: nccl-loader LIBRARY DEVICE QPN DLID [QPN DLID ...]\n");
        return 2;
    }
    void* handle = dlopen(argv[1], RTLD_NOW);
    if (!handle) {
        std::fprintf(stderr, "nccl-loader: %s\n", dlerror());
        return 2;
    }
    void* symbols[3];
    const char* names[] = {"ibv_modify_qp", "ibv_destroy_qp", "ibv_close_device"};
    for (int i = 0; i < 3; ++i) {
        symbols[i] = dlvsym(handle, names[i], VerbsVersion);
        if (!symbols[i]) {
            std::fprintf(stderr, "nccl-loader: dlvsym failed on %s - %s version %s\n", names[i],
                         dlerror(), VerbsVersion);
            return 2;
        }
    }
    // NCCL checks dlerror() only when dlvsym fails; nothing may be left behind either.
    if (const char* stale = dlerror()) std::printf("driver: dlerror after success: %s\n", stale);
    auto modifyQp = reinterpret_cast<ModifyQpFn>(symbols[0]);
    auto destroyQp = reinterpret_cast<DestroyQpFn>(symbols[1]);
    auto closeDevice = reinterpret_cast<CloseDeviceFn>(symbols[2]);
    auto openDevice = reinterpret_cast<OpenDeviceFn>(dlsym(handle, "standin_open_device"));
    auto createQp = reinterpret_cast<CreateQpFn>(dlsym(handle, "standin_create_qp"));
    if (!openDevice || !createQp) {
        std::fprintf(stderr, "nccl-loader: %s is not the verbs stand-in\n", argv[1]);
        return 2;
    }
    ibv_context* context = openDevice(argv[2], 0);
    const auto sl = static_cast<uint8_t>(envNumber("NCCL_IB_SL", 0));
    const auto pkeyIndex = static_cast<uint16_t>(envNumber("NCCL_IB_PKEY", 0));
    std::vector<ibv_qp*> qps;
    for (int i = 3; i + 1 < argc; i += 2) {
        const auto qpn = static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 0));
        const auto dlid = static_cast<uint16_t>(std::strtoul(argv[i + 1], nullptr, 0));
        ibv_qp* qp = createQp(context, qpn, IBV_QPT_RC);
        qps.push_back(qp);
        // ncclIbInitQp
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = pkeyIndex;
        attr.port_num = 1;
        attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        auto start = Clock::now();
        report("init " + std::to_string(qpn),
               modifyQp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
               start);
        // ncclIbRtrQp on InfiniBand: no GRH, the remote LID, NCCL_IB_SL.
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTR;
        attr.path_mtu = IBV_MTU_4096;
        attr.dest_qp_num = qpn + 1;
        attr.rq_psn = 0;
        attr.max_dest_rd_atomic = 1;
        attr.min_rnr_timer = 12;
        attr.ah_attr.is_global = 0;
        attr.ah_attr.dlid = dlid;
        attr.ah_attr.sl = sl;
        attr.ah_attr.src_path_bits = 0;
        attr.ah_attr.port_num = 1;
        start = Clock::now();
        report("rtr " + std::to_string(qpn),
               modifyQp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
               start);
        if (attr.ah_attr.sl != sl) std::printf("driver: the caller's attributes changed\n");
        // ncclIbRtsQp
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTS;
        start = Clock::now();
        report("rts " + std::to_string(qpn), modifyQp(qp, &attr, IBV_QP_STATE), start);
    }
    for (ibv_qp* qp : qps) {
        const uint32_t qpn = qp->qp_num;
        auto start = Clock::now();
        report("destroy " + std::to_string(qpn), destroyQp(qp), start);
    }
    auto start = Clock::now();
    report("close " + std::string(argv[2]), closeDevice(context), start);
    return 0;
}
