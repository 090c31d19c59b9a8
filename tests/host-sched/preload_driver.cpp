// SPDX-License-Identifier: MIT
// A verbs application for the preload tests: its calls go to whatever defines them first
// (libibqos_preload.so under LD_PRELOAD), then to the recording stand-in it is linked with.
//
//   preload-driver STEP...   with steps
//     open DEV [noqos|notmlx5]   an emulated device context
//     qp DEV QPN rc|uc|ud        a QP in RESET, moved to INIT
//     rtr QPN SL                 INIT -> RTR with an address vector on that SL (to DLID 2)
//     rtr-to QPN DLID SL         the same to that DLID
//     rtr-noav QPN               INIT -> RTR without an address vector (as UD QPs do)
//     cmqp DEV QPN rc|ud         a QP made by rdma_create_qp, moved to INIT
//     cmrtr QPN DLID SL          INIT -> RTR with the attributes rdma_init_qp_attr fills
//     ah DEV DLID SL             ibv_create_ah, then ibv_destroy_ah (says if the caller's
//                                struct changed)
//     ahwc DEV SLID SL           ibv_create_ah_from_wc for a completion from SLID on SL
//     cmah DEV DLID SL           ibv_create_ah with the vector of a UD rdma_get_cm_event
//     lookup HOW                 later RTR steps call the ibv_modify_qp found HOW: direct (the
//                                linked call), dlsym or dlvsym (IBVERBS_1.1) on a dlopen handle
//                                of the verbs library, next (RTLD_NEXT), default (RTLD_DEFAULT)
//     devxqp DEV QPN rc|dci      a QP made with DEVX CREATE_QP, then RST2INIT_QP on port 1
//                                (QPN names it here; the device numbers it)
//     devxrtr QPN DLID SL        its INIT2RTR_QP to that DLID on that SL (says if the caller's
//                                command changed)
//     devxdestroy QPN            mlx5dv_devx_obj_destroy
//     qpdevxrtr QPN DLID SL      INIT2RTR_QP of a verbs QP through mlx5dv_devx_qp_modify
//     rts QPN                    RTR -> RTS
//     destroy QPN                ibv_destroy_qp
//     close DEV                  ibv_close_device
//     wait                       print "driver: waiting" and read a line from stdin
//     thread STEP... done        (main steps only) run these steps on a thread of their own
//     join                       wait for every thread started
//     exit                       leave at once, without destroying anything
// Each verbs call prints "driver: CALL rc=N errno=E us=T", T the microseconds the call took.
// Devices, QPs and protection domains are shared by the threads.
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/mlx5dv.h>
#include <rdma/rdma_cma.h>

#include "tests/doubles/devx_commands.hpp"
#include "tests/host-sched/verbs_standin.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// A verbs call's result and how long it took since `start`.
void report(const std::string& call, int rc, Clock::time_point start) {
    int error = rc ? errno : 0;
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    std::printf("driver: %s rc=%d errno=%d us=%lld\n", call.c_str(), rc, error,
                static_cast<long long>(us));
    std::fflush(stdout);
}

// What the steps make, shared by the driver's threads (the maps under the lock; the objects
// in them are used without it).
std::mutex madeMutex;
std::map<std::string, ibv_context*> devices;
std::map<uint32_t, ibv_qp*> qps;
std::map<std::string, ibv_pd> pds;
std::vector<std::thread> threads;
std::map<uint32_t, mlx5dv_devx_obj*> devxQps;  // by the QPN the steps name them with
std::map<uint32_t, uint32_t> devxQpns;         // the QPN the device gave

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
ModifyQpFn modifyQp = &ibv_modify_qp;

