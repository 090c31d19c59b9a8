// SPDX-License-Identifier: MIT
// Pass 1, elaboration: the Elaborator reads every block of the syntax tree into the Policy,
// checking each value. One translation unit per section (elaborate_<section>.cpp), as the grammar.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <vector>

#include "compiler/passes.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::passes {

class Elaborator {
  public:
    using BlockKind = ast::BlockKind;
    using Key = ast::Key;

    // ulpLines: the lines of the file's qos-ulps sections, each of which lowerUlps makes a rule
    // and at most a group of.
    Elaborator(const Reporter& report, Policy& policy, std::vector<UlpEntry>& ulps, Gaps& gaps,
               size_t ulpLines)
        : report_(report), policy_(policy), ulps_(ulps), gaps_(gaps), ulpLines_(ulpLines) {}
    // Reads one block (a section, or a block found outside its section) into the Policy.
    void block(ast::Block& b);

  private:
    const Reporter& report_;
    Policy& policy_;
    std::vector<UlpEntry>& ulps_;
    Gaps& gaps_;
    size_t ulpLines_;
    bool pathBitsWarned_ = false;
    bool inExtension_ = false;  // inside host-sched, which OpenSM never sees

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

    // Shared by every section (elaborate_policy.cpp).
    // An error OpenSM reports too, unless it is in an extension OpenSM never reads.
    void error(const char* code, SourceLocation where, std::string message);
    // An error in qos-setup that OpenSM does not check (it ignores the section): ibqos reports it
    // and, to keep OpenSM's meaning, applies no qos-setup at all.
    void setupError(const char* code, SourceLocation where, std::string message);
    // Single-valued fields: a repeat is an error, as in OpenSM. Returns whether f is the first.
    bool once(const ast::Field& f, std::bitset<64>& seen, BlockKind kind);
    // Reports a missing required field. Returns false when the field is missing or was lost.
    bool requireField(const ast::Block& b, const std::bitset<64>& seen, Key key);
    // True when a name was written but could not be read, or may have been lost.
    bool nameLost(const ast::Block& b, const std::string& name);
    // A number as OpenSM reads it; warns or errors on the ways it may not mean what it says.
    uint64_t number(const ast::Number& n);
    // A number in [lo, hi], or nullopt (reported). openSmChecks: OpenSM rejects the file for
    // the same range (otherwise only ibqos does, and the value is dropped with qos-setup).
    std::optional<uint64_t> bounded(const ast::Number& n, uint64_t lo, uint64_t hi,
                                    const std::string& what, bool openSmChecks = true);
    // A value OpenSM keeps in 8 bits without a range check (sl, packet-life): ibqos reports a
    // value above max, and the Policy keeps OpenSM's reading of it.
    uint8_t byte(const ast::Number& n, uint64_t max, ast::Key field, const std::string& openSmDoes);
    // Reads a range list. pkey ranges are masked to 15 bits first, as OpenSM does.
    void ranges(const ast::RangeList& list, std::vector<Range>& out,
                std::vector<WrittenRange>* written = nullptr, bool pkey = false);
    // OpenSM looks every GUID of a port-guid range up one by one (osm_get_port_by_guid() in
    // __parser_add_guid_range_to_port_map()), and its loop never ends for a range that ends at
    // 2^64-1: a wide range stalls its SM thread for as long as the walk takes, that one for
    // good. OpenSM "accepts" it; ibqos says what it costs (the plugin writes GUID lists).
    void guidRangesOpenSmWalks(const std::vector<WrittenRange>& written, size_t first);
    void names(const ast::TextList& list, std::vector<NameRef>& out);
    // A name (an empty one is an error), and the same with OpenSM's reading and its location.
    std::string name(const ast::Text& t);
    NameRef nameRef(const ast::Text& t);
    // Blocks nested in a section, checked for OpenSM's "at least one" rules.
    void section(ast::Block& b);

    // port-groups (elaborate_port_groups.cpp).
    void portGroup(const ast::Block& b);
    // "NodeDescription/P<n>": split at the last '/', the port read as OpenSM's strtoul(.., 0).
    void portName(const ast::Text& text, PortGroup& g);
    void nodeType(const ast::NodeType& t, PortGroup& g);

    // qos-levels (elaborate_qos_levels.cpp).
    void qosLevel(const ast::Block& b);

    // qos-match-rules and qos-ulps (elaborate_match_rules.cpp).
    void matchRule(const ast::Block& b);
    void qosUlps(const ast::Block& b);
    void ulpLine(const ast::UlpLine& line);

    // qos-setup (elaborate_qos_setup.cpp).
    void qosSetup(ast::Block& b);
    void noteQosSetup(const ast::Block& b);
    void pairs(const ast::PairList& list, std::vector<VlArbEntry>& out, const char* field);
    void vlarbScope(const ast::Block& b);
    void bandwidth(const ast::PairList& list, const ast::Field& f, VlArbScope& scope);
    // from:/to: port lists; every port when absent or '*'.
    void portSet(const ast::Field& f, std::bitset<128>& ports, bool& given);
    void sl2vlScope(const ast::Block& b);
    bool sl2vlTable(const ast::NumberList& list, const ast::Field& f, Sl2VlScope& scope);

    // host-sched (elaborate_host_sched.cpp).
    void hostSched(ast::Block& b);
    void hostSchedAt(const ast::Block& b);
    void schedElement(const ast::Block& b);
    void slEnforcement(const ast::Block& b);
    void programNames(const ast::TextList& list, std::vector<std::string>& out);
};

}  // namespace ibqos::passes
