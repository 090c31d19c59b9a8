// SPDX-License-Identifier: MIT
// What no request of one fabric reaches: rules the rules before them hide there (or whose groups
// hold no port pair), levels no request gets, groups nothing uses. Warnings unreachable-rule,
// unreachable-level and unused-group; rules hidden on every fabric are the policy pass's
// shadowed-rule (compiler/find_shadowed_rules.cpp, which holds both).
#pragma once

#include "common/diagnostics.hpp"
#include "compiler/bind.hpp"

namespace ibqos {

// workBudget bounds the decision diagrams (0: no bound); rules left undecided get a note.
void checkReachability(const BoundPolicy& bound, Diagnostics& diagnostics, uint64_t workBudget);

}  // namespace ibqos
