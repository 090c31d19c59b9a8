// SPDX-License-Identifier: MIT
// Pass 1: reads every block of the syntax tree into the Policy, checking each value.
#include <algorithm>
#include <bitset>
#include <string>

#include "compiler/passes.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::passes {

namespace {

using ast::BlockKind;
using ast::Key;

class Elaborator {
  public:
    Elaborator(const Reporter& report, Policy& policy, std::vector<UlpEntry>& ulps, Gaps& gaps)
        : report_(report), policy_(policy), ulps_(ulps), gaps_(gaps) {}

    void block(ast::Block& b) {
        switch (b.kind) {
            case BlockKind::PortGroups:
            case BlockKind::QosLevels:
            case BlockKind::QosMatchRules:
            case BlockKind::VlArbTables:
            case BlockKind::Sl2VlTables:
                section(b);
                return;
            case BlockKind::QosSetup:
                qosSetup(b);
                return;
            case BlockKind::HostSched:
                inExtension_ = true;
                hostSched(b);
                inExtension_ = false;
                return;
            case BlockKind::QosUlps:
                qosUlps(b);
                return;
            case BlockKind::PortGroup:
                portGroup(b);
                return;
            case BlockKind::QosLevel:
                qosLevel(b);
                return;
            case BlockKind::QosMatchRule:
                matchRule(b);
                return;
            case BlockKind::VlArbScope:
                vlarbScope(b);
                return;
            case BlockKind::Sl2VlScope:
                sl2vlScope(b);
                return;
            case BlockKind::SchedNode:
            case BlockKind::SchedLeaf:
                inExtension_ = true;
                schedElement(b);
                inExtension_ = false;
                return;
        }
    }

  private:
    const Reporter& report_;
    Policy& policy_;
    std::vector<UlpEntry>& ulps_;
    Gaps& gaps_;
    bool pathBitsWarned_ = false;
    bool inExtension_ = false;  // inside host-sched, which OpenSM never sees

    // An error OpenSM reports too, unless it is in an extension OpenSM never reads.
    void error(const char* code, SourceLocation where, std::string message) {
        if (inExtension_) {
            report_.stricterError(code, where, std::move(message));
        } else {
            report_.error(code, where, std::move(message));
        }
    }
    // An error in qos-setup that OpenSM does not check (it ignores the section): ibqos reports it
    // and, to keep OpenSM's meaning, applies no qos-setup at all.
    void setupError(const char* code, SourceLocation where, std::string message) {
        report_.stricterError(code, where, std::move(message));
        policy_.qosSetupIgnored = true;
    }

    SourceLocation at(const ast::Node& n) const { return report_.at(n); }
    SourceLocation at(const ast::Number& n) const { return report_.at(n); }

    // The value of a field, or nullptr when it was lost to a syntax error (already reported).
    template <typename T>
    static const T* value(const ast::Field& f) {
        if (!f.located()) return nullptr;
        return boost::get<T>(&f.value.get());
    }

    // The value of a single-valued field, or nullptr when it is a repeat (reported by once()).
    template <typename T>
    const T* single(const ast::Field& f, std::bitset<64>& seen, BlockKind kind) {
        return once(f, seen, kind) ? value<T>(f) : nullptr;
    }

    // Single-valued fields: a repeat is an error, as in OpenSM. Returns whether f is the first.
    bool once(const ast::Field& f, std::bitset<64>& seen, BlockKind kind) {
        auto bit = static_cast<size_t>(f.key);
        if (!seen[bit]) {
            seen[bit] = true;
            return true;
        }
        error("duplicate-field", at(f),
              std::string(ast::openKeyword(kind)) + " has more than one '" + ast::keyName(f.key) +
                  ":'");
        return false;
    }

    // Reports a missing required field. Returns false when the field is missing or was lost.
    bool requireField(const ast::Block& b, const std::bitset<64>& seen, Key key) {
        if (seen[static_cast<size_t>(key)]) return true;
        if (report_.syntaxErrorsIn(b)) return false;
        error("missing-field", at(b.open),
              std::string(ast::openKeyword(b.kind)) + " has no '" + ast::keyName(key) + ":'");
        return false;
    }

