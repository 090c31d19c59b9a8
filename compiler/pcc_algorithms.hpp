// SPDX-License-Identifier: MIT
// The congestion-control algorithms a policy may name in pcc-algorithm: (host-sched ships them).
#pragma once

#include <string>
#include <string_view>

namespace ibqos {

bool isKnownPccAlgorithm(std::string_view name);
// "dcqcn, swift": for messages.
std::string knownPccAlgorithmList();

}  // namespace ibqos
