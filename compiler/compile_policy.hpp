// SPDX-License-Identifier: MIT
// The checks that need no fabric, from syntax tree to Policy: the passes before and after the
// dead-rule analysis, which the policy space runs between them (policy-space/load_policy.hpp).
#pragma once

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/policy.hpp"
#include "policy-grammar/ast.hpp"

namespace ibqos {

// Gives a parsed policy its meaning (passes 1-3): values out of range, missing or repeated
// fields, qos-ulps lowered to match rules, unresolved and duplicate names, a missing default
// level. The tree is consumed block by block, so a large file never has both forms in memory
// at once. The dead-rule analysis comes next (policy-space/reachability.hpp), then finishPolicy.
Policy resolvePolicy(ast::PolicyFile&& file, const SourceFile& source, Diagnostics& diagnostics);

// The passes after the dead-rule analysis (5-6): qos-setup and the host scheduling tree; a
// qos-setup section that is not applied is emptied. The Policy is then consistent.
void finishPolicy(Policy& policy, const SourceFile& source, Diagnostics& diagnostics);

}  // namespace ibqos
