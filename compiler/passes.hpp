// SPDX-License-Identifier: MIT
// The passes of compilePolicy, in pipeline order. Internal to the compiler.
#pragma once

#include <vector>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/policy.hpp"
#include "policy-grammar/ast.hpp"

namespace ibqos::passes {

// Where a diagnostic goes: the sink and the file the policy came from.
struct Reporter {
    const SourceFile& source;
    Diagnostics& diagnostics;
    // The line of the last node located: the passes read the tree in file order, so the next
    // node is usually on this line or a few after it.
    mutable uint32_t lastLine = 1;

    SourceLocation at(const ast::Node& node) const {
        return node.located() ? source.locate(static_cast<uint32_t>(node.id_first), lastLine)
                              : SourceLocation{};
    }
    SourceLocation at(const ast::Number& number) const {
        return number.located() ? source.locate(number.offset, lastLine) : SourceLocation{};
    }
    void error(const char* code, SourceLocation where, std::string message) const {
        diagnostics.error(code, source.name(), where, std::move(message));
    }
    // An error OpenSM lets through (see Diagnostic::openSmRejects).
    void stricterError(const char* code, SourceLocation where, std::string message) const {
        diagnostics.stricterError(code, source.name(), where, std::move(message));
    }
    void warning(const char* code, SourceLocation where, std::string message,
                 bool openSmRejects = false) const {
        diagnostics.warning(code, source.name(), where, std::move(message), openSmRejects);
    }
    void note(const char* code, SourceLocation where, std::string message) const {
        diagnostics.note(code, source.name(), where, std::move(message));
    }
    // True when a syntax error was reported inside the block, or it was never closed: what
    // the block seems to lack may then only be lost, so a missing field is not reported.
    bool syntaxErrorsIn(const ast::Block& block) const;
};

// What syntax errors took away: names that later lines may refer to but that could not be read.
// Resolution stays quiet about references those names might have satisfied.
struct Gaps {
    bool groupName = false;
    bool levelName = false;
    bool elementName = false;
    bool anySyntaxError = false;
};

// A qos-ulps line, read and checked, waiting to be lowered to a match rule.
struct UlpEntry {
    ast::Ulp ulp = ast::Ulp::Default;
    ast::UlpQualifier qualifier = ast::UlpQualifier::None;
    RangeSet values;
    std::vector<WrittenRange> written;
    uint8_t sl = 0;
    SourceLocation location;
};

// 1. Reads every block into the Policy: field values, their ranges, required and repeated fields.
void elaboratePolicy(ast::PolicyFile&& file, const Reporter& report, Policy& policy,
                     std::vector<UlpEntry>& ulps, Gaps& gaps);
// 2. Turns qos-ulps lines into match rules (after all qos-match-rules) and their implicit levels.
void lowerUlps(const std::vector<UlpEntry>& ulps, const Reporter& report, Policy& policy);
// 3. Duplicate names, references to levels, groups and scheduling parents, the default level.
void resolveNames(const Reporter& report, const Gaps& gaps, Policy& policy);
// 4 and 4b, the dead-rule analysis, are the policy space's: policy-space/reachability.hpp.
// 5. The qos-setup section: what OpenSM ignores, and the bandwidth extension's arithmetic. A
//    section with an error OpenSM does not check is not applied (OpenSM applies none).
void checkQosSetup(const Reporter& report, Policy& policy);
// 6. The host-sched tree: SLs on two leaves, bandwidth caps, slots.
void checkHostSched(const Reporter& report, Policy& policy);

}  // namespace ibqos::passes
