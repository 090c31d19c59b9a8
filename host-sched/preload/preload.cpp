// SPDX-License-Identifier: MIT
// libibqos_preload.so: each QP joins its scheduling leaf at RTR and is reported to the agent.
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
#include <arpa/inet.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/agent/path_table.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "host-sched/preload/sl_decision.hpp"
#include "host-sched/sched/mlx5_api.hpp"
#include "host-sched/sched/sched_mlx5.hpp"
#include "host-sched/sched/sched_simulated.hpp"

namespace {

using namespace ibqos;
using namespace ibqos::host;

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using DestroyQpFn = int (*)(ibv_qp*);
using CloseDeviceFn = int (*)(ibv_context*);
using CreateAhFn = ibv_ah* (*)(ibv_pd*, ibv_ah_attr*);
using CreateAhFromWcFn = ibv_ah* (*)(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t);
using QueryQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
using QueryPortFn = int (*)(ibv_context*, uint8_t, ibv_port_attr*);  // the 1.1 (compat) layout
using QueryPkeyFn = int (*)(ibv_context*, uint8_t, int, __be16*);
using QueryGidFn = int (*)(ibv_context*, uint8_t, int, ibv_gid*);
using CreateCmQpFn = int (*)(rdma_cm_id*, ibv_pd*, ibv_qp_init_attr*);
using CreateCmQpExFn = int (*)(rdma_cm_id*, ibv_qp_init_attr_ex*);
using InitQpAttrFn = int (*)(rdma_cm_id*, ibv_qp_attr*, int*);
using GetCmEventFn = int (*)(rdma_event_channel*, rdma_cm_event**);

template <typename Fn>
Fn nextSymbol(const char* name, const char* version = "IBVERBS_1.1") {
    void* p = dlvsym(RTLD_NEXT, name, version);
    if (!p) p = dlsym(RTLD_NEXT, name);
    return reinterpret_cast<Fn>(p);
}

// How long the facts of a port (LID, LMC, link layer, P_Keys) are trusted: the SM may move LIDs.
constexpr auto PortFactsLifetime = std::chrono::seconds(1);
// Vectors librdmacm handed out for UD (dlid, sl), remembered at most.
constexpr size_t MaxCmVectors = 4096;

// Set while ibv_create_ah_from_wc runs: the address handle it makes answers a requester and
// takes the SL the requester used.
thread_local bool makingReplyAh = false;
// The attributes rdma_init_qp_attr last filled on this thread for an RTR, as it filled them.
thread_local const ibv_qp_attr* cmAttr = nullptr;
thread_local uint16_t cmDlid = 0;
thread_local uint8_t cmSl = 0;

QpType qpTypeOf(const ibv_qp* qp) {
    switch (qp->qp_type) {
        case IBV_QPT_RC:
            return QpType::Rc;
        case IBV_QPT_UC:
            return QpType::Uc;
        case IBV_QPT_UD:
            return QpType::Ud;
        case IBV_QPT_RAW_PACKET:
            return QpType::RawPacket;
        default:
            return QpType::Other;
    }
}

std::string deviceOf(const ibv_context* context) {
    if (!context || !context->device) return "unknown";
    std::string name(context->device->name, strnlen(context->device->name, IBV_SYSFS_NAME_MAX));
    return name.empty() ? "unknown" : name;
}

// What the library knows about one QP of the application.
struct QpRecord {
    std::string device;
    uint8_t port = 0;
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
    std::optional<uint8_t> sl;
    std::optional<size_t> leaf;
    bool attached = false;
    uint16_t dlid = 0;
    std::optional<SlMode> mode;  // set once the library is configured
    std::optional<uint8_t> appSl;
    std::optional<uint8_t> saSl;
    SlOutcome outcome = SlOutcome::None;
    bool atRtr = false;     // reached RTR: the agent hears of it
    bool reported = false;  // the agent heard of it on the current connection
};

class Preload {
  public:
    static Preload& instance() {
        // Never destroyed: applications may call verbs from their own exit handlers.
        static Preload* preload = new Preload;
        return *preload;
    }

    // Returns the SL the real call must use instead of the application's (enforce mode).
    std::optional<uint8_t> beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask);
    std::optional<uint8_t> beforeCreateAh(ibv_context* context, const ibv_ah_attr* attr);
    void afterRtr(ibv_qp* qp);
    void cmQp(ibv_qp* qp);
    void cmVector(const ibv_ah_attr& av);
    void beforeDestroy(ibv_qp* qp);
    void afterDestroy(ibv_qp* qp, int rc);
    void beforeClose(ibv_context* context);

