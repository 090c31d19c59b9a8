// SPDX-License-Identifier: MIT
// AgentState: QPs reported by preloaded applications, their leaves and PCC slots.
#include "host-sched/agent/agent_state.hpp"

#include <fstream>
#include <iterator>

namespace ibqos::host {

namespace {

constexpr size_t LoggedRejectsPerClient = 3;
constexpr size_t MaxLoggedKeys = 4096;

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
      log_(std::move(log)) {}

AgentState::~AgentState() { shutdown(); }

void AgentState::logOnce(const std::string& key, const std::string& message) {
    // Keys can come from clients (pids): past a bound, stay quiet rather than grow.
    if (logged_.size() >= MaxLoggedKeys) return;
    if (logged_.insert(key).second) log_(message);
}

void AgentState::reject(uint64_t client, const std::string& why) {
    ++rejected_;
    if (++rejectedByClient_[client] <= LoggedRejectsPerClient) {
        log_("client " + std::to_string(client) + ": message ignored: " + why);
    }
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
        logOnce("apply:" + qp.device + ":" + std::to_string(*leaf.pccSlot),
                "device " + qp.device + ": cannot apply pcc-slot " + std::to_string(*leaf.pccSlot) +
                    " to QP " + std::to_string(qp.qpNum) + ": " + s.message);
        return;
    }
    qp.slot = leaf.pccSlot;
}

AgentState::QpMap::iterator AgentState::forget(QpMap::iterator it) {
    if (PccSlots* slots = slotsOf(it->second.device)) slots->forgetQp(it->second.qpNum);
    return qps_.erase(it);
}

std::string AgentState::leafName(const TrackedQp& qp) const {
    return qp.leaf ? plan_.elements()[*qp.leaf].name : "";
}

bool AgentState::track(uint64_t client, const AgentMessage& m) {
    Key key{m.device, m.qpNum};
    auto old = qps_.find(key);
    if (old != qps_.end()) {
        // Clients that close their connection lose their QPs, so a QP number still held is
        // held by a live process: only that process may report it again.
        if (old->second.pid != m.pid) {
            reject(client, "QP " + std::to_string(m.qpNum) + " of " + m.device +
                               " is held by pid " + std::to_string(old->second.pid));
            return false;
        }
        forget(old);
    }
    TrackedQp qp;
    qp.client = client;
    qp.pid = m.pid;
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
        logOnce("leaf:" + std::to_string(m.pid),
                "pid " + std::to_string(m.pid) + " put QP " + std::to_string(m.qpNum) +
                    " on leaf '" + (qp.clientLeaf.empty() ? "-" : qp.clientLeaf) +
                    "' but this agent's policy says '" + (agentLeaf.empty() ? "-" : agentLeaf) +
                    "': do both read the same policy?");
    }
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
    switch (m->kind) {
        case MessageKind::Rtr:
        case MessageKind::Destroy:
        case MessageKind::Ah:
            // A process speaks only for itself.
            if (peer.pid != 0 && m->pid != peer.pid) {
                reject(client, "pid " + std::to_string(m->pid) + " is not the sender's (" +
                                   std::to_string(peer.pid) + ")");
                return {};
            }
            if (m->kind == MessageKind::Ah || (m->kind == MessageKind::Rtr && track(client, *m))) {
                noteOutcome(*m);
            } else if (auto it = qps_.find({m->device, m->qpNum});
                       m->kind == MessageKind::Destroy && it != qps_.end() &&
                       it->second.pid == m->pid) {
                forget(it);
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
            return resolve(client, *m);
        case MessageKind::Qp:
        case MessageKind::End:
        case MessageKind::Path:
            reject(client, "'" + std::string(messageKindName(m->kind)) +
                               "' is sent by the agent, not to it");
            return {};
    }
    return {};
}

std::vector<std::string> AgentState::resolve(uint64_t client, const AgentMessage& m) {
    ++counter(counters_, Counter::Resolves);
    PathKey key{m.device, m.port, m.slid, m.dlid, m.pkey};
    std::optional<PathReply> known;
    if (!resolver_) {
        known = PathReply{};
    } else if ((known = resolver_->cached(key))) {
        ++counter(counters_, Counter::CacheHits);
    } else if (resolver_->ask(key, Waiter{client, m.id})) {
        return {};  // answered when the SA is
    } else {
        ++counter(counters_, Counter::Busy);
        logOnce("busy",
                "too many paths waiting for the SA: RTRs keep their own SL until the "
                "queue drains (counted as busy)");
        known = PathReply{PathAnswer::Busy, std::nullopt};
    }
    return {pathMessage(m.id, *known)};
}

std::vector<std::pair<uint64_t, std::string>> AgentState::answers() {
    std::vector<std::pair<uint64_t, std::string>> out;
    if (!resolver_) return out;
    for (const auto& [waiter, path] : resolver_->takeAnswers())
        out.emplace_back(waiter.client, pathMessage(waiter.id, path));
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

void AgentState::noteOutcome(const AgentMessage& m) {
    // Who, for the log: read only when something is logged.
    auto subject = [&m] {
        const bool ah = m.kind == MessageKind::Ah;
        return "pid " + std::to_string(m.pid) + " (" + programOf(m.pid) + ") " +
               (ah ? std::string("a UD address handle") : "QP " + std::to_string(m.qpNum)) +
               " on " + m.device + " to DLID " + std::to_string(m.dlid);
    };
    auto sl = [](const std::optional<uint8_t>& v) { return v ? std::to_string(*v) : "-"; };
    switch (m.outcome) {
        case SlOutcome::Replaced:
            ++counter(counters_, Counter::Replaced);
            break;
        case SlOutcome::Differs:
            // One line per process and path (status lists every QP).
            ++counter(counters_, Counter::Differs);
            logOnce("audit:" + std::to_string(m.pid) + ":" + m.device + ":" +
                        std::to_string(m.port) + ":" + std::to_string(m.dlid) + ":" + sl(m.appSl),
                    "audit: " + subject() + " uses SL " + sl(m.appSl) + "; the SA answers SL " +
                        sl(m.saSl) + " for that path");
            break;
        case SlOutcome::NoAnswer:
            ++counter(counters_, Counter::NoAnswer);
            logOnce("no-answer:" + std::to_string(m.pid),
                    subject() + ": no SA answer in time, the application's SL " + sl(m.appSl) +
                        " was kept (further ones of this process are counted, not logged)");
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