    // True when a name was written but could not be read, or may have been lost.
    bool nameLost(const ast::Block& b, const std::string& name) {
        return name.empty() && report_.syntaxErrorsIn(b);
    }

    // A number as OpenSM reads it; warns or errors on the ways it may not mean what it says.
    uint64_t number(const ast::Number& n) {
        switch (n.form) {
            case ast::NumberForm::Overflow:
                report_.stricterError("number-overflow", at(n),
                                      "number does not fit in 64 bits (OpenSM silently reads "
                                      "18446744073709551615)");
                return n.value;
            case ast::NumberForm::BadOctal:
                report_.stricterError("bad-octal", at(n),
                                      "a number with a leading 0 is octal, and 8 and 9 are not "
                                      "octal digits (OpenSM silently reads " +
                                          std::to_string(n.value) + "); remove the leading 0");
                return n.value;
            case ast::NumberForm::Octal:
                report_.warning(
                    "octal-number", at(n),
                    "a leading 0 makes this octal: it is read as " + std::to_string(n.value) +
                        ", as OpenSM does; write it without the 0 if you meant decimal");
                return n.value;
            default:
                return n.value;
        }
    }

    // A number in [lo, hi], or nullopt (reported). openSmChecks: OpenSM rejects the file for
    // the same range (otherwise only ibqos does, and the value is dropped with qos-setup).
    std::optional<uint64_t> bounded(const ast::Number& n, uint64_t lo, uint64_t hi,
                                    const std::string& what, bool openSmChecks = true) {
        uint64_t v = number(n);
        if (v < lo || v > hi) {
            std::string message = what + " must be " + std::to_string(lo) + ".." +
                                  std::to_string(hi) + ", not " + std::to_string(v);
            if (openSmChecks) {
                error("value-range", at(n), std::move(message));
            } else {
                setupError("value-range", at(n), std::move(message));
            }
            return std::nullopt;
        }
        return v;
    }

    // A value OpenSM keeps in 8 bits without a range check (sl, packet-life): ibqos reports a
    // value above max, and the Policy keeps OpenSM's reading of it.
    uint8_t byte(const ast::Number& n, uint64_t max, const std::string& what,
                 const std::string& openSmDoes) {
        uint64_t v = number(n);
        if (v > max) {
            report_.stricterError("value-range", at(n),
                                  what + " must be 0.." + std::to_string(max) + ", not " +
                                      std::to_string(v) + " (OpenSM accepts it: " + openSmDoes +
                                      ")");
        }
        return static_cast<uint8_t>(v);
    }

    // Reads a range list. pkey ranges are masked to 15 bits first, as OpenSM does.
    void ranges(const ast::RangeList& list, std::vector<Range>& out,
                std::vector<WrittenRange>* written = nullptr, bool pkey = false) {
        for (const ast::Range& r : list) {
            uint64_t lo = number(r.lo);
            uint64_t hi = r.hi ? number(*r.hi) : lo;
            Range range{lo, hi};
            if (pkey) range = {lo & 0x7fff, hi & 0x7fff};
            if (range.lo > range.hi) std::swap(range.lo, range.hi);
            out.push_back(range);
            if (written) written->push_back({range, at(r.lo)});
        }
    }

    // OpenSM looks every GUID of a port-guid range up one by one (osm_get_port_by_guid() in
    // __parser_add_guid_range_to_port_map()), and its loop never ends for a range that ends at
    // 2^64-1: a wide range stalls its SM thread for as long as the walk takes, that one for
    // good. OpenSM "accepts" it; ibqos says what it costs (the plugin writes GUID lists).
    void guidRangesOpenSmWalks(const std::vector<WrittenRange>& written, size_t first) {
        // Measured: 2^28 lookups stall OpenSM for a second on a small ibsim fabric (a larger
        // one, with a deeper port map, is slower).
        constexpr uint64_t Wide = uint64_t{1} << 28;
        constexpr double LookupsPerSecond = 2.5e8;
        for (size_t i = first; i < written.size(); ++i) {
            const Range& r = written[i].range;
            if (r.hi == UINT64_MAX) {
                report_.stricterError(
                    "guid-range", written[i].location,
                    "a GUID range that ends at 0xffffffffffffffff hangs OpenSM 3.3.23 for good (it "
                    "looks the range up one GUID at a time, and its loop wraps around); list the "
                    "port GUIDs instead");
            } else if (r.hi - r.lo >= Wide) {
                uint64_t n = r.hi - r.lo + 1;
                report_.stricterError(
                    "guid-range", written[i].location,
                    "a range of " + std::to_string(n) +
                        " GUIDs stalls OpenSM 3.3.23's SM thread while it looks them up one by one "
                        "(about " +
                        std::to_string(static_cast<uint64_t>(n / LookupsPerSecond)) +
                        " s or more a sweep); list the port GUIDs instead");
            }
        }
    }

