// SPDX-License-Identifier: MIT
// SlEnforcer: SL enforcement's state in a process (the local ports' facts and P_Keys, the
// agent's published table) and each decision up to the question the agent must answer.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/agent/path_table.hpp"
#include "host-sched/preload/once_log.hpp"
#include "host-sched/preload/sl_decision.hpp"

namespace ibqos::host {

// Every member is called with the process lock held; the round trip to the agent is left to
// the caller, who lets go of the lock for it.
class SlEnforcer {
  public:
    explicit SlEnforcer(OnceLog& log) : log_(log) {}

    // The process's mode and bound, and the agent's table (mapped now when the mode asks).
    void configure(SlMode mode, std::chrono::milliseconds resolveTimeout, std::string tablePath);
    SlMode mode() const { return mode_; }
    std::chrono::milliseconds resolveTimeout() const { return resolveTimeout_; }
    // Maps the agent's table afresh (a new agent writes a new file), or forgets it (a child).
    void reopenTable();
    void forgetTable() { table_.reset(); }

    // The P_Key at an index of a port's table, or nullopt when it cannot be read.
    std::optional<uint16_t> pkeyOf(ibv_context* context, uint8_t port, const std::string& device,
                                   uint16_t index);

    // A decision begun: made when no agent is needed (librdmacm's vector, an exempt vector,
    // a port that cannot be queried, an answer in the agent's table), else the question the
    // agent must answer. fromCm: librdmacm made the vector from a PathRecord.
    struct Begun {
        std::optional<SlDecision> decided;
        AgentMessage question;
    };
    Begun begin(ibv_context* context, const std::string& device, uint8_t port,
                const ibv_ah_attr& av, std::optional<uint16_t> pkey, bool fromCm);
    // The decision with the agent's answer (nullopt: none came in time).
    SlDecision finish(uint8_t appSl, const std::optional<AgentMessage>& answer) const {
        return decideSl(mode_, appSl, answer);
    }

  private:
    struct PortState {
        std::chrono::steady_clock::time_point at;
        PortFacts facts;
        std::map<uint16_t, uint16_t> pkeys;  // index -> P_Key
    };
    PortState* portState(ibv_context* context, uint8_t port, const std::string& device);

    OnceLog& log_;
    SlMode mode_ = SlMode::Respect;
    std::chrono::milliseconds resolveTimeout_{5};
    std::string tablePath_;
    std::optional<PathTable> table_;  // the agent's published answers, when it publishes them
    std::map<std::pair<ibv_context*, uint8_t>, PortState> ports_;
};

}  // namespace ibqos::host
