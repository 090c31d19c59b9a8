// SPDX-License-Identifier: MIT
// The messages between preloaded applications, the agent and its status clients.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
    Rtr,      // client -> agent: a QP reached RTR (pid dev [port] qpn type sl leaf attached)
    Destroy,  // client -> agent: a QP is destroyed (pid dev qpn)
    Status,   // client -> agent: send me every QP you know
    Qp,       // agent -> client: one known QP (Rtr's keys, slot, algorithm)
    End,      // agent -> client: end of a status answer (count)
};

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

}  // namespace ibqos::host
