// SPDX-License-Identifier: MIT
// Entry point of the policy grammar: text in, syntax tree and syntax diagnostics out.
#pragma once

#include <optional>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "policy-grammar/ast.hpp"

namespace ibqos {

// Parses a whole policy file. Every syntax error is reported (at most one per line) and the
// tree holds everything that could be read; it is never thrown away because of an error.
// Returns nullopt only when the input is not text at all (it holds a NUL byte).
std::optional<ast::PolicyFile> parsePolicy(const SourceFile& source, Diagnostics& diagnostics);

}  // namespace ibqos