  private:
    Preload();
    static void prepareFork() { instance().mutex_.lock(); }
    static void parentAfterFork() { instance().mutex_.unlock(); }
    static void childAfterFork();

    void configure();
    SchedBackend* treeOf(ibv_context* context);
    bool connectAgent();
    void send(QpRecord& record, MessageKind kind);
    bool sendMessage(const AgentMessage& m);
    void logOnce(const std::string& key, const std::string& message);

    // SL enforcement.
    struct PortState {
        std::chrono::steady_clock::time_point at;
        PortFacts facts;
        std::map<uint16_t, uint16_t> pkeys;  // index -> P_Key
    };
    PortState* portState(ibv_context* context, uint8_t port, const std::string& device);
    std::optional<uint16_t> pkeyAt(ibv_context* context, PortState& port, uint8_t portNum,
                                   uint16_t index);
    // The decision for one vector; fromCm: librdmacm made it from a PathRecord.
    SlDecision decide(ibv_context* context, const std::string& device, uint8_t port,
                      const ibv_ah_attr& av, std::optional<uint16_t> pkey, bool fromCm);
    // The agent's answer for a path: from its published table, else asked (exchange) and
    // waited for.
    std::optional<AgentMessage> askAgent(const AgentMessage& question);
    std::optional<AgentMessage> exchange(const AgentMessage& question);

    std::mutex mutex_;
    bool configured_ = false;
    std::optional<HostPlan> plan_;
    std::string backend_ = "mlx5";
    Mlx5SchedApi mlx5_;
    bool mlx5Ready_ = false;
    std::map<ibv_context*, std::unique_ptr<SchedBackend>> trees_;  // null: failed on it
    std::map<ibv_qp*, QpRecord> qps_;
    std::string socketPath_;
    int fd_ = -1;
    std::chrono::steady_clock::time_point nextConnect_{};
    std::set<std::string> logged_;
    SlMode mode_ = SlMode::Respect;
    std::chrono::milliseconds resolveTimeout_{5};
    uint32_t nextQuestion_ = 0;
    std::map<std::pair<ibv_context*, uint8_t>, PortState> ports_;
    std::set<ibv_qp*> cmQps_;
    std::set<std::pair<uint16_t, uint8_t>> cmVectors_;
    std::string tablePath_;
    std::optional<PathTable> table_;  // the agent's published answers, when it publishes them
    std::deque<std::pair<uint16_t, uint8_t>> cmVectorOrder_;
};

Preload::Preload() { pthread_atfork(prepareFork, parentAfterFork, childAfterFork); }

void Preload::childAfterFork() {
    // The child owns none of the parent's QPs or connection: start afresh. The trees stay
    // the parent's: forgotten here, never destroyed from the child.
    Preload& p = instance();
    if (p.fd_ >= 0) close(p.fd_);
    p.fd_ = -1;
    p.qps_.clear();
    p.cmQps_.clear();
    p.table_.reset();
    for (auto& [context, tree] : p.trees_) (void)tree.release();
    p.trees_.clear();
    p.nextConnect_ = {};
    p.mutex_.unlock();
}

void Preload::logOnce(const std::string& key, const std::string& message) {
    if (!logged_.insert(key).second) return;
    std::fprintf(stderr, "ibqos-preload[%d]: %s\n", static_cast<int>(getpid()), message.c_str());
}

