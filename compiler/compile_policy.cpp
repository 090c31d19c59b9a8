// SPDX-License-Identifier: MIT
// The pass list, in the order the data flows, before and after the policy space's dead-rule
// analysis (policy-space/load_policy.cpp runs the three in turn).
#include "compiler/compile_policy.hpp"

#include <array>

#include "compiler/passes.hpp"
#include "compiler/pcc_algorithms.hpp"
#include "policy-grammar/host_words.hpp"

namespace ibqos {

Policy resolvePolicy(ast::PolicyFile&& file, const SourceFile& source, Diagnostics& diagnostics) {
    passes::Reporter report{source, diagnostics};
    Policy policy;
    policy.file = source.name();
    policy.sourceBytes = source.text().size();
    std::vector<passes::UlpEntry> ulps;
    passes::Gaps gaps;
    gaps.anySyntaxError = diagnostics.hasErrors();
    passes::elaboratePolicy(std::move(file), report, policy, ulps, gaps);
    passes::lowerUlps(ulps, report, policy);
    passes::resolveNames(report, gaps, policy);
    return policy;
}

void finishPolicy(Policy& policy, const SourceFile& source, Diagnostics& diagnostics) {
    passes::Reporter report{source, diagnostics};
    passes::checkQosSetup(report, policy);
    passes::checkHostSched(report, policy);
    if (policy.qosSetupIgnored) {
        policy.vlarbScopes.clear();
        policy.sl2vlScopes.clear();
    }
}

namespace passes {

bool Reporter::syntaxErrorsIn(const ast::Block& block) const {
    if (!block.close.located()) return true;
    uint32_t first = at(block.open).line, last = at(block.close).line;
    for (uint32_t line = first; line <= last; ++line) {
        if (diagnostics.hasSyntaxErrorOnLine(source.name(), line)) return true;
    }
    return false;
}

}  // namespace passes

bool isKnownPccAlgorithm(std::string_view name) {
    for (std::string_view a : pccAlgorithmWords) {
        if (sameName(a, name)) return true;
    }
    return false;
}

std::string knownPccAlgorithmList() {
    std::string out;
    for (std::string_view a : pccAlgorithmWords) out += (out.empty() ? "" : ", ") + std::string(a);
    return out;
}

}  // namespace ibqos
