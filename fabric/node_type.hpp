// SPDX-License-Identifier: MIT
// Node types, as the wire and OpenSM number them.
#pragma once

#include <cstdint>

namespace ibqos {

// InfiniBand node types, with the values the wire and OpenSM use.
enum class NodeType : uint8_t { Ca = 1, Switch = 2, Router = 3 };
// OpenSM's node-type mask bit for a type (1 << type).
constexpr uint8_t nodeTypeBit(NodeType type) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(type));
}
constexpr uint8_t AllNodeTypes =
    nodeTypeBit(NodeType::Ca) | nodeTypeBit(NodeType::Switch) | nodeTypeBit(NodeType::Router);

// The node type as outputs name it ("CA", "SWITCH", "ROUTER", the policy language's words).
constexpr const char* nodeTypeName(NodeType type) {
    return type == NodeType::Switch ? "SWITCH" : type == NodeType::Router ? "ROUTER" : "CA";
}

}  // namespace ibqos