void Preload::configure() {
    if (configured_) return;
    configured_ = true;
    // The host's own plan. When it audits or enforces SLs, a process cannot point itself at
    // another plan, agent or table: the environment's paths are ignored (an unprivileged user
    // must not opt out), and setuid programs never read them (secure_getenv).
    std::string hostError;
    std::optional<HostPlan> hostPlan = readPlanFile(DefaultPlanPath, hostError);
    const bool pinned =
        hostPlan && std::any_of(hostPlan->enforcement().begin(), hostPlan->enforcement().end(),
                                [](const SlEnforcement& e) { return e.mode != SlMode::Respect; });
    auto setting = [&](const char* name) -> std::string {
        const char* v = secure_getenv(name);
        if (!v || !*v) return "";
        if (pinned) {
            logOnce(name, std::string(name) + " is ignored: this host's plan (" + DefaultPlanPath +
                              ") enforces SLs");
            return "";
        }
        return v;
    };
    socketPath_ = setting("IBQOS_AGENT_SOCKET");
    if (socketPath_.empty()) socketPath_ = DefaultAgentSocket;
    tablePath_ = setting("IBQOS_PATH_TABLE");
    if (tablePath_.empty()) tablePath_ = DefaultPathTable;
    if (const char* backend = secure_getenv("IBQOS_SCHED_BACKEND"); backend && *backend)
        backend_ = backend;
    if (backend_ != "mlx5" && backend_ != "simulated" && backend_ != "none") {
        logOnce("backend", "IBQOS_SCHED_BACKEND='" + backend_ +
                               "' is not mlx5, simulated or none; QPs are not attached to leaves");
        backend_ = "none";
    }
    std::string error = hostError;
    if (std::string planFile = setting("IBQOS_PLAN"); !planFile.empty()) {
        plan_ = readPlanFile(planFile, error);
    } else {
        plan_ = std::move(hostPlan);
    }
    if (!plan_) {
        logOnce("plan", "no host plan (" + error + "); QPs keep the device's default scheduling");
    }
    if (backend_ == "mlx5" && plan_ && !plan_->empty()) {
        mlx5Ready_ = loadMlx5Api(mlx5_, error);
        if (!mlx5Ready_) logOnce("mlx5", error + "; QPs are not attached to leaves");
    }

    // The policy's mode for this program; the environment may only make it stricter.
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string exeName = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    exeName = exeName.substr(exeName.rfind('/') + 1);
    if (plan_) {
        if (const SlEnforcement* e =
                plan_->enforcementFor({exeName, program_invocation_short_name})) {
            mode_ = e->mode;
            resolveTimeout_ = std::chrono::milliseconds(e->resolveTimeoutMs);
        }
    }
    if (const char* env = secure_getenv("IBQOS_SL_ENFORCEMENT"); env && *env) {
        if (auto asked = slModeFromName(env)) {
            mode_ = std::max(mode_, *asked);
        } else {
            logOnce("mode", std::string("IBQOS_SL_ENFORCEMENT='") + env +
                                "' is not respect, audit or enforce; ignored");
        }
    }
    if (mode_ != SlMode::Respect) table_ = PathTable::open(tablePath_);
}

Preload::PortState* Preload::portState(ibv_context* context, uint8_t port,
                                       const std::string& device) {
    static const QueryPortFn queryPort = nextSymbol<QueryPortFn>("ibv_query_port");
    static const QueryGidFn queryGid = nextSymbol<QueryGidFn>("ibv_query_gid");
    auto now = std::chrono::steady_clock::now();
    auto it = ports_.find({context, port});
    if (it != ports_.end() && now - it->second.at < PortFactsLifetime) return &it->second;
    ibv_port_attr attr{};
    ibv_gid gid{};
    if (!queryPort || !queryGid || queryPort(context, port, &attr) != 0 ||
        (attr.link_layer != IBV_LINK_LAYER_ETHERNET && queryGid(context, port, 0, &gid) != 0)) {
        logOnce("port:" + device + ":" + std::to_string(port),
                "cannot query " + device + " port " + std::to_string(port) +
                    "; its QPs keep the application's SL");
        return nullptr;
    }
    PortState& state = ports_[{context, port}];
    state.at = now;
    state.pkeys.clear();
    state.facts.ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    state.facts.lid = attr.lid;
    state.facts.lmc = attr.lmc;
    state.facts.subnetPrefix = subnetPrefixOf(gid);
    return &state;
}

std::optional<uint16_t> Preload::pkeyAt(ibv_context* context, PortState& port, uint8_t portNum,
                                        uint16_t index) {
    static const QueryPkeyFn queryPkey = nextSymbol<QueryPkeyFn>("ibv_query_pkey");
    if (auto it = port.pkeys.find(index); it != port.pkeys.end()) return it->second;
    __be16 pkey = 0;
    if (!queryPkey || queryPkey(context, portNum, index, &pkey) != 0) return std::nullopt;
    return port.pkeys[index] = ntohs(pkey);
}

