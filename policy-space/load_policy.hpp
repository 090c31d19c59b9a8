// SPDX-License-Identifier: MIT
// compilePolicy and loadPolicy: the checks that need no fabric, from text to Policy, the
// compiler's passes with the dead-rule analysis between them.
#pragma once

#include <cstdint>
#include <optional>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/policy.hpp"
#include "policy-grammar/ast.hpp"

namespace ibqos {

// Gives a parsed policy its meaning and reports every problem found without a fabric:
// values out of range, missing or repeated fields, unresolved and duplicate names, a missing
// default level, shadowed rules, the host scheduling tree. The Policy is always consistent.
// The tree is consumed block by block, so a large file never has both forms in memory at once.
// analysisBudget bounds the work of the dead-rule analysis (decision-diagram steps; 0: no
// bound); nullopt is the default, which grows with the policy's size (analysisBudgetFor).
Policy compilePolicy(ast::PolicyFile&& file, const SourceFile& source, Diagnostics& diagnostics,
                     std::optional<uint64_t> analysisBudget = std::nullopt);

// Parses and compiles a policy file in one step.
Policy loadPolicy(const SourceFile& source, Diagnostics& diagnostics,
                  std::optional<uint64_t> analysisBudget = std::nullopt);

// The default work budget of the policy-space analyses for a policy: proportional to the
// size of its text, so that `ibqos check` keeps its throughput on every policy.
uint64_t analysisBudgetFor(const Policy& policy);

}  // namespace ibqos