// The ibv_modify_qp an application finds in the way named.
ModifyQpFn lookUpModifyQp(const std::string& how) {
    void* p = nullptr;
    if (how == "direct") {
        p = reinterpret_cast<void*>(&ibv_modify_qp);
    } else if (how == "dlsym" || how == "dlvsym") {
        void* handle = dlopen("libverbs-standin.so", RTLD_NOW);
        if (handle)
            p = how == "dlsym" ? dlsym(handle, "ibv_modify_qp")
                               : dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1");
    } else if (how == "next") {
        p = dlsym(RTLD_NEXT, "ibv_modify_qp");
    } else if (how == "default") {
        p = dlsym(RTLD_DEFAULT, "ibv_modify_qp");
    }
    if (!p) {
        std::fprintf(stderr, "preload-driver: no ibv_modify_qp by %s\n", how.c_str());
        std::exit(2);
    }
    return reinterpret_cast<ModifyQpFn>(p);
}

// A modify command on a QP's primary address path (port 1).
ibqos::test::devx::ModifyQpIn modifyCommand(uint16_t opcode, uint32_t qpn, uint16_t dlid,
                                            uint8_t sl) {
    namespace dx = ibqos::test::devx;
    dx::ModifyQpIn in{};
    dx::set(in.data(), dx::Opcode, 16, opcode);
    dx::set(in.data(), dx::Qpn, 24, qpn);
    dx::set(in.data(), dx::path(dx::AdsPort), 8, 1);
    if (opcode == dx::Init2RtrQp) {
        dx::set(in.data(), dx::path(dx::AdsRlid), 16, dlid);
        dx::set(in.data(), dx::path(dx::AdsSl), 4, sl);
    }
    return in;
}

ibv_context* deviceNamed(const std::string& name) {
    std::lock_guard lock(madeMutex);
    return devices[name];
}

