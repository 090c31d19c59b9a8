// SPDX-License-Identifier: MIT
// Elaboration of port-groups: names, GUIDs, port names, partitions, PKeys, node types.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ibqos::passes {

void Elaborator::portGroup(const ast::Block& b) {
    PortGroup g;
    g.location = at(b.open);
    std::bitset<64> seen;
    std::vector<Range> guids, pkeys;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Name:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) g.name = name(*t);
                break;
            case Key::Use:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) g.use = t->value;
                break;
            case Key::PortGuid:
                if (auto* r = value<ast::RangeList>(*f)) {
                    size_t first = g.guidRanges.size();
                    ranges(*r, guids, &g.guidRanges);
                    guidRangesOpenSmWalks(g.guidRanges, first);
                }
                break;
            case Key::PortName:
                if (auto* t = value<ast::TextList>(*f)) {
                    for (const ast::Text& text : *t) portName(text, g);
                }
                break;
            case Key::Partition:
                if (auto* t = value<ast::TextList>(*f)) names(*t, g.partitions);
                break;
            case Key::Pkey:
                if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pkeys, &g.pkeyRanges, true);
                break;
            case Key::NodeType:
                if (auto* types = value<ast::NodeTypeList>(*f)) {
                    for (const ast::NodeType& t : *types) nodeType(t, g);
                }
                break;
            default:
                break;
        }
    }
    requireField(b, seen, Key::Name);
    gaps_.groupName |= nameLost(b, g.name);
    g.guids = RangeSet::build(std::move(guids));
    g.pkeys = RangeSet::build(std::move(pkeys));
    bool anySelector = false;
    for (const ast::Item& item : b.items) {
        if (auto* f = boost::get<ast::Field>(&item)) {
            anySelector |= f->key != Key::Name && f->key != Key::Use;
        }
    }
    if (!anySelector && !g.name.empty() && !report_.syntaxErrorsIn(b)) {
        report_.warning("empty-group", g.location,
                        "port-group '" + g.name + "' lists no ports, so it matches nothing");
    }
    policy_.groups.push_back(std::move(g));
}

// "NodeDescription/P<n>": split at the last '/', the port read as OpenSM's strtoul(.., 0).
void Elaborator::portName(const ast::Text& text, PortGroup& g) {
    const std::string& s = text.value;
    size_t slash = s.rfind('/');
    if (slash == std::string::npos || s.size() - slash < 3 ||
        (s[slash + 1] != 'P' && s[slash + 1] != 'p')) {
        error("port-name", at(text),
              "'" + s + "' is not a port name: write NodeDescription/P<port number>");
        return;
    }
    std::string digits = s.substr(slash + 2);
    char* end = nullptr;
    unsigned long port = std::strtoul(digits.c_str(), &end, 0);
    if (port == 0 || end == digits.c_str()) {
        error("port-name", at(text),
              "'" + s + "': the port number after '/P' must be a number from 1 up");
        return;
    }
    if (*end != '\0') {
        report_.warning("port-name", at(text),
                        "'" + s + "': '" + std::string(end) +
                            "' after the port number is ignored (as OpenSM does)");
    }
    if (port > 254) {
        // OpenSM rejects it only when the node is in the fabric (bindPolicy says so then).
        report_.stricterError("port-name", at(text), "'" + s + "': a port number is at most 254");
        return;
    }
    g.portNames.push_back({s.substr(0, slash), static_cast<uint32_t>(port), at(text)});
}

void Elaborator::nodeType(const ast::NodeType& t, PortGroup& g) {
    switch (t.name) {
        case ast::NodeTypeName::Ca:
            g.nodeTypes |= nodeTypeBit(NodeType::Ca);
            break;
        case ast::NodeTypeName::Switch:
            g.nodeTypes |= nodeTypeBit(NodeType::Switch);
            break;
        case ast::NodeTypeName::Router:
            g.nodeTypes |= nodeTypeBit(NodeType::Router);
            break;
        case ast::NodeTypeName::All:
            g.nodeTypes |= AllNodeTypes;
            break;
        case ast::NodeTypeName::Self:
            g.self = true;
            break;
    }
}

}  // namespace ibqos::passes
