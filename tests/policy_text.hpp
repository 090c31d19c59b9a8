// SPDX-License-Identifier: MIT
// Test helpers: policies written inline in a test, parsed or compiled with their diagnostics.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "policy-grammar/parse.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::test {

// The whole content of a file (empty when it cannot be read).
inline std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A policy and what compiling it reported.
struct Compiled {
    SourceFile source;
    Diagnostics diagnostics;
    Policy policy;

    // analysisBudget: the dead-rule analysis's (nullopt: the default one; 0: unlimited).
    explicit Compiled(std::string text, std::optional<uint64_t> analysisBudget = std::nullopt)
        : source("test.conf", std::move(text)) {
        policy = loadPolicy(source, diagnostics, analysisBudget);
    }
    // The codes of the errors (or warnings), in report order after sorting by position.
    std::vector<std::string> codes(Severity severity = Severity::Error) {
        diagnostics.sort();
        std::vector<std::string> out;
        for (const Diagnostic& d : diagnostics.all()) {
            if (d.severity == severity) out.push_back(d.code);
        }
        return out;
    }
    std::vector<uint32_t> lines(Severity severity = Severity::Error) {
        diagnostics.sort();
        std::vector<uint32_t> out;
        for (const Diagnostic& d : diagnostics.all()) {
            if (d.severity == severity) out.push_back(d.location.line);
        }
        return out;
    }
};

}  // namespace ibqos::test
