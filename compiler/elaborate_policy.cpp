// SPDX-License-Identifier: MIT
// Pass 1: elaboration, the helpers every section shares, and its entry point.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "ib/qos.hpp"

namespace ibqos::passes {

void Elaborator::block(ast::Block& b) {
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
        case BlockKind::SlEnforcement:
            inExtension_ = true;
            slEnforcement(b);
            inExtension_ = false;
            return;
    }
}

// An error OpenSM reports too, unless it is in an extension OpenSM never reads.
void Elaborator::error(const char* code, SourceLocation where, std::string message) {
    if (inExtension_) {
        report_.stricterError(code, where, std::move(message));
    } else {
        report_.error(code, where, std::move(message));
    }
}

// An error in qos-setup that OpenSM does not check (it ignores the section): ibqos reports it
// and, to keep OpenSM's meaning, applies no qos-setup at all.
void Elaborator::setupError(const char* code, SourceLocation where, std::string message) {
    report_.stricterError(code, where, std::move(message));
    policy_.qosSetupIgnored = true;
}

// Single-valued fields: a repeat is an error, as in OpenSM. Returns whether f is the first.
bool Elaborator::once(const ast::Field& f, std::bitset<64>& seen, BlockKind kind) {
    auto bit = static_cast<size_t>(f.key);
    if (!seen[bit]) {
        seen[bit] = true;
        return true;
    }
    error(
        "duplicate-field", at(f),
        std::string(ast::openKeyword(kind)) + " has more than one '" + ast::keyName(f.key) + ":'");
    return false;
}

// Reports a missing required field. Returns false when the field is missing or was lost.
bool Elaborator::requireField(const ast::Block& b, const std::bitset<64>& seen, Key key) {
    if (seen[static_cast<size_t>(key)]) return true;
    if (report_.syntaxErrorsIn(b)) return false;
    error("missing-field", at(b.open),
          std::string(ast::openKeyword(b.kind)) + " has no '" + ast::keyName(key) + ":'");
    return false;
}

// True when a name was written but could not be read, or may have been lost.
bool Elaborator::nameLost(const ast::Block& b, const std::string& name) {
    return name.empty() && report_.syntaxErrorsIn(b);
}

// A number as OpenSM reads it; warns or errors on the ways it may not mean what it says.
uint64_t Elaborator::number(const ast::Number& n) {
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
            // One significant digit below 8 reads the same in either base ("05").
            if (n.value < 8) return n.value;
            report_.warning("octal-number", at(n),
                            "a leading 0 makes this octal: it is read as " +
                                std::to_string(n.value) +
                                ", as OpenSM does; write it without the 0 if you meant decimal");
            return n.value;
        default:
            return n.value;
    }
}

// A number in [lo, hi], or nullopt (reported). openSmChecks: OpenSM rejects the file for
// the same range (otherwise only ibqos does, and the value is dropped with qos-setup).
std::optional<uint64_t> Elaborator::bounded(const ast::Number& n, uint64_t lo, uint64_t hi,
                                            const std::string& what, bool openSmChecks) {
    uint64_t v = number(n);
    if (v < lo || v > hi) {
        std::string message = what + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
                              ", not " + std::to_string(v);
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
uint8_t Elaborator::byte(const ast::Number& n, uint64_t max, ast::Key field,
                         const std::string& openSmDoes) {
    uint64_t v = number(n);
    if (v > max) {
        report_.stricterError("value-range", at(n),
                              std::string(ast::keyName(field)) + " must be 0.." +
                                  std::to_string(max) + ", not " + std::to_string(v) +
                                  " (OpenSM accepts it: " + openSmDoes + ")");
    }
    return static_cast<uint8_t>(v);
}

// Reads a range list. pkey ranges are masked to 15 bits first, as OpenSM does.
void Elaborator::ranges(const ast::RangeList& list, std::vector<Range>& out,
                        std::vector<WrittenRange>* written, bool pkey) {
    for (const ast::Range& r : list) {
        uint64_t lo = number(r.lo);
        uint64_t hi = r.hi ? number(*r.hi) : lo;
        Range range{lo, hi};
        if (pkey) range = {lo & ib::PkeyBaseMask, hi & ib::PkeyBaseMask};
        if (range.lo > range.hi) std::swap(range.lo, range.hi);
        out.push_back(range);
        if (written) written->push_back({range, at(r.lo), {std::min(lo, hi), std::max(lo, hi)}});
    }
}

// OpenSM looks every GUID of a port-guid range up one by one (osm_get_port_by_guid() in
// __parser_add_guid_range_to_port_map()), and its loop never ends for a range that ends at
// 2^64-1: a wide range stalls its SM thread for as long as the walk takes, that one for
// good. OpenSM "accepts" it; ibqos says what it costs (the plugin writes GUID lists).
void Elaborator::guidRangesOpenSmWalks(const std::vector<WrittenRange>& written, size_t first) {
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

void Elaborator::names(const ast::TextList& list, std::vector<NameRef>& out) {
    out.reserve(out.size() + list.size());
    for (const ast::Text& t : list) out.push_back(nameRef(t));
}

NameRef Elaborator::nameRef(const ast::Text& t) {
    const SourceLocation where = at(t);
    if (t.value.empty()) report_.stricterError("value-range", where, "empty name");
    return {t.value, t.openSm, where};
}

std::string Elaborator::name(const ast::Text& t) {
    if (t.value.empty()) report_.stricterError("value-range", at(t), "empty name");
    return t.value;
}

namespace {

// Room for n more elements, the capacity still growing geometrically (a file may hold many
// sections of one kind).
template <typename T>
void reserveMore(std::vector<T>& v, size_t n) {
    if (v.size() + n > v.capacity()) v.reserve(std::max(v.size() + n, 2 * v.capacity()));
}

}  // namespace

// Blocks nested in a section, checked for OpenSM's "at least one" rules.
void Elaborator::section(ast::Block& b) {
    if (b.kind == BlockKind::QosLevels && !policy_.qosLevelsLocation.line) {
        policy_.qosLevelsLocation = at(b.open);
    }
    // Room for every block of the section at once, and for what the qos-ulps lines add later:
    // a Policy element is large, and moving all of them each time the vector grows costs more
    // than reading them.
    if (b.kind == BlockKind::PortGroups) reserveMore(policy_.groups, b.items.size() + ulpLines_);
    if (b.kind == BlockKind::QosLevels) reserveMore(policy_.levels, b.items.size());
    if (b.kind == BlockKind::QosMatchRules) reserveMore(policy_.rules, b.items.size() + ulpLines_);
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

void elaboratePolicy(ast::PolicyFile&& file, const Reporter& report, Policy& policy,
                     std::vector<UlpEntry>& ulps, Gaps& gaps) {
    size_t ulpLines = 0;
    for (const ast::Block& b : file.blocks) {
        if (b.kind == ast::BlockKind::QosUlps) ulpLines += b.items.size();
    }
    Elaborator elaborator(report, policy, ulps, gaps, ulpLines);
    for (ast::Block& b : file.blocks) {
        elaborator.block(b);
        b = ast::Block{};  // free each block once read
    }
    file.blocks.clear();
}

}  // namespace ibqos::passes
