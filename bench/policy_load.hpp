// SPDX-License-Identifier: MIT
// What the policy benchmarks share: CPU time and loading a policy as `ibqos check`
// does without the dead-rule analysis (its cost is its own, under a budget of its own).
#pragma once

#include <time.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "compiler/passes.hpp"
#include "compiler/policy.hpp"
#include "policy-grammar/parse.hpp"

namespace ibqos::bench {

// The process's CPU time, in seconds.
inline double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Seconds of CPU time loading took.
struct LoadTimes {
    double parse = 0;  // file read and parsed
    double load = 0;   // and every pass but the dead-rule analysis
};

// Loading as `ibqos check` does it, without the dead-rule analysis (pass 4): the file read,
// parsed and given its meaning by every other pass of compilePolicy.
inline std::optional<LoadTimes> loadWithoutDeadRules(const std::string& path,
                                                     Diagnostics& diagnostics, size_t& bytes) {
    LoadTimes times;
    const double start = cpuSeconds();
    std::string error;
    auto source = SourceFile::load(path, error);
    if (!source) return std::nullopt;
    bytes = source->text().size();
    std::optional<ast::PolicyFile> file = parsePolicy(*source, diagnostics);
    if (!file) return std::nullopt;
    times.parse = cpuSeconds() - start;
    passes::Reporter report{*source, diagnostics};
    Policy policy;
    policy.file = source->name();
    std::vector<passes::UlpEntry> ulps;
    passes::Gaps gaps;
    gaps.anySyntaxError = diagnostics.hasErrors();
    passes::elaboratePolicy(std::move(*file), report, policy, ulps, gaps);
    passes::lowerUlps(ulps, report, policy);
    passes::resolveNames(report, gaps, policy);
    passes::checkQosSetup(report, policy);
    passes::checkHostSched(report, policy);
    times.load = cpuSeconds() - start;
    return times;
}

}  // namespace ibqos::bench
