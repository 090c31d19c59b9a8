// SPDX-License-Identifier: MIT
// Fabric: lookup tables, endpoint names, and the IB rate and MTU encodings.
#include "fabric/fabric.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos {

size_t Partition::fullMembers() const {
    return static_cast<size_t>(std::count_if(members.begin(), members.end(),
                                             [](const PartitionMember& m) { return m.full; }));
}

void Fabric::index() {
    endpoints_.clear();
    byGuid_.clear();
    byLid_.assign(size_t{1} << 16, NoPort);
    byDescription_.clear();
    for (uint32_t p = 0; p < ports.size(); ++p) {
        if (!isEndpoint(p)) continue;
        endpoints_.push_back(p);
        byGuid_.emplace_back(ports[p].guid, p);
        if (ports[p].lid != 0) {
            uint32_t count = 1u << ports[p].lmc;
            for (uint32_t i = 0; i < count && ports[p].lid + i < 0xc000; ++i) {
                uint32_t& slot = byLid_[ports[p].lid + i];
                if (slot == NoPort) slot = p;
            }
        }
    }
    std::sort(byGuid_.begin(), byGuid_.end());
    for (uint32_t n = 0; n < nodes.size(); ++n) byDescription_.emplace(nodes[n].description, n);
}

uint32_t Fabric::addNode(NodeType type, uint64_t guid, std::string description, uint8_t ports) {
    FabricNode node;
    node.type = type;
    node.guid = guid;
    node.description = std::move(description);
    node.portCount = ports;
    node.firstPort = static_cast<uint32_t>(this->ports.size());
    uint32_t index = static_cast<uint32_t>(nodes.size());
    for (unsigned n = node.lowestPort(); n <= ports; ++n) {
        FabricPort port;
        port.node = index;
        port.number = static_cast<uint8_t>(n);
        port.guid = type == NodeType::Switch ? guid : guid + n;
        this->ports.push_back(port);
    }
    nodes.push_back(std::move(node));
    return index;
}

void Fabric::link(uint32_t a, uint32_t b, uint8_t rate) {
    ports[a].peer = b;
    ports[b].peer = a;
    ports[a].rate = ports[b].rate = rate;
}

bool Fabric::isEndpoint(uint32_t port) const {
    // Switch port 0, or a CA or router port whose link is up (OpenSM knows no other port).
    const FabricPort& p = ports[port];
    return nodes[p.node].type == NodeType::Switch ? p.number == 0 : p.peer != NoPort;
}

uint32_t Fabric::endpointByGuid(uint64_t guid) const {
    auto it = std::lower_bound(byGuid_.begin(), byGuid_.end(), std::make_pair(guid, uint32_t{0}));
    return it != byGuid_.end() && it->first == guid ? it->second : NoPort;
}

uint32_t Fabric::endpointByLid(uint16_t lid) const { return byLid_.empty() ? NoPort : byLid_[lid]; }

uint32_t Fabric::portOf(uint32_t node, unsigned number) const {
    const FabricNode& n = nodes[node];
    unsigned lowest = n.lowestPort();
    if (number < lowest || number > n.portCount) return NoPort;
    return n.firstPort + (number - lowest);
}

std::vector<uint32_t> Fabric::nodesByDescription(std::string_view description) const {
    std::vector<uint32_t> out;
    auto [first, last] = byDescription_.equal_range(std::string(description));
    for (auto it = first; it != last; ++it) out.push_back(it->second);
    std::sort(out.begin(), out.end());
    return out;
}

uint32_t Fabric::endpointFor(uint32_t port) const {
    const FabricNode& n = nodeOf(port);
    uint32_t endpoint = n.type == NodeType::Switch ? n.firstPort : port;
    return isEndpoint(endpoint) ? endpoint : NoPort;
}

