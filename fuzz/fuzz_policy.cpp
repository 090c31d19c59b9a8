// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a policy file, through the grammar and every check.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compile_policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibqos::SourceFile source("fuzz.conf", std::string(reinterpret_cast<const char*>(data), size));
    ibqos::Diagnostics diagnostics;
    ibqos::Policy policy = ibqos::loadPolicy(source, diagnostics);
    // Rendering touches every position the diagnostics carry.
    for (const ibqos::Diagnostic& d : diagnostics.all()) (void)ibqos::renderText(d, &source);
    (void)ibqos::renderJson(diagnostics.all());
    return 0;
}