SlDecision Preload::decide(ibv_context* context, const std::string& device, uint8_t port,
                           const ibv_ah_attr& av, std::optional<uint16_t> pkey, bool fromCm) {
    SlDecision kept{av.sl, SlOutcome::CmPath, std::nullopt};
    if (fromCm) return kept;
    PortState* state = portState(context, port, device);
    if (!state) return decideSl(mode_, av.sl, std::nullopt);
    if (auto exempt = exemptionOf(state->facts, av)) {
        kept.outcome = *exempt;
        return kept;
    }
    AgentMessage q;
    q.kind = MessageKind::Resolve;
    q.device = device;
    q.port = port;
    q.slid = sourceLidOf(state->facts, av.src_path_bits);
    q.dlid = av.dlid;
    q.pkey = pkey;
    if (q.slid == 0 || q.dlid == 0) return decideSl(mode_, av.sl, std::nullopt);
    return decideSl(mode_, av.sl, askAgent(q));
}

std::optional<AgentMessage> Preload::askAgent(const AgentMessage& question) {
    if (table_) {
        PathKey path{question.device, question.port, question.slid, question.dlid, question.pkey};
        if (std::optional<TableAnswer> known = table_->find(path)) {
            AgentMessage m;
            m.kind = MessageKind::Path;
            m.answer = known->found ? PathAnswer::Found : PathAnswer::NoPath;
            if (known->found) m.sl = known->sl;
            return m;
        }
    }
    return exchange(question);
}

std::optional<AgentMessage> Preload::exchange(const AgentMessage& question) {
    if (!connectAgent()) return std::nullopt;
    AgentMessage q = question;
    q.id = ++nextQuestion_;
    if (!sendMessage(q)) return std::nullopt;
    auto deadline = std::chrono::steady_clock::now() + resolveTimeout_;
    char buffer[MaxAgentMessage + 1];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd_, POLLIN, 0};
        const timespec wait{left.count() / 1000000, left.count() % 1000000 * 1000};
        int ready = ppoll(&p, 1, &wait, nullptr);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) {
            logOnce("agent-lost", "lost the agent; reconnecting later");
            close(fd_);
            fd_ = -1;
            return std::nullopt;
        }
        MessageError error;
        auto m = parseAgentMessage(std::string_view(buffer, static_cast<size_t>(n)), error);
        // Anything else is the late answer to a question that gave up: dropped.
        if (m && m->kind == MessageKind::Path && m->id == q.id) return m;
    }
    logOnce("agent-slow", "the agent did not answer within " +
                              std::to_string(resolveTimeout_.count()) +
                              " ms; such QPs keep the application's SL (the agent counts them)");
    return std::nullopt;
}

void Preload::cmQp(ibv_qp* qp) {
    std::lock_guard lock(mutex_);
    cmQps_.insert(qp);
}

void Preload::cmVector(const ibv_ah_attr& av) {
    std::lock_guard lock(mutex_);
    if (!cmVectors_.insert({av.dlid, av.sl}).second) return;
    cmVectorOrder_.push_back({av.dlid, av.sl});
    if (cmVectorOrder_.size() > MaxCmVectors) {
        cmVectors_.erase(cmVectorOrder_.front());
        cmVectorOrder_.pop_front();
    }
}

SchedBackend* Preload::treeOf(ibv_context* context) {
    auto it = trees_.find(context);
    if (it != trees_.end()) return it->second.get();
    std::unique_ptr<SchedBackend> tree;
    if (backend_ == "simulated") {
        tree = std::make_unique<SimulatedSchedBackend>();
    } else if (backend_ == "mlx5" && mlx5Ready_) {
        tree = std::make_unique<Mlx5SchedBackend>(context, mlx5_);
    }
    if (tree) {
        if (SchedStatus s = tree->build(*plan_); !s.ok()) {
            std::string device = context && context->device ? context->device->name : "unknown";
            logOnce("build:" + device,
                    "cannot build the scheduling tree on " + device + ": " + s.message);
            tree.reset();
        }
    }
    return trees_.emplace(context, std::move(tree)).first->second.get();
}

