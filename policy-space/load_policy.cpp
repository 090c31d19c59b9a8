// SPDX-License-Identifier: MIT
// compilePolicy: the compiler's passes and the dead-rule analysis, in the order the data flows.
#include "policy-space/load_policy.hpp"

#include <algorithm>

#include "compiler/compile_policy.hpp"
#include "compiler/passes.hpp"
#include "policy-grammar/parse.hpp"
#include "policy-space/reachability.hpp"

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
    Policy policy = resolvePolicy(std::move(file), source, diagnostics);
    passes::Reporter report{source, diagnostics};
    passes::findShadowedRules(report, policy, analysisBudget.value_or(analysisBudgetFor(policy)));
    passes::findUnused(report, policy);
    finishPolicy(policy, source, diagnostics);
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

}  // namespace ibqos
