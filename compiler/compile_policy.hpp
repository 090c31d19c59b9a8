// SPDX-License-Identifier: MIT
// compilePolicy: the checks that need no fabric, from syntax tree to Policy.
#pragma once

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/policy.hpp"
#include "policy-grammar/ast.hpp"

namespace ibqos {

// Gives a parsed policy its meaning and reports every problem found without a fabric:
// values out of range, missing or repeated fields, unresolved and duplicate names, a missing
// default level, shadowed rules, the host scheduling tree. The Policy is always consistent.
// The tree is consumed block by block, so a large file never has both forms in memory at once.
Policy compilePolicy(ast::PolicyFile&& file, const SourceFile& source, Diagnostics& diagnostics);

// Parses and compiles a policy file in one step.
Policy loadPolicy(const SourceFile& source, Diagnostics& diagnostics);

}  // namespace ibqos
