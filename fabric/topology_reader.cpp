// SPDX-License-Identifier: MIT
// readTopology: ibnetdiscover output and ibsim net files, checked line by line and link by link.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/source.hpp"
#include "common/text.hpp"
#include "fabric/fabric.hpp"
#include "fabric/topology.hpp"

namespace ibqos {

namespace {

// A bound on what a file may ask for, so that a hostile file cannot exhaust memory.
constexpr size_t MaxPorts = 8'000'000;

struct RawLink {
    unsigned port = 0;
    std::optional<uint64_t> portGuid;
    std::string peerId;
    unsigned peerPort = 0;
    uint16_t lid = 0;
    uint8_t lmc = 0;
    uint16_t peerLid = 0;
    uint8_t rate = 0;
    SourceLocation location;
};

struct RawNode {
    NodeType type = NodeType::Ca;
    unsigned portCount = 0;
    std::string id;
    std::string description;
    uint64_t guid = 0;
    std::optional<uint64_t> portGuid;  // a switch's port GUID from "switchguid=X(Y)"
    bool enhancedPort0 = false;
    uint16_t lid = 0;
    uint8_t lmc = 0;
    std::vector<RawLink> links;
    SourceLocation location;
};

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// The number after "key " in a comment ("lid 5"), or nullopt.
std::optional<uint64_t> numberAfter(std::string_view s, std::string_view key) {
    size_t at = s.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    size_t p = at + key.size();
    size_t e = p;
    while (e < s.size() && std::isalnum(static_cast<unsigned char>(s[e]))) ++e;
    return parseNumber(s.substr(p, e - p));
}

// "4xQDR" at the end of a link comment: the link's rate enum, or 0.
uint8_t linkRate(std::string_view comment) {
    size_t x = comment.rfind('x');
    while (x != std::string_view::npos && x > 0) {
        size_t b = x;
        while (b > 0 && std::isdigit(static_cast<unsigned char>(comment[b - 1]))) --b;
        size_t e = x + 1;
        while (e < comment.size() && std::isalnum(static_cast<unsigned char>(comment[e]))) ++e;
        if (b < x) {
            auto width = parseNumber(comment.substr(b, x - b));
            if (width) {
                if (uint8_t r = rateForLink(static_cast<unsigned>(*width),
                                            comment.substr(x + 1, e - x - 1)))
                    return r;
            }
        }
        x = x == 0 ? std::string_view::npos : comment.rfind('x', x - 1);
    }
    return 0;
}

// The first quoted string in s, and what follows it.
std::optional<std::string_view> quoted(std::string_view s, std::string_view& rest) {
    size_t open = s.find('"');
    if (open == std::string_view::npos) return std::nullopt;
    size_t close = s.find('"', open + 1);
    if (close == std::string_view::npos) return std::nullopt;
    rest = s.substr(close + 1);
    return s.substr(open + 1, close - open - 1);
}

class TopologyReader {
  public:
    TopologyReader(const SourceFile& source, Diagnostics& diagnostics, uint8_t operVls)
        : source_(source), diagnostics_(diagnostics), operVls_(operVls) {}

    Fabric read() {
        std::string_view text = source_.text();
        if (otherFormat(text)) return Fabric{};
        size_t offset = 0;
        while (offset < text.size()) {
            size_t end = text.find('\n', offset);
            if (end == std::string_view::npos) end = text.size();
            line(text.substr(offset, end - offset), static_cast<uint32_t>(offset));
            offset = end + 1;
            if (tooLarge_) break;
        }
        return build();
    }

  private:
    const SourceFile& source_;
    Diagnostics& diagnostics_;
    uint8_t operVls_;
    std::vector<RawNode> nodes_;
    RawNode* current_ = nullptr;
    // ibsim's GUID counters (switches and end nodes), which "switchguid=" and "caguid=" set.
    uint64_t nextSwitchGuid_ = 0x200000;
    uint64_t nextCaGuid_ = 0x100000;
    std::optional<uint64_t> pendingSwitchPortGuid_;
    size_t portTotal_ = 0;
    bool tooLarge_ = false;

    void error(SourceLocation where, std::string message) {
        diagnostics_.error("topology", source_.name(), where, std::move(message));
    }
    void warning(SourceLocation where, std::string message) {
        diagnostics_.warning("topology", source_.name(), where, std::move(message));
    }

