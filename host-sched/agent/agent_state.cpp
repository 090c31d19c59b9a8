// SPDX-License-Identifier: MIT
// AgentState: QPs reported by preloaded applications, their leaves and PCC slots.
#include "host-sched/agent/agent_state.hpp"

#include <fstream>
#include <iterator>

namespace ibqos::host {

namespace {

constexpr size_t LoggedRejectsPerClient = 3;

// What a process is called, for the log (its /proc comm), or "?".
std::string programOf(uint32_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name.empty() ? "?" : name;
}

uint64_t& counter(Counters& counters, Counter c) { return counters[static_cast<size_t>(c)]; }

std::string pathMessage(uint32_t id, const PathReply& path) {
    AgentMessage reply;
    reply.kind = MessageKind::Path;
    reply.id = id;
    reply.answer = path.answer;
    reply.sl = path.sl;
    return encodeAgentMessage(reply);
}

}  // namespace

AgentState::AgentState(HostPlan plan, PccEngineOpener opener, uint32_t intervalUs, unsigned threads,
                       std::function<void(const std::string&)> log)
    : plan_(std::move(plan)),
      opener_(std::move(opener)),
      intervalUs_(intervalUs),
      threads_(threads),
      log_(log),
      limitedLog_(log) {}

AgentState::~AgentState() { shutdown(); }

void AgentState::logLimited(const std::string& kind, const std::string& message,
                            const std::string& key) {
    limitedLog_.line(kind, message, key);
}

void AgentState::reject(uint64_t client, const std::string& why) {
    ++rejected_;
    if (++rejectedByClient_[client] <= LoggedRejectsPerClient) {
        logLimited("messages ignored",
                   "client " + std::to_string(client) + ": message ignored: " + why);
    }
}

void AgentState::refuse(uint32_t uid, const std::string& what) {
    ++refusedByLimit_;
    logLimited("refused for a limit", "uid " + std::to_string(uid) + ": " + what,
               "limit:" + std::to_string(uid) + ":" + what.substr(0, what.find(':')));
}

size_t AgentState::qpsOf(uint32_t uid) const {
    auto it = qpsByUid_.find(uid);
    return it == qpsByUid_.end() ? 0 : it->second;
}

PccSlots* AgentState::slotsOf(const std::string& device) {
    auto it = devices_.find(device);
    return it == devices_.end() ? nullptr : it->second.get();
}

PccSlots* AgentState::ensureSlots(const std::string& device) {
    if (PccSlots* slots = slotsOf(device)) return slots;
    if (failedDevices_.count(device)) return nullptr;
    std::string error;
    std::unique_ptr<PccEngine> engine = opener_(device, error);
    if (!engine) {
        failedDevices_.insert(device);
        log_("device " + device + ": no PCC engine: " + error +
             "; its QPs keep the device's congestion control");
        return nullptr;
    }
    auto slots = std::make_unique<PccSlots>(std::move(engine), intervalUs_);
    if (PccStatus s = slots->install(plan_, threads_); !s.ok()) {
        failedDevices_.insert(device);
        log_("device " + device + ": cannot install the PCC slots: " + s.message);
        return nullptr;
    }
    log_("device " + device + ": PCC engine '" + std::string(slots->engine().kind()) + "' with " +
         std::to_string(plan_.slots().size()) + " slots");
    return devices_.emplace(device, std::move(slots)).first->second.get();
}

void AgentState::applySlot(TrackedQp& qp) {
    qp.leaf = qp.sl ? plan_.leafForSl(*qp.sl) : std::nullopt;
    qp.slot.reset();
    if (!qp.leaf) return;
    const PlanElement& leaf = plan_.elements()[*qp.leaf];
    if (!leaf.pccSlot) return;
    PccSlots* slots = ensureSlots(qp.device);
    if (!slots) return;
    if (PccStatus s = slots->applyToQp(*leaf.pccSlot, qp.qpNum); !s.ok()) {
        logLimited("pcc apply failed",
                   "device " + qp.device + ": cannot apply pcc-slot " +
                       std::to_string(*leaf.pccSlot) + " to QP " + std::to_string(qp.qpNum) + ": " +
                       s.message,
                   "apply:" + qp.device + ":" + std::to_string(*leaf.pccSlot));
        return;
    }
    qp.slot = leaf.pccSlot;
}

AgentState::QpMap::iterator AgentState::forget(QpMap::iterator it) {
    const TrackedQp& qp = it->second;
    // The QP goes back to the device's own congestion control: a QP that outlives its report
    // (its process closed the connection, or its number is reported again) keeps no slot.
    if (PccSlots* slots = slotsOf(qp.device)) {
        if (PccStatus s = slots->forgetQp(qp.qpNum); !s.ok()) {
            logLimited("pcc release failed",
                       "device " + qp.device + ": QP " + std::to_string(qp.qpNum) +
                           " keeps its PCC slot until it is destroyed: " + s.message,
                       "release:" + qp.device);
        }
    }
    if (auto u = qpsByUid_.find(qp.uid); u != qpsByUid_.end() && --u->second == 0)
        qpsByUid_.erase(u);
    return qps_.erase(it);
}

std::string AgentState::leafName(const TrackedQp& qp) const {
    return qp.leaf ? plan_.elements()[*qp.leaf].name : "";
}

bool AgentState::track(uint64_t client, const ClientCredentials& peer, const AgentMessage& m) {
    // The kernel, not the message, says whose QP this is: the task that created it (rdma
    // netlink) must be the process at the other end of the connection (SO_PEERCRED), both as
    // the agent's PID namespace sees them. The message's pid is the sender's own view (another
    // number inside a container) and is not trusted.
    const std::string qpName = "QP " + std::to_string(m.qpNum) + " of " + m.device;
    if (peer.pid == 0) {
        reject(client, "the kernel does not say which process sent it");
        return false;
    }
    QpOwner owner = owners_ ? owners_->ownerOf(m.device, m.qpNum)
                            : QpOwner{QpOwner::Kind::Unknown, 0, "no source of QP owners"};
    if (owner.kind != QpOwner::Kind::Process || owner.pid != peer.pid) {
        ++rejected_;
        std::string whose =
            owner.kind == QpOwner::Kind::Process  ? "pid " + std::to_string(owner.pid) + "'s"
            : owner.kind == QpOwner::Kind::Kernel ? "the kernel's"
            : owner.kind == QpOwner::Kind::Absent ? "not a QP the kernel knows"
                                                  : "of unknown owner (" + owner.detail + ")";
        logLimited("QP claims refused",
                   "refused: pid " + std::to_string(peer.pid) + " (uid " +
                       std::to_string(peer.uid) + ", " + programOf(peer.pid) + ") reported " +
                       qpName + ", which is " + whose,
                   "claim:" + std::to_string(peer.uid) + ":" + std::to_string(owner.pid));
        return false;
    }
    Key key{m.device, m.qpNum};
    auto old = qps_.find(key);
    if (old != qps_.end()) {
        // The kernel says this process owns the number now: what was tracked under it is a
        // destroyed QP whose number came back.
        forget(old);
    }
    if (qpsOf(peer.uid) >= limits_.qps) {
        ++rejected_;
        refuse(peer.uid, "QP report refused: the user's processes hold " +
                             std::to_string(qpsOf(peer.uid)) + " tracked QPs (the limit)");
        return false;
    }
    TrackedQp qp;
    qp.client = client;
    qp.pid = peer.pid;
    qp.uid = peer.uid;
    qp.device = m.device;
    qp.port = m.port;
    qp.qpNum = m.qpNum;
    qp.type = m.type;
    qp.sl = m.sl;
    qp.clientLeaf = m.leaf;
    qp.attached = m.attached;
    qp.dlid = m.dlid;
    qp.mode = m.mode;
    qp.appSl = m.appSl;
    qp.saSl = m.saSl;
    qp.outcome = m.outcome;
    applySlot(qp);
    std::string agentLeaf = leafName(qp);
    if (!sameName(agentLeaf, qp.clientLeaf)) {
        logLimited("leaf differences",
                   "pid " + std::to_string(peer.pid) + " put QP " + std::to_string(m.qpNum) +
                       " on leaf '" + (qp.clientLeaf.empty() ? "-" : qp.clientLeaf) +
                       "' but this agent's policy says '" + (agentLeaf.empty() ? "-" : agentLeaf) +
                       "': do both read the same policy?",
                   "leaf:" + std::to_string(peer.pid));
    }
    ++qpsByUid_[peer.uid];
    qps_.emplace(key, std::move(qp));
    return true;
}

std::vector<std::string> AgentState::handle(uint64_t client, const ClientCredentials& peer,
                                            std::string_view bytes) {
    MessageError error;
    std::optional<AgentMessage> m = parseAgentMessage(bytes, error);
    if (!m) {
        reject(client, "byte " + std::to_string(error.offset) + ": " + error.message);
        return {};
    }
    clients_.try_emplace(client, ClientRecord{peer.uid, 0, false});
    switch (m->kind) {
        case MessageKind::Rtr:
            if (track(client, peer, *m)) noteOutcome(peer.pid, *m);
            return {};
        case MessageKind::Ah:
            noteOutcome(peer.pid, *m);
            return {};
        case MessageKind::Destroy:
            // Only the connection that reported a QP can take it back.
            if (auto it = qps_.find({m->device, m->qpNum});
                it != qps_.end() && it->second.client == client) {
                forget(it);
            } else {
                reject(client, "QP " + std::to_string(m->qpNum) + " of " + m->device +
                                   " was not reported on this connection");
            }
            return {};
        case MessageKind::Status: {
            std::vector<std::string> out;
            for (const auto& [key, qp] : qps_) {
                AgentMessage r;
                r.kind = MessageKind::Qp;
                r.pid = qp.pid;
                r.device = qp.device;
                r.port = qp.port;
                r.qpNum = qp.qpNum;
                r.type = qp.type;
                r.sl = qp.sl;
                r.leaf = leafName(qp);
                r.attached = qp.attached;
                r.slot = qp.slot;
                r.dlid = qp.dlid;
                r.mode = qp.mode;
                r.appSl = qp.appSl;
                r.saSl = qp.saSl;
                r.outcome = qp.outcome;
                if (qp.slot) {
                    if (PccSlots* slots = slotsOf(qp.device)) {
                        if (const PccAlgorithm* a = slots->algorithmOf(*qp.slot))
                            r.algorithm = a->name;
                    }
                }
                out.push_back(encodeAgentMessage(r));
            }
            AgentMessage end;
            end.kind = MessageKind::End;
            end.count = static_cast<uint32_t>(qps_.size());
            end.counters = counters();
            out.push_back(encodeAgentMessage(end));
            return out;
        }
        case MessageKind::Resolve:
            return resolve(client, peer, *m);
        case MessageKind::Qp:
        case MessageKind::End:
        case MessageKind::Path:
            reject(client, "'" + std::string(messageKindName(m->kind)) +
                               "' is sent by the agent, not to it");
            return {};
    }
    return {};
}

std::vector<std::string> AgentState::resolve(uint64_t client, const ClientCredentials& peer,
                                             const AgentMessage& m) {
    ++counter(counters_, Counter::Resolves);
    PathKey key{m.device, m.port, m.slid, m.dlid, m.pkey};
    std::optional<PathReply> known;
    size_t& waiting = waitingByUid_[peer.uid];
    if (!resolver_) {
        known = PathReply{};
    } else if ((known = resolver_->cached(key))) {
        ++counter(counters_, Counter::CacheHits);
    } else if (waiting >= limits_.resolves) {
        ++counter(counters_, Counter::Busy);
        refuse(peer.uid, "resolve answered busy: " + std::to_string(waiting) +
                             " of the user's questions wait for the SA (the limit)");
        known = PathReply{PathAnswer::Busy, std::nullopt};
    } else if (resolver_->ask(key, Waiter{client, m.id})) {
        ++waiting;
        ++clients_[client].waiting;
        return {};  // answered when the SA is
    } else {
        ++counter(counters_, Counter::Busy);
        logLimited("resolves busy",
                   "too many paths waiting for the SA: RTRs keep their own SL until the "
                   "queue drains (counted as busy)",
                   "busy");
        known = PathReply{PathAnswer::Busy, std::nullopt};
    }
    if (waiting == 0) waitingByUid_.erase(peer.uid);
    return {pathMessage(m.id, *known)};
}

std::vector<std::pair<uint64_t, std::string>> AgentState::answers() {
    std::vector<std::pair<uint64_t, std::string>> out;
    if (!resolver_) return out;
    for (const auto& [waiter, path] : resolver_->takeAnswers()) {
        if (auto c = clients_.find(waiter.client); c != clients_.end() && c->second.waiting > 0) {
            --c->second.waiting;
            if (auto w = waitingByUid_.find(c->second.uid);
                w != waitingByUid_.end() && --w->second == 0)
                waitingByUid_.erase(w);
            if (c->second.gone && c->second.waiting == 0) clients_.erase(c);
        }
        out.emplace_back(waiter.client, pathMessage(waiter.id, path));
    }
    return out;
}

void AgentState::invalidatePaths() {
    if (!resolver_) return;
    resolver_->invalidate();
    ++counter(counters_, Counter::Invalidations);
}

Counters AgentState::counters() const {
    Counters c = counters_;
    if (resolver_) {
        c[static_cast<size_t>(Counter::SaQueries)] = resolver_->saQueries();
        c[static_cast<size_t>(Counter::SaFailed)] = resolver_->saFailed();
        c[static_cast<size_t>(Counter::Invalidations)] += resolver_->changes();
    }
    return c;
}

void AgentState::noteOutcome(uint32_t pid, const AgentMessage& m) {
    // Who, for the log: read only when something is logged.
    auto subject = [&m, pid] {
        const bool ah = m.kind == MessageKind::Ah;
        return "pid " + std::to_string(pid) + " (" + programOf(pid) + ") " +
               (ah ? std::string("a UD address handle") : "QP " + std::to_string(m.qpNum)) +
               " on " + m.device + " to DLID " + std::to_string(m.dlid);
    };
    auto sl = [](const std::optional<uint8_t>& v) { return v ? std::to_string(*v) : "-"; };
    switch (m.outcome) {
        case SlOutcome::Replaced:
            ++counter(counters_, Counter::Replaced);
            break;
        case SlOutcome::Differs:
            // One line per process and path a window; past the window's budget the
            // differences are counted and summarized, never silenced for good (status lists
            // every QP).
            ++counter(counters_, Counter::Differs);
            logLimited("audit differences",
                       "audit: " + subject() + " uses SL " + sl(m.appSl) + "; the SA answers SL " +
                           sl(m.saSl) + " for that path",
                       "audit:" + std::to_string(pid) + ":" + m.device + ":" +
                           std::to_string(m.port) + ":" + std::to_string(m.dlid) + ":" +
                           sl(m.appSl));
            break;
        case SlOutcome::NoAnswer:
            ++counter(counters_, Counter::NoAnswer);
            logLimited("SA answers missing",
                       subject() + ": no SA answer in time, the application's SL " + sl(m.appSl) +
                           " was kept (further ones of this process are counted, not logged)",
                       "no-answer:" + std::to_string(pid));
            break;
        default:
            break;
    }
}

void AgentState::clientGone(uint64_t client) {
    for (auto it = qps_.begin(); it != qps_.end();) {
        it = it->second.client == client ? forget(it) : std::next(it);
    }
    rejectedByClient_.erase(client);
    if (auto c = clients_.find(client); c != clients_.end()) {
        if (c->second.waiting == 0) {
            clients_.erase(c);
        } else {
            c->second.gone = true;  // its answers still come, and free its user's count
        }
    }
}

void AgentState::replacePlan(HostPlan plan) {
    shutdown();
    plan_ = std::move(plan);
    failedDevices_.clear();
    for (auto& [key, qp] : qps_) applySlot(qp);
}

void AgentState::shutdown() {
    for (auto& [device, slots] : devices_) {
        if (PccStatus s = slots->uninstall(); !s.ok()) {
            log_("device " + device + ": cannot unregister the PCC slots: " + s.message);
        }
    }
    devices_.clear();
}

std::vector<TrackedQp> AgentState::qps() const {
    std::vector<TrackedQp> out;
    for (const auto& [key, qp] : qps_) out.push_back(qp);
    return out;
}

}  // namespace ibqos::host