const Partition* Fabric::partitionByName(std::string_view name) const {
    for (const Partition& p : partitions) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

const Partition* Fabric::partitionByPkey(uint16_t pkey) const {
    for (const Partition& p : partitions) {
        if (p.pkey == ib::pkeyBase(pkey)) return &p;
    }
    return nullptr;
}

uint32_t Fabric::findEndpoint(std::string_view spec, std::string& error) const {
    if (spec.empty()) {
        error = "an empty port name";
        return NoPort;
    }
    // A GUID and a LID are read in place: `query --batch` finds two ports a line.
    if (spec.size() > 2 && spec[0] == '0' && (spec[1] == 'x' || spec[1] == 'X')) {
        uint64_t guid = 0;
        auto [end, ec] = std::from_chars(spec.data() + 2, spec.data() + spec.size(), guid, 16);
        if (ec != std::errc{} || end != spec.data() + spec.size()) {
            error = "'" + std::string(spec) + "' is not a port GUID";
            return NoPort;
        }
        uint32_t p = endpointByGuid(guid);
        if (p == NoPort) error = "no port has GUID " + std::string(spec);
        return p;
    }
    if (std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); })) {
        uint32_t lid = 0;
        auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), lid, 10);
        if (ec != std::errc{} || lid == 0 || lid > 0xffff) {
            error = "'" + std::string(spec) + "' is not a LID (1..65535)";
            return NoPort;
        }
        uint32_t p = endpointByLid(static_cast<uint16_t>(lid));
        if (p == NoPort) error = "no port has LID " + std::string(spec);
        return p;
    }
    std::string s(spec);
    size_t slash = s.rfind('/');
    if (slash == std::string::npos || slash + 2 > s.size() ||
        (s[slash + 1] != 'P' && s[slash + 1] != 'p')) {
        error = "'" + s + "' is not a port: give a GUID (0x...), a LID, or NodeDescription/P<n>" +
                suggestPort(s, std::nullopt);
        return NoPort;
    }
    char* end = nullptr;
    unsigned long number = std::strtoul(s.c_str() + slash + 2, &end, 10);
    if (*end != '\0' || end == s.c_str() + slash + 2) {
        error = "'" + s + "': the port number after '/P' is not a number";
        return NoPort;
    }
    auto found = nodesByDescription(s.substr(0, slash));
    if (found.empty()) {
        error = "no node is described as '" + s.substr(0, slash) + "'" +
                suggestPort(s.substr(0, slash), static_cast<unsigned>(number));
        return NoPort;
    }
    if (found.size() > 1) {
        error = "'" + s.substr(0, slash) + "' describes " + std::to_string(found.size()) +
                " nodes; name the port by GUID or LID";
        return NoPort;
    }
    uint32_t port = portOf(found[0], static_cast<unsigned>(number));
    if (port == NoPort) {
        error = "'" + s + "': the node has no port " + std::to_string(number);
        return NoPort;
    }
    uint32_t endpoint = endpointFor(port);
    if (endpoint == NoPort) error = "'" + s + "' has no link, so it is not part of the subnet";
    return endpoint;
}

std::string Fabric::suggestPort(std::string_view description,
                                std::optional<unsigned> number) const {
    // The node meant: described exactly so (only one), else the one described most alike.
    uint32_t node = NoPort;
    if (auto exact = nodesByDescription(description); exact.size() == 1) {
        node = exact.front();
    } else if (exact.empty()) {
        std::vector<std::string_view> descriptions;
        for (const FabricNode& n : nodes) descriptions.push_back(n.description);
        std::string_view guess = closest(description, descriptions);
        if (auto alike = nodesByDescription(guess); !guess.empty() && alike.size() == 1)
            node = alike.front();
    }
    if (node == NoPort) return "";
    // The port asked for, else the node's first port that is part of the subnet.
    const FabricNode& n = nodes[node];
    std::optional<unsigned> port;
    if (number && portOf(node, *number) != NoPort) port = number;
    for (unsigned p = 0; !port && p <= n.portCount; ++p) {
        uint32_t index = portOf(node, p);
        if (index != NoPort && endpointFor(index) != NoPort) port = p;
    }
    if (!port) return "";
    return "; did you mean '" + n.description + "/P" + std::to_string(*port) + "'?";
}

std::string Fabric::portName(uint32_t port) const {
    const FabricNode& n = nodeOf(port);
    if (!n.description.empty()) return n.description + "/P" + std::to_string(ports[port].number);
    char buf[40];
    std::snprintf(buf, sizeof buf, "0x%016llx/P%u", static_cast<unsigned long long>(n.guid),
                  ports[port].number);
    return buf;
}

}  // namespace ibqos
