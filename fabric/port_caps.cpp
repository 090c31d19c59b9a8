// SPDX-License-Identifier: MIT
// readPortCaps: per-port VL capabilities for an offline fabric ("PORT vls=N vlarb-high=N ...").
#include "fabric/port_caps.hpp"

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/source.hpp"
#include "common/text.hpp"
#include "fabric/fabric.hpp"
#include "ib/link.hpp"

namespace ibqos {

namespace {

// A line without its comment (from '#' outside double quotes) and its CR.
std::string uncommented(std::string line) {
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '"') quoted = !quoted;
        if (line[i] == '#' && !quoted) {
            line.resize(i);
            break;
        }
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

// The ports a line names: '*', a port GUID (every port of a switch), or NodeDescription/P<n>;
// nullopt with the reason in why.
std::optional<std::vector<uint32_t>> portsNamed(const Fabric& fabric, const std::string& port,
                                                std::string& why) {
    std::vector<uint32_t> ports;
    if (port == "*") {
        for (uint32_t p = 0; p < fabric.ports.size(); ++p) ports.push_back(p);
        return ports;
    }
    uint32_t endpoint = fabric.findEndpoint(port, why);
    if (endpoint == NoPort) return std::nullopt;
    const FabricNode& node = fabric.nodeOf(endpoint);
    bool byName = port.find('/') != std::string::npos;
    if (node.type == NodeType::Switch && !byName) {
        for (unsigned n = 0; n <= node.portCount; ++n) ports.push_back(node.firstPort + n);
    } else if (node.type == NodeType::Switch) {
        size_t slash = port.rfind('/');
        ports.push_back(fabric.portOf(
            fabric.ports[endpoint].node,
            static_cast<unsigned>(std::strtoul(port.c_str() + slash + 2, nullptr, 10))));
    } else {
        ports.push_back(endpoint);
    }
    return ports;
}

// Sets one capability of a port; the reason when the key or the value is not one.
std::optional<std::string> setCapability(FabricPort& port, const std::string& key,
                                         unsigned long value) {
    if (key == "vls") {
        uint8_t e = ib::vlEncoding(value);
        if (!e) return "vls takes 1, 2, 4, 8 or 15";
        port.vlCap = port.operVls = e;
    } else if (key == "vlarb-high" || key == "vlarb-low") {
        if (value > 64) return key + " (the table's entries) is at most 64";
        (key == "vlarb-high" ? port.vlArbHighCap : port.vlArbLowCap) = static_cast<uint8_t>(value);
    } else if (key == "mtu") {
        uint8_t m = ib::mtuForBytes(value);
        if (!m) return "mtu is 256, 512, 1024, 2048 or 4096";
        port.mtu = m;
    } else {
        return "unknown capability '" + key + "' (vls, vlarb-high, vlarb-low, mtu)";
    }
    return std::nullopt;
}

}  // namespace

void readPortCaps(const SourceFile& source, Fabric& fabric, Diagnostics& diagnostics) {
    std::string_view text = source.text();
    size_t offset = 0;
    while (offset < text.size()) {
        size_t end = text.find('\n', offset);
        if (end == std::string_view::npos) end = text.size();
        const std::string line = uncommented(std::string(text.substr(offset, end - offset)));
        SourceLocation at = source.locate(static_cast<uint32_t>(offset));
        offset = end + 1;
        auto error = [&](std::string message) {
            diagnostics.error("port-caps", source.name(), at, std::move(message));
        };
        std::vector<std::string> words;
        if (std::string why; !splitFields(line, words, why)) {
            error(why);
            continue;
        }
        if (words.empty()) continue;

        // The port: the first field when it is quoted, else every field before the first
        // key=value (a NodeDescription may hold blanks).
        std::string port = words[0];
        size_t firstKey = 1;
        if (trim(line).front() != '"') {
            for (; firstKey < words.size() && words[firstKey].find('=') == std::string::npos;
                 ++firstKey)
                port += " " + words[firstKey];
        }
        std::string why;
        const std::optional<std::vector<uint32_t>> ports = portsNamed(fabric, port, why);
        if (!ports) {
            error(why);
            continue;
        }
        for (size_t w = firstKey; w < words.size(); ++w) {
            size_t eq = words[w].find('=');
            std::string key = words[w].substr(0, eq);
            char* stop = nullptr;
            unsigned long value =
                eq == std::string::npos ? 0 : std::strtoul(words[w].c_str() + eq + 1, &stop, 10);
            if (eq == std::string::npos || *stop != '\0') {
                error("expected key=number, not '" + words[w] + "'");
                continue;
            }
            for (uint32_t p : *ports) {
                if (auto refused = setCapability(fabric.ports[p], key, value)) {
                    error(*refused);
                    break;
                }
            }
        }
    }
    fabric.assumedVlCaps = false;
}

}  // namespace ibqos
