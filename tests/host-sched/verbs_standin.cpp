// SPDX-License-Identifier: MIT
// A recording stand-in below the preload library: the verbs calls it interposes, and libmlx5's
// scheduling calls served by the emulated device. Each call is printed on stdout, in order.
//
// STANDIN_FAIL_RTR=1 makes ibv_modify_qp fail RTR transitions with EINVAL (errno EINVAL);
// STANDIN_QUIET=1 records nothing (for benchmarks). Every port is port 1 of an InfiniBand
// subnet fe80::/64 with LID STANDIN_LID (default 1), LMC STANDIN_LMC (default 0) and P_Keys
// STANDIN_PKEYS (comma-separated, by index; default 0xffff); STANDIN_LINK_LAYER=ethernet makes
// it a RoCE port. librdmacm's calls are stood in for too: the path they hand out is the one
// standin_set_cm_path() names. libmlx5's DEVX calls are stood in for as the device would take
// UCX's QP commands: CREATE_QP numbers the QP (from 4096), and each modify command is decoded
// (tests/doubles/devx_commands.hpp) and recorded.
#include "tests/host-sched/verbs_standin.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tests/doubles/devx_commands.hpp"
#include "tests/doubles/mlx5_emulation.hpp"

namespace {

using ibqos::host::emulatedMlx5Api;
using ibqos::host::EmulatedMlx5Caps;
using ibqos::host::EmulatedMlx5Device;

std::mutex devicesMutex;
std::map<ibv_context*, std::unique_ptr<EmulatedMlx5Device>> devices;
std::map<ibv_qp*, std::pair<uint8_t, uint16_t>> qpPorts;  // port, P_Key index (INIT)
uint16_t cmDlid = 2;
uint8_t cmSl = 0;

unsigned long envNumber(const char* name, unsigned long otherwise) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoul(v, nullptr, 0) : otherwise;
}

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

// Plays the kernel's resource tracking for the agent's test build: each QP made or destroyed
// is a line "DEVICE QPN PID" (PID 0: destroyed) appended to $STANDIN_QP_OWNERS.
void recordOwner(ibv_qp* qp, uint32_t pid) {
    const char* path = std::getenv("STANDIN_QP_OWNERS");
    if (!path || !*path || !qp || !qp->context) return;
    std::string line = std::string(qp->context->device->name) + " " + std::to_string(qp->qp_num) +
                       " " + std::to_string(pid) + "\n";
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    (void)!write(fd, line.data(), line.size());  // one write: lines of processes do not mix
    close(fd);
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
    ibv_qp* qp = device ? device->createQp(qpNum, type, IBV_QPS_RESET) : nullptr;
    recordOwner(qp, static_cast<uint32_t>(getpid()));
    return qp;
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
    {
        std::lock_guard lock(devicesMutex);
        auto& [port, pkeyIndex] = qpPorts[qp];
        if (mask & IBV_QP_PORT) port = attr->port_num;
        if (mask & IBV_QP_PKEY_INDEX) pkeyIndex = attr->pkey_index;
    }
    record(line + " -> 0");
    return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
    (void)mask;
    (void)init;
    std::lock_guard lock(devicesMutex);
    auto [port, pkeyIndex] = qpPorts[qp];
    attr->qp_state = qp->state;
    attr->port_num = port;
    attr->pkey_index = pkeyIndex;
    return 0;
}

// The exported (1.1) call takes the layout before port_cap_flags2; verbs.h wraps it in a macro.
#undef ibv_query_port
int ibv_query_port(ibv_context*, uint8_t port, _compat_ibv_port_attr* compat) {
    if (port != 1) return EINVAL;
    auto* attr = reinterpret_cast<ibv_port_attr*>(compat);
    std::memset(attr, 0, offsetof(ibv_port_attr, port_cap_flags2));
    attr->state = IBV_PORT_ACTIVE;
    attr->lid = static_cast<uint16_t>(envNumber("STANDIN_LID", 1));
    attr->lmc = static_cast<uint8_t>(envNumber("STANDIN_LMC", 0));
    const char* layer = std::getenv("STANDIN_LINK_LAYER");
    attr->link_layer = layer && std::strcmp(layer, "ethernet") == 0 ? IBV_LINK_LAYER_ETHERNET
                                                                    : IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

int ibv_query_gid(ibv_context*, uint8_t port, int index, ibv_gid* gid) {
    if (port != 1 || index != 0) return EINVAL;
    std::memset(gid, 0, sizeof *gid);
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    gid->raw[15] = 1;
    return 0;
}

int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
    const char* list = std::getenv("STANDIN_PKEYS");
    std::string pkeys = list && *list ? list : "0xffff";
    for (int i = 0; port == 1; ++i) {
        size_t comma = pkeys.find(',');
        if (i == index) {
            *pkey = htons(static_cast<uint16_t>(std::strtoul(pkeys.c_str(), nullptr, 0)));
            return 0;
        }
        if (comma == std::string::npos) break;
        pkeys.erase(0, comma + 1);
    }
    return EINVAL;
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    record("ibv_create_ah dlid=" + std::to_string(attr->dlid) + " sl=" + std::to_string(attr->sl) +
           " -> ah");
    auto* ah = new ibv_ah{};
    ah->context = pd->context;
    ah->pd = pd;
    return ah;
}

int ibv_destroy_ah(ibv_ah* ah) {
    record("ibv_destroy_ah -> 0");
    delete ah;
    return 0;
}

