// SPDX-License-Identifier: MIT
// Preload: each QP joins its scheduling leaf at RTR and is reported to the agent; SL
// enforcement's decisions are made here with the facts SlEnforcer keeps.
//
// Locking: one process lock (mutex_) guards the library's state, in short steps. A decision
// that needs the agent is made in three: under the lock, the QP's facts are gathered and the
// question sent (without blocking); without it, the thread waits for the answer (AgentLink,
// which lets many threads wait on the one connection); under the lock again, the answer is
// applied to the QP's record. Another thread's RTR, address handle or destroy meanwhile waits
// for a step, never for the agent. Lock order: the process lock, then AgentLink's.
#include "host-sched/preload/preload.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "host-sched/agent/path_table.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "host-sched/preload/next_symbol.hpp"
#include "host-sched/sched/sched_mlx5.hpp"
#include "host-sched/sched/sched_simulated.hpp"
#include "ib/qos.hpp"

namespace ibqos::host {

namespace {

using QueryQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);

// Vectors librdmacm handed out for UD (dlid, sl), remembered at most.
constexpr size_t MaxCmVectors = 4096;

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

}  // namespace

Preload& Preload::instance() {
    // Never destroyed: applications may call verbs from their own exit handlers.
    static Preload* preload = new Preload;
    return *preload;
}

Preload::Preload() { pthread_atfork(prepareFork, parentAfterFork, childAfterFork); }

void Preload::prepareFork() {
    Preload& p = instance();
    p.mutex_.lock();
    p.agent_.lockForFork();
}

void Preload::parentAfterFork() {
    Preload& p = instance();
    p.agent_.unlockAfterFork();
    p.mutex_.unlock();
}

void Preload::childAfterFork() {
    // The child owns none of the parent's QPs or connection: start afresh. The trees stay
    // the parent's: forgotten here, never destroyed from the child.
    Preload& p = instance();
    p.agent_.resetInChild();
    p.agent_.unlockAfterFork();
    p.qps_.clear();
    p.devxQps_.clear();
    p.cmQps_.clear();
    p.enforcer_.forgetTable();
    for (auto& [context, tree] : p.trees_) (void)tree.release();
    p.trees_.clear();
    p.nextConnect_ = {};
    p.mutex_.unlock();
}

void Preload::cmAttributes(const ibv_qp_attr* attr) {
    cmAttr = attr;
    cmDlid = attr->ah_attr.dlid;
    cmSl = attr->ah_attr.sl;
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
            logOnce_(name, std::string(name) + " is ignored: this host's plan (" + DefaultPlanPath +
                               ") enforces SLs");
            return "";
        }
        return v;
    };
    socketPath_ = setting("IBQOS_AGENT_SOCKET");
    if (socketPath_.empty()) socketPath_ = DefaultAgentSocket;
    std::string tablePath = setting("IBQOS_PATH_TABLE");
    if (tablePath.empty()) tablePath = DefaultPathTable;
    if (const char* backend = secure_getenv("IBQOS_SCHED_BACKEND"); backend && *backend)
        backend_ = backend;
    if (backend_ != "mlx5" && backend_ != "simulated" && backend_ != "none") {
        logOnce_("backend", "IBQOS_SCHED_BACKEND='" + backend_ +
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
        logOnce_("plan", "no host plan (" + error + "); QPs keep the device's default scheduling");
    }
    if (backend_ == "mlx5" && plan_ && !plan_->empty()) {
        mlx5Ready_ = loadMlx5Api(mlx5_, error, [](const char* name, const char* version) {
            return findDefinition(name, version);
        });
        if (!mlx5Ready_) logOnce_("mlx5", error + "; QPs are not attached to leaves");
    }

    // The policy's mode for this program; the environment may only make it stricter.
    SlMode mode = SlMode::Respect;
    std::chrono::milliseconds resolveTimeout{5};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string exeName = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    exeName = exeName.substr(exeName.rfind('/') + 1);
    if (plan_) {
        if (const SlEnforcement* e =
                plan_->enforcementFor({exeName, program_invocation_short_name})) {
            mode = e->mode;
            resolveTimeout = std::chrono::milliseconds(e->resolveTimeoutMs);
        }
    }
    if (const char* env = secure_getenv("IBQOS_SL_ENFORCEMENT"); env && *env) {
        if (auto asked = slModeFromName(env)) {
            mode = std::max(mode, *asked);
        } else {
            logOnce_("mode", std::string("IBQOS_SL_ENFORCEMENT='") + env +
                                 "' is not respect, audit or enforce; ignored");
        }
    }
    enforcer_.configure(mode, resolveTimeout, tablePath);
}

