// SPDX-License-Identifier: MIT
// What no request reaches. On every fabric the policy could meet (passes 4 and 4b, between the
// compiler's resolvePolicy and finishPolicy): rules the rules before them always hide
// (shadowed-rule), levels no rule that can match names and groups nothing uses. On one fabric
// (after the compiler's fabric stage, for ibqos check): rules hidden there or whose groups hold
// no port pair, levels no request gets, groups nothing uses (unreachable-rule,
// unreachable-level, unused-group).
#pragma once

#include <cstdint>

#include "common/diagnostics.hpp"
#include "compiler/bind.hpp"
#include "compiler/passes.hpp"
#include "compiler/policy.hpp"

namespace ibqos {

namespace passes {

// 4. Warns about match rules that can never match because an earlier rule always wins, and
//    marks them (MatchRule::shadowed). workBudget bounds the decision diagrams (0: no bound).
void findShadowedRules(const Reporter& report, Policy& policy, uint64_t workBudget);
// 4b. Levels no rule that can match names (but the default) and port-groups no rule or qos-setup
// scope uses: on every fabric, so without a topology. Marks the levels `unused`.
void findUnused(const Reporter& report, Policy& policy);

}  // namespace passes

// What no request of the bound fabric reaches; workBudget bounds the decision diagrams (0: no
// bound); rules left undecided get a note.
void checkReachability(const BoundPolicy& bound, Diagnostics& diagnostics, uint64_t workBudget);

}  // namespace ibqos
