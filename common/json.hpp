// SPDX-License-Identifier: MIT
// Writing JSON by hand where the output is small and its form is part of a contract: string
// literals, numbers, null.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ibqos {

// Appends s to out as a JSON string literal (quotes included); invalid UTF-8 becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view s);
// s as a JSON string literal.
std::string jsonString(std::string_view s);
// A number without trailing zeros (at most three decimals), null when not finite.
std::string jsonNumber(double v);
// The value, or null.
template <typename T>
std::string jsonOptional(const std::optional<T>& v) {
    return v ? std::to_string(*v) : "null";
}

}  // namespace ibqos