    // Output that names nodes and ports but holds no node records: the first line that is not a
    // comment says which, in one error with what to run instead (rather than an error a line
    // and a check against an empty fabric).
    bool otherFormat(std::string_view text) {
        size_t offset = 0;
        while (offset < text.size()) {
            size_t end = std::min(text.find('\n', offset), text.size());
            std::string_view raw = text.substr(offset, end - offset);
            std::string_view s = trim(raw);
            if (s.empty() || s[0] == '#') {
                offset = end + 1;
                continue;
            }
            const char* what = nullptr;
            auto word = [&](size_t i) {
                size_t b = 0;
                for (size_t n = 0; n < i; ++n) {
                    b = s.find_first_not_of(" \t", s.find_first_of(" \t", b));
                    if (b == std::string_view::npos) return std::string_view{};
                }
                return s.substr(b, s.find_first_of(" \t", b) - b);
            };
            const std::string_view first = word(0);
            if ((first == "CA" || first == "SW" || first == "RT") && parseNumber(word(1), 10) &&
                parseNumber(word(2), 10) && startsWith(word(3), "0x")) {
                what = "'ibnetdiscover -p' output (a report of ports, without node records)";
            } else if ((first == "Ca" || first == "Switch" || first == "Router") &&
                       (word(1) == ":" || startsWith(word(1), ":")) &&
                       s.find(" ports ") != std::string_view::npos) {
                what = "'ibnetdiscover -l' (or -H, -S, -R) output (a list of nodes, without links)";
            } else if (startsWith(first, "0x") && parseNumber(first) && word(1).size() > 0 &&
                       word(1)[0] == '"') {
                what = "a node name map (GUID and name a line), not a topology";
            }
            if (!what) return false;
            error(source_.locate(static_cast<uint32_t>(offset + (s.data() - raw.data()))),
                  std::string("this is ") + what +
                      ": give the output of plain 'ibnetdiscover' (or 'ibnetdiscover -g'), "
                      "which lists every node with its ports and links");
            return true;
        }
        return false;
    }

    void line(std::string_view raw, uint32_t offset) {
        std::string_view s = trim(raw);
        SourceLocation at =
            source_.locate(offset + static_cast<uint32_t>(s.empty() ? 0 : s.data() - raw.data()));
        if (s.empty()) {
            current_ = nullptr;  // a blank line ends a node record
            return;
        }
        if (s[0] == '#') return;
        // ibnetdiscover -g's grouping headings: "Chassis 2 (guid 0x...)", "Non-Chassis Nodes".
        if (startsWith(s, "Chassis ") || s == "Non-Chassis Nodes") return;
        if (s[0] == '[') return portLine(s, at);
        if (startsWith(s, "Switch") || startsWith(s, "Hca") || startsWith(s, "Ca") ||
            startsWith(s, "Rt")) {
            return header(s, at);
        }
        if (startsWith(s, "switchguid") || startsWith(s, "caguid") || startsWith(s, "hcaguids") ||
            startsWith(s, "rtguid")) {
            return guidBase(s, at);
        }
        if (startsWith(s, "vendid") || startsWith(s, "devid") || startsWith(s, "sysimgguid"))
            return;
        if (startsWith(s, "include") || startsWith(s, "do ") || startsWith(s, "width") ||
            startsWith(s, "speed") || startsWith(s, "extspeed") || startsWith(s, "module") ||
            startsWith(s, "pdebug")) {
            warning(at, "ibsim directive '" + std::string(s.substr(0, s.find_first_of(" \t="))) +
                            "' is ignored");
            return;
        }
        error(at,
              "this line is not part of a topology file (expected a node header such as "
              "'Switch 36 \"id\"', a port line '[1] \"peer\"[2]', or a GUID line)");
    }

    // "switchguid=0x200000(200000)", "caguid=0x100006", ibsim's relative "caguid+10".
    void guidBase(std::string_view s, SourceLocation at) {
        size_t sign = s.find_first_of("=+");
        if (sign == std::string_view::npos) {
            error(at, "expected '=' after the GUID keyword");
            return;
        }
        std::string_view value = trim(s.substr(sign + 1));
        std::optional<uint64_t> portGuid;
        if (size_t paren = value.find('('); paren != std::string_view::npos) {
            size_t close = value.find(')', paren);
            if (close == std::string_view::npos) {
                error(at, "missing ')' after the port GUID");
                return;
            }
            portGuid = parseNumber(value.substr(paren + 1, close - paren - 1), 16);
            if (!portGuid) {
                error(at, "the port GUID in parentheses is not a hexadecimal number");
                return;
            }
            value = value.substr(0, paren);
        }
        auto guid = parseNumber(trim(value));
        if (!guid) {
            error(at, "'" + std::string(value) + "' is not a GUID");
            return;
        }
        bool isSwitch = startsWith(s, "switchguid");
        uint64_t& counter = isSwitch ? nextSwitchGuid_ : nextCaGuid_;
        counter = s[sign] == '+' ? counter + *guid : *guid;
        if (isSwitch) pendingSwitchPortGuid_ = portGuid;
    }

