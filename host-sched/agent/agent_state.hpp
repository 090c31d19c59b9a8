// SPDX-License-Identifier: MIT
// AgentState: what the agent knows about QPs and what it has applied, driven by messages.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/agent/log_limiter.hpp"
#include "host-sched/agent/qp_owners.hpp"
#include "host-sched/agent/sl_resolver.hpp"
#include "host-sched/pcc/pcc_slots.hpp"
#include "host-sched/plan/host_plan.hpp"

namespace ibqos::host {

// A QP a client reported, with what the agent did for it.
struct TrackedQp {
    uint64_t client = 0;
    uint32_t pid = 0;  // the owner, as the kernel names it in the agent's PID namespace
    uint32_t uid = 0;  // the user of the client that reported it
    std::string device;
    uint8_t port = 0;
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
    std::optional<uint8_t> sl;
    std::string clientLeaf;        // the leaf the client's preload library used
    bool attached = false;         // whether its backend attached the QP
    std::optional<size_t> leaf;    // the agent's plan: leaf of the SL
    std::optional<uint32_t> slot;  // the PCC slot applied to the QP (nullopt: none, or failed)
    uint16_t dlid = 0;             // 0: not reported
    std::optional<SlMode> mode;    // the process's SL enforcement, as its library reported it
    std::optional<uint8_t> appSl;  // the SL the application chose
    std::optional<uint8_t> saSl;   // the SA's answer for the QP's path
    SlOutcome outcome = SlOutcome::None;
};

// The peer of a connection, as the kernel reports it (SO_PEERCRED) in the agent's PID
// namespace; pid 0 when unknown.
struct ClientCredentials {
    uint32_t pid = 0;
    uint32_t uid = 0;
};

// What one user (uid) may hold in the agent at once; each refusal is counted and logged.
struct ClientLimits {
    size_t connections = 256;  // open connections (one per process)
    size_t qps = 65536;        // tracked QPs
    size_t resolves = 1024;    // resolve questions waiting for the SA
    size_t answers = 65536;    // datagrams queued for the user's connections, unread
};

// Opens the PCC engine of a device (openPccEngine in production, a fake in tests).
using PccEngineOpener =
    std::function<std::unique_ptr<PccEngine>(const std::string& device, std::string& error)>;

// The agent without its sockets: every client message goes through handle(), so that tests
// and the fuzzer reach all of it. Never throws on client input; bad messages are counted
// and logged (rate-limited) and change nothing. A QP is steered only when the kernel says
// the reporting process owns it.
class AgentState {
  public:
    AgentState(HostPlan plan, PccEngineOpener opener, uint32_t intervalUs, unsigned threads,
               std::function<void(const std::string&)> log);
    ~AgentState();

    // Answers resolve messages through this resolver (borrowed; it must outlive the state).
    // Without one, every resolve is answered "failed" at once.
    void setResolver(SlResolver* resolver) { resolver_ = resolver; }
    // Asks this source who owns each reported QP (borrowed; it must outlive the state).
    // Without one, no QP is steered: every report is refused.
    void setQpOwners(QpOwners* owners) { owners_ = owners; }
    void setLimits(const ClientLimits& limits) { limits_ = limits; }
    const ClientLimits& limits() const { return limits_; }
    // Handles one datagram from a client; returns the datagrams to send back.
    std::vector<std::string> handle(uint64_t client, const ClientCredentials& peer,
                                    std::string_view bytes);
    // The resolver's eventfd (-1 without one): when readable, answers() has replies to send.
    int answersFd() const { return resolver_ ? resolver_->eventFd() : -1; }
    // The path answers that came from the SA, as (client, datagram).
    std::vector<std::pair<uint64_t, std::string>> answers();
    // Forgets the cached SA answers (a new policy or fabric).
    void invalidatePaths();
    Counters counters() const;
    // A client closed its connection (or died): its QPs are gone with it.
    void clientGone(uint64_t client);
    // Installs a new plan (policy reload): slots re-registered, every QP re-applied.
    void replacePlan(HostPlan plan);
    // Unregisters every slot of every device.
    void shutdown();

    std::vector<TrackedQp> qps() const;
    const HostPlan& plan() const { return plan_; }
    size_t rejectedMessages() const { return rejected_; }
    // Refusals for a user's limit (connections counted by the server through refuse()).
    size_t refusedByLimit() const { return refusedByLimit_; }
    // The server refused something of a user's for a limit: counted and logged (rate-limited).
    void refuse(uint32_t uid, const std::string& what);
    // Writes one client-caused line through the rate limit (kinds are the agent's words).
    void logLimited(const std::string& kind, const std::string& message,
                    const std::string& key = {});
    // Ends the log's window when due (the server calls it at least once a second).
    void tick() { limitedLog_.tick(); }
    // Writes what the log's window held back so far (on the way out).
    void flushLog() { limitedLog_.flush(); }
    // QPs tracked for a user.
    size_t qpsOf(uint32_t uid) const;
    // The slots of a device, or nullptr when none were installed there.
    PccSlots* slotsOf(const std::string& device);

  private:
    using Key = std::pair<std::string, uint32_t>;  // device, QP number
    using QpMap = std::map<Key, TrackedQp>;

    // Who answers for a client's resolves once it has left (until its answers are in).
    struct ClientRecord {
        uint32_t uid = 0;
        size_t waiting = 0;
        bool gone = false;
    };

    // Tracks a reported QP; false when the kernel does not say the sender owns it, or the
    // sender's user is at its limit (rejected).
    bool track(uint64_t client, const ClientCredentials& peer, const AgentMessage& m);
    std::vector<std::string> resolve(uint64_t client, const ClientCredentials& peer,
                                     const AgentMessage& m);
    // Counts what a client's library did with an SL, and logs what an administrator must see.
    void noteOutcome(uint32_t pid, const AgentMessage& m);
    // Drops a tracked QP and its place in a PCC slot; returns the next entry.
    QpMap::iterator forget(QpMap::iterator it);
    // The name of the plan's leaf for a QP ("" when its SL has none).
    std::string leafName(const TrackedQp& qp) const;
    void applySlot(TrackedQp& qp);
    PccSlots* ensureSlots(const std::string& device);
    void reject(uint64_t client, const std::string& why);

    HostPlan plan_;
    PccEngineOpener opener_;
    uint32_t intervalUs_;
    unsigned threads_;
    std::function<void(const std::string&)> log_;
    QpMap qps_;
    std::map<std::string, std::unique_ptr<PccSlots>> devices_;
    std::set<std::string> failedDevices_;
    std::map<uint64_t, size_t> rejectedByClient_;
    LogLimiter limitedLog_;
    size_t rejected_ = 0;
    size_t refusedByLimit_ = 0;
    SlResolver* resolver_ = nullptr;
    QpOwners* owners_ = nullptr;
    ClientLimits limits_;
    std::map<uint32_t, size_t> qpsByUid_;
    std::map<uint32_t, size_t> waitingByUid_;
    std::map<uint64_t, ClientRecord> clients_;
    Counters counters_{};
};

}  // namespace ibqos::host