std::optional<uint8_t> Preload::beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask) {
    static const QueryQpFn queryQp = nextSymbol<QueryQpFn>("ibv_query_qp");
    std::lock_guard lock(mutex_);
    configure();
    QpRecord record;
    record.device = deviceOf(qp->context);
    record.qpNum = qp->qp_num;
    record.type = qpTypeOf(qp);
    record.mode = mode_;
    // The SL the application chose is in the address vector of the RTR transition (RC and UC
    // carry one; UD QPs take theirs per address handle, so they have none here).
    std::optional<uint8_t> replace;
    if ((mask & IBV_QP_AV) && attr->ah_attr.sl < 16) {
        record.sl = attr->ah_attr.sl;
        record.port = attr->ah_attr.port_num;
        record.dlid = attr->ah_attr.dlid;
        record.appSl = attr->ah_attr.sl;
        bool connected = record.type == QpType::Rc || record.type == QpType::Uc;
        if (mode_ != SlMode::Respect && connected) {
            // The QP's port and P_Key index, when the transition does not name them.
            ibv_qp_attr current{};
            ibv_qp_init_attr init{};
            bool known =
                queryQp && queryQp(qp, &current, IBV_QP_PKEY_INDEX | IBV_QP_PORT, &init) == 0;
            if (!record.port && known) record.port = current.port_num;
            std::optional<uint16_t> pkey;
            uint16_t index = (mask & IBV_QP_PKEY_INDEX) ? attr->pkey_index : current.pkey_index;
            bool fromCm = cmQps_.count(qp) || (attr == cmAttr && attr->ah_attr.dlid == cmDlid &&
                                               attr->ah_attr.sl == cmSl);
            cmAttr = nullptr;  // it describes one transition
            if (record.port && (known || (mask & IBV_QP_PKEY_INDEX)) && !fromCm) {
                if (PortState* port = portState(qp->context, record.port, record.device))
                    pkey = pkeyAt(qp->context, *port, record.port, index);
            }
            SlDecision d =
                decide(qp->context, record.device, record.port, attr->ah_attr, pkey, fromCm);
            record.outcome = d.outcome;
            record.saSl = d.saSl;
            if (d.outcome == SlOutcome::Replaced) {
                replace = d.sl;
                record.sl = d.sl;
            }
        }
    }
    if (plan_ && record.sl) record.leaf = plan_->leafForSl(*record.sl);
    // The device accepts an attachment only in INIT or RTS: before the transition, the QP is
    // still in INIT.
    QpRef ref{qp, record.qpNum, record.type};
    if (record.leaf && backend_ != "none") {
        if (SchedBackend* tree = treeOf(qp->context)) {
            SchedStatus s = tree->attach(ref, *record.leaf);
            record.attached = s.ok();
            if (!s.ok())
                logOnce("attach:" + record.device + ":" + std::to_string(s.error), s.message);
        }
    }
    // A QP reset and brought up again on an SL without a leaf leaves its old leaf.
    auto old = qps_.find(qp);
    if (old != qps_.end() && old->second.attached && !record.attached) {
        auto tree = trees_.find(qp->context);
        if (tree != trees_.end() && tree->second) (void)tree->second->detach(ref);
    }
    qps_[qp] = std::move(record);
    return replace;
}

std::optional<uint8_t> Preload::beforeCreateAh(ibv_context* context, const ibv_ah_attr* attr) {
    std::lock_guard lock(mutex_);
    configure();
    if (mode_ == SlMode::Respect || attr->sl >= 16) return std::nullopt;
    std::string device = deviceOf(context);
    bool fromCm = cmVectors_.count({attr->dlid, attr->sl}) > 0;
    // An address handle serves every UD QP of its protection domain: no one P_Key applies.
    SlDecision d = decide(context, device, attr->port_num, *attr, std::nullopt, fromCm);
    switch (d.outcome) {
        case SlOutcome::Replaced:
        case SlOutcome::Differs:
        case SlOutcome::NoAnswer:
        case SlOutcome::NoPath: {
            AgentMessage m;
            m.kind = MessageKind::Ah;
            m.pid = static_cast<uint32_t>(getpid());
            m.device = device;
            m.port = attr->port_num;
            m.dlid = attr->dlid;
            m.sl = d.sl;
            m.mode = mode_;
            m.appSl = attr->sl;
            m.saSl = d.saSl;
            m.outcome = d.outcome;
            if (m.port && m.dlid && connectAgent()) sendMessage(m);
            break;
        }
        default:
            break;
    }
    return d.outcome == SlOutcome::Replaced ? std::optional<uint8_t>(d.sl) : std::nullopt;
}

