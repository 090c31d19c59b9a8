// SPDX-License-Identifier: MIT
// Fabric: the model of a subnet (nodes, ports, links, VL capabilities, partitions), whatever it
// was read from: an ibnetdiscover file offline, or OpenSM's subnet inside the plugin.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/diagnostics.hpp"
#include "fabric/node_type.hpp"
#include "ib/link.hpp"

namespace ibqos {

constexpr uint32_t NoPort = UINT32_MAX;

// One physical port, switch port 0 included. CA and router ports and switch port 0 are the
// subnet's endpoints (they have a LID and take part in PathRecords); switch external ports carry
// links and tables.
struct FabricPort {
    uint32_t node = 0;   // index into Fabric::nodes
    uint8_t number = 0;  // port number on its node
    uint64_t guid = 0;   // port GUID (a switch's ports all carry the switch's port GUID)
    uint16_t lid = 0;    // base LID (switch external ports: the switch's LID); 0 unknown
    uint8_t lmc = 0;
    uint32_t peer = NoPort;  // the port at the other end of the link
    uint8_t operVls = 4;  // IB OperVLs/VLCap encoding: 1=VL0, 2=VL0-1, 3=VL0-3, 4=VL0-7, 5=VL0-14
    uint8_t vlCap = 4;
    uint8_t vlArbHighCap = 8;  // entries of the high-priority VLArb table the port has
    uint8_t vlArbLowCap = 8;
    uint8_t rate = 0;  // IB rate enum of the link (2 = 2.5 Gb/s, 3 = 10 Gb/s, ...); 0 unknown
    uint8_t mtu = 0;   // IB MTU enum of the port; 0 unknown
    SourceLocation location;  // where the topology file defines it
};

struct FabricNode {
    NodeType type = NodeType::Ca;
    uint64_t guid = 0;        // node GUID
    std::string description;  // NodeDescription
    uint8_t portCount = 0;    // external ports
    uint32_t firstPort = 0;   // index of port 0 (switch) or port 1 (CA, router) in Fabric::ports
    bool enhancedPort0 = false;
    SourceLocation location;
    // NodeInfo's VendorID, DeviceID and Revision (0 where the source does not carry them).
    uint32_t vendorId = 0;
    uint16_t deviceId = 0;
    uint32_t revision = 0;

    uint8_t lowestPort() const { return type == NodeType::Switch ? 0 : 1; }
};

struct PartitionMember {
    uint32_t port = NoPort;  // an endpoint
    bool full = false;
};

// A partition of OpenSM's partitions.conf (or the implicit Default one).
struct Partition {
    std::string name;
    uint16_t pkey = 0;  // without the membership bit
    std::vector<PartitionMember> members;
    bool ipoib = false;
    uint8_t sl = 0;  // the partition's (and its IPoIB broadcast group's) SL
    std::optional<uint8_t> mtu;
    std::optional<uint8_t> rate;
    std::map<std::string, std::string> flags;  // every flag as written
    SourceLocation location;
    std::string file;

    size_t fullMembers() const;
};

// A subnet. Build it by filling nodes, ports and partitions, then call index().
class Fabric {
  public:
    std::string source;  // where it was read from, for messages
    std::vector<FabricNode> nodes;
    std::vector<FabricPort> ports;
    std::vector<Partition> partitions;
    // True when no partitions file was read: the Default partition alone, every endpoint in it.
    bool noPartitionsFile = false;
    uint32_t smPort = NoPort;  // the SM's own port (node-type SELF), an endpoint
    // True when VL capabilities were assumed (ibnetdiscover files do not carry them).
    bool assumedVlCaps = false;

    // Builds the lookup tables; call once the nodes and ports are complete.
    void index();

    // For fabrics built in code (tests, benchmarks): appends a node and its ports (0..ports for
    // a switch, 1..ports otherwise) with the port GUIDs ibsim gives (a switch's ports carry its
    // node GUID, a CA's or router's port n the node GUID + n), and returns the node's index.
    // LIDs are left 0: set them before index().
    uint32_t addNode(NodeType type, uint64_t guid, std::string description, uint8_t ports);
    // Links two ports, with the link's rate (IB rate enum, 0 unknown).
    void link(uint32_t a, uint32_t b, uint8_t rate = 0);

    const FabricNode& nodeOf(uint32_t port) const { return nodes[ports[port].node]; }
    bool isEndpoint(uint32_t port) const;
    NodeType typeOf(uint32_t port) const { return nodeOf(port).type; }

    // The endpoint with this port GUID (a switch's port 0), if any.
    uint32_t endpointByGuid(uint64_t guid) const;
    // The endpoint reached through this LID (LMC ranges included), if any.
    uint32_t endpointByLid(uint16_t lid) const;
    // A node's port by number, or NoPort.
    uint32_t portOf(uint32_t node, unsigned number) const;
    // Nodes with this NodeDescription (they need not be unique).
    std::vector<uint32_t> nodesByDescription(std::string_view description) const;
    // The endpoint that stands for a port of a node: the CA/router port, or the switch's port 0
    // (NoPort for a CA port whose link is down).
    uint32_t endpointFor(uint32_t port) const;

    // Every endpoint, in port order.
    const std::vector<uint32_t>& endpoints() const { return endpoints_; }
    // Endpoints sorted by GUID, for range lookups.
    const std::vector<std::pair<uint64_t, uint32_t>>& endpointsByGuid() const { return byGuid_; }
    const Partition* partitionByName(std::string_view name) const;
    const Partition* partitionByPkey(uint16_t pkey) const;

    // "NodeDescription/P<n>", "0x<guid>", or a decimal LID: the endpoint a user names, or
    // NoPort (with a reason in error).
    uint32_t findEndpoint(std::string_view spec, std::string& error) const;
    // How a port is shown to people: "NodeDescription/P<n>" (the node GUID when unnamed).
    std::string portName(uint32_t port) const;
    // "; did you mean 'Desc/P<n>'?" for a port named by a NodeDescription that one node has, or
    // nearly has (a misspelling), with the port number given or the node's first linked one;
    // "" when no node is meant.
    std::string suggestPort(std::string_view description, std::optional<unsigned> number) const;

  private:
    std::vector<uint32_t> endpoints_;
    std::vector<std::pair<uint64_t, uint32_t>> byGuid_;
    std::vector<uint32_t> byLid_;  // [LID]: the endpoint, or NoPort
    std::unordered_multimap<std::string, uint32_t> byDescription_;
};

}  // namespace ibqos
