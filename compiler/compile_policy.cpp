// SPDX-License-Identifier: MIT
// compilePolicy: the pass list, in the order the data flows.
#include "compiler/compile_policy.hpp"

#include <algorithm>
#include <array>

#include "compiler/passes.hpp"
#include "compiler/pcc_algorithms.hpp"
#include "policy-grammar/host_words.hpp"
#include "policy-grammar/parse.hpp"

namespace ibqos {

uint64_t analysisBudgetFor(const Policy& policy) {
    // A step is a diagram operation's recursion or a request looked up among the rules: about
    // 40 ns on a 2-core Debian 12 virtual machine (0.35 s of CPU for 10 million steps on the
    // 20,000-rule shifted family, 2026-11-29). The floor lets any policy whose whole analysis
    // takes about a second decide every rule; past it, a step for every 12 bytes of policy
    // text keeps the analysis near 10 ns a byte. The analysis stops as soon as a space it
    // cannot pay for would be built, so that `ibqos check` stays above 50 MB/s on a policy of
    // 120,000 rules (bench/bench_parse.cpp, rule-heavy).
    constexpr uint64_t BytesPerStep = 12, Floor = 25'000'000;
    return std::max<uint64_t>(Floor, policy.sourceBytes / BytesPerStep);
}

Policy compilePolicy(ast::PolicyFile&& file, const SourceFile& source, Diagnostics& diagnostics,
                     std::optional<uint64_t> analysisBudget) {
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
    passes::findShadowedRules(report, policy, analysisBudget.value_or(analysisBudgetFor(policy)));
    passes::findUnused(report, policy);
    passes::checkQosSetup(report, policy);
    passes::checkHostSched(report, policy);
    if (policy.qosSetupIgnored) {
        policy.vlarbScopes.clear();
        policy.sl2vlScopes.clear();
    }
    return policy;
}

Policy loadPolicy(const SourceFile& source, Diagnostics& diagnostics,
                  std::optional<uint64_t> analysisBudget) {
    std::optional<ast::PolicyFile> file = parsePolicy(source, diagnostics);
    if (!file) {
        Policy empty;
        empty.file = source.name();
        return empty;
    }
    return compilePolicy(std::move(*file), source, diagnostics, analysisBudget);
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