SlDecision Preload::decide(std::unique_lock<std::mutex>& lock, const SlEnforcer::Begun& begun,
                           uint8_t appSl) {
    if (begun.decided) return *begun.decided;
    if (!connectAgent()) return enforcer_.finish(appSl, std::nullopt);
    AgentLink::Question question;
    switch (agent_.ask(question, begun.question)) {
        case AgentLink::SendResult::Sent:
            break;
        case AgentLink::SendResult::Busy:
            logOnce_("agent-busy", "the agent is not keeping up; a message was dropped");
            return enforcer_.finish(appSl, std::nullopt);
        case AgentLink::SendResult::Lost:
            logOnce_("agent-lost", std::string("lost the agent (") + std::strerror(errno) +
                                       "); reconnecting later");
            return enforcer_.finish(appSl, std::nullopt);
        case AgentLink::SendResult::NotConnected:
            return enforcer_.finish(appSl, std::nullopt);
    }
    const auto timeout = enforcer_.resolveTimeout();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    lock.unlock();
    AgentLink::WaitResult waited = agent_.await(question, deadline);
    lock.lock();
    if (waited == AgentLink::WaitResult::Lost) {
        logOnce_("agent-lost", "lost the agent; reconnecting later");
    } else if (waited == AgentLink::WaitResult::TimedOut) {
        logOnce_("agent-slow",
                 "the agent did not answer within " + std::to_string(timeout.count()) +
                     " ms; such QPs keep the application's SL (the agent counts them)");
    }
    return enforcer_.finish(appSl, question.answer());
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
            logOnce_("build:" + device,
                     "cannot build the scheduling tree on " + device + ": " + s.message);
            tree.reset();
        }
    }
    return trees_.emplace(context, std::move(tree)).first->second.get();
}

std::optional<uint8_t> Preload::beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask) {
    static std::atomic<void*> queryQpSlot{nullptr};
    const auto queryQp = cachedSymbol<QueryQpFn>(queryQpSlot, "ibv_query_qp");
    std::unique_lock lock(mutex_);
    configure();
    RtrFacts facts;
    facts.key = qp;
    facts.verbsQp = qp;
    facts.context = qp->context;
    facts.qpNum = qp->qp_num;
    facts.type = qpTypeOf(qp);
    // The SL the application chose is in the address vector of the RTR transition (RC and UC
    // carry one; UD QPs take theirs per address handle, so they have none here).
    if ((mask & IBV_QP_AV) && attr->ah_attr.sl < ib::SlCount) {
        facts.av = attr->ah_attr;
        bool connected = facts.type == QpType::Rc || facts.type == QpType::Uc;
        if (enforcer_.mode() != SlMode::Respect && connected) {
            // The QP's port and P_Key index, when the transition does not name them.
            ibv_qp_attr current{};
            ibv_qp_init_attr init{};
            bool known =
                queryQp && queryQp(qp, &current, IBV_QP_PKEY_INDEX | IBV_QP_PORT, &init) == 0;
            if (!facts.av->port_num && known) facts.av->port_num = current.port_num;
            facts.fromCm = cmQps_.count(qp) || (attr == cmAttr && attr->ah_attr.dlid == cmDlid &&
                                                attr->ah_attr.sl == cmSl);
            cmAttr = nullptr;  // it describes one transition
            if (known || (mask & IBV_QP_PKEY_INDEX))
                facts.pkeyIndex =
                    (mask & IBV_QP_PKEY_INDEX) ? attr->pkey_index : current.pkey_index;
            facts.decide = true;
        }
    }
    return rtr(lock, facts);
}

