// SPDX-License-Identifier: MIT
// libibqos_preload.so: each QP joins its scheduling leaf at RTR and is reported to the agent.
//
// rdma-core 44 exports ibv_modify_qp, ibv_destroy_qp and ibv_close_device as real functions
// (version IBVERBS_1.1; verbs.h has no inline wrapper for them), so LD_PRELOAD interposes
// exactly what applications and librdmacm call. Defining them with the same version binds
// references to ibv_modify_qp@IBVERBS_1.1 here, while the 1.0 compatibility ABI (a different
// struct layout) is left alone. The next definition is found with dlvsym(RTLD_NEXT).
//
// Rules: the verbs call always goes through, with the arguments and result it had; every
// failure of ours is logged once and changes nothing else; errno is the real call's; no
// exception leaves this file; nothing runs until the first QP reaches RTR.
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "host-sched/sched/mlx5_api.hpp"
#include "host-sched/sched/sched_mlx5.hpp"
#include "host-sched/sched/sched_simulated.hpp"

namespace {

using namespace ibqos::host;

using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
using DestroyQpFn = int (*)(ibv_qp*);
using CloseDeviceFn = int (*)(ibv_context*);

template <typename Fn>
Fn nextSymbol(const char* name) {
    void* p = dlvsym(RTLD_NEXT, name, "IBVERBS_1.1");
    if (!p) p = dlsym(RTLD_NEXT, name);
    return reinterpret_cast<Fn>(p);
}

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

std::string deviceOf(const ibv_qp* qp) {
    if (!qp->context || !qp->context->device) return "unknown";
    std::string name(qp->context->device->name,
                     strnlen(qp->context->device->name, IBV_SYSFS_NAME_MAX));
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

    void beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask);
    void afterRtr(ibv_qp* qp);
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
    void logOnce(const std::string& key, const std::string& message);

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
};

Preload::Preload() { pthread_atfork(prepareFork, parentAfterFork, childAfterFork); }

void Preload::childAfterFork() {
    // The child owns none of the parent's QPs or connection: start afresh. The trees stay
    // the parent's: forgotten here, never destroyed from the child.
    Preload& p = instance();
    if (p.fd_ >= 0) close(p.fd_);
    p.fd_ = -1;
    p.qps_.clear();
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
    const char* socket = std::getenv("IBQOS_AGENT_SOCKET");
    socketPath_ = socket && *socket ? socket : DefaultAgentSocket;
    const char* backend = std::getenv("IBQOS_SCHED_BACKEND");
    if (backend && *backend) backend_ = backend;
    if (backend_ != "mlx5" && backend_ != "simulated" && backend_ != "none") {
        logOnce("backend", "IBQOS_SCHED_BACKEND='" + backend_ +
                               "' is not mlx5, simulated or none; QPs are not attached to leaves");
        backend_ = "none";
    }
    const char* planFile = std::getenv("IBQOS_PLAN");
    std::string path = planFile && *planFile ? planFile : DefaultPlanPath;
    std::string error;
    plan_ = readPlanFile(path, error);
    if (!plan_) {
        logOnce("plan", "no host plan (" + error + "); QPs keep the device's default scheduling");
    }
    if (backend_ == "mlx5" && plan_ && !plan_->empty()) {
        mlx5Ready_ = loadMlx5Api(mlx5_, error);
        if (!mlx5Ready_) logOnce("mlx5", error + "; QPs are not attached to leaves");
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

void Preload::beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask) {
    std::lock_guard lock(mutex_);
    configure();
    QpRecord record;
    record.device = deviceOf(qp);
    record.qpNum = qp->qp_num;
    record.type = qpTypeOf(qp);
    // The SL the application got from the SA is in the address vector of the RTR transition
    // (RC and UC carry one; UD QPs take theirs per address handle, so they have none here).
    if ((mask & IBV_QP_AV) && attr->ah_attr.sl < 16) {
        record.sl = attr->ah_attr.sl;
        record.port = attr->ah_attr.port_num;
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
    // A new connection (first, or after the agent restarted): tell it everything.
    for (auto& [qp, record] : qps_) record.reported = false;
    for (auto& [qp, record] : qps_) {
        if (record.atRtr) send(record, MessageKind::Rtr);
    }
    return fd_ >= 0;
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
    }
    std::string text = encodeAgentMessage(m);
    if (::send(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            logOnce("agent-busy", "the agent is not keeping up; a QP report was dropped");
            return;
        }
        logOnce("agent-lost",
                std::string("lost the agent (") + std::strerror(errno) + "); reconnecting later");
        close(fd_);
        fd_ = -1;
        return;
    }
    if (kind == MessageKind::Rtr) record.reported = true;
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
    if (rtr) guarded([&] { Preload::instance().beforeRtr(qp, attr, attr_mask); });
    int rc = real(qp, attr, attr_mask);
    if (rtr && rc == 0) guarded([&] { Preload::instance().afterRtr(qp); });
    return rc;
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

}  // extern "C"
