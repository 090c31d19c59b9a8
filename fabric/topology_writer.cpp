// SPDX-License-Identifier: MIT
// writeTopology: a Fabric as ibnetdiscover writes it, for programs that hand a file to another.
#include <string>

#include "common/text.hpp"
#include "fabric/fabric.hpp"
#include "fabric/topology.hpp"
#include "ib/link.hpp"

namespace ibqos {

namespace {

// The node's id, as ibnetdiscover names nodes: its kind and GUID ("S-0002c90400000000").
std::string nodeId(const FabricNode& node) {
    const char* kind = node.type == NodeType::Switch   ? "S-"
                       : node.type == NodeType::Router ? "R-"
                                                       : "H-";
    return kind + hex(node.guid, 16).substr(2);
}

// The node's GUID line and header.
void header(const Fabric& fabric, const FabricNode& node, std::string& out) {
    const FabricPort& first = fabric.ports[node.firstPort];
    std::string guid = hex(node.guid);
    std::string count = std::to_string(node.portCount);
    std::string id = "\"" + nodeId(node) + "\"\t\t# \"" + node.description + "\"";
    switch (node.type) {
        case NodeType::Switch:
            // Port 0 carries the switch's port GUID, LID and LMC.
            out += "switchguid=" + guid + "(" + hex(first.guid).substr(2) + ")\nSwitch\t" + count +
                   " " + id + (node.enhancedPort0 ? " enhanced" : " base") + " port 0 lid " +
                   std::to_string(first.lid) + " lmc " + std::to_string(first.lmc) + "\n";
            break;
        case NodeType::Ca:
            out += "caguid=" + guid + "\nCa\t" + count + " " + id + "\n";
            break;
        case NodeType::Router:
            out += "rtguid=" + guid + "\nRt\t" + count + " " + id + "\n";
            break;
    }
}

// A linked port's line: the port (its GUID and LID on a CA or router), the peer, the link.
void portLine(const Fabric& fabric, uint32_t p, std::string& out) {
    const FabricPort& port = fabric.ports[p];
    const FabricPort& peer = fabric.ports[port.peer];
    const FabricNode& peerNode = fabric.nodes[peer.node];
    bool endpoint = fabric.nodes[port.node].type != NodeType::Switch;
    out += "[" + std::to_string(port.number) + "]";
    if (endpoint) out += "(" + hex(port.guid).substr(2) + ")";
    out += "\t\"" + nodeId(peerNode) + "\"[" + std::to_string(peer.number) + "]";
    if (peerNode.type != NodeType::Switch) out += "(" + hex(peer.guid).substr(2) + ")";
    out += "\t\t# ";
    if (endpoint)
        out += "lid " + std::to_string(port.lid) + " lmc " + std::to_string(port.lmc) + " ";
    out += "\"" + peerNode.description + "\" lid " + std::to_string(peer.lid);
    if (std::string link = linkName(port.rate); !link.empty()) out += " " + link;
    out += "\n";
}

}  // namespace

std::string writeTopology(const Fabric& fabric) {
    std::string out = "#\n# Topology file: " + fabric.source + ", written by ibqos\n#\n";
    for (uint32_t n = 0; n < fabric.nodes.size(); ++n) {
        out += "\n";
        header(fabric, fabric.nodes[n], out);
        for (unsigned number = 1; number <= fabric.nodes[n].portCount; ++number) {
            uint32_t p = fabric.portOf(n, number);
            if (p != NoPort && fabric.ports[p].peer != NoPort) portLine(fabric, p, out);
        }
    }
    return out;
}

}  // namespace ibqos