bool Preload::connectAgent() {
    if (fd_ >= 0) return true;
    auto now = std::chrono::steady_clock::now();
    if (now < nextConnect_) return false;
    nextConnect_ = now + std::chrono::seconds(1);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socketPath_.size() >= sizeof address.sun_path) {
        logOnce("agent", "agent socket path too long: " + socketPath_);
        return false;
    }
    std::memcpy(address.sun_path, socketPath_.c_str(), socketPath_.size() + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        logOnce("agent", "no agent at " + socketPath_ + " (" + std::strerror(errno) +
                             "); PCC slots are not applied to this process's QPs");
        if (fd >= 0) close(fd);
        return false;
    }
    fd_ = fd;
    // A new connection (first, or after the agent restarted): map its table afresh (a new
    // agent writes a new file), and tell it everything.
    if (mode_ != SlMode::Respect) table_ = PathTable::open(tablePath_);
    for (auto& [qp, record] : qps_) record.reported = false;
    for (auto& [qp, record] : qps_) {
        if (record.atRtr) send(record, MessageKind::Rtr);
    }
    return fd_ >= 0;
}

bool Preload::sendMessage(const AgentMessage& m) {
    if (fd_ < 0) return false;
    std::string text = encodeAgentMessage(m);
    if (::send(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            logOnce("agent-busy", "the agent is not keeping up; a message was dropped");
            return false;
        }
        logOnce("agent-lost",
                std::string("lost the agent (") + std::strerror(errno) + "); reconnecting later");
        close(fd_);
        fd_ = -1;
        return false;
    }
    return true;
}

void Preload::send(QpRecord& record, MessageKind kind) {
    if (fd_ < 0) return;
    AgentMessage m;
    m.kind = kind;
    m.pid = static_cast<uint32_t>(getpid());
    m.device = record.device;
    m.qpNum = record.qpNum;
    if (kind == MessageKind::Rtr) {
        m.port = record.port;
        m.type = record.type;
        m.sl = record.sl;
        m.leaf = record.leaf && plan_ ? plan_->elements()[*record.leaf].name : "";
        m.attached = record.attached;
        m.dlid = record.dlid;
        m.mode = record.mode;
        m.appSl = record.appSl;
        m.saSl = record.saSl;
        m.outcome = record.outcome;
    }
    if (sendMessage(m) && kind == MessageKind::Rtr) record.reported = true;
}

void Preload::afterRtr(ibv_qp* qp) {
    std::lock_guard lock(mutex_);
    auto it = qps_.find(qp);
    if (it == qps_.end()) return;
    it->second.atRtr = true;
    it->second.reported = false;
    if (connectAgent() && !it->second.reported) send(it->second, MessageKind::Rtr);
}

void Preload::beforeDestroy(ibv_qp* qp) {
    std::lock_guard lock(mutex_);
    auto it = qps_.find(qp);
    if (it == qps_.end() || !it->second.attached) return;
    // Detaching needs INIT or RTS, like attaching; in other states (RTR, SQD, error) the
    // device drops the association with the QP itself.
    if (qp->state != IBV_QPS_INIT && qp->state != IBV_QPS_RTS) return;
    auto tree = trees_.find(qp->context);
    if (tree == trees_.end() || !tree->second) return;
    SchedStatus s = tree->second->detach(QpRef{qp, it->second.qpNum, it->second.type});
    if (s.ok()) {
        it->second.attached = false;
    } else {
        logOnce("detach:" + std::to_string(s.error), s.message);
    }
}

void Preload::afterDestroy(ibv_qp* qp, int rc) {
    std::lock_guard lock(mutex_);
    auto it = qps_.find(qp);
    if (it == qps_.end()) return;
    if (rc != 0) return;  // the QP lives on, and so does what we know of it
    cmQps_.erase(qp);
    if (it->second.atRtr && fd_ >= 0) send(it->second, MessageKind::Destroy);
    qps_.erase(it);
}

void Preload::beforeClose(ibv_context* context) {
    std::lock_guard lock(mutex_);
    auto it = trees_.find(context);
    if (it == trees_.end()) return;
    if (it->second) {
        if (SchedStatus s = it->second->teardown(); !s.ok()) logOnce("teardown", s.message);
    }
    trees_.erase(it);
}

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
    if (rc == 0 && qp_attr && qp_attr_mask && (*qp_attr_mask & IBV_QP_AV)) {
        cmAttr = qp_attr;
        cmDlid = qp_attr->ah_attr.dlid;
        cmSl = qp_attr->ah_attr.sl;
    }
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
