// SPDX-License-Identifier: MIT
// The messages between preloaded applications, the agent and its status clients.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/policy.hpp"  // SlMode
#include "host-sched/sched/sched_backend.hpp"

namespace ibqos::host {

// Where preloaded applications find the agent unless IBQOS_AGENT_SOCKET says otherwise.
inline constexpr const char* DefaultAgentSocket = "/run/ibqos/agent.sock";

// One message per datagram of a SOCK_SEQPACKET unix socket, as one line of text:
//   ibqos1 KIND key=value ...
// Values are percent-encoded outside [A-Za-z0-9_.:/+-]; every key of a kind is required
// unless marked optional, and none may repeat.
inline constexpr size_t MaxAgentMessage = 1024;

enum class MessageKind : uint8_t {
    Rtr,      // client -> agent: a QP reached RTR (pid dev [port dlid] qpn type sl leaf attached
              //                  [mode app-sl sa-sl outcome])
    Destroy,  // client -> agent: a QP is destroyed (pid dev qpn)
    Status,   // client -> agent: send me every QP you know
    Qp,       // agent -> client: one known QP (Rtr's keys, slot, algorithm)
    End,      // agent -> client: end of a status answer (count [counters])
    Resolve,  // client -> agent: the SA's SL for a path (id dev port slid dlid [pkey])
    Path,     // agent -> client: the answer to a Resolve (id answer sl)
    Ah,       // client -> agent: a UD address handle was made (pid dev port dlid sl mode app-sl
              //                  sa-sl outcome)
};

// What the SA said for a Resolve, as the agent passes it on.
enum class PathAnswer : uint8_t {
    Found,   // sl holds the SA's SL
    NoPath,  // the SA has no such path
    Busy,    // the agent has too many questions pending: not asked
    Failed,  // the SA did not answer (or no SA client for that port)
};

// What the preload library did with the SL of a QP or address handle.
enum class SlOutcome : uint8_t {
    None,       // not decided (respect mode: nothing asked)
    Agrees,     // the SA answers the application's own SL
    Replaced,   // enforce: the SA's SL replaced the application's
    Differs,    // audit: the SA answers another SL; the application's was kept
    NoAnswer,   // no answer in time (agent or SA): the application's SL was kept
    NoPath,     // the SA has no such path: the application's SL was kept
    CmPath,     // a librdmacm QP: its SL came from a PathRecord
    Ethernet,   // a RoCE port: the SL is a priority, not the SA's
    Multicast,  // a multicast DLID
    Router,     // a GRH to another subnet
    Reply,      // an address handle made from a received work completion
};

// The agent's counts of SL enforcement since it started.
enum class Counter : uint8_t {
    Resolves,       // Resolve messages answered
    CacheHits,      // of those, answered from the cache
    SaQueries,      // PathRecord queries sent to the SA
    SaFailed,       // of those, no answer after the retries
    Busy,           // Resolves refused: too many pending
    Replaced,       // QPs and address handles whose SL was replaced
    Differs,        // QPs and address handles reported by audit
    NoAnswer,       // QPs and address handles that kept their SL for want of an answer
    Invalidations,  // cache flushes (policy or fabric change, reload)
};
inline constexpr size_t CounterCount = static_cast<size_t>(Counter::Invalidations) + 1;
using Counters = std::array<uint64_t, CounterCount>;
std::string_view counterName(Counter counter);

struct AgentMessage {
    MessageKind kind = MessageKind::Status;
    uint32_t pid = 0;
    std::string device;
    uint8_t port = 0;  // 0: not given
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
    std::optional<uint8_t> sl;     // nullopt: "-" (the QP has no address vector yet)
    std::string leaf;              // the leaf the sender used; empty: "-"
    bool attached = false;         // whether the sender's backend attached the QP
    std::optional<uint32_t> slot;  // Qp: the PCC slot the agent applied; nullopt: "-"
    std::string algorithm;         // Qp: the slot's algorithm; empty: "-"
    uint32_t count = 0;            // End
    std::optional<SlMode> mode;    // Rtr, Qp, Ah: the process's enforcement (nullopt: not said)
    std::optional<uint8_t> appSl;  // Rtr, Qp, Ah: the SL the application chose
    std::optional<uint8_t> saSl;   // Rtr, Qp, Ah: the SA's answer, when one came
    SlOutcome outcome = SlOutcome::None;
    uint32_t id = 0;                         // Resolve, Path: the question's number
    uint16_t slid = 0;                       // Resolve
    uint16_t dlid = 0;                       // Resolve, Ah; Rtr, Qp: 0 when not said
    std::optional<uint16_t> pkey;            // Resolve: nullopt asks without a P_Key
    PathAnswer answer = PathAnswer::Failed;  // Path
    std::optional<Counters> counters;        // End
    bool operator==(const AgentMessage&) const = default;
};

// A message that cannot be read, with the byte offset where reading stopped.
struct MessageError {
    size_t offset = 0;
    std::string message;
};

std::string encodeAgentMessage(const AgentMessage& message);
// Reads one message; nullopt and error set for anything malformed.
std::optional<AgentMessage> parseAgentMessage(std::string_view bytes, MessageError& error);

std::string_view messageKindName(MessageKind kind);
std::string_view slOutcomeName(SlOutcome outcome);

}  // namespace ibqos::host