    // 'Switch 8 "S-0000000000200000"  # "Switch1" enhanced port 0 lid 2 lmc 0'
    void header(std::string_view s, SourceLocation at) {
        size_t word = 0;
        while (word < s.size() && std::isalpha(static_cast<unsigned char>(s[word]))) ++word;
        std::string_view kind = s.substr(0, word);
        RawNode node;
        node.location = at;
        if (kind == "Switch") {
            node.type = NodeType::Switch;
        } else if (kind == "Hca" || kind == "Ca") {
            node.type = NodeType::Ca;
        } else if (kind == "Rt" || kind == "Router") {
            node.type = NodeType::Router;
        } else {
            error(at, "unknown node type '" + std::string(kind) + "' (Switch, Ca, Hca or Rt)");
            current_ = nullptr;
            return;
        }
        std::string_view rest = trim(s.substr(word));
        size_t digits = 0;
        while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])))
            ++digits;
        auto count = parseNumber(rest.substr(0, digits), 10);
        if (!count || *count < 1 || *count > 254) {
            error(at, "a node has 1 to 254 ports");
            current_ = nullptr;
            return;
        }
        node.portCount = static_cast<unsigned>(*count);
        std::string_view after;
        auto id = quoted(rest.substr(digits), after);
        if (!id || id->empty()) {
            error(at, "expected the node's quoted id after its port count");
            current_ = nullptr;
            return;
        }
        node.id = std::string(*id);
        node.description = node.id;
        if (size_t hash = after.find('#'); hash != std::string_view::npos) {
            std::string_view comment = after.substr(hash + 1);
            std::string_view tail;
            if (auto desc = quoted(comment, tail)) {
                node.description = std::string(*desc);
                comment = tail;
            }
            node.enhancedPort0 = comment.find("enhanced port 0") != std::string_view::npos;
            if (auto lid = numberAfter(comment, "lid ")) node.lid = static_cast<uint16_t>(*lid);
            if (auto lmc = numberAfter(comment, "lmc ")) node.lmc = static_cast<uint8_t>(*lmc & 7);
        }
        uint64_t& counter = node.type == NodeType::Switch ? nextSwitchGuid_ : nextCaGuid_;
        node.guid = counter;
        counter += node.type == NodeType::Switch ? 1 : node.portCount + 1;
        if (node.type == NodeType::Switch) {
            node.portGuid = pendingSwitchPortGuid_;
            pendingSwitchPortGuid_.reset();
        }
        portTotal_ += node.portCount + 1;
        if (portTotal_ > MaxPorts) {
            error(at, "the topology has more than " + std::to_string(MaxPorts) +
                          " ports; stopping here");
            tooLarge_ = true;
            return;
        }
        nodes_.push_back(std::move(node));
        current_ = &nodes_.back();
    }

    // '[1](100007)  "S-0000000000200000"[2](200000)  # lid 5 lmc 0 "Switch1" lid 2 4xSDR'
    void portLine(std::string_view s, SourceLocation at) {
        if (!current_) {
            error(at, "a port line outside a node record (a blank line ends a record)");
            return;
        }
        RawLink link;
        link.location = at;
        size_t close = s.find(']');
        auto port = close == std::string_view::npos ? std::nullopt
                                                    : parseNumber(s.substr(1, close - 1), 10);
        if (!port) {
            error(at, "expected '[<port number>]'");
            return;
        }
        link.port = static_cast<unsigned>(*port);
        if (link.port < 1 || link.port > current_->portCount) {
            error(at, "port " + std::to_string(link.port) + " does not exist on '" + current_->id +
                          "', which has " + std::to_string(current_->portCount) + " ports");
            return;
        }
        std::string_view rest = s.substr(close + 1);
        if (!rest.empty() && rest[0] == '(') {
            size_t paren = rest.find(')');
            auto guid = paren == std::string_view::npos
                            ? std::nullopt
                            : parseNumber(rest.substr(1, paren - 1), 16);
            if (!guid) {
                error(at, "the port GUID in parentheses is not a hexadecimal number");
                return;
            }
            link.portGuid = guid;
            rest = rest.substr(paren + 1);
        }
        std::string_view after;
        auto peer = quoted(rest, after);
        if (!peer || peer->empty()) {
            error(at, "expected the quoted id of the peer node");
            return;
        }
        link.peerId = std::string(*peer);
        after = trim(after);
        size_t pclose = after.find(']');
        auto peerPort = after.empty() || after[0] != '[' || pclose == std::string_view::npos
                            ? std::nullopt
                            : parseNumber(after.substr(1, pclose - 1), 10);
        if (!peerPort) {
            error(at, "expected '[<peer port number>]' after the peer's id");
            return;
        }
        link.peerPort = static_cast<unsigned>(*peerPort);
        std::string_view comment = after.substr(pclose + 1);
        if (size_t hash = comment.find('#'); hash != std::string_view::npos) {
            comment = comment.substr(hash + 1);
            // CA lines: "lid 5 lmc 0 "peer desc" lid 2 4xSDR"; switch lines: ""peer desc" lid 1
            // 4xSDR".
            std::string_view tail;
            size_t q = comment.find('"');
            std::string_view own =
                q == std::string_view::npos ? std::string_view{} : comment.substr(0, q);
            if (auto lid = numberAfter(own, "lid ")) link.lid = static_cast<uint16_t>(*lid);
            if (auto lmc = numberAfter(own, "lmc ")) link.lmc = static_cast<uint8_t>(*lmc & 7);
            if (quoted(comment, tail)) {
                if (auto lid = numberAfter(tail, "lid "))
                    link.peerLid = static_cast<uint16_t>(*lid);
            }
            link.rate = linkRate(comment);
        }
        for (const RawLink& other : current_->links) {
            if (other.port == link.port) {
                error(at, "port " + std::to_string(link.port) + " of '" + current_->id +
                              "' is listed twice (first at line " +
                              std::to_string(other.location.line) + ")");
                return;
            }
        }
        current_->links.push_back(std::move(link));
    }

    Fabric build() {
        Fabric fabric;
        fabric.source = source_.name();
        fabric.assumedVlCaps = true;
        std::unordered_map<std::string, uint32_t> byId;
        std::vector<uint32_t> nodeOfRaw(nodes_.size(), NoPort);
        fabric.nodes.reserve(nodes_.size());
        fabric.ports.reserve(portTotal_);
        addNodes(fabric, byId, nodeOfRaw);
        describePorts(fabric, nodeOfRaw);
        linkPorts(fabric, byId, nodeOfRaw);
        checkEndpointGuids(fabric);
        fabric.index();
        return fabric;
    }

    // Every node with an id and a GUID of its own, and its ports; nodeOfRaw maps each record
    // to its node (NoPort for one left out), byId each id to its node.
    void addNodes(Fabric& fabric, std::unordered_map<std::string, uint32_t>& byId,
                  std::vector<uint32_t>& nodeOfRaw) {
        std::unordered_map<uint64_t, uint32_t> nodeGuids;
        for (size_t r = 0; r < nodes_.size(); ++r) {
            const RawNode& raw = nodes_[r];
            auto [it, fresh] = byId.emplace(raw.id, static_cast<uint32_t>(fabric.nodes.size()));
            if (!fresh) {
                error(raw.location, "node id '" + raw.id + "' is already used at line " +
                                        std::to_string(fabric.nodes[it->second].location.line));
                continue;
            }
            if (auto [g, freshGuid] = nodeGuids.emplace(raw.guid, it->second); !freshGuid) {
                error(raw.location, "node GUID of '" + raw.id + "' is already used by '" +
                                        fabric.nodes[g->second].description + "'");
                byId.erase(it);
                continue;
            }
            FabricNode node;
            node.type = raw.type;
            node.guid = raw.guid;
            node.description = raw.description;
            node.portCount = static_cast<uint8_t>(raw.portCount);
            node.firstPort = static_cast<uint32_t>(fabric.ports.size());
            node.enhancedPort0 = raw.enhancedPort0;
            node.location = raw.location;
            uint32_t nodeIndex = static_cast<uint32_t>(fabric.nodes.size());
            nodeOfRaw[r] = nodeIndex;
            fabric.nodes.push_back(node);
            for (unsigned n = node.lowestPort(); n <= raw.portCount; ++n) {
                FabricPort port;
                port.node = nodeIndex;
                port.number = static_cast<uint8_t>(n);
                port.guid =
                    raw.type == NodeType::Switch ? raw.portGuid.value_or(raw.guid) : raw.guid + n;
                port.lid = raw.type == NodeType::Switch ? raw.lid : 0;
                port.lmc = raw.type == NodeType::Switch ? raw.lmc : 0;
                port.operVls = port.vlCap = operVls_;
                port.location = raw.location;
                fabric.ports.push_back(port);
            }
        }
    }

    // Ports as the records describe them.
    void describePorts(Fabric& fabric, const std::vector<uint32_t>& nodeOfRaw) {
        for (size_t r = 0; r < nodes_.size(); ++r) {
            const RawNode& raw = nodes_[r];
            if (nodeOfRaw[r] == NoPort) continue;
            for (const RawLink& link : raw.links) {
                FabricPort& port = fabric.ports[fabric.portOf(nodeOfRaw[r], link.port)];
                port.location = link.location;
                if (raw.type != NodeType::Switch) {
                    if (link.portGuid) port.guid = *link.portGuid;
                    port.lid = link.lid;
                    port.lmc = link.lmc;
                }
            }
        }
    }

    // Links, each side checked against the other.
    void linkPorts(Fabric& fabric, const std::unordered_map<std::string, uint32_t>& byId,
                   const std::vector<uint32_t>& nodeOfRaw) {
        for (size_t r = 0; r < nodes_.size(); ++r) {
            const RawNode& raw = nodes_[r];
            if (nodeOfRaw[r] == NoPort) continue;
            for (const RawLink& link : raw.links) {
                uint32_t local = fabric.portOf(nodeOfRaw[r], link.port);
                auto peerNode = byId.find(link.peerId);
                if (peerNode == byId.end()) {
                    error(link.location, "no node has the id '" + link.peerId + "'");
                    continue;
                }
                uint32_t remote = fabric.portOf(peerNode->second, link.peerPort);
                if (remote == NoPort || link.peerPort == 0) {
                    error(link.location,
                          "'" + link.peerId + "' has no port " + std::to_string(link.peerPort));
                    continue;
                }
                if (remote == local) {
                    error(link.location, "a port cannot be linked to itself");
                    continue;
                }
                FabricPort& a = fabric.ports[local];
                FabricPort& b = fabric.ports[remote];
                if (b.peer != NoPort && b.peer != local) {
                    error(link.location,
                          "'" + raw.id + "'[" + std::to_string(link.port) +
                              "] says it is linked to '" + link.peerId + "'[" +
                              std::to_string(link.peerPort) + "], but that port is linked to " +
                              fabric.portName(b.peer) + " (line " +
                              std::to_string(fabric.ports[b.peer].location.line) + ")");
                    continue;
                }
                a.peer = remote;
                b.peer = local;
                if (link.rate) a.rate = b.rate = link.rate;
                if (link.peerLid && fabric.nodes[peerNode->second].type != NodeType::Switch &&
                    b.lid == 0) {
                    b.lid = link.peerLid;
                }
            }
        }
    }

    // Port GUIDs of endpoints must be unique: they are how the policy names ports.
    void checkEndpointGuids(const Fabric& fabric) {
        std::unordered_map<uint64_t, uint32_t> endpointGuids;
        for (uint32_t p = 0; p < fabric.ports.size(); ++p) {
            if (!fabric.isEndpoint(p)) continue;
            auto [g, fresh] = endpointGuids.emplace(fabric.ports[p].guid, p);
            if (!fresh) {
                error(fabric.ports[p].location, "port GUID of " + fabric.portName(p) +
                                                    " is already used by " +
                                                    fabric.portName(g->second));
            }
        }
    }
};

}  // namespace

Fabric readTopology(const SourceFile& source, Diagnostics& diagnostics, uint8_t assumedOperVls) {
    if (source.text().find('\0') != std::string_view::npos) {
        diagnostics.error("topology", source.name(), {1, 1},
                          "this is not a text file (it holds a NUL byte)");
        Fabric empty;
        empty.source = source.name();
        return empty;
    }
    return TopologyReader(source, diagnostics, assumedOperVls).read();
}

}  // namespace ibqos