// As libibverbs does: the address vector of the requester, made through ibv_create_ah.
ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh*, uint8_t port) {
    ibv_ah_attr attr{};
    attr.dlid = wc->slid;
    attr.sl = wc->sl;
    attr.src_path_bits = wc->dlid_path_bits;
    attr.port_num = port;
    return ibv_create_ah(pd, &attr);
}

void standin_set_cm_path(uint16_t dlid, uint8_t sl) {
    cmDlid = dlid;
    cmSl = sl;
}

// rdma_create_qp: the QP number comes in qp_context.
int rdma_create_qp(rdma_cm_id* id, ibv_pd*, ibv_qp_init_attr* attr) {
    auto qpn = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(attr->qp_context));
    id->qp = standin_create_qp(id->verbs, qpn, attr->qp_type);
    record("rdma_create_qp qpn=" + std::to_string(qpn) + " -> 0");
    return id->qp ? 0 : ENOMEM;
}

int rdma_init_qp_attr(rdma_cm_id*, ibv_qp_attr* attr, int* mask) {
    std::memset(attr, 0, sizeof *attr);
    attr->qp_state = IBV_QPS_RTR;
    attr->ah_attr.dlid = cmDlid;
    attr->ah_attr.sl = cmSl;
    attr->ah_attr.port_num = 1;
    *mask = IBV_QP_STATE | IBV_QP_AV;
    return 0;
}

// A UD "established" event carrying the path's address vector.
int rdma_get_cm_event(rdma_event_channel*, rdma_cm_event** event) {
    static rdma_cm_id id{};
    static rdma_cm_event e{};
    id.ps = RDMA_PS_UDP;
    e.id = &id;
    e.event = RDMA_CM_EVENT_ESTABLISHED;
    e.param.ud.ah_attr = ibv_ah_attr{};
    e.param.ud.ah_attr.dlid = cmDlid;
    e.param.ud.ah_attr.sl = cmSl;
    e.param.ud.ah_attr.port_num = 1;
    *event = &e;
    return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
    recordOwner(qp, 0);
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

// DEVX: the device's QP commands as UCX sends them, decoded and recorded; a command for
// another QP than the object's, or too short, is refused as the device would (EINVAL).

}  // extern "C"

struct mlx5dv_devx_obj {
    ibv_context* context = nullptr;
    uint32_t qpn = 0;
};

namespace {

uint32_t nextDevxQpn = 0x1000;

// Appends " OPCODE qpn=N ..." for a modify command; false when the device refuses it.
bool describeModify(uint32_t qpn, const void* in, size_t inlen, std::string& line) {
    namespace dx = ibqos::test::devx;
    if (!in || inlen < dx::ModifyQpInBits / 8) {
        line += " (short command)";
        return false;
    }
    const uint32_t opcode = dx::get(in, dx::Opcode, 16);
    const uint32_t target = dx::get(in, dx::Qpn, 24);
    auto field = [&](uint32_t bit, uint32_t width) {
        return std::to_string(dx::get(in, dx::path(bit), width));
    };
    switch (opcode) {
        case dx::Rst2InitQp:
            line += " RST2INIT_QP qpn=" + std::to_string(target) +
                    " port=" + field(dx::AdsPort, 8) + " pkey_index=" + field(dx::AdsPkeyIndex, 16);
            break;
        case dx::Init2RtrQp:
            line += " INIT2RTR_QP qpn=" + std::to_string(target) +
                    " rlid=" + field(dx::AdsRlid, 16) + " sl=" + field(dx::AdsSl, 4) +
                    " port=" + field(dx::AdsPort, 8);
            break;
        case dx::Rtr2RtsQp:
            line += " RTR2RTS_QP qpn=" + std::to_string(target);
            break;
        default:
            line += " opcode=" + std::to_string(opcode);
            return true;
    }
    return target == qpn;
}

}  // namespace

extern "C" {

mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* context, const void* in, size_t inlen,
                                        void* out, size_t outlen) {
    namespace dx = ibqos::test::devx;
    if (!context || !in || inlen < 4) {
        errno = EINVAL;
        return nullptr;
    }
    auto* obj = new mlx5dv_devx_obj{context, 0};
    std::string line = "mlx5dv_devx_obj_create";
    if (dx::get(in, dx::Opcode, 16) == dx::CreateQp && inlen >= dx::CreateQpInBits / 8 &&
        outlen >= dx::CreateQpOutBits / 8) {
        obj->qpn = nextDevxQpn++;
        dx::set(out, dx::Qpn, 24, obj->qpn);
        line += " CREATE_QP st=" + std::to_string(dx::get(in, dx::Qpc + dx::QpcSt, 8)) +
                " -> qpn=" + std::to_string(obj->qpn);
    } else {
        line += " opcode=" + std::to_string(dx::get(in, dx::Opcode, 16)) + " -> obj";
    }
    record(line);
    return obj;
}

int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void*, size_t) {
    std::string line = "mlx5dv_devx_obj_modify";
    bool ok = obj && describeModify(obj->qpn, in, inlen, line);
    record(line + (ok ? " -> 0" : " -> EINVAL"));
    return ok ? 0 : EINVAL;
}

int mlx5dv_devx_qp_modify(ibv_qp* qp, const void* in, size_t inlen, void*, size_t) {
    std::string line = "mlx5dv_devx_qp_modify";
    bool ok = qp && describeModify(qp->qp_num, in, inlen, line);
    record(line + (ok ? " -> 0" : " -> EINVAL"));
    return ok ? 0 : EINVAL;
}

int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* obj) {
    record("mlx5dv_devx_obj_destroy qpn=" + std::to_string(obj ? obj->qpn : 0) + " -> 0");
    delete obj;
    return 0;
}

}  // extern "C"
