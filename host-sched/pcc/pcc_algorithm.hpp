// SPDX-License-Identifier: MIT
// The congestion-control algorithms ibqos ships, as seed 003 event-style algorithms.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host-sched/pcc/pcc_abi.h"

namespace ibqos::host {

static_assert(sizeof(mango_pcc_context_t) == 64, "seed 003: the context is 64 bytes");
static_assert(sizeof(mango_pcc_result_t) == 32, "seed 003: the result is 32 bytes");

// An algorithm as registered into a slot: the event function, the metrics it needs, and its
// parameter block. The framework keeps one copy of the block per QP, so an algorithm keeps
// its per-QP state there, after the tunable fields that `params` describes.
struct PccAlgorithm {
    std::string_view name;  // as written in pcc-algorithm:
    std::string_view summary;
    mango_pcc_algo_event_fn* event = nullptr;
    uint32_t requiredMetrics = 0;  // mango_pcc_metric_flags_e
    size_t paramSize = 0;
    void (*initParams)(void* block) = nullptr;  // the paper's defaults, state cleared
    std::span<const mango_pcc_param_t> params;  // the tunable fields
};

// Every algorithm, in the order knownPccAlgorithmList() names them.
std::span<const PccAlgorithm> pccAlgorithms();
// Looks an algorithm up by name, ignoring case (as policy names are); nullptr if unknown.
const PccAlgorithm* findPccAlgorithm(std::string_view name);

// A parameter block with the defaults of an algorithm.
std::vector<uint8_t> defaultParamBlock(const PccAlgorithm& algorithm);
// One parameter value from text into `value` (of the type's size); false if it is not one.
bool parseParamValue(mango_pcc_param_type_e type, std::string_view text, void* value);
std::string formatParamValue(mango_pcc_param_type_e type, const void* value);

// Sets a tunable parameter of a block by name from text; false if the name or value is bad.
bool setParam(const PccAlgorithm& algorithm, std::span<uint8_t> block, std::string_view name,
              std::string_view value);
// A tunable parameter's value as text ("" for an unknown name).
std::string getParam(const PccAlgorithm& algorithm, std::span<const uint8_t> block,
                     std::string_view name);

// The two algorithms (pcc_dcqcn.cpp, pcc_swift.cpp).
const PccAlgorithm& dcqcnAlgorithm();
const PccAlgorithm& swiftAlgorithm();

}  // namespace ibqos::host
