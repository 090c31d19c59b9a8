// SPDX-License-Identifier: MIT
// The host-sched section's value words: part of the keyword table (keywords.hpp includes it),
// kept apart, with no parser and outside the grammar's namespace, because the host side (the
// preload library too) reads them back from a plan file.
#pragma once

#include <string_view>

namespace ibqos {

// The modes of an sl-enforcement block's "mode:", from the loosest to the strictest, indexed by
// SlMode (compiler/policy.hpp).
inline constexpr const char* slModeWords[] = {"respect", "audit", "enforce"};

// The congestion-control algorithms a sched-leaf's "pcc-algorithm:" may name (host-sched/pcc/
// registers each under its word).
inline constexpr std::string_view pccAlgorithmWords[] = {"dcqcn", "swift"};

}  // namespace ibqos