    void names(const ast::TextList& list, std::vector<NameRef>& out) {
        for (const ast::Text& t : list) {
            if (t.value.empty()) report_.stricterError("value-range", at(t), "empty name");
            out.push_back({t.value, at(t)});
        }
    }

    std::string name(const ast::Text& t) {
        if (t.value.empty()) report_.stricterError("value-range", at(t), "empty name");
        return t.value;
    }

    // Blocks nested in a section, checked for OpenSM's "at least one" rules.
    void section(ast::Block& b) {
        if (b.kind == BlockKind::QosLevels && !policy_.qosLevelsLocation.line) {
            policy_.qosLevelsLocation = at(b.open);
        }
        size_t nested = 0;
        for (ast::Item& item : b.items) {
            if (auto* inner = boost::get<ast::x3::forward_ast<ast::Block>>(&item)) {
                block(inner->get());
                // Done with it: release its memory now (the tree is owned by elaboratePolicy).
                inner->get() = ast::Block{};
                ++nested;
            }
        }
        if (nested == 0 && b.kind == BlockKind::PortGroups) {
            report_.warning("empty-section", at(b.open),
                            "empty port-groups section (OpenSM rejects a port-groups section "
                            "without a port-group)",
                            true);
        }
    }

    void portGroup(const ast::Block& b) {
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
    void portName(const ast::Text& text, PortGroup& g) {
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
            report_.stricterError("port-name", at(text),
                                  "'" + s + "': a port number is at most 254");
            return;
        }
        g.portNames.push_back({s.substr(0, slash), static_cast<uint32_t>(port), at(text)});
    }

