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
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) {
                    g.name = name(*t);
                    g.openSmName = t->openSm;
                }
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

namespace {

// "NodeDescription/P<n>" read as OpenSM's parser reads it: split at the last '/', 'P' or 'p',
// then the port number with strtoul(.., 0) into an unsigned int (0 is no port).
struct PortNameParts {
    enum Problem : uint8_t { None, NoPort, BadNumber } problem = None;
    std::string description;
    uint64_t port = 0;
    std::string trailing;  // what strtoul left after the number
};

PortNameParts splitPortName(const std::string& s) {
    PortNameParts parts;
    size_t slash = s.rfind('/');
    if (slash == std::string::npos || s.size() - slash < 3 ||
        (s[slash + 1] != 'P' && s[slash + 1] != 'p')) {
        parts.problem = PortNameParts::NoPort;
        return parts;
    }
    std::string digits = s.substr(slash + 2);
    char* end = nullptr;
    parts.port = static_cast<unsigned>(std::strtoul(digits.c_str(), &end, 0));
    if (parts.port == 0) {
        parts.problem = PortNameParts::BadNumber;
        return parts;
    }
    parts.description = s.substr(0, slash);
    parts.trailing = end;
    return parts;
}

}  // namespace

// A port-name selects the port OpenSM's reading names (blanks outside quotes dropped); where that
// differs from the text as written, a warning gives the quoted form that keeps the blanks.
// Whether OpenSM drops the policy for the port number on a fabric is judged in bindPolicy.
void Elaborator::portName(const ast::Text& text, PortGroup& g) {
    const std::string& s = text.value;
    const PortNameParts parts = splitPortName(text.openSm);
    const std::string reads = text.openSm == s ? "" : " (OpenSM reads it as '" + text.openSm + "')";
    if (parts.problem == PortNameParts::NoPort) {
        error("port-name", at(text),
              "'" + s + "' is not a port name: write NodeDescription/P<port number>" + reads);
        return;
    }
    if (parts.problem == PortNameParts::BadNumber) {
        error("port-name", at(text),
              "'" + s + "': the port number after '/P' must be a number from 1 up" + reads);
        return;
    }
    PortNameRef ref{parts.description, static_cast<uint32_t>(parts.port), at(text), parts.port, {}};
    if (text.openSm != s) {
        const PortNameParts written = splitPortName(s);
        const bool quotedNamesPort = written.problem == PortNameParts::None && written.port <= 254;
        if (quotedNamesPort && written.description != parts.description)
            ref.written = written.description;
        report_.warning("name-blanks", at(text),
                        "OpenSM reads '" + s + "' as '" + text.openSm +
                            "' (blanks outside quotes are dropped), and so does ibqos" +
                            (quotedNamesPort ? "; to name the node '" + written.description +
                                                   "', quote it: \"" + s + "\""
                                             : ""));
    }
    if (parts.port > 254) {
        // OpenSM rejects it only when the node is in the fabric (bindPolicy says so then).
        report_.stricterError("port-name", at(text), "'" + s + "': a port number is at most 254");
        ref.port = 0;
    } else if (!parts.trailing.empty()) {
        report_.warning("port-name", at(text),
                        "'" + s + "': '" + parts.trailing +
                            "' after the port number is ignored (as OpenSM does)");
    }
    g.portNames.push_back(std::move(ref));
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