int run(std::vector<std::string> argv) {
    rdma_cm_id cmId{};
    const int argc = static_cast<int>(argv.size());
    for (int i = 0; i < argc; ++i) {
        std::string step = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "preload-driver: %s needs more arguments\n", step.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto qpOf = [&](const std::string& text) {
            std::lock_guard lock(madeMutex);
            ibv_qp* qp = qps[static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 0))];
            if (!qp) {
                std::fprintf(stderr, "preload-driver: no QP %s\n", text.c_str());
                std::exit(2);
            }
            return qp;
        };
        if (step == "open") {
            std::string name = next();
            int caps = StandinFullCaps;
            if (i + 1 < argc && argv[i + 1] == "noqos") caps = StandinNoQos, ++i;
            if (i + 1 < argc && argv[i + 1] == "notmlx5") caps = StandinNotMlx5, ++i;
            ibv_context* context = standin_open_device(name.c_str(), caps);
            std::lock_guard lock(madeMutex);
            devices[name] = context;
        } else if (step == "qp") {
            ibv_context* context = deviceNamed(next());
            uint32_t qpn = static_cast<uint32_t>(std::strtoul(next().c_str(), nullptr, 0));
            std::string type = next();
            ibv_qp_type t = type == "uc" ? IBV_QPT_UC : type == "ud" ? IBV_QPT_UD : IBV_QPT_RC;
            ibv_qp* qp = standin_create_qp(context, qpn, t);
            {
                std::lock_guard lock(madeMutex);
                qps[qpn] = qp;
            }
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_INIT;
            attr.port_num = 1;
            auto start = Clock::now();
            report("init " + std::to_string(qpn),
                   ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT), start);
        } else if (step == "rtr" || step == "rtr-to" || step == "rtr-noav") {
            ibv_qp* qp = qpOf(next());
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_RTR;
            int mask = IBV_QP_STATE;
            if (step != "rtr-noav") {
                attr.ah_attr.dlid = static_cast<uint16_t>(
                    step == "rtr-to" ? std::strtoul(next().c_str(), nullptr, 0) : 2);
                attr.ah_attr.sl = static_cast<uint8_t>(std::strtoul(next().c_str(), nullptr, 0));
                attr.ah_attr.port_num = 1;
                mask |= IBV_QP_AV;
            }
            uint8_t asked = attr.ah_attr.sl;
            auto start = Clock::now();
            report("rtr " + std::to_string(qp->qp_num), modifyQp(qp, &attr, mask), start);
            if (attr.ah_attr.sl != asked) std::printf("driver: the caller's attributes changed\n");
        } else if (step == "cmqp") {
            cmId.verbs = deviceNamed(next());
            uint32_t qpn = static_cast<uint32_t>(std::strtoul(next().c_str(), nullptr, 0));
            ibv_qp_init_attr init{};
            init.qp_context = reinterpret_cast<void*>(static_cast<uintptr_t>(qpn));
            init.qp_type = next() == "ud" ? IBV_QPT_UD : IBV_QPT_RC;
            auto start = Clock::now();
            report("rdma_create_qp " + std::to_string(qpn), rdma_create_qp(&cmId, nullptr, &init),
                   start);
            {
                std::lock_guard lock(madeMutex);
                qps[qpn] = cmId.qp;
            }
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_INIT;
            attr.port_num = 1;
            start = Clock::now();
            report("init " + std::to_string(qpn),
                   ibv_modify_qp(cmId.qp, &attr, IBV_QP_STATE | IBV_QP_PORT), start);
        } else if (step == "cmrtr") {
            ibv_qp* qp = qpOf(next());
            uint16_t dlid = static_cast<uint16_t>(std::strtoul(next().c_str(), nullptr, 0));
            standin_set_cm_path(dlid,
                                static_cast<uint8_t>(std::strtoul(next().c_str(), nullptr, 0)));
            ibv_qp_attr attr{};
            int mask = 0;
            rdma_init_qp_attr(&cmId, &attr, &mask);
            auto start = Clock::now();
            report("cmrtr " + std::to_string(qp->qp_num), ibv_modify_qp(qp, &attr, mask), start);
        } else if (step == "ah" || step == "ahwc" || step == "cmah") {
            std::string name = next();
            ibv_pd* pdOf;
            {
                std::lock_guard lock(madeMutex);
                pdOf = &pds[name];
                pdOf->context = devices[name];
            }
            ibv_pd& pd = *pdOf;
            uint16_t lid = static_cast<uint16_t>(std::strtoul(next().c_str(), nullptr, 0));
            uint8_t sl = static_cast<uint8_t>(std::strtoul(next().c_str(), nullptr, 0));
            ibv_ah* ah = nullptr;
            auto start = Clock::now();
            if (step == "ahwc") {
                ibv_wc wc{};
                wc.slid = lid;
                wc.sl = sl;
                ah = ibv_create_ah_from_wc(&pd, &wc, nullptr, 1);
            } else {
                ibv_ah_attr attr{};
                attr.dlid = lid;
                attr.sl = sl;
                attr.port_num = 1;
                if (step == "cmah") {
                    standin_set_cm_path(lid, sl);
                    rdma_cm_event* event = nullptr;
                    rdma_get_cm_event(nullptr, &event);
                    attr = event->param.ud.ah_attr;
                }
                start = Clock::now();
                ah = ibv_create_ah(&pd, &attr);
                if (attr.sl != sl) std::printf("driver: the caller's attributes changed\n");
            }
            report(step + " " + std::to_string(lid), ah ? 0 : -1, start);
            if (ah) ibv_destroy_ah(ah);
        } else if (step == "lookup") {
            modifyQp = lookUpModifyQp(next());
        } else if (step == "devxqp") {
            namespace dx = ibqos::test::devx;
            ibv_context* context = deviceNamed(next());
            uint32_t qpn = static_cast<uint32_t>(std::strtoul(next().c_str(), nullptr, 0));
            const bool dci = next() == "dci";
            std::array<uint8_t, dx::CreateQpInBits / 8> in{};
            std::array<uint8_t, dx::CreateQpOutBits / 8> out{};
            dx::set(in.data(), dx::Opcode, 16, dx::CreateQp);
            dx::set(in.data(), dx::Qpc + dx::QpcSt, 8, dci ? dx::StDci : dx::StRc);
            auto start = Clock::now();
            mlx5dv_devx_obj* obj =
                mlx5dv_devx_obj_create(context, in.data(), in.size(), out.data(), out.size());
            report("devxqp " + std::to_string(qpn), obj ? 0 : -1, start);
            if (!obj) return 1;
            const uint32_t deviceQpn = dx::get(out.data(), dx::Qpn, 24);
            {
                std::lock_guard lock(madeMutex);
                devxQps[qpn] = obj;
                devxQpns[qpn] = deviceQpn;
            }
            auto init = modifyCommand(dx::Rst2InitQp, deviceQpn, 0, 0);
            start = Clock::now();
            report("devxinit " + std::to_string(qpn),
                   mlx5dv_devx_obj_modify(obj, init.data(), init.size(), out.data(), out.size()),
                   start);
        } else if (step == "devxrtr" || step == "qpdevxrtr") {
            namespace dx = ibqos::test::devx;
            const std::string name = next();
            const uint32_t qpn = static_cast<uint32_t>(std::strtoul(name.c_str(), nullptr, 0));
            uint16_t dlid = static_cast<uint16_t>(std::strtoul(next().c_str(), nullptr, 0));
            uint8_t sl = static_cast<uint8_t>(std::strtoul(next().c_str(), nullptr, 0));
            std::array<uint8_t, dx::CreateQpOutBits / 8> out{};
            int rc;
            auto start = Clock::now();
            dx::ModifyQpIn in{};
            if (step == "devxrtr") {
                mlx5dv_devx_obj* obj;
                uint32_t deviceQpn;
                {
                    std::lock_guard lock(madeMutex);
                    obj = devxQps[qpn];
                    deviceQpn = devxQpns[qpn];
                }
                in = modifyCommand(dx::Init2RtrQp, deviceQpn, dlid, sl);
                start = Clock::now();
                rc = mlx5dv_devx_obj_modify(obj, in.data(), in.size(), out.data(), out.size());
            } else {
                ibv_qp* qp = qpOf(name);
                in = modifyCommand(dx::Init2RtrQp, qp->qp_num, dlid, sl);
                start = Clock::now();
                rc = mlx5dv_devx_qp_modify(qp, in.data(), in.size(), out.data(), out.size());
            }
            report(step + " " + std::to_string(qpn), rc, start);
            if (dx::get(in.data(), dx::path(dx::AdsSl), 4) != sl)
                std::printf("driver: the caller's command changed\n");
        } else if (step == "devxdestroy") {
            const uint32_t qpn = static_cast<uint32_t>(std::strtoul(next().c_str(), nullptr, 0));
            mlx5dv_devx_obj* obj;
            {
                std::lock_guard lock(madeMutex);
                obj = devxQps[qpn];
                devxQps.erase(qpn);
            }
            auto start = Clock::now();
            report("devxdestroy " + std::to_string(qpn), mlx5dv_devx_obj_destroy(obj), start);
        } else if (step == "rts") {
            ibv_qp* qp = qpOf(next());
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_RTS;
            auto start = Clock::now();
            report("rts " + std::to_string(qp->qp_num), ibv_modify_qp(qp, &attr, IBV_QP_STATE),
                   start);
        } else if (step == "destroy") {
            ibv_qp* qp = qpOf(next());
            uint32_t qpn = qp->qp_num;
            auto start = Clock::now();
            report("destroy " + std::to_string(qpn), ibv_destroy_qp(qp), start);
            std::lock_guard lock(madeMutex);
            qps.erase(qpn);
        } else if (step == "close") {
            std::string name = next();
            auto start = Clock::now();
            report("close " + name, ibv_close_device(deviceNamed(name)), start);
        } else if (step == "wait") {
            std::printf("driver: waiting\n");
            std::fflush(stdout);
            std::string line;
            std::getline(std::cin, line);
        } else if (step == "thread") {
            std::vector<std::string> steps;
            for (std::string s; (s = next()) != "done";) steps.push_back(s);
            threads.emplace_back([steps] {
                if (int status = run(steps)) std::exit(status);
            });
        } else if (step == "join") {
            for (std::thread& t : threads) t.join();
            threads.clear();
        } else if (step == "exit") {
            std::fflush(stdout);
            _exit(0);
        } else {
            std::fprintf(stderr, "preload-driver: unknown step '%s'\n", step.c_str());
            return 2;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int status = run(std::vector<std::string>(argv + 1, argv + argc));
    for (std::thread& t : threads) t.join();
    return status;
}