std::optional<uint8_t> Preload::rtr(std::unique_lock<std::mutex>& lock, const RtrFacts& facts) {
    QpRecord record;
    record.device = deviceOf(facts.context);
    record.qpNum = facts.qpNum;
    record.type = facts.type;
    record.mode = enforcer_.mode();
    std::optional<uint8_t> replace;
    if (facts.av) {
        const ibv_ah_attr& av = *facts.av;
        record.sl = av.sl;
        record.port = av.port_num;
        record.dlid = av.dlid;
        record.appSl = av.sl;
        if (facts.decide) {
            std::optional<uint16_t> pkey;
            if (record.port && facts.pkeyIndex && !facts.fromCm)
                pkey =
                    enforcer_.pkeyOf(facts.context, record.port, record.device, *facts.pkeyIndex);
            SlDecision d = decide(
                lock,
                enforcer_.begin(facts.context, record.device, record.port, av, pkey, facts.fromCm),
                av.sl);
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
    // still in INIT. A QP made with DEVX has no verbs QP the mlx5dv call takes.
    QpRef ref{facts.verbsQp, record.qpNum, record.type};
    if (record.leaf && backend_ != "none" && facts.verbsQp) {
        if (SchedBackend* tree = treeOf(facts.context)) {
            SchedStatus s = tree->attach(ref, *record.leaf);
            record.attached = s.ok();
            if (!s.ok())
                logOnce_("attach:" + record.device + ":" + std::to_string(s.error), s.message);
        }
    }
    // A QP reset and brought up again on an SL without a leaf leaves its old leaf.
    auto old = qps_.find(facts.key);
    if (old != qps_.end() && old->second.attached && !record.attached) {
        auto tree = trees_.find(facts.context);
        if (tree != trees_.end() && tree->second) (void)tree->second->detach(ref);
    }
    qps_[facts.key] = std::move(record);
    return replace;
}

void Preload::devxCreated(const void* obj, ibv_context* context, const devx::QpCommand& create,
                          uint32_t qpNum) {
    std::lock_guard lock(mutex_);
    DevxQp& qp = devxQps_[obj];
    qp.context = context;
    qp.qpNum = qpNum;
    qp.st = create.st;
    if (create.path.port) qp.port = create.path.port;
    if (create.path.port) qp.pkeyIndex = create.path.pkeyIndex;
}

std::optional<uint8_t> Preload::beforeDevxCommand(const void* key, ibv_qp* verbsQp,
                                                  const devx::QpCommand& command) {
    std::unique_lock lock(mutex_);
    auto known = devxQps_.find(key);
    if (command.opcode == devx::OpRst2InitQp) {
        // RST2INIT names the port and the P_Key index the QP keeps.
        if (known != devxQps_.end() && command.path.port) {
            known->second.port = command.path.port;
            known->second.pkeyIndex = command.path.pkeyIndex;
        } else if (verbsQp && command.path.port) {
            DevxQp& qp = devxQps_[key];
            qp.context = verbsQp->context;
            qp.qpNum = verbsQp->qp_num;
            qp.port = command.path.port;
            qp.pkeyIndex = command.path.pkeyIndex;
        }
        return std::nullopt;
    }
    if (command.opcode != devx::OpInit2RtrQp) return std::nullopt;
    configure();
    RtrFacts facts;
    facts.key = key;
    facts.verbsQp = verbsQp;
    const DevxQp* qp = known != devxQps_.end() ? &known->second : nullptr;
    facts.context = verbsQp ? verbsQp->context : qp ? qp->context : nullptr;
    if (!facts.context) return std::nullopt;  // a QP we did not see made: nothing to go on
    facts.qpNum = command.qpn ? command.qpn : qp ? qp->qpNum : 0;
    bool dci = false;
    if (verbsQp) {
        facts.type = qpTypeOf(verbsQp);
    } else {
        switch (qp->st) {
            case devx::StRc:
                facts.type = QpType::Rc;
                break;
            case devx::StUc:
                facts.type = QpType::Uc;
                break;
            case devx::StUd:
                facts.type = QpType::Ud;
                break;
            default:
                facts.type = QpType::Other;
                dci = qp->st == devx::StDci;
                break;
        }
    }
    const devx::AddressPath& path = command.path;
    ibv_ah_attr av{};
    av.dlid = path.rlid;
    av.sl = path.sl;
    av.src_path_bits = path.srcPathBits;
    av.is_global = path.grh;
    for (size_t i = 0; i < path.rgid.size(); ++i) av.grh.dgid.raw[i] = path.rgid[i];
    av.port_num = path.port ? path.port : qp ? qp->port : 0;
    facts.av = av;
    // A DC initiator has no destination in its context: each send names one with an address
    // vector the application made with ibv_create_ah, decided there.
    const bool connected = facts.type == QpType::Rc || facts.type == QpType::Uc;
    facts.decide = enforcer_.mode() != SlMode::Respect && connected && !dci && av.dlid != 0;
    if (qp && qp->pkeyIndex) {
        facts.pkeyIndex = qp->pkeyIndex;
    } else {
        facts.pkeyIndex = path.pkeyIndex;
    }
    return rtr(lock, facts);
}

void Preload::devxDestroyed(const void* obj) {
    {
        std::lock_guard lock(mutex_);
        devxQps_.erase(obj);
    }
    afterDestroy(obj, 0);
}

std::optional<uint8_t> Preload::beforeCreateAh(ibv_context* context, const ibv_ah_attr* attr) {
    std::unique_lock lock(mutex_);
    configure();
    if (enforcer_.mode() == SlMode::Respect || attr->sl >= ib::SlCount) return std::nullopt;
    std::string device = deviceOf(context);
    bool fromCm = cmVectors_.count({attr->dlid, attr->sl}) > 0;
    // An address handle serves every UD QP of its protection domain: no one P_Key applies.
    SlDecision d =
        decide(lock, enforcer_.begin(context, device, attr->port_num, *attr, std::nullopt, fromCm),
               attr->sl);
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
            m.mode = enforcer_.mode();
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
    if (agent_.connected()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now < nextConnect_) return false;
    nextConnect_ = now + std::chrono::seconds(1);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socketPath_.size() >= sizeof address.sun_path) {
        logOnce_("agent", "agent socket path too long: " + socketPath_);
        return false;
    }
    std::memcpy(address.sun_path, socketPath_.c_str(), socketPath_.size() + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        logOnce_("agent", "no agent at " + socketPath_ + " (" + std::strerror(errno) +
                              "); PCC slots are not applied to this process's QPs");
        if (fd >= 0) close(fd);
        return false;
    }
    agent_.adopt(fd);
    // A new connection (first, or after the agent restarted): map its table afresh (a new
    // agent writes a new file), and tell it everything.
    enforcer_.reopenTable();
    for (auto& [qp, record] : qps_) record.reported = false;
    for (auto& [qp, record] : qps_) {
        if (record.atRtr) send(record, MessageKind::Rtr);
    }
    return agent_.connected();
}

bool Preload::sendMessage(const AgentMessage& m) {
    switch (agent_.send(m)) {
        case AgentLink::SendResult::Sent:
            return true;
        case AgentLink::SendResult::Busy:
            logOnce_("agent-busy", "the agent is not keeping up; a message was dropped");
            return false;
        case AgentLink::SendResult::Lost:
            logOnce_("agent-lost", std::string("lost the agent (") + std::strerror(errno) +
                                       "); reconnecting later");
            return false;
        case AgentLink::SendResult::NotConnected:
            break;
    }
    return false;
}

void Preload::send(QpRecord& record, MessageKind kind) {
    if (!agent_.connected()) return;
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

void Preload::afterRtr(const void* qp) {
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
        logOnce_("detach:" + std::to_string(s.error), s.message);
    }
}

void Preload::afterDestroy(const void* qp, int rc) {
    std::lock_guard lock(mutex_);
    if (rc == 0) devxQps_.erase(qp);  // a verbs QP that DEVX commands moved
    auto it = qps_.find(qp);
    if (it == qps_.end()) return;
    if (rc != 0) return;  // the QP lives on, and so does what we know of it
    cmQps_.erase(static_cast<ibv_qp*>(const_cast<void*>(qp)));
    if (it->second.atRtr && agent_.connected()) send(it->second, MessageKind::Destroy);
    qps_.erase(it);
}

void Preload::beforeClose(ibv_context* context) {
    std::lock_guard lock(mutex_);
    auto it = trees_.find(context);
    if (it == trees_.end()) return;
    if (it->second) {
        if (SchedStatus s = it->second->teardown(); !s.ok()) logOnce_("teardown", s.message);
    }
    trees_.erase(it);
}

}  // namespace ibqos::host