    void nodeType(const ast::NodeType& t, PortGroup& g) {
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

    void qosLevel(const ast::Block& b) {
        QosLevel level;
        level.location = at(b.open);
        std::bitset<64> seen;
        std::vector<Range> pathBits, pkeys;
        for (const ast::Item& item : b.items) {
            auto* f = boost::get<ast::Field>(&item);
            if (!f) continue;
            switch (f->key) {
                case Key::Name:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) level.name = name(*t);
                    break;
                case Key::Use:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) level.use = t->value;
                    break;
                case Key::Sl:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        auto sl = answeredSl(static_cast<uint8_t>(n->value));
                        level.sl = byte(*n, 15, "sl",
                                        sl ? "its SA then answers SL " + std::to_string(*sl)
                                           : "its SA then answers no path for this level");
                    }
                    break;
                case Key::MtuLimit:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        if (auto v = bounded(*n, 1, 5, "mtu-limit (1=256 .. 5=4096 bytes)")) {
                            level.mtuLimit = static_cast<uint8_t>(*v);
                        }
                    }
                    break;
                case Key::RateLimit:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        if (auto v = bounded(
                                *n, 2, 22, "rate-limit (the IB rate enum, 2=2.5 .. 22=600 Gb/s)")) {
                            level.rateLimit = static_cast<uint8_t>(*v);
                        }
                    }
                    break;
                case Key::PacketLife:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        level.packetLife = byte(*n, 63, "packet-life",
                                                "its SA then answers the low six bits, " +
                                                    std::to_string(n->value & 63));
                    }
                    break;
                case Key::PathBits:
                    if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pathBits);
                    if (!pathBitsWarned_) {
                        pathBitsWarned_ = true;
                        report_.warning("ignored-field", at(*f),
                                        "path-bits is read but never used, by OpenSM or by ibqos");
                    }
                    break;
                case Key::Pkey:
                    if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pkeys, nullptr, true);
                    break;
                default:
                    break;
            }
        }
        requireField(b, seen, Key::Name);
        requireField(b, seen, Key::Sl);
        gaps_.levelName |= nameLost(b, level.name);
        level.pathBits = RangeSet::build(std::move(pathBits));
        level.pkeys = RangeSet::build(std::move(pkeys));
        policy_.levels.push_back(std::move(level));
    }

    void matchRule(const ast::Block& b) {
        MatchRule rule;
        rule.location = at(b.open);
        std::bitset<64> seen;
        std::vector<Range> classes, sids, pkeys;
        for (const ast::Item& item : b.items) {
            auto* f = boost::get<ast::Field>(&item);
            if (!f) continue;
            switch (f->key) {
                case Key::Use:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) rule.use = t->value;
                    break;
                case Key::QosClass:
                    if (auto* r = value<ast::RangeList>(*f)) {
                        ranges(*r, classes);
                        for (const ast::Range& range : *r) {
                            uint64_t top = range.hi ? std::max(range.lo.value, range.hi->value)
                                                    : range.lo.value;
                            if (top > 0xfff) {
                                report_.warning(
                                    "value-range", at(range.lo),
                                    "a QoS class has 12 bits: values above 4095 never match");
                            }
                        }
                    }
                    break;
                case Key::Source:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, rule.sourceNames);
                    break;
                case Key::Destination:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, rule.destinationNames);
                    break;
                case Key::ServiceId:
                    if (auto* r = value<ast::RangeList>(*f)) ranges(*r, sids);
                    break;
                case Key::Pkey:
                    if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pkeys, nullptr, true);
                    break;
                case Key::QosLevelName:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind))
                        rule.levelName = {name(*t), at(*t)};
                    break;
                default:
                    break;
            }
        }
        requireField(b, seen, Key::QosLevelName);
        rule.qosClasses = RangeSet::build(std::move(classes));
        rule.serviceIds = RangeSet::build(std::move(sids));
        rule.pkeys = RangeSet::build(std::move(pkeys));
        policy_.rules.push_back(std::move(rule));
    }

    void qosUlps(const ast::Block& b) {
        size_t lines = 0;
        for (const ast::Item& item : b.items) {
            if (auto* line = boost::get<ast::x3::forward_ast<ast::UlpLine>>(&item)) {
                ++lines;
                if (line->get().located()) ulpLine(line->get());
            }
        }
        if (lines == 0) {
            report_.warning(
                "empty-section", at(b.open),
                "empty qos-ulps section (OpenSM rejects a qos-ulps section without a line)", true);
        }
    }

    void ulpLine(const ast::UlpLine& line) {
        using ast::Ulp;
        using ast::UlpQualifier;
        UlpEntry entry;
        entry.ulp = line.ulp;
        entry.location = at(line);
        auto sl = bounded(line.sl, 0, 15, "the SL of a qos-ulps line");
        if (!sl) return;
        entry.sl = static_cast<uint8_t>(*sl);

        static const char* ulpNames[] = {"default", "any", "sdp", "srp", "rds", "ipoib", "iser"};
        std::string ulpName = ulpNames[static_cast<size_t>(line.ulp)];
        UlpQualifier q = line.condition ? line.condition->qualifier.kind : UlpQualifier::None;
        SourceLocation qualifierAt =
            line.condition ? at(line.condition->qualifier) : entry.location;
        bool allowed = false;
        const char* forms = "";
        switch (line.ulp) {
            case Ulp::Default:
                allowed = q == UlpQualifier::None;
                forms = "'default : <sl>'";
                break;
            case Ulp::Any:
                allowed = q != UlpQualifier::None && q != UlpQualifier::PortNum;
                forms =
                    "'any, service-id|pkey|target-port-guid|source-port-guid|"
                    "source-target-port-guid <values> : <sl>'";
                break;
            case Ulp::Sdp:
            case Ulp::Rds:
            case Ulp::Iser:
                allowed = q == UlpQualifier::None || q == UlpQualifier::PortNum;
                forms = "'<ulp> : <sl>' or '<ulp>, port-num <ports> : <sl>'";
                break;
            case Ulp::Srp:
                allowed = q == UlpQualifier::TargetPortGuid;
                forms = "'srp, target-port-guid <guids> : <sl>'";
                break;
            case Ulp::Ipoib:
                allowed = q == UlpQualifier::None || q == UlpQualifier::Pkey;
                forms = "'ipoib : <sl>' or 'ipoib, pkey <pkeys> : <sl>'";
                break;
        }
        if (!allowed) {
            error("ulp-form", qualifierAt,
                  "this is not a form of '" + ulpName + "': write " + forms);
            return;
        }
        entry.qualifier = q;
        if (line.condition) {
            std::vector<Range> values;
            bool pkey = q == UlpQualifier::Pkey;
            ranges(line.condition->ranges, values, &entry.written, pkey);
            if (values.empty()) return;  // every value was bad (reported)
            if (q == UlpQualifier::TargetPortGuid || q == UlpQualifier::SourcePortGuid ||
                q == UlpQualifier::SourceTargetPortGuid) {
                guidRangesOpenSmWalks(entry.written, 0);
            }
            if (q == UlpQualifier::PortNum) {
                for (const WrittenRange& w : entry.written) {
                    if (w.range.hi > 0xffff) {
                        error("value-range", w.location,
                              "a TCP/IP port number is at most 65535 (0xffff)");
                        return;
                    }
                }
            }
            entry.values = RangeSet::build(std::move(values));
        }
        ulps_.push_back(std::move(entry));
    }

    void qosSetup(ast::Block& b) {
        if (!policy_.hasQosSetup) {
            policy_.hasQosSetup = true;
            policy_.qosSetupLocation = at(b.open);
        }
        section(b);
    }

    void pairs(const ast::PairList& list, std::vector<VlWeight>& out, const char* field) {
        for (const ast::Pair& p : list) {
            if (p.percent) {
                error("value-range", at(p),
                      std::string(field) +
                          " takes VL:weight pairs; percentages belong in 'bandwidth:'");
                continue;
            }
            auto vl = bounded(p.key, 0, 14, "a data VL", false);
            auto weight =
                bounded(p.value, 0, 255, "a VL arbitration weight (64-byte credits)", false);
            if (vl && weight)
                out.push_back({static_cast<uint8_t>(*vl), static_cast<uint8_t>(*weight)});
        }
    }

    void vlarbScope(const ast::Block& b) {
        if (!policy_.hasQosSetup) {
            policy_.hasQosSetup = true;
            policy_.qosSetupLocation = at(b.open);
        }
        VlArbScope scope;
        scope.location = at(b.open);
        SourceLocation lowAt;
        for (const ast::Item& item : b.items) {
            auto* f = boost::get<ast::Field>(&item);
            if (!f) continue;
            switch (f->key) {
                case Key::Group:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, scope.groupNames);
                    break;
                case Key::Across:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossNames);
                    break;
                case Key::VlArbHigh:
                    if (auto* p = value<ast::PairList>(*f)) {
                        if (!scope.high) scope.high.emplace();
                        pairs(*p, *scope.high, "vlarb-high");
                    }
                    break;
                case Key::VlArbLow:
                    if (auto* p = value<ast::PairList>(*f)) {
                        if (!scope.low) scope.low.emplace();
                        pairs(*p, *scope.low, "vlarb-low");
                        lowAt = at(*f);
                    }
                    break;
                case Key::VlHighLimit:
                    if (auto* n = value<ast::Number>(*f)) {
                        if (scope.highLimit) {
                            report_.warning("duplicate-field", at(*f),
                                            "vlarb-scope has more than one 'vl-high-limit:'; the "
                                            "last one is used");
                        }
                        if (auto v = bounded(*n, 0, 255, "vl-high-limit", false))
                            scope.highLimit = static_cast<uint8_t>(*v);
                    }
                    break;
                case Key::Bandwidth:
                    if (auto* p = value<ast::PairList>(*f)) bandwidth(*p, *f, scope);
                    break;
                default:
                    break;
            }
        }
        if (scope.groupNames.empty() && scope.acrossNames.empty() && !report_.syntaxErrorsIn(b)) {
            error("missing-field", scope.location,
                  "vlarb-scope selects no ports: give 'group:' or 'across:'");
        }
        for (auto* table : {&scope.high, &scope.low}) {
            if (*table && (*table)->size() > 64) {
                setupError("value-range", scope.location,
                           "a VL arbitration table holds at most 64 entries, this one has " +
                               std::to_string((*table)->size()));
                (*table)->resize(64);
            }
        }
        if (!scope.high && !scope.low && !scope.highLimit && !scope.bandwidth &&
            !report_.syntaxErrorsIn(b)) {
            report_.warning("empty-scope", scope.location,
                            "this vlarb-scope sets nothing: give vlarb-high:, vlarb-low:, "
                            "vl-high-limit: or bandwidth:");
        }
        if (scope.bandwidth && scope.low) {
            setupError("bandwidth", lowAt,
                       "'bandwidth:' computes the low-priority table, so 'vlarb-low:' cannot be in "
                       "the same vlarb-scope");
        }
        policy_.vlarbScopes.push_back(std::move(scope));
    }

    void bandwidth(const ast::PairList& list, const ast::Field& f, VlArbScope& scope) {
        if (!scope.bandwidth) {
            scope.bandwidth.emplace();
            scope.bandwidthLocation = at(f);
        }
        for (const ast::Pair& p : list) {
            if (!p.percent) {
                setupError("bandwidth", at(p.value),
                           "'bandwidth:' takes VL:percent pairs such as 1:60%");
                continue;
            }
            auto vl = bounded(p.key, 0, 14, "a data VL", false);
            auto percent = bounded(p.value, 1, 100, "a bandwidth share in percent", false);
            if (!vl || !percent) continue;
            for (const VlShare& s : *scope.bandwidth) {
                if (s.vl == *vl) {
                    setupError("bandwidth", at(p), "VL " + std::to_string(*vl) + " is given twice");
                }
            }
            scope.bandwidth->push_back({static_cast<uint8_t>(*vl), static_cast<uint8_t>(*percent)});
        }
    }

    // from:/to: port lists; every port when absent or '*'.
    void portSet(const ast::Field& f, std::bitset<128>& ports, bool& given) {
        if (!f.located()) return;
        if (boost::get<ast::Star>(&f.value.get())) {
            ports.set();
            given = true;
            return;
        }
        auto* list = boost::get<ast::RangeList>(&f.value.get());
        if (!list) return;
        std::vector<Range> rs;
        std::vector<WrittenRange> written;
        ranges(*list, rs, &written);
        for (const WrittenRange& w : written) {
            if (w.range.hi >= 128) {
                error("value-range", w.location, "a port number in from:/to: must be below 128");
                continue;
            }
            for (uint64_t p = w.range.lo; p <= w.range.hi; ++p) ports.set(p);
        }
        given = true;
    }

    void sl2vlScope(const ast::Block& b) {
        if (!policy_.hasQosSetup) {
            policy_.hasQosSetup = true;
            policy_.qosSetupLocation = at(b.open);
        }
        Sl2VlScope scope;
        scope.location = at(b.open);
        std::bitset<64> seen;
        bool fromGiven = false, toGiven = false, tableOk = false;
        for (const ast::Item& item : b.items) {
            auto* f = boost::get<ast::Field>(&item);
            if (!f) continue;
            switch (f->key) {
                case Key::Group:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, scope.groupNames);
                    break;
                case Key::Across:
                    if (auto* t = value<ast::TextList>(*f)) {
                        names(*t, scope.acrossFromNames);
                        names(*t, scope.acrossToNames);
                    }
                    break;
                case Key::AcrossFrom:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossFromNames);
                    break;
                case Key::AcrossTo:
                    if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossToNames);
                    break;
                case Key::From:
                    portSet(*f, scope.from, fromGiven);
                    break;
                case Key::To:
                    portSet(*f, scope.to, toGiven);
                    break;
                case Key::Sl2VlTable:
                    if (auto* list = single<ast::NumberList>(*f, seen, b.kind))
                        tableOk = sl2vlTable(*list, *f, scope);
                    break;
                default:
                    break;
            }
        }
        if (!fromGiven) scope.from.set();
        if (!toGiven) scope.to.set();
        requireField(b, seen, Key::Sl2VlTable);
        if (scope.groupNames.empty() && scope.acrossFromNames.empty() &&
            scope.acrossToNames.empty() && !report_.syntaxErrorsIn(b)) {
            error("missing-field", scope.location,
                  "sl2vl-scope selects no ports: give 'group:', 'across:', 'across-from:' or "
                  "'across-to:'");
        }
        if (tableOk) policy_.sl2vlScopes.push_back(std::move(scope));
    }

    bool sl2vlTable(const ast::NumberList& list, const ast::Field& f, Sl2VlScope& scope) {
        if (list.size() != 16) {
            error("sl2vl-table", at(f),
                  "an sl2vl-table lists exactly 16 VLs (one per SL), this one has " +
                      std::to_string(list.size()));
            return false;
        }
        bool ok = true;
        for (size_t sl = 0; sl < 16; ++sl) {
            auto vl = bounded(list[sl], 0, 15, "a VL (15 drops the SL)");
            if (!vl) {
                ok = false;
                continue;
            }
            scope.table[sl] = static_cast<uint8_t>(*vl);
        }
        return ok;
    }

    void hostSched(ast::Block& b) {
        if (!policy_.hostSched.present) {
            policy_.hostSched.present = true;
            policy_.hostSched.location = at(b.open);
        }
        for (ast::Item& item : b.items) {
            if (auto* inner = boost::get<ast::x3::forward_ast<ast::Block>>(&item))
                block(inner->get());
        }
    }

    void schedElement(const ast::Block& b) {
        if (!policy_.hostSched.present) {
            policy_.hostSched.present = true;
            policy_.hostSched.location = at(b.open);
        }
        bool isLeaf = b.kind == BlockKind::SchedLeaf;
        SchedLeaf e;
        e.location = at(b.open);
        std::bitset<64> seen;
        for (const ast::Item& item : b.items) {
            auto* f = boost::get<ast::Field>(&item);
            if (!f) continue;
            switch (f->key) {
                case Key::Name:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.name = name(*t);
                    break;
                case Key::Use:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.use = t->value;
                    break;
                case Key::Parent:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind))
                        e.parentName = {name(*t), at(*t)};
                    break;
                case Key::BwShare:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        if (auto v = bounded(*n, 1, 100, "bw-share (a relative weight)"))
                            e.bwShare = static_cast<uint32_t>(*v);
                    }
                    break;
                case Key::MaxAvgBw:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        if (auto v =
                                bounded(*n, 0, UINT32_MAX, "max-avg-bw (Mbit/s, 0 = unlimited)")) {
                            e.maxAvgBw = static_cast<uint32_t>(*v);
                        }
                    }
                    break;
                case Key::Sl:
                    if (auto* r = value<ast::RangeList>(*f)) {
                        std::vector<WrittenRange> written;
                        std::vector<Range> rs;
                        ranges(*r, rs, &written);
                        if (e.slLocation.line == 0) e.slLocation = at(*f);
                        for (const WrittenRange& w : written) {
                            if (w.range.hi > 15) {
                                error("value-range", w.location, "an SL is 0..15");
                                continue;
                            }
                            for (uint64_t sl = w.range.lo; sl <= w.range.hi; ++sl) e.sls.set(sl);
                        }
                    }
                    break;
                case Key::PccSlot:
                    if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                        if (auto v = bounded(*n, 0, 15, "pcc-slot"))
                            e.pccSlot = static_cast<uint32_t>(*v);
                    }
                    break;
                case Key::PccAlgorithm:
                    if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.pccAlgorithm = t->value;
                    break;
                default:
                    break;
            }
        }
        requireField(b, seen, Key::Name);
        gaps_.elementName |= nameLost(b, e.name);
        if (isLeaf) {
            policy_.hostSched.leaves.push_back(std::move(e));
        } else {
            policy_.hostSched.nodes.push_back(static_cast<SchedElement&&>(std::move(e)));
        }
    }
};

}  // namespace

void elaboratePolicy(ast::PolicyFile&& file, const Reporter& report, Policy& policy,
                     std::vector<UlpEntry>& ulps, Gaps& gaps) {
    Elaborator elaborator(report, policy, ulps, gaps);
    for (ast::Block& b : file.blocks) {
        elaborator.block(b);
        b = ast::Block{};  // free each block once read
    }
    file.blocks.clear();
}

}  // namespace ibqos::passes
